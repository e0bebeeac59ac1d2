"""Shared figure plumbing (matplotlib, Agg backend): panel grids and atomic saving."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from benchcast.utils.io import atomic_write  # noqa: E402


def save_figure(fig, path: str | Path) -> Path:
    """Save atomically (format from the suffix) and close the figure.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to write.
    path : str or Path
        Where to write it; its suffix picks the format (png when it has none).

    Returns
    -------
    Path
        The path written.
    """
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=130))
    plt.close(fig)
    return path


def panel_grid(n: int, width: float = 3.6, height: float = 2.9, max_cols: int = 4):
    """A constrained-layout grid of ``n`` visible panels, at most ``max_cols`` per row.

    Parameters
    ----------
    n : int
        Number of panels.
    width, height : float
        Size of one panel in inches.
    max_cols : int
        Most panels in a row.

    Returns
    -------
    tuple of (matplotlib.figure.Figure, list of matplotlib.axes.Axes)
        The figure and its ``n`` Axes in reading order (spare cells are hidden).
    """
    cols = min(n, max_cols)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])
