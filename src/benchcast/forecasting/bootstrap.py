"""Intervals for every law: bootstrap over runs (resample runs with replacement, refit).

Two kinds of interval, both from the same replicates:

* ``confidence``: the spread of the fitted law itself (where the mean score of a run of that
  size lies);
* ``prediction``: the same plus one resampled training residual in the law's target space,
  scaled for the degrees of freedom - where one new run's observed score lies. This is the
  interval to check against held-out runs, which carry evaluation noise and seed-to-seed
  variation that a mean curve does not.

Each replicate is the fit's data reweighted by how often each run was drawn (seeded from
(seed, replicate), so the result does not depend on how replicates are shared among workers), and
is fitted as thoroughly as the original:

* closed-form laws: the exact least-squares solution of each resample (the engine's own path);
* other laws: every replicate and its starts are rows of one batched Levenberg-Marquardt solve
  (:func:`benchcast.fitting.engine.replicates.refit_weighted`), from the full-data optimum and the best,
  by the replicate's own loss, of the full data's ranked candidates; the solver's convergence
  test (projected gradient and forecast) is each replicate's;
* laws with a presolved stage: the stage refitted to each replicate's resample, the rest batched as above.

Every replicate records its loss and whether its fit converged; replicates whose fit failed or
did not converge are left out of the intervals and counted (``n_failed``, ``n_dropped``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from benchcast.defaults import DEFAULT_INTERVAL, DEFAULT_LEVEL, DEFAULT_LEVELS, DEFAULT_REPLICATES, DEFAULT_SEED
from benchcast.errors import BenchcastError
from benchcast.fitting.engine.loss import make_loss
from benchcast.fitting.engine.replicates import refit_weighted
from benchcast.fitting.engine.search import single_threaded_blas
from benchcast.fitting.result import FitResult
from benchcast.forecasting.draws import ScoreDraws
from benchcast.laws import get_law, to_target
from benchcast.laws.linalg import distinct_drawn
from benchcast.utils.memo import law_key, memoized
from benchcast.utils.parallel import parallel_map, resolve_jobs
from benchcast.utils.streams import RESIDUAL_STREAM, common_rng
from benchcast.validation import check_level, check_replicates

PRESOLVED_CHUNK = 64  # replicates per call of a law's vectorised presolve
CHEAP_IN_PROCESS = 2000  # replicates of a closed-form law refitted in this process, not a pool
# a batched law's replicates from this many are one solve per worker: 1000 bnsl_monotone replicates over 2 workers
# took 0.86 of the in-process command's wall time (median pairwise ratio of 5, load 0.6-1.3)
BATCHED_OVER_WORKERS = 1000


@dataclass(frozen=True)
class Uncertainty:
    """How a forecast's uncertainty is computed: one value that every command passes on, in the manner of
    statsforecast's ``prediction_intervals=``. Where it runs (``n_jobs``, ``ray_address``) is an argument of each
    call, not part of this value.

    Parameters
    ----------
    n_boot : int
        Bootstrap replicates over runs per law (0: no interval).
    seed : int
        Seed of the resampling and of the per-point draws.
    interval : {'extrapolation', 'bootstrap'}
        ``'extrapolation'``: the bootstrap widened by the extrapolation error (the default); ``'bootstrap'``:
        the bootstrap alone.
    levels : float or tuple of float
        The interval levels, each in (0, 1); a one-level answer (forecast, plan, recommend) reads the first.
    """

    n_boot: int = DEFAULT_REPLICATES
    seed: int = DEFAULT_SEED
    interval: str = DEFAULT_INTERVAL
    levels: tuple = field(default=DEFAULT_LEVELS)

    def __post_init__(self):
        from benchcast.validation import check_interval

        check_replicates(self.n_boot, allow_zero=True)
        check_interval(self.interval)
        object.__setattr__(self, "levels", tuple(float(check_level(v)) for v in np.atleast_1d(self.levels)))

    @property
    def level(self) -> float:
        """The level a one-level answer shows: the first."""
        return self.levels[0]

    def to_dict(self) -> dict:
        """The settings as JSON-ready values.

        Returns
        -------
        dict
        """
        return {"n_boot": self.n_boot, "seed": self.seed, "interval": self.interval, "levels": list(self.levels)}


ANSWER = Uncertainty(levels=DEFAULT_LEVEL)  # a one-level answer's default (forecast, plan, recommend)
NO_INTERVAL = Uncertainty(n_boot=0)  # a point forecast alone


def resample_counts(result: FitResult, seed: int, indices) -> np.ndarray:
    """How often each training point is drawn in each replicate, shape (len(indices), n_points): runs are drawn with
    replacement, and a run's points come with it."""
    # runs numbered in order of first appearance, the order their draws have always used
    position, first = pd.factorize(result.points["run"])
    counts = np.zeros((len(indices), len(position)))
    for row, index in enumerate(indices):
        drawn = np.random.default_rng([seed, index]).choice(len(first), size=len(first), replace=True)
        counts[row] = np.bincount(drawn, minlength=len(first))[position]
    return counts


