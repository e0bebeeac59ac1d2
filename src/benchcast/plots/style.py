"""One look for every figure benchcast draws: a colour per law, titles, legends outside the data, sizes, saving."""

from __future__ import annotations

import base64
import io
import zlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from benchcast.laws import available_laws  # noqa: E402
from benchcast.plots.labels import figure_title  # noqa: E402, F401 (drawn with the figures)
from benchcast.plots.options import check_figure_options  # noqa: E402
from benchcast.plots.ticks import readable_log_axis  # noqa: E402
from benchcast.utils.io import atomic_write  # noqa: E402

# Colour-blind-safe, distinct from the crimson of held-out runs and the greys of fitted/unused runs.
# (blue, orange, green, purple, brown, pink, olive, cyan, indigo, moss, ochre, plum)
LAW_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#7b4173",
)
# Strategies that combine laws: the default blend in black, the others in dark neutral tones.
STRATEGY_COLORS = {"ensemble": "black", "stack": "#6b6ecf", "select": "#b5cf6b"}
# legend lines this many font sizes long: a dashed line with a marker in its middle shows its gaps (at the
# default 2 a 1.5-pt dash's first gap lies under the marker, and the entry reads as a solid line)
HANDLE_LENGTH = 3.2
FONT = {"title": 9, "label": 8, "tick": 7, "legend": 7, "suptitle": 10}


def law_color(name: str) -> str:
    """The colour of a law or strategy, the same in every figure (a ``[suffix]`` keeps its name's colour)."""
    base = str(name).split("[")[0].split(" (")[0].strip()
    if base in STRATEGY_COLORS:
        return STRATEGY_COLORS[base]
    laws = available_laws()
    if base in laws:
        return LAW_PALETTE[laws.index(base) % len(LAW_PALETTE)]
    return LAW_PALETTE[zlib.crc32(base.encode()) % len(LAW_PALETTE)]


def law_linestyle(name: str) -> str:
    """Solid for a law or strategy, dashed for a variant of one (a name with a bracketed suffix)."""
    return "--" if str(name).rstrip().endswith("]") else "-"


def style_axes(ax, xlabel: str = "", ylabel: str = "", title: str = "", xlog: bool = False, ylog: bool = False):
    """Labels, title, readable log axes and tick sizes of one panel."""
    if xlog:
        readable_log_axis(ax, "x")
    if ylog:
        readable_log_axis(ax, "y")
    if xlabel:
        ax.set_xlabel(xlabel, fontsize=FONT["label"])
    if ylabel:
        ax.set_ylabel(ylabel, fontsize=FONT["label"])
    if title:
        ax.set_title(title, fontsize=FONT["title"])
    ax.tick_params(labelsize=FONT["tick"])
    return ax


def legend_outside(ax, where: str = "right", ncol: int = 1):
    """The panel's legend outside its data: to the right of the axes or below them."""
    if not ax.get_legend_handles_labels()[1]:
        return None
    if where == "below":
        return ax.legend(
            fontsize=FONT["legend"], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, frameon=False
        )
    return ax.legend(fontsize=FONT["legend"], loc="upper left", bbox_to_anchor=(1.02, 1.0), ncol=ncol, frameon=False)


def panel_legend(ax, given: bool, where: str = "right", ncol: int = 1):
    """The legend of a panel: outside its data when alone, else one for a caller's grid (:func:`grid_legend`)."""
    if given and len([a for a in ax.figure.axes if a.get_visible()]) > 1:
        if ax.get_legend() is not None:  # one drawn by a figure this one builds on (a forecast over its fit)
            ax.get_legend().remove()
        _wrap_title(ax)
        return grid_legend(ax.figure)
    return legend_outside(ax, where, ncol)


def _wrap_title(ax) -> None:
    """Break a panel's title into lines as wide as the panel."""
    import textwrap

    title = ax.get_title()
    inches = ax.get_position().width * ax.figure.get_figwidth()
    chars = max(int(inches * 72 / (0.55 * FONT["title"])), 12)  # a character is about 0.55 em wide
    if title and "\n" not in title and len(title) > chars:
        ax.set_title(textwrap.fill(title, chars, break_on_hyphens=False), fontsize=FONT["title"])


