"""Backtests of SPEC §5: split runs by a protocol, fit one side, predict the other, score it.

Protocols: ``threshold`` (1: fit C <= T, test C > T), ``nd`` (2: test C > T or the largest TPR),
``passk`` (3: fit C < T and k <= max_k, test the rest), the threshold ``sweep`` (4) and the
``cutoff`` backtest (5).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.evaluation import DEFAULT_THRESHOLD, PROTOCOLS
from benchcast.fitting.api import fit_rows
from benchcast.fitting.metrics import coverage, mae, mre, r2, rmse, usable_points
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.laws import get_law
from benchcast.utils.parallel import parallel_map
from benchcast.utils.progress import track
from benchcast.validation import check_thresholds

SWEEP_THRESHOLDS = tuple(np.geomspace(6e19, 5e22, 13))
SUCCESS_MRE = 10.0  # percent: a threshold "succeeds" when held-out MRE is below this
SETTLE_TOLERANCE = 0.10
LEVELS = (0.5, 0.9)


def split(
    rows: pd.DataFrame,
    protocol: str = "threshold",
    threshold: float = DEFAULT_THRESHOLD,
    *,
    min_flops: float | None = None,
    max_k: int = 32,
    holdout_tpr: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (train, test) masks over design rows for a protocol."""
    flops = rows["flops"].to_numpy(float)
    if protocol == "threshold":
        train, test = flops <= threshold, flops > threshold
    elif protocol == "nd":
        tpr = rows["tpr"].to_numpy(float)
        held_tpr = tpr.max() if holdout_tpr is None else holdout_tpr
        test = (flops > threshold) | np.isclose(tpr, held_tpr, rtol=1e-6)
        train = ~test
    elif protocol == "passk":
        train = (flops < threshold) & (rows["k"].to_numpy(float) <= max_k)
        test = ~train
    else:
        raise BenchcastError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}.")
    if min_flops is not None:
        train &= flops >= min_flops
    return train, test


@dataclass
class Backtest:
    """One law, one benchmark, one split: the fit, every prediction, and the error metrics."""

    law: str
    benchmark: str
    protocol: str
    threshold: float
    fit: FitResult
    predictions: pd.DataFrame
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "law": self.law,
            "benchmark": self.benchmark,
            "protocol": self.protocol,
            "threshold": self.threshold,
            "metrics": self.metrics,
            "params": self.fit.params,
            "fit_warnings": self.fit.warnings,
            "predictions": self.predictions.to_dict("records"),
        }


def _covariates(result: FitResult, rows: pd.DataFrame) -> tuple[np.ndarray, dict]:
    """Rows whose covariates are usable (finite, positive), and those covariates as predict() kwargs."""
    law = get_law(result.law)
    values = {c: rows[c].to_numpy(float) for c in law.covariates}
    ok = np.all([np.isfinite(v) & (v > 0) for v in values.values()], axis=0)
    kwargs = {c: v[ok] for c, v in values.items() if not (law.per_k and c == "k")}
    return ok, kwargs


def predict_rows(result: FitResult, rows: pd.DataFrame) -> np.ndarray:
    """Predictions for design rows (their covariates), nan where a covariate is unusable."""
    out = np.full(len(rows), np.nan)
    ok, kwargs = _covariates(result, rows)
    if ok.any():
        out[ok] = result.predict(**kwargs)
    return out


