"""Run independent fits on the local cores (a process pool), with a progress bar."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

from threadpoolctl import threadpool_limits

from benchcast.utils.progress import track

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _single_threaded_blas() -> None:
    # Fits use tiny matrices: BLAS threads only spin against the other workers (a 3-4x slowdown).
    threadpool_limits(1)


def parallel_map(
    func: Callable[[T], R],
    items: Iterable[T],
    *,
    n_jobs: int | None = None,
    description: str = "working",
    progress: bool | None = None,
) -> list[R]:
    """``[func(item) for item in items]``, in order, spread over ``n_jobs`` processes.

    ``func`` must be picklable (a module-level function or a ``functools.partial`` of one).
    ``n_jobs=1`` runs in this process, which is also what happens for a single item.
    """
    items = list(items)
    n_jobs = default_jobs() if n_jobs is None else max(1, n_jobs)
    if n_jobs == 1 or len(items) <= 1:
        return [func(item) for item in track(items, description, enabled=progress)]
    chunksize = 1  # tasks are whole fits: balance beats batching
    with ProcessPoolExecutor(max_workers=min(n_jobs, len(items)), initializer=_single_threaded_blas) as pool:
        return list(track(pool.map(func, items, chunksize=chunksize), description, total=len(items), enabled=progress))
