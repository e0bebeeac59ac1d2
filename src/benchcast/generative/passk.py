"""pass@k from per-problem sample outcomes (SPEC §2).

* :func:`pass_at_k`: the unbiased estimator 1 - C(n-c, k)/C(n, k), computed as
  -expm1(sum_j log1p(-c/(n-j))) over j < k: a product of ratios in log space, exact to rounding
  for n, k up to 1e4 and beyond, vectorised over problems and k.
* :func:`bootstrap_pass_at_k`: confidence intervals by resampling problems.
* past n: :mod:`benchcast.generative.past_n` (the power law in k and the per-problem families, chosen by a
  backtest in k).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import DataError


def pass_at_k_per_problem(n, c, ks) -> np.ndarray:
    """Unbiased pass@k for each problem (rows) and each k (columns)."""
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c = np.atleast_1d(np.asarray(c, dtype=np.int64))
    ks = np.atleast_1d(np.asarray(ks, dtype=np.int64))
    if np.any(n < 1) or np.any(c < 0) or np.any(c > n):
        raise DataError("per-problem counts need n >= 1 and 0 <= c <= n.")
    if np.any(ks < 1) or np.any(ks > n.min()):
        raise DataError(f"every k must lie in [1, n] (n = {int(n.min())} samples for some problem); got {ks.tolist()}.")
    kmax = int(ks.max())
    out = np.empty((n.size, ks.size))
    # Problems sharing (n, c) share one cumulative sum of log1p(-c / (n - j)), j = 0 .. kmax-1.
    pairs, inverse = np.unique(np.column_stack([n, c]), axis=0, return_inverse=True)
    j = np.arange(kmax, dtype=np.float64)
    for index, (n_i, c_i) in enumerate(pairs):
        rows = inverse.ravel() == index
        if c_i == 0:
            out[rows] = 0.0
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.log1p(-c_i / (n_i - j))
        log_ratio = np.concatenate([[0.0], np.cumsum(terms)])  # log C(n-c, k)/C(n, k) at k = 0..kmax
        out[rows] = np.where(ks > n_i - c_i, 1.0, -np.expm1(log_ratio[np.minimum(ks, kmax)]))
    return out


def pass_at_k(n, c, ks) -> np.ndarray:
    """Benchmark-level pass@k: the mean over problems of the unbiased estimator, one value per k."""
    return pass_at_k_per_problem(n, c, ks).mean(axis=0)


def bootstrap_pass_at_k(n, c, ks, *, uncertainty=None) -> pd.DataFrame:
    """pass@k with a percentile bootstrap interval over problems (default 1000 replicates, 95 %; 0: none)."""
    from benchcast.forecasting.bootstrap import Uncertainty

    unc = uncertainty or Uncertainty(1000, levels=0.95)
    n_boot, level, seed = unc.n_boot, unc.level, unc.seed
    per_problem = pass_at_k_per_problem(n, c, ks)
    out = pd.DataFrame({"k": np.atleast_1d(ks).astype(int), "pass_at_k": per_problem.mean(axis=0)})
    if n_boot == 0:
        return out.assign(stderr=np.nan, lower=np.nan, upper=np.nan)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, per_problem.shape[0], size=(n_boot, per_problem.shape[0]))
    means = per_problem[draws].mean(axis=1)  # (n_boot, K)
    alpha = (1 - level) / 2
    return out.assign(
        stderr=means.std(axis=0, ddof=1),
        lower=np.quantile(means, alpha, axis=0),
        upper=np.quantile(means, 1 - alpha, axis=0),
    )
