"""Argument checks at the API boundary: levels, replicate counts, positive sizes, thresholds, names.

Each check returns the value in the form the caller uses (a float, an int, a sorted tuple) or
raises a :class:`~benchcast.errors.BenchcastError` that names the argument, what was given and
what is expected; the CLI prints that as its one-paragraph error. This is the lowest layer: it
imports only :mod:`benchcast.errors` and numpy, so every other module may use it; numpy inside the
checks, so that the command line declares its options with :data:`MIN_REPLICATES` without loading it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from benchcast.errors import BenchcastError, did_you_mean

if TYPE_CHECKING:
    import pandas as pd

INTERVALS = ("extrapolation", "bootstrap")  # the kinds of forecast interval, the default first
MIN_REPLICATES = 10  # fewer draws cannot place the tails of a 90 % interval


def check_level(level: float) -> float:
    """An interval level strictly between 0 and 1."""
    import numpy as np

    number = isinstance(level, (int, float, np.integer, np.floating)) and not isinstance(level, bool)
    if not (number and 0 < level < 1):
        shown = f"{float(level):g}" if number else repr(level)  # 90, not np.float64(90.0)
        hint = f" ({shown} %? give {float(level) / 100:g})" if number and 1 < level < 100 else ""
        raise BenchcastError(f"interval level must lie strictly between 0 and 1 (e.g. 0.9), got {shown}{hint}.")
    return float(level)


def check_replicates(n_boot, *, allow_zero: bool) -> int:
    """A bootstrap replicate count a percentile interval can stand on."""
    import numpy as np

    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)):
        raise BenchcastError(f"the number of bootstrap replicates must be an integer, got {n_boot!r}.")
    if n_boot == 0 and allow_zero:
        return 0
    if n_boot < MIN_REPLICATES:
        raise BenchcastError(
            f"need at least {MIN_REPLICATES} bootstrap replicates for an interval, got {n_boot}"
            + (" (0 turns intervals off)." if allow_zero else ".")
        )
    return int(n_boot)


def check_interval(name: str) -> str:
    """The name of a kind of forecast interval (one of ``INTERVALS``)."""
    if name not in INTERVALS:
        raise BenchcastError(f"unknown interval {name!r}; expected one of {', '.join(INTERVALS)}.")
    return name


def check_positive(name: str, value) -> float | None:
    """An optional size (compute, tokens per parameter...) that must be a positive finite number."""
    if value is None:
        return None
    import numpy as np

    if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
        raise BenchcastError(f"{name} must be a positive finite number, got {value!r}.")
    return float(value)


def check_score(name: str, value) -> float:
    """A score strictly between 0 and 1 (a target to plan for)."""
    if not (isinstance(value, (int, float)) and 0 < value < 1):
        raise BenchcastError(f"{name} must lie in (0, 1), got {value!r}.")
    return float(value)


def check_count(name: str, value, *, minimum: int = 1) -> int | None:
    """An optional whole number of at least ``minimum`` (k attempts, a number of cutoffs...)."""
    if value is None:
        return None
    import numpy as np

    integral = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (integral and np.isfinite(value) and int(value) == value and value >= minimum):
        raise BenchcastError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_thresholds(thresholds) -> tuple[float, ...]:
    """A grid of compute thresholds, sorted; each a positive finite number of FLOPs."""
    grid = tuple(sorted(float(t) for t in thresholds))
    import numpy as np

    bad = [t for t in grid if not (np.isfinite(t) and t > 0)]
    if not grid or bad:
        raise BenchcastError(f"sweep thresholds must be positive finite FLOPs, got {list(thresholds)!r}.")
    return grid


def check_law(name: str, available: Iterable[str]) -> str:
    """A law name that is in the registry."""
    available = list(available)
    if name not in available:
        raise BenchcastError(f"unknown law {name!r}." + did_you_mean(name, available))
    return name


def check_columns(frame: pd.DataFrame, required: Iterable[str], where: str, error: type = BenchcastError) -> None:
    """Refuse a table that lacks a column it needs, naming the missing and the present ones."""
    missing = [c for c in dict.fromkeys(required) if c not in frame.columns]
    if missing:
        found = ", ".join(repr(str(c)) for c in frame.columns) or "none"
        raise error(f"{where} lack column(s) {', '.join(map(repr, missing))} (found {found}).")
