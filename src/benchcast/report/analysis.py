"""What the report says about one benchmark: the forecaster chosen and why (the default strategy, as ``recommend``,
``forecast`` and ``bench`` make it, or the law named), its forecast at each target with its intervals, the runs, and
the backtests of that same forecaster (the strategy as ``bench`` backtests it, or the law's) at the validation
threshold and with decades of extrapolation.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from benchcast.data.table import parse_metric
from benchcast.defaults import DEFAULT_LEVELS as LEVELS
from benchcast.errors import BenchcastError, InsufficientDataError, SelectionError
from benchcast.evaluation.backtest import BacktestResult, backtest
from benchcast.evaluation.bench import Dataset, FitCache, assemble
from benchcast.evaluation.strategies import parse_strategy
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.bootstrap import Uncertainty, check_replicates
from benchcast.forecasting.flags import OUTSIDE_TPR, UNINFORMATIVE, describe
from benchcast.forecasting.forecast import Forecast
from benchcast.forecasting.selection import ladder_laws
from benchcast.forecasting.targets import describe_run, fitted_tpr_range, planned_runs
from benchcast.plots.labels import curve_tpr_note, metric_label
from benchcast.plots.panels import curve, flops_grid
from benchcast.report.bands import curve_tpr, strategy_bands
from benchcast.report.law_choice import RECOMMENDED, LawChoice, choose_law
from benchcast.report.profile import held_out_rows, profile_thresholds
from benchcast.report.profile import profile_summary as profile_summary

NEAR_CHANCE = 0.05  # a forecast within this of chance is "near chance"

ROW_METRICS = {
    "n_test": "n_test",
    "mae": "test_mae",
    "mre": "test_mre",
    "n_usable": "n_test_usable",  # bench's row ->
    "mre_usable": "test_mre_usable",
    "coverage50": "coverage50",
    "coverage90": "coverage90",  # the page's
    "width90": "width90",
}


@dataclass
class StrategyBacktest:
    """The strategy backtested at one threshold: bench's cell for this benchmark, laid out for the page."""

    strategy: str
    benchmark: str
    threshold: float
    status: str
    predictions: pd.DataFrame
    metrics: dict
    members: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)
    grid: np.ndarray = field(default_factory=lambda: np.array([]))
    curve: np.ndarray = field(default_factory=lambda: np.array([]))
    member_curves: dict = field(default_factory=dict)
    row: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The strategy with its weights at this threshold: ``'ensemble (power_floor 0.50, bnsl_monotone 0.50)'``."""
        mix = ", ".join(f"{law} {w:.2f}" for law, w in self.weights.items())
        return f"{self.strategy} ({mix})" if mix else self.strategy

    @property
    def largest_fitted(self) -> float:
        """The largest run a member was fitted to (FLOPs): where its extrapolation starts."""
        return max(float(fit.diagnostics.flops_max) for fit in self.members.values())

    @property
    def dropped(self) -> list[dict]:
        """Runs below the threshold that no member fitted, with the first member's reason."""
        frame = self.predictions[self.predictions["fitted"]]
        fitted = set(zip(frame["run"], frame["k"].astype(float), strict=True))
        out = {}
        for fit in self.members.values():
            for d in fit.dropped:
                out.setdefault((d["run"], float(d["k"])), d)
        return [d for key, d in out.items() if key not in fitted]


