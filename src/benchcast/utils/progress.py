"""Rich progress bars for long loops, shown only on an interactive terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

T = TypeVar("T")


def track(items: Iterable[T], description: str, total: int | None = None, enabled: bool | None = None) -> Iterator[T]:
    """Iterate with a progress bar on stderr (silent when stderr is not a terminal)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield from items
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total if total is not None else len(items))  # type: ignore[arg-type]
        for item in items:
            yield item
            progress.advance(task)
