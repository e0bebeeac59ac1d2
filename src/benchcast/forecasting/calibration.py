"""Intervals that account for extrapolation.

The bootstrap over runs (:mod:`benchcast.forecasting.intervals`) measures how much the fit moves
when its runs are resampled. It does not measure how wrong the law is a decade past its data,
which dominates a forecast's error. This module estimates that second term from the ladder itself:

1. **Rolling origins inside the training runs.** For a fit whose largest run has compute C_max,
   refit the law on its own points with C <= C_max / 10^delta for delta in ``ORIGIN_DECADES``
   and forecast the fit's remaining (larger) points. Each forecast gives a log-ratio error
   e = log(Q_true / Q_forecast) at a distance d = log10(C / largest C of that refit) decades.
2. **Spread against distance.** Regress e^2 = s0^2 + tau^2 d^2 by non-negative least squares,
   each origin weighted equally. s0 is evaluation noise (already in the bootstrap's prediction
   draws); tau is the extrapolation error per decade. A benchmark's own tau^2 is shrunk towards
   the value pooled over the benchmarks of the same data set, tau^2 = (m tau_own^2 + M0
   tau_pool^2) / (m + M0), m = its origins, M0 = ``POOL_ORIGINS``; with fewer than
   ``MIN_ORIGINS`` origins of its own, the pooled value alone (how M0 was chosen: README,
   "Intervals that account for extrapolation").
3. **Combination.** Every bootstrap prediction draw Q_b at a run D decades past the fit is
   multiplied by exp(tau D eps), eps ~ N(0, 1) (independent of the bootstrap), and the interval is
   the equal-tailed quantile of those draws (clipped to [0, 1]): :meth:`ScoreDraws.widen`.

Each inner refit is a cold fit of the runs up to its origin, made as a user at that origin would
make it. It must not start from the full fit's optimum: that optimum has seen the runs it is about
to forecast, and a local refit from it stays in the basin they chose, so the spread would be
estimated from forecasts that had partly seen their answers. An inner refit that does not converge
is kept (it is the forecast the method makes there) and counted in the spread's ``n_unconverged``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError, FitWarning, InsufficientDataError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.result import FitResult
from benchcast.forecasting.draws import ScoreDraws
from benchcast.forecasting.extent import outside_decades
from benchcast.forecasting.intervals import Bootstrap
from benchcast.validation import check_level

ORIGIN_DECADES = (0.2, 0.4, 0.6, 0.8, 1.0)  # inner origins: this far below the fit's largest run
MIN_INNER_DECADES = 0.5  # an inner refit must span at least this much compute
MIN_ORIGINS = 3  # the spread has two parameters (s0, tau): fewer distances leave nothing to check it
POOL_ORIGINS = 0  # M0: weight of the pooled spread, in origins (0: pooled only where own is missing)
ERROR_COLUMNS = ("origin_decades", "origin", "run", "k", "flops", "decades", "true", "predicted", "converged")


def rolling_origin(result: FitResult, origin_decades=ORIGIN_DECADES) -> pd.DataFrame:
    """Pseudo-out-of-sample forecasts inside a fit's own points (one row per forecast point), each
    from a cold fit of the points up to its origin (column ``converged``: that fit's convergence).

    Parameters
    ----------
    result : FitResult
        The fit whose points are refitted.
    origin_decades : sequence of float
        Each origin's distance below the fit's largest run, in decades of compute.

    Returns
    -------
    DataFrame
        ``ERROR_COLUMNS``: the origin, each point ahead of it (``decades`` beyond the origin's largest
        run), its true and forecast score; empty where no origin has enough points.
    """
    points = result.points
    law = result.law_object
    flops = points["flops"].to_numpy(float)
    top = flops.max()
    records = []
    for delta in origin_decades:
        origin = top / 10**delta
        inner = flops <= origin * (1 + 1e-9)
        if inner.sum() < law.n_params + 2 or not (~inner).any():
            continue
        if np.log10(flops[inner].max() / flops[inner].min()) < MIN_INNER_DECADES:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                refit = fit_rows(
                    points[inner].reset_index(drop=True),
                    replace(result.spec, max_flops=float(origin)),
                    quiet=True,
                )
        except (BenchcastError, ValueError, np.linalg.LinAlgError):
            continue
        ahead = points[~inner].reset_index(drop=True)
        predicted = refit.predict_frame(ahead)
        frame = pd.DataFrame(
            {
                "origin_decades": delta,
                "origin": float(flops[inner].max()),
                "run": ahead["run"].to_numpy(),
                "k": ahead["k"].to_numpy(float),
                "flops": ahead["flops"].to_numpy(float),
                "decades": np.log10(ahead["flops"].to_numpy(float) / flops[inner].max()),
                "true": ahead["value"].to_numpy(float),
                "predicted": predicted,
                "converged": refit.converged,
            }
        )
        records.append(frame)
    return pd.concat(records, ignore_index=True) if records else pd.DataFrame(columns=list(ERROR_COLUMNS))


def log_errors(errors: pd.DataFrame) -> pd.DataFrame:
    """Rows with a finite log-ratio error, with columns ``e`` (log true/forecast) and ``d``.

    Parameters
    ----------
    errors : DataFrame
        Rolling-origin forecasts (:func:`rolling_origin`).

    Returns
    -------
    DataFrame
        The rows ahead of their origin (``decades`` > 0) with a finite ``e``; ``d`` is ``decades``.
    """
    true, predicted = errors["true"].to_numpy(float), errors["predicted"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log(true) - np.log(predicted)
    keep = np.isfinite(e) & (errors["decades"].to_numpy(float) > 0)
    out = errors[keep].copy()
    out["e"], out["d"] = e[keep], out["decades"].to_numpy(float)
    return out


@dataclass(frozen=True)
class Spread:
    """Extrapolation error of a law: sd of log(Q_true / Q_forecast) is ``tau`` per decade."""

    tau: float
    noise: float  # s0: the part that does not grow with distance (reported, not added)
    n_origins: int
    n_forecasts: int
    source: str  # 'own', 'pooled', 'own+pooled' or 'own+benchmarks' (tau_pooling)
    n_unconverged: int = 0  # inner origins whose refit did not converge (their forecasts are kept)
    n_pooled: int = 0  # other benchmarks its log tau was shrunk towards (benchcast.forecasting.tau_pooling)
    tau_tpr: float | None = None  # per decade of TPR outside the fitted runs' (None: tau; forecasting.distance)

    def sd(self, decades, tpr_decades=None) -> np.ndarray:
        """The sd of the log-ratio error at a distance.

        Parameters
        ----------
        decades : array_like
            Distance beyond the largest fitted run, in decades of compute (negative counts as 0).
        tpr_decades : array_like, optional
            Distance outside the fitted runs' TPR range, in decades of TPR (0: inside).

        Returns
        -------
        ndarray
            ``tau * decades``; sqrt((tau decades)^2 + (tau_tpr tpr_decades)^2) outside the TPR range.
        """
        compute = self.tau * np.maximum(np.asarray(decades, float), 0.0)
        if tpr_decades is None:
            return compute
        beyond = np.asarray(tpr_decades, float)
        per = self.tau if self.tau_tpr is None else self.tau_tpr
        return np.where(beyond > 0, np.hypot(compute, per * beyond), compute)

    def to_dict(self) -> dict:
        """The spread as JSON-ready numbers.

        Returns
        -------
        dict
            The fields by name.
        """
        return {
            "tau": self.tau,
            "noise": self.noise,
            "n_origins": self.n_origins,
            "n_forecasts": self.n_forecasts,
            "source": self.source,
            "n_unconverged": self.n_unconverged,
            "n_pooled": self.n_pooled,
            **({} if self.tau_tpr is None else {"tau_tpr": self.tau_tpr}),
        }


def estimate_spread(errors: pd.DataFrame, *, group: tuple[str, ...] = ("origin_decades",)) -> Spread:
    """NNLS of e^2 on [1, d^2], each origin (each ``group``) weighted equally.

    Parameters
    ----------
    errors : DataFrame
        Rolling-origin forecasts (:func:`rolling_origin`).
    group : tuple of str
        Columns that name one origin (add ``benchmark`` to pool several benchmarks).

    Returns
    -------
    Spread
        ``tau`` (per decade) and ``noise`` (s0), source ``'own'``.

    Raises
    ------
    InsufficientDataError
        With fewer than ``MIN_ORIGINS`` origins.
    """
    rows = log_errors(errors)
    keys = [c for c in group if c in rows]
    n_origins = int(rows.groupby(keys).ngroups) if len(rows) else 0
    if n_origins < MIN_ORIGINS:
        raise InsufficientDataError(
            f"only {n_origins} inner forecast origin(s) with usable points: the extrapolation error cannot be "
            "estimated (the bootstrap-only interval is --interval bootstrap, interval='bootstrap' in Python; or pool "
            "with other benchmarks)."
        )
    weight = 1.0 / rows.groupby(keys)["e"].transform("size").to_numpy(float)
    root = np.sqrt(weight)
    design = np.column_stack([np.ones(len(rows)), rows["d"].to_numpy(float) ** 2]) * root[:, None]
    from scipy.optimize import nnls  # here: scipy.optimize costs 0.3 s to import

    (noise2, tau2), _ = nnls(design, rows["e"].to_numpy(float) ** 2 * root)
    unconverged = 0
    if "converged" in rows:
        unconverged = int((~rows.groupby(keys)["converged"].all().astype(bool)).sum())
    return Spread(float(np.sqrt(tau2)), float(np.sqrt(noise2)), n_origins, int(len(rows)), "own", unconverged)


def shrink(own: Spread | None, pooled: Spread | None) -> Spread:
    """Own spread shrunk towards the pooled one by the number of origins behind each.

    Parameters
    ----------
    own, pooled : Spread or None
        The benchmark's own spread and the one pooled over the data set's benchmarks.

    Returns
    -------
    Spread
        ``own`` while ``POOL_ORIGINS`` is 0 (``pooled`` where there is no own).
    """
    if own is None and pooled is None:
        raise InsufficientDataError("no extrapolation error could be estimated, own or pooled.")
    if own is None:
        return replace(pooled, source="pooled")
    if pooled is None or POOL_ORIGINS == 0:
        return own  # the pooled spread carries no weight: the value is the benchmark's own
    m = own.n_origins
    tau2 = (m * own.tau**2 + POOL_ORIGINS * pooled.tau**2) / (m + POOL_ORIGINS)
    return Spread(float(np.sqrt(tau2)), own.noise, own.n_origins, own.n_forecasts, "own+pooled", own.n_unconverged)


@dataclass
class CalibratedBootstrap:
    """A bootstrap whose draws also carry the extrapolation error; same API as :class:`Bootstrap`."""

    boot: Bootstrap
    spread: Spread
    errors: pd.DataFrame

    @property
    def result(self) -> FitResult:
        return self.boot.result

    @property
    def thetas(self) -> np.ndarray:
        return self.boot.thetas

    def __getattr__(self, name: str):
        # everything else about the replicates (failed/dropped counts, losses, convergence) is the bootstrap's
        if name == "boot":
            raise AttributeError(name)
        return getattr(self.boot, name)

    def decades(self, **covariates) -> np.ndarray:
        """Each point's distance outside the fit's runs (:func:`~benchcast.forecasting.extent.outside_decades`:
        beyond the largest, or below the smallest, the error per decade taken as equal both ways).

        Parameters
        ----------
        **covariates
            The points: ``flops``, or ``params`` and ``tokens`` (C = 6 N D), and the law's others.

        Returns
        -------
        ndarray
            Decades of compute (log10 C / C_max; log10 C_min / C below the runs), flattened in the query's shape.
        """
        flops = covariates.get("flops")
        if flops is None and covariates.get("params") is not None and covariates.get("tokens") is not None:
            flops = 6.0 * np.asarray(covariates["params"], float) * np.asarray(covariates["tokens"], float)
        if flops is None:
            raise BenchcastError("the extrapolation interval needs the run's compute (flops, or params and tokens).")
        _, shape = self.result.covariates(**covariates)
        fitted = self.result.points["flops"]
        return outside_decades(np.broadcast_to(np.asarray(flops, float), shape).ravel(), fitted.min(), fitted.max())

    def draws(self, kind: str = "prediction", **covariates) -> ScoreDraws:
        """The bootstrap's score draws widened by the extrapolation error (:meth:`ScoreDraws.widen`).

        Parameters
        ----------
        kind : {'prediction', 'confidence'}
        **covariates
            The points (their compute: flops, or params and tokens).

        Returns
        -------
        ScoreDraws
        """
        # the mean's draws get the term the prediction draws get (net of the same spread): a run's
        # interval stays wider than the mean's
        reference = None if kind == "prediction" else self.boot.draws("prediction", **covariates)
        return self.boot.draws(kind, **covariates).widen(
            self.spread, self.boot.seed, self.decades(**covariates), reference=reference
        )

    def interval(self, level: float = 0.9, kind: str = "prediction", **covariates) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed interval (lower, upper) of :meth:`draws` at ``level``.

        Parameters
        ----------
        level : float
            In (0, 1).
        kind : {'prediction', 'confidence'}
        **covariates
            The points.

        Returns
        -------
        (lower, upper) : arrays in the query's shape
        """
        check_level(level)  # before the draws are made
        return self.draws(kind, **covariates).interval(level)

    def to_dict(self) -> dict:
        """The interval's kind and its spread.

        Returns
        -------
        dict
            ``interval`` ('extrapolation') and :meth:`Spread.to_dict`.
        """
        return {"interval": "extrapolation", **self.spread.to_dict()}


def calibrate(
    boot: Bootstrap, *, pooled: Spread | None = None, origin_decades=ORIGIN_DECADES, errors: pd.DataFrame | None = None
) -> CalibratedBootstrap:
    """Add the extrapolation error, estimated by rolling origins inside the fit's own runs, to a
    bootstrap. ``pooled`` (a spread from the other benchmarks of the data set) is shrunk in;
    without it the fit alone must have at least ``MIN_ORIGINS`` inner origins.

    Parameters
    ----------
    boot : Bootstrap
        The fit's bootstrap.
    pooled : Spread, optional
        A spread pooled from the data set's other benchmarks.
    origin_decades : sequence of float
        The inner origins, in decades below the largest run.
    errors : DataFrame, optional
        Rolling-origin forecasts already made (:func:`rolling_origin`).

    Returns
    -------
    CalibratedBootstrap
        The bootstrap, the spread and the rolling-origin forecasts.
    """
    errors = rolling_origin(boot.result, origin_decades) if errors is None else errors
    try:
        own = estimate_spread(errors)
    except InsufficientDataError:
        if pooled is None:
            raise
        own = None
    if own is not None and own.n_unconverged:
        spec = boot.result.spec
        warnings.warn(
            f"{spec.law} on {spec.benchmark}: the refit at {own.n_unconverged} of {own.n_origins} inner origins did "
            "not converge; their forecasts are kept in the extrapolation error (n_unconverged in the output).",
            FitWarning,
            stacklevel=2,
        )
    return CalibratedBootstrap(boot, shrink(own, pooled), errors)