def score_split(
    result: FitResult, rows: pd.DataFrame, train: np.ndarray, test: np.ndarray
) -> tuple[pd.DataFrame, dict]:
    predicted = predict_rows(result, rows)
    cols = [c for c in ("run", "flops", "params", "tokens", "tpr", "k") if c in rows]
    frame = rows[cols].copy()
    frame["true"] = rows["value"].to_numpy(float)
    frame["predicted"] = predicted
    frame["side"] = np.where(train, "train", np.where(test, "test", "unused"))
    used = set(zip(result.points["run"], result.points["k"].astype(float), strict=True))
    fitted = np.array([(r, float(k)) in used for r, k in zip(rows["run"], rows["k"], strict=True)])
    frame["fitted"] = fitted & train
    # points far enough above chance for a relative error to mean something (one definition, USABLE)
    spec = result.spec
    frame["usable"] = usable_points(frame["true"].to_numpy(float), spec.q_rand, spec.benchmark)
    tr = frame[frame["fitted"]]
    te = frame[(frame["side"] == "test") & np.isfinite(frame["predicted"])]
    tu = te[te["usable"]]
    metrics = {
        "n_train": int(len(tr)),
        "n_test": int(len(te)),
        "train_rmse": rmse(tr["true"], tr["predicted"]),
        "train_r2": r2(tr["true"], tr["predicted"]),
        "train_mae": mae(tr["true"], tr["predicted"]),
        "train_mre": mre(tr["true"], tr["predicted"]),
        "test_mae": mae(te["true"], te["predicted"]),
        "test_mre": mre(te["true"], te["predicted"]),
        "test_rmse": rmse(te["true"], te["predicted"]),
        "n_test_usable": int(len(tu)),
        "test_mae_usable": mae(tu["true"], tu["predicted"]),
        "test_mre_usable": mre(tu["true"], tu["predicted"]),
    }
    return frame, metrics


def backtest(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    protocol: str = "threshold",
    threshold: float = DEFAULT_THRESHOLD,
    min_flops: float | None = None,
    tpr: float | None = None,
    holdout_tpr: float | None = None,
    n_boot: int = 0,
    seed: int = 0,
    n_jobs: int | None = None,
    interval: str = "extrapolation",
) -> Backtest:
    """Fit ``spec`` on the training side of ``protocol`` and score the held-out side.

    With ``n_boot`` > 0 the fit is bootstrapped over runs and the held-out rows get 50 % and 90 %
    prediction intervals, with their coverage in the metrics. ``interval='extrapolation'`` (the
    default) adds the extrapolation error estimated by rolling origins inside the training runs
    (:mod:`benchcast.forecasting.calibration`); ``'bootstrap'`` is the bootstrap alone.
    """
    # the compute range and max_k limit the training side only: the held-out side keeps every run
    tpr = spec.tpr if tpr is None else tpr
    min_flops = spec.min_flops if min_flops is None else min_flops
    rows, resolved = design(table, replace(spec, max_k=None, min_flops=None, max_flops=None, tpr=tpr))
    train, test = split(rows, protocol, threshold, min_flops=min_flops, max_k=spec.max_k or 32, holdout_tpr=holdout_tpr)
    if not train.any():
        raise InsufficientDataError(f"{spec.benchmark}: no runs on the training side of {protocol} at {threshold:.3g}.")
    if not test.any():
        raise InsufficientDataError(f"{spec.benchmark}: no held-out runs above {threshold:.3g} FLOPs.")
    training_spec = replace(
        resolved, max_k=spec.max_k, min_flops=min_flops, max_flops=threshold if protocol != "nd" else None
    )
    result = fit_rows(rows[train].reset_index(drop=True), training_spec)
    predictions, metrics = score_split(result, rows, train, test)
    bt = Backtest(spec.law, spec.benchmark, protocol, threshold, result, predictions, metrics)
    if n_boot:
        add_intervals(bt, rows, n_boot, seed=seed, n_jobs=n_jobs, interval=interval)
    return bt


