"""One way for every result type to show itself: ``to_dict()`` for JSON, ``str()`` for the
terminal, ``_repr_html_()`` for a notebook (the manner of lmfit's ``ModelResult``).

A result subclasses :class:`ResultView` and implements ``to_dict`` and ``to_frame`` (its table:
one row per point, law, benchmark...); ``title`` and ``notes`` add a heading and the sentences a
reader needs beside the table (how many replicates, what was refused and why)."""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from benchcast.utils.html_table import table


def format_cell(value) -> str:
    """A table cell as a person reads it: 4 significant digits, '-' where a value does not exist."""
    if value is None or value is pd.NA:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            return "-" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return f"{value:.4g}"
    return str(value)


def _text_table(frame: pd.DataFrame) -> str:
    """A plain, aligned text table (no index)."""
    if frame.empty:
        return "(no rows)"
    header = [str(c) for c in frame.columns]
    rows = [[format_cell(v) for v in record] for record in frame.itertuples(index=False, name=None)]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def html_table(frame: pd.DataFrame) -> str:
    """The frame as the report's HTML table (:func:`benchcast.utils.html_table.table`), numbers to 4 digits."""
    rows = ([v.item() if isinstance(v, np.generic) else v for v in record] for record in frame.itertuples(index=False))
    return table([str(c) for c in frame.columns], rows, spec=".4g")


class ResultView:
    """Mixin for result types. Subclasses implement :meth:`to_dict` and :meth:`to_frame`."""

    def to_dict(self) -> dict:
        """JSON-ready content (what ``--json`` prints).

        Returns
        -------
        dict
            Plain numbers, strings, lists and dicts.
        """
        raise NotImplementedError

    def to_frame(self) -> pd.DataFrame:
        """The result's table.

        Returns
        -------
        DataFrame
            What ``__str__`` and ``_repr_html_`` show.
        """
        raise NotImplementedError

    @property
    def title(self) -> str:
        """A one-line heading."""
        return type(self).__name__

    @property
    def notes(self) -> list[str]:
        """Sentences printed under the table."""
        return []

    def __str__(self) -> str:
        return "\n".join([self.title, _text_table(self.to_frame()), *self.notes])

    def _repr_html_(self) -> str:
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self.notes)
        return f"<div><strong>{html.escape(self.title)}</strong>{html_table(self.to_frame())}{notes}</div>"


class FigureView:
    """Mixin for result types with a figure (:meth:`plot`)."""

    def plot(self, ax=None, **style):
        """The result's figure (:mod:`benchcast.plots`; matplotlib loads only when a figure is drawn).

        Parameters
        ----------
        ax : matplotlib.axes.Axes or sequence of them, optional
            The panel(s) to draw into (default: a new figure).
        **style
            Where the figure takes them: matplotlib keywords of its curve, or ``title``.

        Returns
        -------
        matplotlib.axes.Axes or matplotlib.figure.Figure
            The panel or the figure, to restyle or save.
        """
        raise NotImplementedError


class WrittenView(FigureView):
    """Mixin for result types written to a folder: their table and figure (:meth:`write`)."""

    def write(self, out, figure_format: str = "png", dpi: int | None = None) -> None:
        """The result's table (CSV) and the figure of :meth:`plot` into the folder ``out`` (complete or absent).

        Parameters
        ----------
        out : str or Path
            The output folder.
        figure_format : {'png', 'svg', 'pdf'}
            The figure's file format.
        dpi : int, optional
            Raster resolution (default :data:`benchcast.plots.options.DEFAULT_DPI`).
        """
        raise NotImplementedError