def strategy_backtests(
    table: pd.DataFrame,
    spec: FitSpec,
    metric: str,
    strategy: str,
    laws: tuple[str, ...],
    thresholds: list[float],
    *,
    tpr: float | None,
    uncertainty: Uncertainty,
    n_jobs: int | None = 1,
    fallbacks: tuple[str, ...] = (),
    splitter=None,
) -> list[StrategyBacktest]:
    """``strategy`` backtested at each threshold (first at ``splitter``'s split): one bench cell per split."""
    made = parse_strategy(strategy, uncertainty.interval)
    pair = ((spec.benchmark, metric),)
    datasets = [Dataset(spec.benchmark, table, pair, tuple(thresholds), tpr=tpr)]
    if splitter is not None:
        datasets.insert(0, Dataset("validation", table, pair, tpr=tpr, split=splitter))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bench's cells record failures as statuses; the page says them
        cache = FitCache.of(
            datasets, [made], candidates=laws, fallbacks=fallbacks, uncertainty=uncertainty, n_jobs=n_jobs
        )
        rows, predictions = assemble(cache, [made], n_boot=uncertainty.n_boot, seed=uncertainty.seed)
    runs, _ = design(table, replace(spec, tpr=tpr))
    out = []
    for cell in cache.cells:
        row = rows[(rows["dataset"] == cell.data.name) & (rows["cutoff"] == cell.cutoff)].iloc[0].to_dict()
        mine = (
            (predictions["dataset"] == cell.data.name) & (predictions["cutoff"] == cell.cutoff)
            if len(predictions)
            else []
        )
        points = predictions[mine] if len(predictions) else predictions
        out.append(_cell_backtest(runs, row, points, cell, made, uncertainty))
    return out


def _cell_backtest(
    runs: pd.DataFrame, row: dict, points: pd.DataFrame, cell, strategy, uncertainty: Uncertainty
) -> StrategyBacktest:
    """One bench cell as a backtest: runs by side, held-out predictions, metrics, blended curves."""
    threshold = float(row["cutoff"])
    frame = runs[[c for c in ("run", "flops", "params", "tokens", "tpr", "k", "value") if c in runs]].copy()
    frame = frame.rename(columns={"value": "true"})
    trained, held = set(cell.seen["run"]), set(cell.held["run"])  # the cell's split, whatever the splitter
    frame["side"] = np.where(frame["run"].isin(trained), "train", np.where(frame["run"].isin(held), "test", "unused"))
    metrics = {ROW_METRICS[key]: row.get(key, np.nan) for key in ROW_METRICS}
    metrics.update(n_boot=uncertainty.n_boot, interval=uncertainty.interval)
    status = str(row["status"])
    # a cell with a refused point gives no number: every held-out point of it counts as refused
    metrics["n_refused"] = int((frame["side"] == "test").sum()) if row.get("refused") in (True,) else 0
    weights, members = {}, {}
    if status == "ok":
        weights = dict(strategy.make(cell).weights_)
        members = {law: cell.members[law].fit for law in weights}
        held = points[["run", "flops", "prediction", *[c for c in points if c.startswith(("lower", "upper"))]]]
        frame = frame.merge(held, on=["run", "flops"], how="left")
    fits = {law: outcome.fit for law, outcome in cell.members.items() if outcome.fit is not None}
    fitted = {(r, float(k)) for fit in fits.values() for r, k in zip(fit.points["run"], fit.points["k"], strict=True)}
    frame["fitted"] = [(r, float(k)) in fitted for r, k in zip(frame["run"], frame["k"], strict=True)]
    frame["fitted"] &= frame["side"] == "train"
    if "prediction" not in frame:
        frame["prediction"] = np.nan
    if not all(np.isfinite(metrics.get(f"coverage{pct}", np.nan)) for pct in (50, 90)):
        metrics["interval_note"] = (
            f"the {row['strategy']} has {status} below {threshold:.3g} FLOPs (too few rolling origins with "
            "usable points inside the runs there)"
            if status == "no support"
            else f"the {row['strategy']} {status} below {threshold:.3g} FLOPs"
            if status != "ok"
            else "no held-out run has an interval (too few rolling origins below the threshold to estimate "
            "the error of extrapolating)"
        )
    out = StrategyBacktest(str(row["strategy"]), str(row["benchmark"]), threshold, status, frame, metrics, row=row)
    out.members, out.fits, out.weights = members, fits, weights
    curves = {law: curve(fit, flops_grid(frame)) for law, fit in members.items()}
    if members and all(c is not None for c in curves.values()):
        grid = next(iter(curves.values()))[0]
        out.member_curves = {law: c[1] for law, c in curves.items()}
        # the blend of the members' curves, as the one forecaster weights them (no draws: the curve alone)
        out.grid = grid
        out.curve = sum(w * np.asarray(out.member_curves[law], float) for law, w in weights.items())
    return out