def add_intervals(
    bt: Backtest,
    rows: pd.DataFrame,
    n_boot: int,
    *,
    seed: int = 0,
    n_jobs: int | None = None,
    levels=LEVELS,
    interval: str = "extrapolation",
) -> None:
    """Bootstrap the backtest's fit (plus, by default, the extrapolation error estimated inside its
    training runs); add prediction intervals and their held-out coverage. Where the extrapolation
    error cannot be estimated the intervals stay empty and ``metrics['interval_note']`` says why."""
    from benchcast.forecasting.calibration import calibrate, check_interval
    from benchcast.forecasting.intervals import bootstrap, quantile

    check_interval(interval)
    boot = bootstrap(bt.fit, n_boot, seed=seed, n_jobs=n_jobs, progress=False)
    bt.metrics["interval"] = interval
    if interval == "extrapolation":
        try:
            boot = calibrate(boot)
            bt.metrics["extrapolation_tau"] = boot.spread.tau
        except InsufficientDataError as exc:  # no interval rather than a wrong one: columns present, empty
            bt.metrics["interval_note"] = str(exc)
            bt.metrics["n_boot"] = n_boot
            for level in levels:
                pct = int(round(level * 100))
                bt.predictions[f"lower{pct}"] = bt.predictions[f"upper{pct}"] = np.nan
                bt.metrics[f"coverage{pct}"] = bt.metrics[f"coverage{pct}_confidence"] = float("nan")
            return
    ok, kwargs = _covariates(bt.fit, rows)
    frame = bt.predictions
    test = (frame["side"] == "test").to_numpy() & ok
    for kind in ("prediction", "confidence"):
        draws = boot.draws(kind, **kwargs) if ok.any() else np.empty((0, 0))
        for level in levels:
            tail = (1 - level) / 2
            lower, upper = np.full(len(frame), np.nan), np.full(len(frame), np.nan)
            if ok.any():
                lower[ok] = quantile(draws, tail)
                upper[ok] = quantile(draws, 1 - tail)
            pct = int(round(level * 100))
            suffix = "" if kind == "prediction" else "_confidence"
            if kind == "prediction":
                frame[f"lower{pct}"], frame[f"upper{pct}"] = lower, upper
            bt.metrics[f"coverage{pct}{suffix}"] = coverage(frame["true"][test], lower[test], upper[test])
    bt.metrics["n_boot"] = n_boot
    bt.metrics["boot_failed"] = boot.n_failed
    bt.metrics["boot_dropped"] = boot.n_dropped  # refits that did not converge: left out of the intervals


SUCCESS_DEFINITION = (
    "a threshold T succeeds when the law, fitted on the runs with C <= T, forecasts the held-out runs "
    "(C > T) with a mean relative error (MRE over every held-out point) below {success_mre:g} %"
)
CRITICAL_DEFINITION = (
    "the critical threshold is the T where a logistic regression of success on log10 T crosses "
    "P(success) = 0.5; it is reported only when it lies inside the span of the grid where success was "
    "observed to change (from the lowest to the highest threshold next to a change), else left out"
)


def usable_errors(bt: Backtest) -> dict:
    """Training and held-out errors over all points and over usable points (:data:`USABLE`, one
    definition for every law, so that tables compare like with like)."""
    frame = bt.predictions
    true, predicted = frame["true"].to_numpy(float), frame["predicted"].to_numpy(float)
    usable = usable_points(true, bt.fit.spec.q_rand, bt.benchmark)
    fitted = frame["fitted"].to_numpy(bool)
    test = (frame["side"] == "test").to_numpy() & np.isfinite(predicted)
    out = {}
    for side, mask in (("train", fitted), ("test", test)):
        out[f"{side}_mae"] = mae(true[mask], predicted[mask])
        out[f"{side}_mre"] = mre(true[mask], predicted[mask])
        out[f"{side}_mre_usable"] = mre(true[mask & usable], predicted[mask & usable])
    out["n_fit"], out["n_test"], out["n_test_usable"] = int(fitted.sum()), int(test.sum()), int((test & usable).sum())
    out["train_rmse"], out["train_r2"] = bt.metrics["train_rmse"], bt.metrics["train_r2"]
    return out


def _logistic_crossing(x: np.ndarray, s: np.ndarray) -> float | None:
    """log10 T where a logistic regression of success on log10 T crosses 0.5 (None if flat)."""
    centre, scale = x.mean(), max(x.std(), 1e-9)
    z = (x - centre) / scale

    def nll(w):  # tiny ridge keeps the estimate finite when the classes separate
        logits = w[0] * z + w[1]
        return float(np.sum(np.logaddexp(0, logits) - s * logits) + 1e-2 * w[0] ** 2)

    w = minimize(nll, np.zeros(2), method="BFGS").x
    if abs(w[0]) < 1e-9:
        return None
    return float(centre + scale * (-w[1] / w[0]))


