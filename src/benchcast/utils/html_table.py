"""HTML table cells and tables, escaped and formatted one way: the report's tables and every
result's notebook view (:meth:`benchcast.utils.display.ResultView._repr_html_`) use them."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence


def esc(value) -> str:
    """HTML-escape any value's text (quotes too)."""
    return html.escape(str(value), quote=True)


def fmt(value, spec: str = ".3g") -> str:
    """A number for a table cell; missing values show as an em dash, never as 'nan'."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return format(value, spec)
    return str(value)


def cell(value, spec: str = ".3g") -> str:
    """One ``<td>``: numbers right-aligned with a sort key, text (or :class:`Markup`) left-aligned."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        sort = "" if not math.isfinite(float(value)) else f' data-sort="{float(value):.10g}"'
        return f"<td{sort}>{esc(fmt(value, spec))}</td>"
    if isinstance(value, Markup):
        return f'<td class="text">{value}</td>'
    return f'<td class="text">{esc(fmt(value, spec))}</td>'


class Markup(str):
    """Already-escaped HTML for a table cell."""


def table(
    columns: Sequence[str],
    rows: Iterable[Sequence],
    *,
    caption: str = "",
    sortable: bool = False,
    text_columns: int = 1,
    spec: str = ".3g",
) -> str:
    """A scrollable table, sortable by its headers when ``sortable``."""
    head = "".join(
        f'<th scope="col"{" class=text" if i < text_columns else ""}>{esc(c)}</th>' for i, c in enumerate(columns)
    )
    body = "".join("<tr>" + "".join(cell(v, spec) for v in row) + "</tr>" for row in rows)
    cls = ' class="sortable"' if sortable else ""
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f'<div class="scroll"><table{cls}>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
