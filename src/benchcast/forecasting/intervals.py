"""Intervals for every law: bootstrap over runs (resample runs with replacement, refit).

Two kinds of interval, both from the same replicates:

* ``confidence``: the spread of the fitted law itself (where the mean score of a run of that
  size lies);
* ``prediction``: the same plus one resampled training residual in the law's target space,
  scaled for the degrees of freedom - where one new run's observed score lies. This is the
  interval to check against held-out runs, which carry evaluation noise and seed-to-seed
  variation that a mean curve does not.

Replicate refits are warm-started at the full-data optimum (the usual bootstrap practice) and run
in parallel on the local cores; each replicate's resample is seeded from (seed, replicate), so
the result does not depend on how replicates are shared among workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.result import FitResult
from benchcast.laws import get_law, to_score, to_target
from benchcast.utils.parallel import parallel_map

DEFAULT_REPLICATES = 1000
MIN_REPLICATES = 10  # fewer draws cannot place the tails of a 90 % interval
LEVELS = (0.5, 0.9)


def check_replicates(n_boot, *, allow_zero: bool) -> int:
    """A replicate count a percentile interval can stand on (0 = no interval, where allowed)."""
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


def _replicates(result: FitResult, seed: int, indices: list[int]) -> np.ndarray:
    law = get_law(result.law)
    points = result.points
    runs = points["run"].unique()
    groups = {run: rows for run, rows in points.groupby("run", sort=False)}
    out = np.full((len(indices), law.n_params), np.nan)
    for row, index in enumerate(indices):
        rng = np.random.default_rng([seed, index])
        drawn = rng.choice(runs, size=runs.size, replace=True)
        sample = pd.concat([groups[run] for run in drawn], ignore_index=True)
        try:
            refit = fit_rows(sample, result.spec, start=result.theta, quiet=True)
        except (BenchcastError, ValueError, np.linalg.LinAlgError):
            continue
        out[row] = refit.theta
    return out


@dataclass
class Bootstrap:
    """Replicate parameters of a fit, and the intervals they imply."""

    result: FitResult
    thetas: np.ndarray  # (replicates, n_params); nan rows are refits that failed
    seed: int = 0

    @property
    def n_failed(self) -> int:
        return int(np.isnan(self.thetas).any(axis=1).sum())

    def draws(self, kind: str = "prediction", **covariates) -> np.ndarray:
        """Score draws (replicates x points) at the covariates (flops=, params=, tokens=, k=, gold=)."""
        if kind not in ("prediction", "confidence"):
            raise BenchcastError(f"interval kind must be 'prediction' or 'confidence', not {kind!r}.")
        law = get_law(self.result.law)
        X, shape = self.result.covariates(**covariates)
        thetas = self.thetas[~np.isnan(self.thetas).any(axis=1)]
        if not len(thetas):
            raise BenchcastError("every bootstrap refit failed: no interval can be given.")
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            target = law.forward(thetas, X)  # (B, M)
        if kind == "prediction":
            target = target + self._residual_draws(target.shape)
        q_rand = self.result.spec.q_rand
        return to_score(law.target, target, q_rand).reshape((len(thetas), *shape))

    def _residual_draws(self, shape: tuple[int, ...]) -> np.ndarray:
        law = get_law(self.result.law)
        points = self.result.points
        q_rand = self.result.spec.q_rand
        fitted_target = to_target(law.target, points["fitted"].to_numpy(float), q_rand)
        observed_target = to_target(law.target, points["value"].to_numpy(float), q_rand)
        residuals = (observed_target - fitted_target)[np.isfinite(observed_target - fitted_target)]
        if not residuals.size:
            return np.zeros(shape)
        n, p = residuals.size, law.n_params
        residuals = (residuals - residuals.mean()) * np.sqrt(n / max(n - p, 1))
        rng = np.random.default_rng([self.seed, 2**31 - 1])
        return rng.choice(residuals, size=shape, replace=True)

    def interval(self, level: float = 0.9, kind: str = "prediction", **covariates) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed percentile interval (lower, upper) at ``level``."""
        if not 0 < level < 1:
            raise BenchcastError(f"interval level must lie in (0, 1), got {level!r}.")
        draws = self.draws(kind, **covariates)
        tail = (1 - level) / 2
        return np.nanquantile(draws, tail, axis=0), np.nanquantile(draws, 1 - tail, axis=0)


def bootstrap(
    result: FitResult,
    n_boot: int = DEFAULT_REPLICATES,
    *,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
) -> Bootstrap:
    """Resample the fit's runs with replacement ``n_boot`` times and refit each replicate."""
    check_replicates(n_boot, allow_zero=False)
    if result.points.empty or "value" not in result.points:
        raise BenchcastError("this fit carries no training points; refit it to bootstrap.")
    get_law(result.law)
    chunk = max(1, n_boot // 16)
    batches = [list(range(start, min(start + chunk, n_boot))) for start in range(0, n_boot, chunk)]
    parts = parallel_map(
        partial(_replicates, result, seed),
        batches,
        n_jobs=n_jobs,
        description=f"bootstrap {result.law}",
        progress=progress,
    )
    return Bootstrap(result, np.vstack(parts), seed)