def change_span(thresholds, success) -> tuple[float, float] | None:
    """(lowest, highest) threshold next to a change of success along the sorted grid; None if none."""
    t = np.asarray(thresholds, float)
    order = np.argsort(t, kind="stable")
    t, s = t[order], np.asarray(success, bool)[order]
    changes = np.flatnonzero(s[1:] != s[:-1])
    if not changes.size:
        return None
    return float(t[changes[0]]), float(t[changes[-1] + 1])


def critical_threshold(thresholds, success) -> float | None:
    """The critical threshold of :data:`CRITICAL_DEFINITION` (None where it is undefined)."""
    order = np.argsort(np.asarray(thresholds, float), kind="stable")  # the same answer for any order
    x = np.log10(np.asarray(thresholds, float)[order])
    s = np.asarray(success, float)[order]
    span = change_span(thresholds, success)
    if span is None:
        return None
    crossing = _logistic_crossing(x, s)
    if crossing is None:
        return None
    value = float(10**crossing)
    return value if span[0] <= value <= span[1] else None


@dataclass
class Sweep:
    """Protocol 4 for one law and benchmark: one row per threshold that has held-out runs."""

    law: str
    benchmark: str
    table: pd.DataFrame
    critical: float | None
    note: str
    skipped: list[dict] = field(default_factory=list)
    success_mre: float = SUCCESS_MRE

    @property
    def definitions(self) -> dict:
        return {
            "success": SUCCESS_DEFINITION.format(success_mre=self.success_mre),
            "critical_threshold": CRITICAL_DEFINITION,
        }

    def summary(self) -> dict:
        return {
            "law": self.law,
            "benchmark": self.benchmark,
            "critical_threshold": self.critical,
            "note": self.note,
            "successes": int(self.table["success"].sum()) if len(self.table) else 0,
            "thresholds": int(len(self.table)),
            "skipped": len(self.skipped),
        }


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
    n_boot: int = 0,
    seed: int = 0,
    n_jobs: int | None = 1,
    backend: str | None = None,
    ray_address: str | None = None,
) -> Sweep:
    """Protocol 4: the threshold backtest over a grid, and the critical threshold.

    Thresholds where the backtest has too little data (no held-out runs above them, too few to
    fit below them) are left out of the grid and listed in ``skipped`` with the reason; any other
    error (a wrong selection) is raised.
    """
    options = {"min_flops": min_flops, "tpr": tpr, "n_boot": n_boot, "seed": seed, "n_jobs": 1}
    grid = check_thresholds(thresholds)
    # resolve the selection once here, so that its errors and data warnings (an unknown chance
    # level) reach the caller rather than dying silently in the workers
    design(table, replace(spec, tpr=spec.tpr if tpr is None else tpr))
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
        return Sweep(spec.law, spec.benchmark, frame, None, note, skipped, success_mre)
    frame["success"] = frame["test_mre"] < success_mre
    critical = critical_threshold(frame["threshold"], frame["success"])
    span = change_span(frame["threshold"], frame["success"])
    if span is None:
        outcome = "every threshold succeeds" if frame["success"].all() else "no threshold succeeds"
        note = f"success does not change over the grid: {outcome}"
    elif critical is None:
        note = f"the logistic crossing lies outside the span {span[0]:.3g}..{span[1]:.3g} where success changed"
    else:
        note = f"success changes between {span[0]:.3g} and {span[1]:.3g}"
    return Sweep(spec.law, spec.benchmark, frame, critical, note, skipped, success_mre)


