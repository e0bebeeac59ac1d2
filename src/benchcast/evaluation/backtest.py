"""Backtests of SPEC §5: split runs by a protocol, fit one side, predict the other, score it.

Protocols: ``threshold`` (1: fit C <= T, test C > T), ``nd`` (2: test C > T or the largest TPR),
``passk`` (3: fit C < T and k <= max_k, test the rest), the threshold ``sweep`` (4) and the
``cutoff`` backtest (5).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.evaluation.metrics import coverage, mae, mre, r2, rmse
from benchcast.fitting.api import fit_rows
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.laws import get_law
from benchcast.utils.progress import track

PROTOCOLS = ("threshold", "nd", "passk")
DEFAULT_THRESHOLD = 6e21
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
    # held-out points the law's own filter would accept (near-chance scores make MRE explode)
    law, spec = result.law_object, result.spec
    frame["usable"] = law.point_filter(frame["true"].to_numpy(float), spec.q_rand, spec.margin or 0.0) == ""
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
) -> Backtest:
    """Fit ``spec`` on the training side of ``protocol`` and score the held-out side.

    With ``n_boot`` > 0 the fit is bootstrapped over runs and the held-out rows get 50 % and 90 %
    prediction intervals, with their coverage in the metrics.
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
        add_intervals(bt, rows, n_boot, seed=seed, n_jobs=n_jobs)
    return bt


def add_intervals(
    bt: Backtest, rows: pd.DataFrame, n_boot: int, *, seed: int = 0, n_jobs: int | None = None, levels=LEVELS
) -> None:
    """Bootstrap the backtest's fit; add prediction intervals and their held-out coverage."""
    from benchcast.forecasting.intervals import bootstrap, quantile

    boot = bootstrap(bt.fit, n_boot, seed=seed, n_jobs=n_jobs, progress=False)
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


def critical_threshold(thresholds: np.ndarray, success: np.ndarray) -> float | None:
    """T where a logistic regression of success on log10 T crosses 0.5 (None if undefined)."""
    x = np.log10(np.asarray(thresholds, float))
    s = np.asarray(success, float)
    if s.size < 2 or s.min() == s.max():
        return None
    centre, scale = x.mean(), max(x.std(), 1e-9)
    z = (x - centre) / scale

    def nll(w):  # tiny ridge keeps the estimate finite when the classes separate
        logits = w[0] * z + w[1]
        return float(np.sum(np.logaddexp(0, logits) - s * logits) + 1e-2 * w[0] ** 2)

    w = minimize(nll, np.zeros(2), method="BFGS").x
    if abs(w[0]) < 1e-9:
        return None
    return float(10 ** (centre + scale * (-w[1] / w[0])))


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
) -> tuple[pd.DataFrame, float | None]:
    """Protocol 4: the threshold backtest over a grid; returns (table per threshold, critical T)."""
    records = []
    for threshold in track(list(thresholds), f"sweep {spec.law} {spec.benchmark}", enabled=progress):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bt = backtest(table, spec, threshold=threshold, min_flops=min_flops, tpr=tpr, n_boot=n_boot, seed=seed)
        except BenchcastError as exc:
            records.append({"threshold": threshold, "error": str(exc)})
            continue
        records.append({"threshold": threshold, **bt.metrics, "success": bool(bt.metrics["test_mre"] < success_mre)})
    frame = pd.DataFrame(records)
    ok = frame.dropna(subset=["test_mre"]) if "test_mre" in frame else frame.iloc[0:0]
    critical = critical_threshold(ok["threshold"], ok["success"]) if len(ok) else None
    return frame, critical


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

    One row per cutoff: cutoff and target compute, decades of extrapolation
    (log10 target C / cutoff C), decades of training data, MAE, MRE and every parameter.
    """
    rows, resolved = design(table, replace(spec, tpr=spec.tpr if tpr is None else tpr))
    law = get_law(spec.law)
    by_run = rows.groupby("run")["flops"].first().sort_values()
    targets = list(by_run.index[-n_targets:])
    pool = by_run.drop(targets)
    min_points = min_points or law.n_params + 2
    records = []
    cutoffs = pool.to_numpy()[min_points - 1 :]
    target_rows = rows["run"].isin(targets).to_numpy()
    target_flops = float(np.exp(np.mean(np.log(by_run[targets].to_numpy()))))
    for cutoff in track(list(cutoffs), f"cutoffs {spec.law} {spec.benchmark}", enabled=progress):
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
                "extrapolation_decades": float(np.log10(target_flops / cutoff)),
                "training_decades": float(np.log10(cutoff / pool.iloc[0])),
                "n_train": result.diagnostics["n_used"],
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