GRID_LEGEND = "_benchcast_grid_legend"  # marks the figure legend grid_legend made, so that a later call replaces it


def grid_legend(fig, ncol: int = 4):
    """One legend below a caller's grid of panels, of every panel's entries, replacing an earlier one."""
    for old in [legend for legend in fig.legends if getattr(legend, GRID_LEGEND, False)]:
        old.remove()
    engine = fig.get_layout_engine()
    if engine is None or type(engine).__name__ != "ConstrainedLayoutEngine":
        try:
            fig.set_layout_engine("constrained")
        except RuntimeError:  # an engine that cannot be swapped (colorbars placed by another): keep it
            pass
    legend = figure_legend(fig, [a for a in fig.axes if a.get_visible() and a.get_legend() is None], ncol)
    if legend is not None:
        setattr(legend, GRID_LEGEND, True)
    return legend


def figure_legend(fig, axes, ncol: int = 4):
    """One legend below the whole figure for panels that share their entries (deduplicated by label)."""
    found = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(label, handle)
    if not found:
        return None
    look = {"fontsize": FONT["legend"], "frameon": False, "handlelength": HANDLE_LENGTH}
    return fig.legend(list(found.values()), list(found), loc="outside lower center", ncol=min(ncol, len(found)), **look)


def panel_grid(n: int, width: float = 3.6, height: float = 2.9, max_cols: int = 4):
    """A constrained-layout grid of exactly ``n`` panels, at most ``max_cols`` per row."""
    cols = max(1, min(n, max_cols))
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.remove()
    return fig, list(axes.flat[:n])


def given_axes(ax, n: int, width: float = 3.6, height: float = 2.9, max_cols: int = 4):
    """The ``n`` panels to draw into: those given, or a new :func:`panel_grid`."""
    if ax is None:
        return panel_grid(n, width, height, max_cols)
    axes = [ax] if hasattr(ax, "plot") else list(ax)
    if len(axes) != n:
        from benchcast.errors import BenchcastError

        raise BenchcastError(f"this figure has {n} panel(s); ax must be {n} matplotlib Axes, got {len(axes)}.")
    return axes[0].figure, axes


def _literal_text(fig) -> None:
    """Draw every text but the tick labels as written: a '$' in a name is a dollar, not mathtext."""
    from matplotlib.text import Text

    # an inset (a colour bar inside a panel) is a child of its panel, not in fig.axes: its ticks are ticks too
    every = [*fig.axes, *(child for ax in fig.axes for child in ax.child_axes)]
    ticks = {
        id(label)
        for ax in every
        for axis in (ax.xaxis, ax.yaxis)
        for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks())
        for label in (tick.label1, tick.label2)
    }
    for text in fig.findobj(Text):
        if id(text) not in ticks:
            text.set_parse_math(False)


def figure_bytes(fig, figure_format: str = "png", dpi: int | None = None) -> bytes:
    """The figure in a file format, as bytes (the figure stays open)."""
    figure_format, dpi = check_figure_options(figure_format, dpi)
    _literal_text(fig)
    buffer = io.BytesIO()
    # no dates in the files: the same figure gives the same bytes
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[figure_format]
    fig.savefig(buffer, format=figure_format, dpi=dpi, metadata=metadata)
    return buffer.getvalue()


def data_uri(fig, figure_format: str = "png", dpi: int | None = None) -> str:
    """The figure as a base64 data URI (SVG or PNG, for an HTML page), and close it."""
    fmt = "svg" if figure_format == "svg" else "png"
    content = figure_bytes(fig, fmt, dpi)
    plt.close(fig)
    kind = "svg+xml" if fmt == "svg" else "png"
    return f"data:image/{kind};base64," + base64.b64encode(content).decode("ascii")


def save_figure(fig, path: str | Path, figure_format: str | None = None, dpi: int | None = None) -> Path:
    """Save atomically as ``figure_format`` (else the path's suffix, else png) and close the figure."""
    path = Path(path)
    fmt = figure_format or path.suffix.lstrip(".") or "png"
    fmt, dpi = check_figure_options(fmt, dpi)
    path = path.with_suffix(f".{fmt}")
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(figure_bytes(fig, fmt, dpi)))
    plt.close(fig)
    return path