def strategy_profile(backtests: list[StrategyBacktest]) -> pd.DataFrame:
    """The held-out rows of the strategy's backtests with their decades beyond the largest fitted run."""
    frames = [held_out_rows(bt.predictions, bt.threshold, bt.largest_fitted) for bt in backtests if bt.members]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@dataclass
class BenchmarkReport:
    benchmark: str
    metric: str
    k: int | None
    choice: LawChoice
    fit: FitResult
    runs: pd.DataFrame  # every selected run: flops, value, status
    grid: np.ndarray
    curve: np.ndarray
    bands: dict  # level -> (lower, upper) over grid
    forecast: Forecast  # at the targets
    validation: StrategyBacktest | BacktestResult  # the strategy (or named law) at the validation threshold
    profile: pd.DataFrame  # held-out predictions of its backtests at several thresholds
    n_boot: int
    warnings: list[str] = field(default_factory=list)
    passk: tuple[pd.DataFrame, list[FitResult]] | None = None
    members: dict = field(default_factory=dict)  # law -> FitResult, the strategy's laws with a positive weight
    weights: dict = field(default_factory=dict)  # law -> weight (heaviest first)
    member_curves: dict = field(default_factory=dict)  # law -> its own forecast over grid
    interval: str = "extrapolation"  # the interval the bands are: 'extrapolation' or 'bootstrap'
    covariates: dict = field(default_factory=dict)  # law -> the covariates it was given at the targets, in words
    curve_note: str = ""  # the TPR the curve of laws of N and D is drawn at (and if outside the fitted runs')
    ratio_curves: dict = field(default_factory=dict)  # a planned target's TPR -> (curve, bands) at it, where it differs
    curve_tpr: float | None = None  # the TPR the main curve is drawn at (laws of N and D)

    @property
    def strategy(self) -> str:
        """What the forecast is, as the page names it: the strategy with its weights, or the law."""
        return self.choice.label


def _run_table(result: FitResult, table: pd.DataFrame, spec: FitSpec, tpr: float | None) -> pd.DataFrame:
    """Every selected run with its status in the forecast fit: fitted, or dropped with the reason."""
    rows, _ = design(table, replace(spec, tpr=tpr))
    reasons = {(d["run"], float(d["k"])): d["reason"] for d in result.dropped}
    status = [
        "fitted" if (r, float(k)) not in reasons else f"dropped: {reasons[(r, float(k))]}"
        for r, k in zip(rows["run"], rows["k"], strict=True)
    ]
    return rows[["run", "flops", "params", "tokens", "tpr", "value"]].assign(status=status)


