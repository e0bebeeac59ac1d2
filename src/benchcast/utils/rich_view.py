"""Results that print themselves as the CLI prints them: Rich tables and lines of Rich markup.

A result subclasses :class:`RichView` and lists what it prints in :meth:`RichView.rich_items`;
``console.print(result)`` then prints exactly that (in a terminal, with its colours), and
``str(result)`` is the same text, plain, 200 columns wide (what the CLI writes to a pipe)."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from benchcast.utils.display import ResultView

TEXT_WIDTH = 200  # the CLI's width when its output is not a terminal
LEFT_COLUMNS = ("run", "benchmark", "law", "metric", "parameter", "name", "formula")


NO_VALUE = "—"  # a value that does not exist (NaN): a dash, not the text "nan"


def missing(value) -> bool:
    """Whether a table's cell is a float that does not exist (NaN or infinite: the terminal shows :data:`NO_VALUE`)."""
    return isinstance(value, float) and not math.isfinite(value)


def _shown(value, floatfmt: str) -> str:
    if isinstance(value, float):
        return NO_VALUE if math.isnan(value) else format(value, floatfmt)
    return escape(str(value))


def rich_table(title: str, columns: list[str], rows: list[list], floatfmt: str = ".4g") -> Table:
    """A Rich table: floats as ``floatfmt``, other cells escaped text. A cell too wide for its column folds onto more
    lines, never cut with an ellipsis: a cut name or message reads as another, and a cut number is a wrong one."""
    table = Table(title=escape(title), title_justify="left")
    for column in columns:
        table.add_column(escape(column), justify="left" if column in LEFT_COLUMNS else "right", overflow="fold")
    for row in rows:
        table.add_row(*[_shown(v, floatfmt) for v in row])
    return table


@dataclass(frozen=True)
class Markup:
    """A line of Rich markup, printed as ``console.print(text, highlight=highlight)`` prints it."""

    text: str
    highlight: bool = True


class RichView(ResultView):
    """A :class:`ResultView` whose ``__str__`` is its CLI text (see the module docstring)."""

    def rich_items(self) -> list:
        """What the CLI prints, in order: Rich renderables and :class:`Markup` lines.

        Returns
        -------
        list
            Renderables and markup lines.
        """
        raise NotImplementedError

    def __rich_console__(self, console, options):
        for item in self.rich_items():
            yield console.render_str(item.text, highlight=item.highlight) if isinstance(item, Markup) else item

    def __str__(self) -> str:
        console = Console(width=TEXT_WIDTH, file=io.StringIO(), force_terminal=False, color_system=None)
        console.print(self)
        return console.file.getvalue().rstrip("\n")
