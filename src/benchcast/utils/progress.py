"""Progress for long loops: a Rich bar on a terminal; plain, throttled lines on stderr when piped.

The command line switches the plain lines on (:func:`report_when_piped`): a command whose stderr
goes to a pipe or a log file then still says what it is doing (``sweep power arc_easy: 4/13,
41 s``) instead of staying silent for minutes. Library callers get no lines unless they ask.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

T = TypeVar("T")

LINE_INTERVAL_S = 5.0  # at most one plain line per this many seconds (plus the first and last)
_plain_when_piped = False


def report_when_piped(enabled: bool = True) -> None:
    """Print plain progress lines on stderr when it is not a terminal (the CLI turns this on).

    Parameters
    ----------
    enabled : bool
        Switch the plain lines on or off.
    """
    global _plain_when_piped
    _plain_when_piped = enabled


def _plain_lines(items: Iterable[T], description: str, total: int | None) -> Iterator[T]:
    start = last = time.monotonic()
    of = f"/{total}" if total is not None else ""
    print(f"{description}: 0{of}", file=sys.stderr, flush=True)
    done = 0
    for item in items:
        yield item
        done += 1
        now = time.monotonic()
        if now - last >= LINE_INTERVAL_S and (total is None or done < total):
            print(f"{description}: {done}{of}, {now - start:.0f} s", file=sys.stderr, flush=True)
            last = now
    print(f"{description}: {done}{of} done in {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)


def track(items: Iterable[T], description: str, total: int | None = None, enabled: bool | None = None) -> Iterator[T]:
    """Iterate with progress on stderr: a bar on a terminal, plain lines when piped (if switched
    on with :func:`report_when_piped`), nothing when ``enabled`` is False.

    Parameters
    ----------
    items : iterable
        What to iterate over.
    description : str
        The bar's label.
    total : int, optional
        How many items (default: ``len(items)`` where it has one).
    enabled : bool, optional
        False: no progress; None: only on a terminal or when piped lines are on.

    Yields
    ------
    object
        Each item, in order.
    """
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    terminal = sys.stderr.isatty()
    if enabled is False or (enabled is None and not terminal and not _plain_when_piped):
        yield from items
        return
    if not terminal:
        yield from _plain_lines(items, description, total)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)