def _benchmark_warnings(report: BenchmarkReport, q_rand: float) -> list[str]:
    """Thin support, parameters at bounds, near-chance forecasts, and extrapolation past the backtests."""
    out = [f"fit: {w}" for w in report.fit.warnings]
    d = report.fit.diagnostics
    if not d.converged:
        out.append("the forecast fit did not converge")
    largest_seen = float(report.profile["decades"].max()) if not report.profile.empty else np.nan
    if report.profile.empty:
        note = report.validation.metrics.get("interval_note", "")
        out.append(
            "no backtest forecast a held-out run, so the forecast's error is unchecked" + (f": {note}" if note else "")
        )
    for row in report.forecast.to_frame().itertuples():
        if row.flags:
            out.append(f"at {row.flops:.2g} FLOPs the forecast is {describe(row.flags)}")
        if row.decades > largest_seen + 0.25:
            out.append(
                f"at {row.flops:.2g} FLOPs the forecast extrapolates {row.decades:.2f} decades; the backtests "
                f"checked at most {largest_seen:.2f}: its interval is not checked that far"
            )
        if row.lower90 - q_rand < NEAR_CHANCE and not any(f.kind == UNINFORMATIVE for f in row.flags):
            out.append(f"at {row.flops:.2g} FLOPs the 90 % interval reaches down to chance ({q_rand:.3g})")
    coverage90 = report.validation.metrics.get("coverage90")
    if coverage90 is not None and np.isfinite(coverage90) and coverage90 < 0.75:
        out.append(f"the backtest's 90 % intervals covered only {coverage90:.0%} of held-out runs: they are too narrow")
    # each warning once (the fit's own warnings are the search limits it reached, not its active
    # constraints: those are information, shown with the parameters)
    return list(dict.fromkeys(out))


def analyse_benchmark(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None,
    *,
    target_flops: list[float] | None = None,
    target_params: list[float] | None = None,
    target_tokens: list[float] | None = None,
    convention=None,
    law: str = RECOMMENDED,
    tpr: float | None = None,
    forecast_tpr: float | None = None,
    uncertainty: Uncertainty | None = None,
    n_jobs: int | None = 1,
    splitter=None,
) -> BenchmarkReport:
    """Everything the page shows about one benchmark (see the module docstring), its bands at the page's levels
    (``uncertainty``'s replicates, seed and interval; default :class:`Uncertainty`'s); ``splitter`` (a splitter value
    of one split) places the validation backtest in place of the law choice's threshold."""
    unc = replace(uncertainty or Uncertainty(), levels=LEVELS)
    check_replicates(unc.n_boot, allow_zero=False)
    seed = unc.seed
    metric_name, k = parse_metric(metric) if metric else (None, None)
    spec = FitSpec("power", benchmark, metric_name, k=k, seed=seed)
    choice = choose_law(table, spec, law=law, tpr=tpr, n_jobs=n_jobs)
    members = choice.strategy.fits
    result = members[choice.law]  # the member the page details (runs, parameters)
    spec = FitSpec(choice.law, benchmark, metric_name, k=k, seed=seed)
    options = {"tpr": tpr, "uncertainty": unc, "n_jobs": n_jobs, "splitter": splitter}
    validation, profile = judge(table, choice, spec, metric_label(str(result.spec.metric), result.spec.k), **options)
    flops = np.concatenate([m.points["flops"].to_numpy(float) for m in members.values()])
    forecast_tpr = curve_tpr(planned_runs(target_flops, target_params, target_tokens), forecast_tpr)
    targets = planned_runs(
        target_flops,
        target_params,
        target_tokens,
        tpr=None if target_flops is None else forecast_tpr,
        convention=convention,
    )
    targets = targets.by_compute()
    grid = np.geomspace(flops.min() / 1.5, max(targets.flops.max(), flops.max()) * 1.5, 160)
    on_grid, at_targets, band_notes = strategy_bands(
        choice, grid, targets, tpr=forecast_tpr, uncertainty=unc, n_jobs=n_jobs
    )
    report = BenchmarkReport(
        benchmark=benchmark,
        metric=str(result.spec.metric),
        k=result.spec.k if result.spec.k is not None else k,
        choice=choice,
        fit=result,
        runs=_run_table(result, table, spec, tpr),
        grid=grid,
        curve=on_grid.prediction,
        bands={level: on_grid.interval(level) for level in LEVELS},
        forecast=at_targets,
        validation=validation,
        profile=profile,
        n_boot=unc.n_boot,
        members=members,
        weights=dict(choice.strategy.weights_),
        member_curves=on_grid.members,
        interval=on_grid.uncertainty.interval,
        covariates=at_targets.meta.covariates,
    )
    in_size = [name for name, fit in members.items() if {"params", "tokens"} <= set(fit.law_object.covariates)]
    report.curve_note = curve_tpr_note(forecast_tpr, fitted_tpr_range(members.values()), in_size)
    report.curve_tpr = forecast_tpr if in_size else None
    if in_size:  # a planned run at another ratio sits on its own curve: one curve and band per target ratio
        for ratio in sorted({float(t) for t in targets.tpr[targets.sized]} - {float(forecast_tpr)}):
            made = choice.strategy.predict(
                planned_runs(flops=grid, tpr=ratio, convention=convention), unc, n_jobs=n_jobs
            )
            report.ratio_curves[ratio] = (made.prediction, {level: made.interval(level) for level in LEVELS})
    flags = [
        f"{describe_run(record)}: {flag.reason}"
        for record, point in zip(at_targets.records(), at_targets.flags, strict=True)
        for flag in point
        if flag.kind == OUTSIDE_TPR
    ]
    flags += [f"the forecast figure's {report.curve_note}"] if "OUTSIDE" in report.curve_note else []
    report.warnings = band_notes + flags + _benchmark_warnings(report, float(result.spec.q_rand))
    if str(result.spec.metric) == "pass@k":
        report.passk = _passk_scan(table, benchmark, tpr)
    return report


