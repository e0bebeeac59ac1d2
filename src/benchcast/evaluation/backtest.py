"""Backtests of SPEC §5: split runs by a protocol, fit one side, predict the other, score it.

Protocols: ``threshold`` (1: fit C <= T, test C > T), ``nd`` (2: test C > T or the largest TPR),
``passk`` (3: fit C < T and k <= max_k, test the rest); the threshold sweep (4) and the cutoff
backtest (5) are in :mod:`benchcast.evaluation.sweep`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast.data.table import at_tpr
from benchcast.defaults import DEFAULT_LEVELS
from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.evaluation import DEFAULT_THRESHOLD, PROTOCOLS
from benchcast.evaluation.backtest_result import BacktestComparison, BacktestResult
from benchcast.fitting.api import fit_rows
from benchcast.fitting.metrics import coverage, mae, mre, r2, rmse, usable_points
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.flags import describe, refused, short
from benchcast.forecasting.targets import frame_runs
from benchcast.utils.progress import track


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
        test = (flops > threshold) | at_tpr(tpr, held_tpr)
        train = ~test
    elif protocol == "passk":
        train = (flops < threshold) & (rows["k"].to_numpy(float) <= max_k)
        test = ~train
    else:
        raise BenchcastError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}.")
    if min_flops is not None:
        train &= flops >= min_flops
    return train, test


def score_split(
    result: FitResult, rows: pd.DataFrame, train: np.ndarray, test: np.ndarray
) -> tuple[pd.DataFrame, dict]:
    """Predictions for every row (with its side of the split) and the error metrics."""
    runs, extra = frame_runs(rows)
    made = Ensemble.of_fit(result).predict(runs, Uncertainty(n_boot=0), extra=extra)
    flags = made.flags
    cols = [c for c in ("run", "flops", "params", "tokens", "tpr", "k") if c in rows]
    frame = rows[cols].copy()
    frame["true"] = rows["value"].to_numpy(float)
    frame["predicted"] = made.prediction  # a refused forecast is no number (its reason: flags)
    frame["flags"] = [describe(point) for point in flags]
    frame["flag_kinds"] = [short(point) for point in flags]
    frame["refused"] = [refused(point) for point in flags]
    frame["side"] = np.where(train, "train", np.where(test, "test", "unused"))
    used = set(zip(result.points["run"], result.points["k"].astype(float), strict=True))
    fitted = np.array([(r, float(k)) in used for r, k in zip(rows["run"], rows["k"], strict=True)])
    frame["fitted"] = fitted & train
    # points far enough above chance for a relative error to mean something (one definition, USABLE)
    spec = result.spec
    frame["usable"] = usable_points(frame["true"].to_numpy(float), spec.q_rand, spec.benchmark)
    tr = frame[frame["fitted"]]
    held = frame["side"] == "test"
    scored = np.isfinite(frame["true"])  # a held-out run with no score (NaN) has nothing to check: counted
    te = frame[held & np.isfinite(frame["predicted"]) & scored]
    tu = te[te["usable"]]
    metrics = {
        "n_train": int(len(tr)),
        "n_test": int(len(te)),
        "n_test_without_score": int((held & ~scored).sum()),
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
        "n_refused": int(
            sum(refused(point) for point, side in zip(flags, frame["side"], strict=True) if side == "test")
        ),
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
) -> BacktestResult:
    """Fit ``spec`` on the training side of ``protocol`` and score the held-out side.

    With ``n_boot`` > 0 the fit is bootstrapped over runs and the held-out rows get 50 % and 90 %
    prediction intervals, with their coverage in the metrics. ``interval='extrapolation'`` (the
    default) adds the extrapolation error estimated by rolling origins inside the training runs
    (:mod:`benchcast.forecasting.extrapolation`); ``'bootstrap'`` is the bootstrap alone.

    Parameters
    ----------
    table : DataFrame
        The benchmark table.
    spec : FitSpec
        What to fit (its compute range and ``max_k`` limit the training side only).
    protocol : {'threshold', 'nd', 'passk'}
    threshold : float
        Compute of the split, in FLOPs.
    min_flops, tpr, holdout_tpr
        The training side's smallest compute, the runs' TPR, and the ``nd`` protocol's held-out TPR.
    n_boot, seed, n_jobs, interval
        Bootstrap replicates (0: no intervals), seed, workers and interval kind.

    Returns
    -------
    BacktestResult
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
    bt = BacktestResult(spec.law, spec.benchmark, protocol, threshold, result, predictions, metrics)
    if n_boot:
        add_intervals(bt, rows, n_boot, seed=seed, n_jobs=n_jobs, interval=interval)
    return bt


def compare_backtests(table: pd.DataFrame, specs: list[FitSpec], **options) -> BacktestComparison:
    """The same backtest of several laws (what ``benchcast backtest`` runs)."""
    return BacktestComparison([backtest(table, spec, **options) for spec in track(specs, "backtest: laws")])


def add_intervals(
    bt: BacktestResult,
    rows: pd.DataFrame,
    n_boot: int,
    *,
    seed: int = 0,
    n_jobs: int | None = None,
    levels=DEFAULT_LEVELS,
    interval: str = "extrapolation",
) -> None:
    """The backtest fit's forecast of every row with its intervals, from the one forecaster (a one-member ensemble:
    bootstrap, plus by default the extrapolation error estimated inside its training runs); their held-out coverage.
    Where there is no interval the columns stay empty and ``metrics['interval_note']`` says why."""
    unc = Uncertainty(n_boot, seed, interval, tuple(levels), n_jobs)
    runs, extra = frame_runs(rows)
    made = Ensemble.of_fit(bt.fit).predict(runs, unc, confidence=True, extra=extra)
    frame = bt.predictions
    bt.metrics["interval"] = interval
    bt.metrics["n_boot"] = n_boot
    bt.metrics["boot_failed"] = made.failed_refits
    bt.metrics["boot_dropped"] = made.dropped_refits  # refits that did not converge: left out of the intervals
    if made.error_model is not None:
        bt.metrics["extrapolation_tau"] = made.error_model["tau"]
    if not made.intervals:  # no interval rather than a wrong one: columns present, empty
        bt.metrics["interval_note"] = made.note or "no interval"
    test = (frame["side"] == "test").to_numpy()
    for level in levels:
        pct = int(round(level * 100))
        lower, upper = made.interval(level)
        frame[f"lower{pct}"], frame[f"upper{pct}"] = lower, upper
        mean_lower, mean_upper = made.interval(level, mean=True)
        # coverage where there is an interval and a score (no interval is no miss)
        for suffix, (lo, hi) in (("", (lower, upper)), ("_confidence", (mean_lower, mean_upper))):
            has = test & np.isfinite(lo) & np.isfinite(frame["true"].to_numpy(float))
            bt.metrics[f"coverage{pct}{suffix}"] = (
                coverage(frame["true"][has], lo[has], hi[has]) if has.any() else float("nan")
            )