@dataclass
class _Data:
    """The fit's training points in the law's target space, shared by every replicate."""

    law: object
    X: dict
    y: np.ndarray

    @classmethod
    def of(cls, result: FitResult) -> _Data:
        law = get_law(result.law)
        points = result.points
        X = {c: points[c].to_numpy(float) for c in set(law.covariates) | set(law.fit_covariates)}
        return cls(law, X, to_target(law.target, points["value"].to_numpy(float), result.spec.q_rand))

    def take(self, counts: np.ndarray) -> tuple[dict, np.ndarray]:
        index = np.repeat(np.arange(self.y.size), counts.astype(int))
        return {c: v[index] for c, v in self.X.items()}, self.y[index]


def _presolved(data: _Data, counts: np.ndarray) -> np.ndarray:
    """Each replicate's presolved stage fitted to its own resample, (replicates, n_presolved) (nan: it cannot be)."""
    names = data.law.param_names[: data.law.n_presolved]
    out = np.full((len(counts), len(names)), np.nan)
    # the law's vectorised path (in chunks: its memory bounded), or one by one
    for start in range(0, len(counts), PRESOLVED_CHUNK):
        part = slice(start, start + PRESOLVED_CHUNK)
        if (stage := data.law.presolve_weighted(data.X, data.y, counts[part])) is not None:
            out[part] = stage
            continue
        for row, drawn in enumerate(counts[part], start):
            try:
                stage = data.law.presolve(*data.take(drawn))
                out[row] = [stage[name] for name in names]
            except (BenchcastError, ValueError, np.linalg.LinAlgError):
                pass
    return out