def judge(
    table: pd.DataFrame,
    choice: LawChoice,
    spec: FitSpec,
    metric: str,
    *,
    tpr: float | None,
    uncertainty: Uncertainty,
    n_jobs: int | None,
    splitter=None,
) -> tuple[StrategyBacktest | BacktestResult, pd.DataFrame]:
    """The validation backtest and extrapolation profile of the default strategy or of the named law."""
    options = {"tpr": tpr, "uncertainty": uncertainty, "n_jobs": n_jobs}
    split = {"threshold": choice.validation_threshold} if splitter is None else {"splitter": splitter}
    thresholds = [choice.validation_threshold, *profile_thresholds(table, spec, tpr)]
    if choice.named:  # the law's backtests: the validation's split, then one per profile threshold it can fit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            backtests = [backtest(table, spec, **split, **options)]
            for threshold in thresholds[1:]:
                with contextlib.suppress(BenchcastError):
                    backtests.append(backtest(table, spec, threshold=threshold, **options))
        largest = [float(bt.fit.points["flops"].max()) for bt in backtests]
        frames = [held_out_rows(bt.predictions, bt.threshold, top) for bt, top in zip(backtests, largest, strict=True)]
        return backtests[0], pd.concat(frames, ignore_index=True)
    # the default as bench backtests it: the ladder's candidates and fallback, members chosen at each threshold
    runs, _ = design(table, replace(spec, tpr=tpr))
    candidates, fallbacks = ladder_laws(runs)
    backtests = strategy_backtests(
        table,
        spec,
        metric,
        choice.strategy.rule,
        candidates,
        thresholds,
        fallbacks=fallbacks,
        splitter=splitter,
        **options,
    )
    if splitter is not None:  # the validation is the splitter's cell, the profile the thresholds'
        return backtests[0], strategy_profile(backtests[1:])
    if not backtests or backtests[0].threshold != choice.validation_threshold:
        raise InsufficientDataError(
            f"{spec.benchmark}: no held-out runs above {choice.validation_threshold:.3g} FLOPs."
        )
    return backtests[0], strategy_profile(backtests)


def _passk_scan(table: pd.DataFrame, benchmark: str, tpr: float | None) -> tuple[pd.DataFrame, list[FitResult]] | None:
    """The compute law (S1) fitted at every k of the data: pass@k versus compute per k, and its parameters versus k."""
    from benchcast.generative.kscan import kscan

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scan, fits = kscan(table, "compute", benchmark, tpr=tpr)
    except (BenchcastError, SelectionError):
        return None
    return (scan, fits) if fits else None
