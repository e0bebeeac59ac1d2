"""Shared CLI plumbing: JSON/Rich output, and turning user errors into exit status 2."""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Callable

import typer
from rich.console import Console
from rich.table import Table

from benchcast.errors import BenchcastError, FitWarning
from benchcast.utils.jsonable import jsonable

console = Console()
if not console.is_terminal:  # pipes and files get whole tables, not 80-column truncations
    console = Console(width=200)
err_console = Console(stderr=True)
EXIT_USER_ERROR = 2


def emit_json(payload) -> None:
    typer.echo(json.dumps(jsonable(payload), indent=2))


def user_errors(command: Callable) -> Callable:
    """Run a command; user errors print one paragraph and exit 2; fit warnings go to stderr."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            try:
                result = command(*args, **kwargs)
            except BenchcastError as exc:
                err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
                raise typer.Exit(EXIT_USER_ERROR) from None
            except (OSError, ValueError) as exc:
                if os.environ.get("BENCHCAST_DEBUG"):
                    raise
                err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
                raise typer.Exit(EXIT_USER_ERROR) from None
        shown = set()
        for item in caught:
            if issubclass(item.category, FitWarning) and str(item.message) not in shown:
                shown.add(str(item.message))
                err_console.print(f"[yellow]warning:[/] {item.message}", highlight=False, soft_wrap=True)
        return result

    return wrapper


def rich_table(title: str, columns: list[str], rows: list[list], floatfmt: str = ".4g") -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(
            column,
            justify="left"
            if column in ("run", "benchmark", "law", "metric", "parameter", "name", "formula")
            else "right",
        )
    for row in rows:
        table.add_row(*[format(v, floatfmt) if isinstance(v, float) else str(v) for v in row])
    return table


def parse_ks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchcastError(f"--k/--ks must be comma-separated integers, got {text!r}.") from None
    if not ks or min(ks) < 1:
        raise BenchcastError(f"--k/--ks must hold integers >= 1, got {text!r}.")
    return ks
