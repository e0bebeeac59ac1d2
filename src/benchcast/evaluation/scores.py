"""Proper scores of forecast draws: the continuous ranked probability score (CRPS) of a sample.

CRPS(F, y) = E|X - y| - E|X - X'| / 2 (Gneiting & Raftery 2007, eq. 20), X, X' independent draws of the
forecast F. For the empirical distribution of n draws the second term is read from the sorted draws in
O(n log n): sum_{i,j} |x_i - x_j| = 2 sum_i (2 i - n - 1) x_(i), i = 1..n, rather than over all n^2
pairs. ``fair=True`` divides that term by n (n - 1) instead of n^2 (Ferro 2014: the score whose
expectation does not depend on n); the default, the empirical distribution's own CRPS, is what
``properscoring.crps_ensemble`` computes.
"""

from __future__ import annotations

import warnings

import numpy as np

from benchcast.errors import BenchcastError


def crps_draws(draws, observed, *, fair: bool = False) -> np.ndarray:
    """The CRPS of forecast draws at each point, in the draws' units; nan draws are left out at their point."""
    values = np.asarray(draws, float)
    scalar = values.ndim == 1
    values = values[:, None] if scalar else values
    if values.ndim != 2:
        raise BenchcastError(f"draws must be a (draws, points) array, got shape {values.shape}.")
    y = np.broadcast_to(np.asarray(observed, float), values.shape[1:])
    ordered = np.sort(np.where(np.isfinite(values), values, np.nan), axis=0)  # nan sort last
    n = np.isfinite(ordered).sum(axis=0)
    rank = np.arange(1, len(ordered) + 1)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan point is nan, as it should be
        # rank counts among finite draws only: the nan sorted last get weight 0 through nan_to_num
        weight = np.where(rank <= n[None, :], 2 * rank - n[None, :] - 1, 0.0)
        spread = 2.0 * np.nansum(weight * np.nan_to_num(ordered), axis=0)
        pairs = n * (n - 1) if fair else n * n
        out = np.nanmean(np.abs(ordered - y[None, :]), axis=0) - spread / (2.0 * pairs)
    out = np.where((n >= (2 if fair else 1)) & np.isfinite(y), out, np.nan)
    return float(out[0]) if scalar else out
