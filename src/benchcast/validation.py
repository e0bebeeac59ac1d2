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
    """An interval level strictly between 0 and 1.

    Parameters
    ----------
    level : float
        The coverage asked of an interval, e.g. 0.9.

    Returns
    -------
    float
        ``level`` as a float.
    """
    import numpy as np

    if isinstance(level, bool) or not (isinstance(level, (int, float, np.integer, np.floating)) and 0 < level < 1):
        raise BenchcastError(f"interval level must lie strictly between 0 and 1 (e.g. 0.9), got {level!r}.")
    return float(level)


def check_replicates(n_boot, *, allow_zero: bool) -> int:
    """A bootstrap replicate count a percentile interval can stand on.

    Parameters
    ----------
    n_boot : int
        Number of replicates; at least ``MIN_REPLICATES``.
    allow_zero : bool
        Whether 0 (no interval at all) is accepted.

    Returns
    -------
    int
        ``n_boot`` as an int.
    """
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
    """The name of a kind of forecast interval (one of ``INTERVALS``).

    Parameters
    ----------
    name : str
        ``'extrapolation'`` or ``'bootstrap'``.

    Returns
    -------
    str
        ``name`` unchanged.
    """
    if name not in INTERVALS:
        raise BenchcastError(f"unknown interval {name!r}; expected one of {', '.join(INTERVALS)}.")
    return name


def check_positive(name: str, value) -> float | None:
    """An optional size (compute, tokens per parameter...) that must be a positive finite number.

    Parameters
    ----------
    name : str
        The argument's name, used in the message.
    value : float or None
        The value; None means "not given" and passes through.

    Returns
    -------
    float or None
        ``value`` as a float, or None.
    """
    if value is None:
        return None
    import numpy as np

    if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
        raise BenchcastError(f"{name} must be a positive finite number, got {value!r}.")
    return float(value)


def check_score(name: str, value) -> float:
    """A score strictly between 0 and 1 (a target to plan for).

    Parameters
    ----------
    name : str
        The argument's name, used in the message.
    value : float
        The score.

    Returns
    -------
    float
        ``value`` as a float.
    """
    if not (isinstance(value, (int, float)) and 0 < value < 1):
        raise BenchcastError(f"{name} must lie in (0, 1), got {value!r}.")
    return float(value)


def check_count(name: str, value, *, minimum: int = 1) -> int | None:
    """An optional whole number of at least ``minimum`` (k attempts, a number of cutoffs...).

    Parameters
    ----------
    name : str
        The argument's name, used in the message.
    value : int or None
        The value; None passes through. A float with an integral value (``8.0``) is accepted.
    minimum : int
        The smallest value allowed.

    Returns
    -------
    int or None
        ``value`` as an int, or None.
    """
    if value is None:
        return None
    import numpy as np

    integral = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (integral and np.isfinite(value) and int(value) == value and value >= minimum):
        raise BenchcastError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_thresholds(thresholds) -> tuple[float, ...]:
    """A grid of compute thresholds, sorted; each a positive finite number of FLOPs.

    Parameters
    ----------
    thresholds : iterable of float
        The thresholds (at least one).

    Returns
    -------
    tuple of float
        The thresholds in increasing order.
    """
    grid = tuple(sorted(float(t) for t in thresholds))
    import numpy as np

    bad = [t for t in grid if not (np.isfinite(t) and t > 0)]
    if not grid or bad:
        raise BenchcastError(f"sweep thresholds must be positive finite FLOPs, got {list(thresholds)!r}.")
    return grid


def check_law(name: str, available: Iterable[str]) -> str:
    """A law name that is in the registry.

    Parameters
    ----------
    name : str
        The law's registry name.
    available : iterable of str
        The registered names (:func:`benchcast.laws.available_laws`).

    Returns
    -------
    str
        ``name`` unchanged.
    """
    available = list(available)
    if name not in available:
        raise BenchcastError(f"unknown law {name!r}." + did_you_mean(name, available))
    return name


def check_columns(frame: pd.DataFrame, required: Iterable[str], where: str, error: type = BenchcastError) -> None:
    """Refuse a table that lacks a column it needs, naming the missing and the present ones.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    required : iterable of str
        Columns it must have.
    where : str
        What the table holds, as a plural subject that starts the message ("fit.json: the training
        points").
    error : type
        The :class:`~benchcast.errors.BenchcastError` subclass to raise.
    """
    missing = [c for c in dict.fromkeys(required) if c not in frame.columns]
    if missing:
        found = ", ".join(repr(str(c)) for c in frame.columns) or "none"
        raise error(f"{where} lack column(s) {', '.join(map(repr, missing))} (found {found}).")