def fit_replicates(result: FitResult, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Refit the fit's law to each reweighted replicate: (thetas, losses, converged, failed)."""
    data = _Data.of(result)
    law, spec = data.law, result.spec
    B = len(counts)
    thetas = np.full((B, law.n_params), np.nan)
    losses = np.full(B, np.nan)
    converged = np.zeros(B, bool)
    failed = np.zeros(B, bool)
    # a replicate needs more distinct covariate points than free parameters to be fitted at all (replicate runs of
    # one N and D are one point)
    failed |= distinct_drawn(data.X, counts) <= law.n_free
    todo = np.flatnonzero(~failed)
    if not todo.size:  # every replicate had too few distinct runs
        return thetas, losses, converged, failed
    with single_threaded_blas():
        closed = law.replicate_strategy(spec.loss) == "closed"
        exact = law.closed_form_weighted(data.X, data.y, counts[todo]) if closed else None
        if exact is not None:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                residual = law.forward(exact, data.X) - data.y
            per_point = make_loss(spec.loss, spec.huber_delta).per_point(residual)
            weights = counts[todo]
            thetas[todo], losses[todo] = exact, np.sum(weights * per_point, axis=1) / weights.sum(axis=1)
            converged[todo] = np.isfinite(exact).all(axis=1) & np.isfinite(losses[todo])
            failed[todo] = np.isnan(exact).all(axis=1)  # the law's own "no fit" for this reweighting
            return thetas, losses, converged & ~failed, failed
        # a presolved stage is each replicate's own; the rest is one batched solve with it held (at the full fit's:
        # the second stage reads the observed proxy while fitting, so the stage's values do not enter the solve)
        names = law.param_names[: law.n_presolved]
        fixed = dict(zip(names, result.theta[: law.n_presolved], strict=True))
        options = {"loss": spec.loss, "huber_delta": spec.huber_delta, "seed": spec.seed, "fixed": fixed}
        found, value, ok = refit_weighted(law, data.X, data.y, counts[todo], result.theta, **options)
        if names:
            found[:, : len(names)] = stage = _presolved(data, counts[todo])
            failed[todo] = ~np.isfinite(stage).all(axis=1)
        thetas[todo], losses[todo], converged[todo] = found, value, ok  # an unconverged replicate is counted
    return thetas, losses, converged & ~failed, failed


def _replicates(result: FitResult, seed: int, indices: list[int]) -> tuple:
    return fit_replicates(result, resample_counts(result, seed, indices))


@dataclass
class Bootstrap:
    """Replicate parameters of a fit, and the intervals they imply."""

    result: FitResult
    fitted_thetas: np.ndarray  # (replicates, n_params) as each refit ended (nan: the refit failed)
    losses: np.ndarray  # (replicates,) each refit's loss on its own resample
    converged: np.ndarray  # (replicates,) whether each refit converged
    failed: np.ndarray  # (replicates,) refits that could not be made (too few distinct runs, errors)
    seed: int = 0

    @property
    def usable(self) -> np.ndarray:
        return self.converged & ~self.failed & np.isfinite(self.fitted_thetas).all(axis=1)

    @property
    def thetas(self) -> np.ndarray:
        """Replicate parameters behind the intervals; nan rows are refits failed or dropped."""
        return np.where(self.usable[:, None], self.fitted_thetas, np.nan)

    @property
    def n_failed(self) -> int:
        """Refits that could not be made."""
        return int(self.failed.sum())

    @property
    def n_dropped(self) -> int:
        """Refits made but not converged: left out of the intervals."""
        return int((~self.failed & ~self.usable).sum())

    def to_dict(self) -> dict:
        """The replicate counts."""
        return {
            "n_boot": int(len(self.failed)),
            "n_used": int(self.usable.sum()),
            "n_failed": self.n_failed,
            "n_dropped": self.n_dropped,
        }

    def draws(self, kind: str = "prediction", **covariates) -> ScoreDraws:
        """Score draws of the usable replicates at the covariates (flops=, params=, tokens=, k=, gold=), made by the
        fitted law as its point forecast is (:meth:`FittedLaw.draw_scores`)."""
        if kind not in ("prediction", "confidence"):
            raise BenchcastError(f"interval kind must be 'prediction' or 'confidence', not {kind!r}.")
        X, shape = self.result.covariates(**covariates)
        thetas = self.thetas[~np.isnan(self.thetas).any(axis=1)]
        if not len(thetas):
            raise BenchcastError(
                f"no bootstrap refit is usable ({self.n_failed} failed, {self.n_dropped} did not converge): "
                "no interval can be given."
            )
        size = int(np.prod(shape))
        noise = self._residual_draws(X, (len(thetas), size)) if kind == "prediction" else None
        values = self.result.fitted.draw_scores(thetas, X, noise)
        return ScoreDraws(np.reshape(values, (len(thetas), size)), X, shape)

    def _residual_draws(self, X: dict[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        """Residuals added to each replicate's forecast, (replicates, points): replicate b adds the same residual at
        every point (common random numbers, :func:`~benchcast.utils.streams.common_rng`)."""
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
        drawn = common_rng(self.seed, RESIDUAL_STREAM).choice(residuals, size=shape[0], replace=True)
        return np.broadcast_to(drawn.reshape((shape[0],) + (1,) * (len(shape) - 1)), shape).copy()

    def interval(self, level: float = 0.9, kind: str = "prediction", **covariates) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed percentile interval (lower, upper) at ``level`` (see :meth:`draws`)."""
        check_level(level)  # before the draws are made
        return self.draws(kind, **covariates).interval(level)


def bootstrap(
    result: FitResult,
    uncertainty: Uncertainty | None = None,
    *,
    n_jobs: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
) -> Bootstrap:
    """Resample the fit's runs with replacement and refit each replicate (``ray_address``: the batches of replicates
    become Ray tasks; see :func:`parallel_map`).

    Parameters
    ----------
    result : FitResult
        The fit, with its training points.
    uncertainty : Uncertainty, optional
        Its replicates (at least 1) and seed (default: :class:`Uncertainty`'s).
    n_jobs : int, optional
        Worker processes (``None``: :func:`benchcast.utils.parallel.default_jobs`).
    progress : bool, optional
        Show a progress bar (``None``: only on a terminal).
    ray_address : str, optional
        A Ray cluster to run the batches on.

    Returns
    -------
    Bootstrap
        The replicate parameters, losses and convergence flags.
    """
    unc = uncertainty or Uncertainty()
    n_boot, seed = unc.n_boot, unc.seed
    check_replicates(n_boot, allow_zero=False)
    if result.points.empty or "value" not in result.points:
        raise BenchcastError("this fit carries no training points; refit it to bootstrap.")
    where = {"n_jobs": n_jobs, "progress": progress, "ray_address": ray_address}
    thetas, losses, converged, failed = _refit_all(result, unc, where)
    return Bootstrap(result, thetas, losses, converged, failed, seed)


def _refits_key(result: FitResult, unc: Uncertainty, where: dict) -> tuple:
    """What a fit's replicates depend on: its law, points, parameters and spec, and the replicates' count and seed."""
    points = result.points
    frame = (
        list(points.columns),
        [str(t) for t in points.dtypes],
        pd.util.hash_pandas_object(points, index=False).to_numpy(),
    )
    return law_key(get_law(result.law), frame, result.theta, repr(result.spec), unc.n_boot, unc.seed)


@memoized(_refits_key)
def _refit_all(result: FitResult, unc: Uncertainty, where: dict) -> tuple:
    """Every replicate's refit, (thetas, losses, converged, failed); ``where`` they run does not change them."""
    n_boot, seed, n_jobs, ray_address = unc.n_boot, unc.seed, where["n_jobs"], where["ray_address"]
    closed = get_law(result.law).replicate_strategy(result.spec.loss) == "closed"
    # the refits run in this process unless there are very many (starting workers costs more), one chunk per worker (in
    # this process one: a batched law's slow rows' tail paid once), over Ray sixteen; each replicate's refit is
    # independent of its chunk, so the results are the same
    jobs = 1 if n_boot < (CHEAP_IN_PROCESS + 1 if closed else BATCHED_OVER_WORKERS) and ray_address is None else n_jobs
    chunk = -(-n_boot // (16 if ray_address is not None else resolve_jobs(jobs)))
    batches = [list(range(start, min(start + chunk, n_boot))) for start in range(0, n_boot, chunk)]
    parts = parallel_map(
        partial(_replicates, result, seed),
        batches,
        n_jobs=jobs,
        description=f"bootstrap {result.law}",
        progress=where["progress"],
        ray_address=ray_address,
        sizes=[len(batch) for batch in batches],
        unit="replicates",
    )
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))
