"""The strategy's forecast the page draws: over a grid of compute (the curve and its bands) and at the
targets (runs given by compute, or planned runs of N parameters on D tokens), computed once, as
``recommend`` and ``forecast`` compute it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from benchcast.data.table import tpr_level
from benchcast.defaults import DEFAULT_LEVELS as LEVELS
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.targets import PlannedRuns, as_runs, planned_runs
from benchcast.report.law_choice import LawChoice


def strategy_bands(
    choice: LawChoice,
    grid: np.ndarray,
    targets: np.ndarray,
    *,
    tpr: float,
    uncertainty: Uncertainty,
    n_jobs: int | None = 1,
):
    """The strategy's forecast over ``grid`` and at ``targets`` with 50/90 % intervals, as ``recommend`` makes it
    (``Ensemble.predict``); where there is no interval the bands are NaN and a note says why. ``uncertainty``: the
    replicates, seed and interval method (the levels are the page's)."""
    # one forecast of the grid and the targets together: a point's draws do not depend on the other points
    # asked (benchcast.utils.streams), so this is the two forecasts at half the cost
    targets = targets if isinstance(targets, PlannedRuns) else as_runs(targets, tpr)
    runs = planned_runs(flops=grid, tpr=tpr).join(targets)
    made = choice.strategy.predict(runs, replace(uncertainty, levels=LEVELS), n_jobs=n_jobs)
    notes = []
    if made.meta.note:  # no interval rather than a narrower one of another kind: as recommend and forecast answer
        notes.append(
            f"no prediction interval: {made.meta.note}"
            + (
                "; --interval bootstrap gives the bootstrap alone, which leaves out the error of extrapolating"
                if uncertainty.interval == "extrapolation"
                else ""
            )
        )
    findings = (made.meta.error_model or {}).get("findings", ())
    notes += [f"extrapolation error: {finding}" for finding in findings]  # a scale far from the prior, stated
    return made.take(slice(0, len(grid))), made.take(slice(len(grid), len(runs))), notes


def curve_tpr(targets: PlannedRuns, forecast_tpr: float | None) -> float:
    """The TPR placing the curve (and targets given by compute) for laws of N and D."""
    if forecast_tpr is not None:
        return forecast_tpr
    tpr = targets.tpr[targets.sized]
    return float(tpr[0]) if len(tpr) and len(np.unique(tpr_level(tpr))) == 1 else 20.0  # one ratio group
