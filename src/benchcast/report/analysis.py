"""What the report says about one benchmark: the law chosen and why, the forecast at each target
compute with its intervals, the runs (fitted, dropped, held out), and how the backtest's error and
coverage grow with decades of extrapolation.

The law choice (:func:`choose_law`) and the interval method (:func:`forecast_bands`) are one small
function each, so that better ones can replace them without touching the page.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from benchcast.data.table import parse_metric
from benchcast.errors import BenchcastError, SelectionError
from benchcast.evaluation.backtest import BacktestResult, backtest
from benchcast.fitting.api import fit
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting import calibration as cal
from benchcast.forecasting.intervals import bootstrap, check_replicates
from benchcast.forecasting.selection import DEFAULT_CANDIDATES, recommend
from benchcast.laws import get_law

LEVELS = (0.5, 0.9)
BACKTEST_FRACTION = 0.25  # the validation backtest the page shows holds out the top quarter of log C
PROFILE_FRACTIONS = (0.45, 0.65)  # further thresholds of the extrapolation profile (top share of log C held out)
MIN_TRAINING_DECADES = 1.0
NEAR_CHANCE = 0.05  # a forecast within this of chance is "near chance"
RECOMMENDED = "recommended"


@dataclass
class LawChoice:
    law: str
    reason: str
    ranking: pd.DataFrame | None  # one row per law backtested (None when the user named the law)
    validation_threshold: float


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
    forecasts: pd.DataFrame  # one row per target compute
    validation: BacktestResult  # the chosen law at the validation threshold, with intervals
    profile: pd.DataFrame  # held-out predictions of backtests at several thresholds
    n_boot: int
    warnings: list[str] = field(default_factory=list)
    passk: tuple[pd.DataFrame, list[FitResult]] | None = None


def choose_law(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    law: str = RECOMMENDED,
    target_flops: float | None,
    tpr: float | None,
    n_boot: int,
    n_jobs: int | None = 1,
) -> LawChoice:
    """The law to forecast with, and why: the user's, or the one of recommend's default candidates
    that :func:`recommend` selects by its rolling-origin forecasts inside the runs
    (``rule='select'``: the page draws one law). The
    validation backtest the page shows holds out the top quarter of the log-compute range."""
    rows, _ = design(table, replace(spec, tpr=tpr))
    log_c = np.log10(rows["flops"].to_numpy(float))
    threshold = float(10 ** (log_c.max() - BACKTEST_FRACTION * (log_c.max() - log_c.min())))
    if law != RECOMMENDED:
        return LawChoice(law, "named by the user (--law)", None, threshold)
    forecastable = forecastable_laws(table, spec, tpr)
    # the same candidates as recommend's default (bench's measured choice), where they apply
    candidates = [law for law in DEFAULT_CANDIDATES if law in forecastable] or forecastable
    rec = recommend(
        table,
        spec.benchmark,
        spec.metric,
        spec.k,
        tpr=tpr,
        rule="select",
        n_boot=0,
        seed=spec.seed,
        n_jobs=n_jobs,
        laws=candidates,
    )
    if not rec.supported:
        raise BenchcastError(f"{spec.benchmark}: {rec.reason}")
    best = rec.ranking.set_index("law").loc[rec.best]
    reason = (
        f"lowest error of rolling-origin forecasts inside the runs (inner MRE {best['inner_mre']:.2f} %, up to "
        f"{rec.extrapolation_decades:.2f} decades ahead) of {len(rec.ranking)} laws with support"
    )
    return LawChoice(rec.best, reason, rec.ranking, threshold)


def forecastable_laws(table: pd.DataFrame, spec: FitSpec, tpr: float | None) -> list[str]:
    """Laws the report can carry to a target compute: functions of compute, or of N and D (split
    at a tokens-per-parameter ratio)."""
    from benchcast.forecasting.selection import applicable_laws

    laws = applicable_laws(table, replace(spec, tpr=tpr))
    return [name for name in laws if set(get_law(name).covariates) <= {"flops", "params", "tokens"}]


def forecast_bands(
    result: FitResult, *queries: np.ndarray, tpr: float, n_boot: int, seed: int, n_jobs: int | None = 1
) -> list[dict]:
    """Prediction intervals for each array of compute in ``queries``: one dict per query mapping each
    level of :data:`LEVELS` to (lower, upper). The package's default interval: a bootstrap over runs
    plus the extrapolation error measured by rolling origins inside the runs
    (:func:`benchcast.forecasting.calibration.calibrate`); where the runs are too few to calibrate,
    the bootstrap alone, and the page says so. Each query is evaluated on its own, as
    :func:`benchcast.forecasting.forecast.forecast` would evaluate it.

    Parameters
    ----------
    result : FitResult
    *queries : arrays of float
        Compute of the runs to forecast, one array per query.
    tpr : float
        Tokens per parameter placing a run of compute C (laws of N and D).
    n_boot, seed, n_jobs
        Bootstrap replicates, seed and workers.

    Returns
    -------
    list of dict
        Per query, ``{level: (lower, upper)}``.
    """
    boot = bootstrap(result, n_boot, seed=seed, n_jobs=n_jobs, progress=False)
    try:
        boot = cal.calibrate(boot)
    except BenchcastError as exc:
        warnings.warn(f"bootstrap-only intervals (too few runs to calibrate extrapolation: {exc})", stacklevel=2)
    out = []
    for flops in queries:
        draws = boot.draws("prediction", **result.fitted.covariates_at(np.asarray(flops, float), tpr=tpr))
        out.append({level: draws.interval(level) for level in LEVELS})
    return out


def extrapolation_profile(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    tpr: float | None,
    n_boot: int,
    n_jobs: int | None = 1,
    done: Sequence[BacktestResult] = (),
) -> pd.DataFrame:
    """Held-out predictions of threshold backtests (``done`` plus one per :data:`PROFILE_FRACTIONS`),
    each with the decades it extrapolates beyond its largest fitted run, its absolute error and
    whether its 50 % and 90 % prediction intervals cover the observed score."""
    rows, _ = design(table, replace(spec, tpr=tpr))
    log_c = np.log10(rows["flops"].to_numpy(float))
    span = log_c.max() - log_c.min()
    backtests = list(done)
    for fraction in PROFILE_FRACTIONS:
        threshold = float(10 ** (log_c.max() - fraction * span))
        if np.log10(threshold) - log_c.min() < MIN_TRAINING_DECADES:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bt = backtest(table, spec, threshold=threshold, tpr=tpr, n_boot=n_boot, seed=spec.seed, n_jobs=n_jobs)
        except BenchcastError:
            continue
        backtests.append(bt)
    frames = []
    for bt in backtests:
        test = bt.predictions[(bt.predictions["side"] == "test") & np.isfinite(bt.predictions["predicted"])].copy()
        largest = float(bt.fit.points["flops"].max())
        test["threshold"] = bt.threshold
        test["decades"] = np.log10(test["flops"] / largest)
        test["abs_error"] = (test["predicted"] - test["true"]).abs()
        for level in (50, 90):
            inside = (test["true"] >= test[f"lower{level}"]) & (test["true"] <= test[f"upper{level}"])
            test[f"covered{level}"] = inside.where(test[f"lower{level}"].notna())
        frames.append(test)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def profile_summary(profile: pd.DataFrame, width: float = 0.25) -> pd.DataFrame:
    """Mean absolute error and coverage of the profile in bins of ``width`` decades."""
    if profile.empty:
        return pd.DataFrame(columns=["decades", "n", "mae", "coverage50", "coverage90"])
    bins = np.floor(profile["decades"] / width) * width + width / 2
    grouped = profile.assign(bin=bins).groupby("bin")
    return pd.DataFrame(
        {
            "decades": grouped["decades"].mean(),
            "n": grouped.size(),
            "mae": grouped["abs_error"].mean(),
            "coverage50": grouped["covered50"].mean(),
            "coverage90": grouped["covered90"].mean(),
        }
    ).reset_index(drop=True)


def run_table(result: FitResult, table: pd.DataFrame, spec: FitSpec, tpr: float | None) -> pd.DataFrame:
    """Every selected run with its status in the forecast fit: fitted, or dropped with the reason."""
    rows, _ = design(table, replace(spec, tpr=tpr))
    reasons = {(d["run"], float(d["k"])): d["reason"] for d in result.dropped}
    status = [
        "fitted" if (r, float(k)) not in reasons else f"dropped: {reasons[(r, float(k))]}"
        for r, k in zip(rows["run"], rows["k"], strict=True)
    ]
    return rows[["run", "flops", "params", "tokens", "value"]].assign(status=status)


def benchmark_warnings(report: BenchmarkReport, q_rand: float) -> list[str]:
    """Thin support, parameters at bounds, near-chance forecasts, and extrapolation beyond what
    the backtests reached."""
    out = [f"fit: {w}" for w in report.fit.warnings]
    d = report.fit.diagnostics
    if not d.converged:
        out.append("the forecast fit did not converge")
    largest_seen = float(report.profile["decades"].max()) if not report.profile.empty else 0.0
    for row in report.forecasts.itertuples():
        if row.decades > largest_seen + 0.25:
            out.append(
                f"at {row.flops:.2g} FLOPs the forecast extrapolates {row.decades:.2f} decades; the backtests "
                f"checked at most {largest_seen:.2f}: its interval is not checked that far"
            )
        if row.lower90 - q_rand < NEAR_CHANCE:
            out.append(f"at {row.flops:.2g} FLOPs the 90 % interval reaches down to chance ({q_rand:.3g})")
    coverage90 = report.validation.metrics.get("coverage90")
    if coverage90 is not None and np.isfinite(coverage90) and coverage90 < 0.75:
        out.append(f"the backtest's 90 % intervals covered only {coverage90:.0%} of held-out runs: they are too narrow")
    return out


def analyse_benchmark(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None,
    *,
    target_flops: list[float],
    law: str = RECOMMENDED,
    tpr: float | None = None,
    forecast_tpr: float = 20.0,
    n_boot: int = 200,
    seed: int = 0,
    n_jobs: int | None = 1,
) -> BenchmarkReport:
    """Everything the page shows about one benchmark (see the module docstring)."""
    check_replicates(n_boot, allow_zero=False)
    metric_name, k = parse_metric(metric) if metric else (None, None)
    spec = FitSpec("power", benchmark, metric_name, k=k, seed=seed)
    choice = choose_law(table, spec, law=law, target_flops=max(target_flops), tpr=tpr, n_boot=n_boot, n_jobs=n_jobs)
    spec = FitSpec(choice.law, benchmark, metric_name, k=k, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fit(table, choice.law, benchmark, metric_name, k, tpr=tpr, seed=seed)
        validation = backtest(
            table, spec, threshold=choice.validation_threshold, tpr=tpr, n_boot=n_boot, seed=seed, n_jobs=n_jobs
        )
    flops = result.points["flops"].to_numpy(float)
    targets = np.asarray(sorted(target_flops), float)
    grid = np.geomspace(flops.min() / 1.5, max(targets.max(), flops.max()) * 1.5, 160)
    curve = result.predict(**result.fitted.covariates_at(grid, tpr=forecast_tpr))
    grid_bands, target_bands = forecast_bands(result, grid, targets, tpr=forecast_tpr, n_boot=n_boot, seed=seed)
    forecasts = pd.DataFrame(
        {
            "flops": targets,
            "decades": np.log10(targets / flops.max()),
            "forecast": result.predict(**result.fitted.covariates_at(targets, tpr=forecast_tpr)),
            **{
                f"{side}{int(level * 100)}": target_bands[level][i]
                for level in LEVELS
                for i, side in enumerate(("lower", "upper"))
            },
        }
    )
    profile = extrapolation_profile(table, spec, tpr=tpr, n_boot=n_boot, n_jobs=n_jobs, done=[validation])
    report = BenchmarkReport(
        benchmark=benchmark,
        metric=str(result.spec.metric),
        k=result.spec.k if result.spec.k is not None else k,
        choice=choice,
        fit=result,
        runs=run_table(result, table, spec, tpr),
        grid=grid,
        curve=curve,
        bands=grid_bands,
        forecasts=forecasts,
        validation=validation,
        profile=profile,
        n_boot=n_boot,
    )
    report.warnings = benchmark_warnings(report, float(result.spec.q_rand))
    if str(result.spec.metric) == "pass@k":
        report.passk = passk_scan(table, benchmark, tpr)
    return report


def passk_scan(table: pd.DataFrame, benchmark: str, tpr: float | None) -> tuple[pd.DataFrame, list[FitResult]] | None:
    """The compute law (S1) fitted at every k of the data: pass@k versus compute per k, and its
    parameters versus k."""
    from benchcast.generative.kscan import kscan

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scan, fits = kscan(table, "compute", benchmark, tpr=tpr)
    except (BenchcastError, SelectionError):
        return None
    return (scan, fits) if fits else None
