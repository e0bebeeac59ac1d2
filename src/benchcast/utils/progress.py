"""Progress for long loops: a Rich bar on a terminal; plain, throttled lines on stderr when piped.

A step shows nothing for its first :data:`DELAY_S` seconds, so the many sub-second steps of a
command stay silent and only the long ones say what they are doing. The command line switches the
plain lines on (:func:`report_when_piped`): a command whose stderr goes to a pipe or a log file then
still says what it is doing (``sweep power arc_easy: 4/13, 41 s``) every :data:`LINE_INTERVAL_S`
seconds instead of staying silent for minutes. Library callers get no lines unless they ask.
Loops inside a loop share the outer one's display (one bar per running loop); worker processes
(:func:`silence`) show nothing: their parent counts their results.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

T = TypeVar("T")

DELAY_S = 2.0  # a step shorter than this shows nothing
LINE_INTERVAL_S = 5.0  # at most one plain line per this many seconds per step (plus its last)
TICK_S = 0.5  # how often the plain lines' clock looks at the running steps
_plain_when_piped = False
_silenced = False
_lock = threading.RLock()


def report_when_piped(enabled: bool = True) -> None:
    """Print plain progress lines on stderr when it is not a terminal (the CLI turns this on)."""
    global _plain_when_piped
    _plain_when_piped = enabled


def silence() -> None:
    """Show no progress from this process (a worker: its parent shows the count of its results)."""
    global _silenced
    _silenced = True


@dataclass
class _Step:
    description: str
    total: int | None
    unit: str
    start: float = field(default_factory=time.monotonic)
    done: int = 0
    printed: float | None = None  # when its last plain line was printed (None: none yet)
    task: TaskID | None = None  # its row in the shared bar

    def counts(self) -> str:
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.done}{of}" + (f" {self.unit}" if self.unit else "")


class _DelayedProgress(Progress):
    """Rich's progress, drawing only the tasks that have run for :data:`DELAY_S` seconds."""

    def get_renderables(self):
        shown = [t for t in self.tasks if t.visible and (t.elapsed or 0.0) >= DELAY_S]
        if shown:
            yield self.make_tasks_table(shown)


class _Display:
    """The running steps of this process, drawn as one shared bar or as plain lines."""

    def __init__(self) -> None:
        self.steps: list[_Step] = []
        self.bar: _DelayedProgress | None = None
        self.ticker: threading.Thread | None = None

    def open(self, step: _Step, terminal: bool) -> None:
        with _lock:
            self.steps.append(step)
            if terminal:
                if self.bar is None:
                    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
                    self.bar = _DelayedProgress(*columns, console=Console(stderr=True), transient=True)
                    self.bar.start()
                step.task = self.bar.add_task(step.description, total=step.total)
            elif self.ticker is None or not self.ticker.is_alive():
                self.ticker = threading.Thread(target=self._tick, daemon=True)
                self.ticker.start()

    def advance(self, step: _Step, amount: int) -> None:
        with _lock:
            step.done += amount
            if step.task is not None and self.bar is not None:
                self.bar.update(step.task, completed=step.done)
            else:
                self._print_due(step, time.monotonic())

    def close(self, step: _Step) -> None:
        with _lock:
            self.steps.remove(step)
            if step.task is not None and self.bar is not None:
                self.bar.remove_task(step.task)
                if not any(s.task is not None for s in self.steps):
                    self.bar.stop()
                    self.bar = None
            elif step.printed is not None:  # it said it was running: say it ended
                elapsed = time.monotonic() - step.start
                print(f"{step.description}: {step.counts()} done in {elapsed:.1f} s", file=sys.stderr, flush=True)

    def _print_due(self, step: _Step, now: float) -> None:
        elapsed = now - step.start
        due = step.printed is None or now - step.printed >= LINE_INTERVAL_S
        if elapsed >= DELAY_S and due:
            print(f"{step.description}: {step.counts()}, {elapsed:.0f} s", file=sys.stderr, flush=True)
            step.printed = now

    def _tick(self) -> None:
        # a step whose items each take long still prints a line every few seconds
        while True:
            time.sleep(TICK_S)
            with _lock:
                plain = [s for s in self.steps if s.task is None]
                if not plain:
                    self.ticker = None
                    return
                now = time.monotonic()
                for step in plain:
                    self._print_due(step, now)


_display = _Display()


def track(
    items: Iterable[T],
    description: str,
    total: int | None = None,
    enabled: bool | None = None,
    *,
    sizes: Sequence[int] | None = None,
    unit: str = "",
) -> Iterator[T]:
    """Iterate with progress on stderr once the loop has run :data:`DELAY_S` seconds (not in workers)."""
    if sizes is not None:
        sizes = [int(s) for s in sizes]
        total = sum(sizes) if total is None else total
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    terminal = sys.stderr.isatty()
    if _silenced or enabled is False or (enabled is None and not terminal and not _plain_when_piped):
        yield from items
        return
    step = _Step(description, total, unit)
    _display.open(step, terminal)
    try:
        for index, item in enumerate(items):
            yield item
            _display.advance(step, sizes[index] if sizes is not None else 1)
    finally:
        _display.close(step)
