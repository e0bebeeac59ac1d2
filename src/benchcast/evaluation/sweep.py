"""Protocol 4 of SPEC §5: the threshold backtest over a grid of thresholds, and the critical
threshold where forecasts start to succeed."""

from __future__ import annotations

import warnings
from dataclasses import replace
from functools import partial

import pandas as pd

from benchcast.errors import InsufficientDataError
from benchcast.evaluation.backtest import backtest
from benchcast.evaluation.critical import change_span, critical_threshold
from benchcast.evaluation.sweep_result import (
    SUCCESS_MRE,
    SWEEP_THRESHOLDS,
    Sweep,
    SweepComparison,
    succeeds,
    usable_errors,
)
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.bootstrap import NO_INTERVAL, Uncertainty
from benchcast.plots.labels import metric_label
from benchcast.utils.parallel import parallel_map
from benchcast.validation import check_thresholds


def _sweep_point(table: pd.DataFrame, spec: FitSpec, options: dict, threshold: float) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bt = backtest(table, spec, threshold=threshold, **options)
    except InsufficientDataError as exc:  # nothing to fit or nothing held out at this threshold
        return {"threshold": threshold, "skipped": str(exc)}
    return {"threshold": threshold, **bt.metrics, **usable_errors(bt)}


def sweep(
    table: pd.DataFrame,
    spec: FitSpec,
    thresholds=SWEEP_THRESHOLDS,
    *,
    min_flops: float | None = None,
    tpr: float | None = None,
    success_mre: float = SUCCESS_MRE,
    progress: bool | None = None,
    uncertainty: Uncertainty = NO_INTERVAL,
    n_jobs: int | None = 1,
    backend: str | None = None,
    ray_address: str | None = None,
) -> Sweep:
    """Protocol 4: the threshold backtest over a grid, and the critical threshold.

    Thresholds where the backtest has too little data (no held-out runs above them, too few to
    fit below them) are left out of the grid and listed in ``skipped`` with the reason; any other
    error (a wrong selection) is raised.

    Parameters
    ----------
    table : DataFrame
        Long-format scores.
    spec : FitSpec
        The law, benchmark, metric and selection.
    thresholds : sequence of float
        The grid of thresholds T, in FLOPs: fit on runs with C <= T, forecast those above.
    min_flops : float, optional
        Leave out runs below this compute (FLOPs).
    tpr : float, optional
        Only runs at this tokens-per-parameter ratio (default: the spec's).
    success_mre : float
        A threshold succeeds when the held-out MRE is below this, in percent.
    progress : bool, optional
        Show a progress bar (``None``: only on a terminal).
    uncertainty : Uncertainty
        Bootstrap replicates per threshold behind the interval coverage (0: none), seed, the kind of interval
        whose coverage is measured and its levels.
    n_jobs, backend, ray_address
        Passed to :func:`benchcast.utils.parallel.parallel_map` (one threshold per task).

    Returns
    -------
    Sweep
        One row per threshold with held-out runs, the critical threshold (FLOPs or None) and a note.
    """
    options = {"min_flops": min_flops, "tpr": tpr, "uncertainty": uncertainty, "n_jobs": 1}
    n_boot, interval = uncertainty.n_boot, uncertainty.interval
    grid = check_thresholds(thresholds)
    # resolve the selection once here, so that its errors and data warnings (an unknown chance
    # level) reach the caller rather than dying silently in the workers
    _, resolved = design(table, replace(spec, tpr=spec.tpr if tpr is None else tpr))
    labels = (metric_label(resolved.metric, resolved.k), resolved.tpr)  # named in the figure's titles
    records = parallel_map(
        partial(_sweep_point, table, spec, options),
        grid,
        n_jobs=n_jobs,
        description=f"sweep {spec.law} {spec.benchmark}",
        progress=progress,
        backend=backend,
        ray_address=ray_address,
    )
    skipped = [r for r in records if "skipped" in r]
    frame = pd.DataFrame([r for r in records if "skipped" not in r])
    if frame.empty:
        note = "no threshold of the grid has both fitted and held-out runs"
        return Sweep(spec.law, spec.benchmark, frame, None, note, skipped, success_mre, n_boot, *labels, interval)
    frame["success"] = succeeds(frame, success_mre)  # a law that refused most held-out points is no success
    critical = critical_threshold(frame["threshold"], frame["success"])
    span = change_span(frame["threshold"], frame["success"])
    if span is None:
        outcome = "every threshold succeeds" if frame["success"].all() else "no threshold succeeds"
        note = f"success does not change over the grid: {outcome}"
    elif critical is None:
        note = f"the logistic crossing lies outside the span {span[0]:.3g}..{span[1]:.3g} where success changed"
    else:
        note = f"success changes between {span[0]:.3g} and {span[1]:.3g}"
    return Sweep(spec.law, spec.benchmark, frame, critical, note, skipped, success_mre, n_boot, *labels, interval)


def compare_sweeps(table: pd.DataFrame, specs: list[FitSpec], **options) -> SweepComparison:
    """The same sweep for several laws and benchmarks (what ``benchcast sweep`` runs)."""
    return SweepComparison([sweep(table, spec, **options) for spec in specs])
