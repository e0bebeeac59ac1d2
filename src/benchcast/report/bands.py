"""The strategy's forecast the page draws: over a grid of compute (the curve and its bands) and at the
targets (runs given by compute, or planned runs of N parameters on D tokens), computed once, as
``recommend`` and ``forecast`` compute it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from benchcast.forecasting.draws import LEVELS
from benchcast.forecasting.strategy import BlendedForecast, as_runs, blend_forecast, member_forecasts
from benchcast.forecasting.targets import PlannedRuns, planned_runs, target_flags
from benchcast.report.law_choice import LawChoice


def strategy_bands(
    choice: LawChoice,
    grid: np.ndarray,
    targets: np.ndarray,
    *,
    tpr: float,
    n_boot: int,
    seed: int,
    interval: str,
    n_jobs: int | None = 1,
):
    """The strategy's forecast over ``grid`` and at ``targets``, with 50 % and 90 % prediction intervals:
    the one computation ``recommend``, ``forecast`` and ``bench`` make
    (:meth:`benchcast.forecasting.strategy.StrategyFit.forecast`). Where there is no interval (the
    extrapolation error cannot be estimated) the bands are missing (NaN) and a warning says why, as
    ``recommend`` and ``forecast`` give none there.

    Parameters
    ----------
    choice : LawChoice
        The strategy (or the law named by the user).
    grid : ndarray
        Compute of the curve.
    targets : ndarray or PlannedRuns
        Compute of the target runs, or the runs (N and D: :func:`~benchcast.forecasting.targets.planned_runs`).
    tpr : float
        Tokens per parameter placing a run of compute C (laws of N and D): the curve's, and the targets'
        given by compute.
    n_boot, seed : int
        Bootstrap replicates per law and seed.
    interval : {'extrapolation', 'bootstrap'}
    n_jobs : int, optional
        Workers of the bootstrap.

    Returns
    -------
    (BlendedForecast, BlendedForecast, list of str)
        Over the grid, at the targets (with the covariates each law was given and the TPR flags), and
        the warnings.
    """
    # one bootstrap per member for the grid and the targets together: a point's draws do not depend
    # on the other points asked (benchcast.utils.streams), so this is the two forecasts at half the cost
    targets = targets if isinstance(targets, PlannedRuns) else as_runs(targets, tpr)
    runs = planned_runs(flops=grid, tpr=tpr).join(targets)
    flops, strategy = runs.flops, choice.strategy
    members = member_forecasts(strategy.results, strategy.weights, runs, n_boot=n_boot, seed=seed, n_jobs=n_jobs)
    blend = {"interval": interval, "seed": seed, "pooled": strategy.pooled}  # as StrategyFit.forecast blends
    blended, notes = blend_forecast(members, strategy.weights, strategy.errors, runs, **blend), []
    if blended.note:  # no interval rather than a narrower one of another kind: as recommend and forecast answer
        notes.append(
            f"no prediction interval: {blended.note}"
            + (
                "; --interval bootstrap gives the bootstrap alone, which leaves out the error of extrapolating"
                if interval == "extrapolation"
                else ""
            )
        )
        missing = np.full(len(flops), np.nan)
        blended = replace(blended, intervals={level: (missing, missing) for level in LEVELS})
    used = {law: targets.covariates(strategy.results[law].fitted)[1] for law in blended.weights}
    flags = target_flags(targets, {law: strategy.results[law] for law in blended.weights})
    at_targets = replace(_points(blended, slice(len(grid), len(flops))), runs=targets, used=used, flags=flags)
    return _points(blended, slice(0, len(grid))), at_targets, notes


def _points(blended: BlendedForecast, which: slice) -> BlendedForecast:
    """The forecast at some of its points."""
    return replace(
        blended,
        flops=blended.flops[which],
        predicted=blended.predicted[which],
        intervals={level: (lo[which], hi[which]) for level, (lo, hi) in blended.intervals.items()},
        members={law: np.asarray(curve)[which] for law, curve in blended.members.items()},
        decades=blended.decades[which],
        point_flags=blended.point_flags[which],
    )


def curve_tpr(targets: PlannedRuns, forecast_tpr: float | None) -> float:
    """The TPR placing the curve (and targets given by compute) for laws of N and D.

    Parameters
    ----------
    targets : PlannedRuns
        The targets.
    forecast_tpr : float or None
        The TPR asked for.

    Returns
    -------
    float
        ``forecast_tpr`` where given, else the planned runs' TPR where they share one, else 20 (Chinchilla's).
    """
    if forecast_tpr is not None:
        return forecast_tpr
    tpr = targets.tpr[targets.sized]
    return float(tpr[0]) if len(tpr) and np.allclose(tpr, tpr[0], rtol=1e-9) else 20.0
