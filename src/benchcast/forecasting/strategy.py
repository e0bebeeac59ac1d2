"""A strategy's forecast at given compute: its laws' forecasts blended with their weights, and the
interval of the blend. One function, :func:`blend_forecast`, turns the members' forecasts into the
strategy's; ``recommend``, ``forecast`` (on a data file), ``report`` and ``bench`` all call it, so that
one question gets one answer whichever command asks it.

The interval: the members' bootstrap draws are mixed replicate by replicate with the same weights
(:meth:`ScoreDraws.blend`); ``'extrapolation'`` widens the mixture by the error of extrapolating that
the blended rolling-origin forecasts inside the runs show, net of the mixture's own spread
(:meth:`ScoreDraws.widen`; pooled on the log scale with the data set's other benchmarks where the caller gives
them, :mod:`benchcast.forecasting.tau_pooling`), ``'bootstrap'`` reads it as it is (none where a draw is not finite).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.forecasting import calibration as cal
from benchcast.forecasting.distance import members_decades, members_outside, tpr_error
from benchcast.forecasting.draws import LEVELS, ScoreDraws, score_interval
from benchcast.forecasting.flags import describe, strategy_flags, withhold
from benchcast.forecasting.intervals import bootstrap
from benchcast.forecasting.targets import PlannedRuns, planned_runs, target_flags
from benchcast.forecasting.tau_pooling import TauPrior


@dataclass
class MemberForecast:
    """One law's forecasts at the strategy's points, and what its interval needs.

    Parameters
    ----------
    predicted : ndarray (points,)
        The law's point forecasts (nan where it has none).
    boot : ScoreDraws or None
        Its bootstrap prediction draws at the points (None: no interval).
    flops_max : float
        The largest run it was fitted to (the origin of each point's distance).
    used : str
        The covariates it was given, in words (:meth:`PlannedRuns.covariates`).
    fit : FitResult, optional
        The fit (its refusals and flags: :mod:`benchcast.forecasting.flags`; its runs' TPR range and TPR
        origins: :mod:`benchcast.forecasting.distance`).
    """

    predicted: np.ndarray
    boot: ScoreDraws | None
    flops_max: float
    used: str = "C"
    fit: object = None


@dataclass
class BlendedForecast:
    """A strategy's forecast at several points: the blend, its intervals, and each member's curve.

    Parameters
    ----------
    flops : ndarray (points,)
        Compute of each point.
    predicted : ndarray (points,)
        The weighted mean of the members' forecasts.
    intervals : dict
        ``{level: (lower, upper)}`` for each level asked (nan where a point has no interval); empty
        without draws or without a spread.
    weights : dict of str to float
        The members with a positive weight.
    members : dict of str to ndarray
        Each member's own forecast at the points.
    interval : str
        ``'extrapolation'`` or ``'bootstrap'``.
    spread : Spread or None
        The extrapolation error that widened the draws (``'extrapolation'`` only).
    note : str
        Why there is no interval (empty when there is one, or when none was asked).
    decades : ndarray (points,)
        Each point's distance beyond the largest run a member was fitted to.
    runs : PlannedRuns or None
        The points as runs (compute, and N, D, TPR where known); set by :meth:`StrategyFit.forecast`.
    used : dict of str to str
        The covariates each member was given, in words.
    flags : list of str
        Per point, why its forecast is to be read with care (empty where nothing is flagged).
    point_flags : list of tuple of Flag
        Per point, why its forecast is refused or doubtful (:func:`benchcast.forecasting.flags.strategy_flags`).
    """

    flops: np.ndarray
    predicted: np.ndarray
    intervals: dict
    weights: dict
    members: dict
    interval: str
    spread: cal.Spread | None = None
    note: str = ""
    decades: np.ndarray = field(default_factory=lambda: np.array([]))
    runs: PlannedRuns | None = None
    used: dict = field(default_factory=dict)
    flags: list = field(default_factory=list)
    point_flags: list = field(default_factory=list)


def blend_forecast(
    members: Mapping[str, MemberForecast],
    weights: Mapping[str, float],
    errors: pd.DataFrame | None,
    flops,
    *,
    interval: str,
    seed: int,
    pooled: cal.Spread | None = None,
    levels=LEVELS,
    prior: TauPrior | None = None,
) -> BlendedForecast:
    """The strategy's forecast at ``flops``: the weighted members and the interval of their blend.

    Parameters
    ----------
    members : mapping of law name to MemberForecast
        Each law's forecasts and draws at the points (attributes ``predicted``, ``boot``, ``flops_max``).
    weights : mapping of law name to float
        The strategy's weights (laws with weight <= 0 are left out).
    errors : DataFrame or None
        The blend's rolling-origin forecasts inside the runs
        (:func:`benchcast.forecasting.law_comparison.blend_errors`); used by ``'extrapolation'``.
    flops : array_like (points,) or PlannedRuns
        Compute of each point, or the points as runs (outside the members' TPR range: further away; by N
        and D: at a fitted run whatever its FLOPs; :mod:`benchcast.forecasting.distance`).
    interval : {'extrapolation', 'bootstrap'}
    seed : int
        Seed of the per-point streams of the widening.
    pooled : Spread, optional
        A spread pooled over other benchmarks, used where the blend's own cannot be estimated.
    levels : sequence of float
        The interval levels.
    prior : TauPrior, optional
        The mean log error per decade of the data set's other benchmarks, which the blend's own is
        shrunk towards (:mod:`benchcast.forecasting.tau_pooling`; ``bench`` gives it). Without it
        (a command that sees one benchmark) the blend's own tau is used, and its ``source`` says ``'own'``.

    Returns
    -------
    BlendedForecast
        Point forecasts, intervals (or a note saying why there are none) and each member's forecast.
    """
    used = {law: float(w) for law, w in weights.items() if w > 0}
    if not used:
        raise BenchcastError("a strategy's forecast needs at least one law with a positive weight.")
    sized = isinstance(flops, PlannedRuns)
    flops, tpr, params = (flops.flops, flops.tpr, flops.params) if sized else (flops, None, None)
    flops = np.atleast_1d(np.asarray(flops, float))
    predicted = sum(w * np.asarray(members[law].predicted, float) for law, w in used.items())
    decades, beyond = members_decades([members[law] for law in used], flops, tpr)
    out = BlendedForecast(flops, predicted, {}, used, {law: members[law].predicted for law in used}, interval)
    out.decades, top = decades, max(float(members[law].flops_max) for law in used)
    out.point_flags = strategy_flags({law: members[law] for law in used}, predicted, decades, top, flops, tpr, params)
    out.predicted = withhold(predicted, out.point_flags)  # a refused point has no number (nor interval)
    if any(members[law].boot is None for law in used):
        out.note = "no interval: no bootstrap draws"
        return out
    draws = ScoreDraws.blend({law: members[law].boot for law in used}, used)
    spread = None
    if interval == "extrapolation":
        try:
            own = cal.estimate_spread(errors) if errors is not None and len(errors) else None
        except BenchcastError as exc:
            own, reason = None, str(exc)
        else:
            reason = "no rolling-origin forecasts inside the runs"
        if own is None and pooled is None:
            out.note = f"no interval: {reason}"  # no interval rather than a wrong one
            return out
        spread = prior.shrink(own) if prior is not None and own is not None else cal.shrink(own, pooled)
        if (beyond > 0).any():  # the blend's error per decade of TPR (None: tau)
            spread = replace(spread, tau_tpr=tpr_error(members, used))
    out.spread = spread
    ok = np.isfinite(draws.values).all(axis=0) & np.isfinite(out.predicted)
    out.intervals = {level: (np.full(len(flops), np.nan), np.full(len(flops), np.nan)) for level in levels}
    if not ok.any():
        out.note = "no interval: no finite bootstrap draw"
        return out
    sample = draws.take(ok)
    if spread is not None:
        outside = members_outside([members[law] for law in used], flops)  # below the runs too
        sample = sample.widen(spread, seed, decades=outside[ok], tpr_decades=beyond[ok])
    for level in levels:
        lower, upper = score_interval(sample, level)
        out.intervals[level][0][ok], out.intervals[level][1][ok] = lower, upper
    return out


def member_forecasts(
    results: Mapping,
    weights: Mapping[str, float],
    runs,
    *,
    n_boot: int,
    seed: int,
    tpr: float | None = None,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> dict[str, MemberForecast]:
    """Each weighted law's forecast and bootstrap draws at ``runs`` (``n_boot`` 0: no draws).

    Parameters
    ----------
    results : mapping of law name to FitResult
        The members fitted to every run the strategy may see.
    weights : mapping of law name to float
        Laws with weight <= 0 are skipped.
    runs : array_like or PlannedRuns
        Compute of each point, or the points as runs (:func:`~benchcast.forecasting.targets.planned_runs`:
        a law of N and D is given N and D, a law of compute C = 6 N D).
    n_boot, seed : int
        Bootstrap replicates (0: no draws) and seed.
    tpr : float, optional
        Tokens per parameter placing a run given by its compute (laws of N and D); not with PlannedRuns.
    n_jobs, ray_address
        Where the bootstrap's refits run.

    Returns
    -------
    dict of str to MemberForecast
    """
    runs = as_runs(runs, tpr)
    out = {}
    for law, weight in weights.items():
        if weight <= 0:
            continue
        result = results[law]
        covariates, used = runs.covariates(result.fitted)
        boot = None
        if n_boot:
            replicates = bootstrap(result, n_boot, seed=seed, n_jobs=n_jobs, progress=None, ray_address=ray_address)
            boot = replicates.draws("prediction", **covariates)
        predicted, top = np.asarray(result.predict(**covariates), float), float(result.diagnostics.flops_max)
        out[law] = MemberForecast(predicted, boot, top, used, result)
    return out


def as_runs(runs, tpr: float | None = None) -> PlannedRuns:
    """``runs`` as PlannedRuns: compute given as an array is placed at ``tpr`` (where given).

    Parameters
    ----------
    runs : array_like or PlannedRuns
        Compute of each point, or the runs themselves.
    tpr : float, optional
        Tokens per parameter splitting compute into N and D; refused with PlannedRuns (they carry their own).

    Returns
    -------
    PlannedRuns
    """
    if isinstance(runs, PlannedRuns):
        if tpr is not None:
            raise BenchcastError("planned runs carry their own N and D: give tpr to planned_runs, not here.")
        return runs
    return planned_runs(flops=runs, tpr=tpr)


@dataclass
class StrategyFit:
    """A strategy fitted to one benchmark's runs: its laws, their weights and the blend's rolling-origin
    forecasts inside the runs (what its interval is calibrated on).

    Parameters
    ----------
    name : str
        The strategy (``'ensemble'``, ``'stack'``, ``'select'``, or a law's name).
    weights : dict of str to float
        The weight of each law.
    results : dict of str to FitResult
        Each law fitted to every run the strategy may see.
    errors : DataFrame
        The blend's rolling-origin forecasts inside the runs.
    pooled : Spread, optional
        The spread pooled over other benchmarks, for a blend with too few rolling origins of its own.
    """

    name: str
    weights: dict
    results: dict
    errors: pd.DataFrame
    pooled: cal.Spread | None = None

    @classmethod
    def single(cls, result) -> StrategyFit:
        """One law alone (weight 1), calibrated on its own rolling-origin forecasts.

        Parameters
        ----------
        result : FitResult
            The law fitted to every run.

        Returns
        -------
        StrategyFit
        """
        return cls(result.law, {result.law: 1.0}, {result.law: result}, cal.rolling_origin(result))

    @property
    def members(self) -> dict:
        """The laws with a positive weight, and their weights (heaviest first)."""
        return dict(sorted(((law, w) for law, w in self.weights.items() if w > 0), key=lambda item: -item[1]))

    def forecast(
        self,
        runs,
        *,
        n_boot: int,
        seed: int,
        interval: str = "extrapolation",
        tpr: float | None = None,
        n_jobs: int | None = None,
        ray_address: str | None = None,
        levels=LEVELS,
    ) -> BlendedForecast:
        """The strategy's forecast of ``runs`` (:func:`blend_forecast`), with the covariates each law was given
        and a flag per run whose TPR lies outside the fitted runs'.

        Parameters
        ----------
        runs : array_like or PlannedRuns
            Compute of each point, or the points as runs (N and D: :func:`member_forecasts`). The distance
            that widens the interval is the compute's, and the TPR's outside the fitted runs' TPR range.
        n_boot, seed : int
            Bootstrap replicates per law (0: no interval) and seed.
        interval : {'extrapolation', 'bootstrap'}
        tpr : float, optional
            Tokens per parameter placing a run given by its compute (laws of N and D).
        n_jobs, ray_address
            Where the bootstrap's refits run.
        levels : sequence of float
            The interval levels.

        Returns
        -------
        BlendedForecast
        """
        runs = as_runs(runs, tpr)
        members = member_forecasts(
            self.results, self.weights, runs, n_boot=n_boot, seed=seed, n_jobs=n_jobs, ray_address=ray_address
        )
        blend = {"interval": interval, "seed": seed, "pooled": self.pooled, "levels": levels}
        out = blend_forecast(members, self.weights, self.errors, runs, **blend)
        out.runs, out.used = runs, {law: members[law].used for law in out.weights}
        out.flags = target_flags(runs, {law: self.results[law] for law in out.weights})
        return out

    def forecast_at(self, run, *, level: float = 0.9, **options) -> dict:
        """The strategy's forecast of one run, as ``recommend`` reports it.

        Parameters
        ----------
        run : float or PlannedRuns
            Compute of the run, or the run (:func:`~benchcast.forecasting.targets.planned_runs`, one run).
        level : float
            The interval's level.
        **options
            ``n_boot``, ``seed``, ``interval``, ``tpr``, ``n_jobs``, ``ray_address`` (:meth:`forecast`).

        Returns
        -------
        dict
            The run (``flops``, ``params``, ``tokens``, ``tpr``: None where unknown), ``prediction``, ``level``,
            ``interval``, ``n_boot``, ``covariates`` and ``dropped`` (what each law was given, the rows its fit
            left out), ``flag`` (a TPR outside the fitted runs'), ``lower``/``upper`` or a ``note`` why not.
        """
        tpr = options.pop("tpr", None)  # with a planned run, the selection's TPR: the run carries its own N and D
        runs = run if isinstance(run, PlannedRuns) else planned_runs(flops=[run], tpr=tpr)
        if len(runs) != 1:
            raise BenchcastError(f"forecast_at forecasts one run; got {len(runs)}.")
        blended = self.forecast(runs, levels=(level,), **options)
        out = {
            **runs.record(0),
            "prediction": float(blended.predicted[0]),
            "level": level,
            "interval": blended.interval,
            "n_boot": options["n_boot"],
            "covariates": blended.used,
            "dropped": {law: self.results[law].diagnostics.dropped for law in blended.used},
            "flags": describe(blended.point_flags[0]),
        }
        if blended.flags[0]:
            out["flag"] = blended.flags[0]
        if not options["n_boot"]:
            return out
        if blended.note:
            out["note"] = blended.note
            return out
        if blended.spread is not None:
            out["extrapolation"] = blended.spread.to_dict()
        lower, upper = blended.intervals[level]
        out["lower"], out["upper"] = float(lower[0]), float(upper[0])
        return out
