"""Run independent fits on the local cores (a process pool) or on a Ray cluster, with a progress bar.

Both backends return ``[func(item) for item in items]`` in the order of ``items``, and both run
each item in a worker with single-threaded BLAS, so a grid gives the same numbers bit for bit
whichever backend ran it.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import TypeVar

from threadpoolctl import threadpool_limits

from benchcast.errors import BenchcastError
from benchcast.utils import memo
from benchcast.utils.progress import silence, track

T = TypeVar("T")
R = TypeVar("R")

BACKENDS = ("process", "ray")
RAY_INSTALL = "pip install 'benchcast[ray]'"


def default_jobs() -> int:
    """Worker processes by default: every core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def resolve_jobs(n_jobs: int | None) -> int:
    """The number of local worker processes ``n_jobs`` asks for (None: every core; at least 1)."""
    return default_jobs() if n_jobs is None else max(1, n_jobs)


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies (Linux)
WATCH_SECONDS = 1.0  # how often a worker checks that its parent is alive where prctl is not there


def _worker_start(parent: int) -> None:
    """A pool worker's start: single-threaded BLAS, no progress bars or stored solves of its own, and an end with its
    parent."""
    # Fits use tiny matrices: BLAS threads only spin against the other workers (a 3-4x slowdown).
    threadpool_limits(1)
    silence()  # the parent counts the workers' results; a worker's own bars would fight over the terminal
    memo.clear()  # a forked worker computes its answers, not copies of the parent's stored ones
    # end with the parent: prctl PR_SET_PDEATHSIG on Linux, else a watchdog thread
    import ctypes
    import ctypes.util
    import signal
    import threading

    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a parent's handler (utils.io's, while writing) is not the worker's
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watchdog alone
        pass

    def watch() -> None:
        """Exit at once (no cleanup: the parent that wanted the results is gone) when the parent changes."""
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="benchcast-parent-watch", daemon=True).start()


def parallel_map(
    func: Callable[[T], R],
    items: Iterable[T],
    *,
    n_jobs: int | None = None,
    description: str = "working",
    progress: bool | None = None,
    backend: str | None = None,
    ray_address: str | None = None,
    sizes: Sequence[int] | None = None,
    unit: str = "",
) -> list[R]:
    """``[func(item) for item in items]``, in order, spread over workers."""
    items = list(items)
    backend = backend or ("ray" if ray_address is not None else "process")
    if backend not in BACKENDS:
        raise BenchcastError(f"unknown parallel backend {backend!r}; expected one of {', '.join(BACKENDS)}.")
    shown = {"enabled": progress, "sizes": sizes, "unit": unit}
    if backend == "ray":
        return _ray_map(func, items, ray_address, description, shown)
    n_jobs = resolve_jobs(n_jobs)
    if n_jobs == 1 or len(items) <= 1:
        return [func(item) for item in track(items, description, **shown)]
    chunksize = 1  # tasks are whole fits: balance beats batching
    with ProcessPoolExecutor(
        max_workers=min(n_jobs, len(items)), initializer=_worker_start, initargs=(os.getpid(),)
    ) as pool:
        total = None if sizes is not None else len(items)
        done = list(
            track(pool.map(partial(_warned, func), items, chunksize=chunksize), description, total=total, **shown)
        )
    # a worker's warnings are said here, in the items' order, each distinct one once, as a loop would say them
    registry: dict = {}
    for _, said in done:
        for category, message, filename, lineno in said:
            warnings.warn_explicit(message, category, filename, lineno, registry=registry)
    return [result for result, _ in done]


def _warned(func: Callable[[T], R], item: T) -> tuple[R, list[tuple]]:
    """``func(item)`` and the warnings it raised, for the parent to say."""
    with warnings.catch_warnings(record=True) as caught:
        result = func(item)
    return result, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def _ray_call(func: Callable[[T], R], item: T) -> R:
    silence()
    memo.clear()  # Ray keeps its worker processes between calls: each call computes its answers afresh
    with threadpool_limits(1):  # the same single-threaded BLAS as the process pool's workers
        return func(item)


def _ray_map(func: Callable[[T], R], items: list[T], address: str | None, description: str, shown: dict) -> list[R]:
    if not items:
        return []
    try:
        import ray
    except ImportError as exc:
        raise BenchcastError(f"running on Ray needs the 'ray' package, which is not installed: {RAY_INSTALL}.") from exc
    if not ray.is_initialized():
        try:
            if address is None:  # a local cluster of this machine's cores
                ray.init(include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise BenchcastError(f"could not connect to the Ray cluster at {address!r}: {exc}") from exc
    task = ray.remote(_ray_call)
    shared = ray.put(func)  # the function (and e.g. the data table it carries) is shipped once
    refs = [task.remote(shared, item) for item in items]
    # ray.wait hands the tasks back as they finish, not in order: count items, not their sizes
    pending = list(refs)
    for _ in track(refs, f"{description} (ray)", enabled=shown["enabled"]):
        _, pending = ray.wait(pending, num_returns=1)  # one more task finished
    return ray.get(refs)