def cutoff_backtest(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    n_targets: int = 1,
    tpr: float | None = None,
    min_points: int | None = None,
    progress: bool | None = None,
    n_boot: int = 0,
    seed: int = 0,
) -> pd.DataFrame:
    """Protocol 5: fit below a moving cutoff, predict the ``n_targets`` most expensive runs.

    Replicate runs at a target's compute (same C, another seed) are held out with the target,
    never fitted, so every cutoff lies below the targets and still extrapolates. Cutoffs are the
    distinct compute values of the remaining runs, from the ``min_points``-th cheapest run on.
    One row per cutoff: cutoff and target compute, decades of extrapolation
    (log10 target C / cutoff C), decades of training data, MAE, MRE and every parameter.
    """
    rows, resolved = design(table, replace(spec, tpr=spec.tpr if tpr is None else tpr))
    law = get_law(spec.law)
    by_run = rows.groupby("run")["flops"].first().sort_values(kind="stable")
    if n_targets < 1 or n_targets >= len(by_run):
        raise BenchcastError(f"n_targets must lie in 1..{len(by_run) - 1} for {spec.benchmark}, got {n_targets}.")
    chosen = by_run.to_numpy(float)[-n_targets:]
    replicate = np.isclose(by_run.to_numpy(float)[:, None], chosen[None, :], rtol=1e-9, atol=0).any(axis=1)
    targets = list(by_run.index[replicate])
    pool = by_run[~replicate]
    min_points = min_points or law.n_params + 2
    records = []
    levels = np.unique(pool.to_numpy(float))
    # a cutoff needs at least min_points runs at or below it
    cutoffs = [c for c in levels if int((pool.to_numpy(float) <= c).sum()) >= min_points]
    target_rows = rows["run"].isin(targets).to_numpy()
    target_flops = float(np.exp(np.mean(np.log(by_run[targets].to_numpy(float)))))
    for cutoff in track(cutoffs, f"cutoffs {spec.law} {spec.benchmark}", enabled=progress):
        train = (~target_rows) & (rows["flops"].to_numpy() <= cutoff)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit_rows(rows[train].reset_index(drop=True), replace(resolved, max_flops=float(cutoff)))
        except BenchcastError:
            continue
        bt = Backtest(
            spec.law, spec.benchmark, "cutoff", float(cutoff), result, *score_split(result, rows, train, target_rows)
        )
        if n_boot:
            add_intervals(bt, rows, n_boot, seed=seed, n_jobs=1)
        records.append(
            {
                "cutoff_flops": float(cutoff),
                "target_flops": target_flops,
                "n_target_runs": len(targets),
                "extrapolation_decades": float(np.log10(target_flops / cutoff)),
                "training_decades": float(np.log10(cutoff / pool.iloc[0])),
                "n_train": result.diagnostics.n_used,
                "mae": bt.metrics["test_mae"],
                "mre": bt.metrics["test_mre"],
                **{key: v for key, v in bt.metrics.items() if key.startswith("coverage")},
                "converged": result.converged,
                **result.params,
            }
        )
    return pd.DataFrame(records)


def settling(cutoffs: pd.DataFrame, param_names: list[str], tolerance: float = SETTLE_TOLERANCE) -> dict:
    """Per parameter: the fewest decades of training compute after which every later fit stays
    within ``tolerance`` (relative) of the final fit, and the extrapolation distance there."""
    out = {}
    if cutoffs.empty:
        return out
    ordered = cutoffs.sort_values("cutoff_flops")
    for name in param_names:
        values = ordered[name].to_numpy(float)
        final = values[-1]
        close = np.abs(values - final) <= tolerance * max(abs(final), 1e-12)
        # first index from which all later fits stay close
        bad = np.flatnonzero(~close)
        start = int(bad[-1] + 1) if bad.size else 0
        out[name] = {
            "final": float(final),
            "training_decades": float(ordered["training_decades"].iloc[start]),
            "extrapolation_decades": float(ordered["extrapolation_decades"].iloc[start]),
            "settled_before_final": bool(start < len(values) - 1),
        }
    return out


def with_law(spec: FitSpec, law: str) -> FitSpec:
    return replace(spec, law=law)
