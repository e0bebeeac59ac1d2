"""Backtests of SPEC §5: split runs by a protocol, fit one side, predict the other, score it.

Protocols: ``threshold`` (1: fit C <= T, test C > T), ``nd`` (2: test C > T or the largest TPR),
``passk`` (3: fit C < T and k <= max_k, test the rest); the threshold sweep (4) and the cutoff
backtest (5) are in :mod:`benchcast.evaluation.sweep`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.evaluation import DEFAULT_THRESHOLD, PROTOCOLS
from benchcast.evaluation.backtest_result import BacktestComparison, BacktestResult
from benchcast.evaluation.evaluate import PROTOCOL_SPLITTERS, LargerModels, LikeTarget, evaluate
from benchcast.fitting.metrics import coverage, mae, mre, r2, rmse
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.bootstrap import NO_INTERVAL, Uncertainty
from benchcast.forecasting.flags import describe, refused, short
from benchcast.forecasting.forecast import bound_column
from benchcast.forecasting.targets import flops_convention
from benchcast.utils.progress import track
from benchcast.validation import check_positive


def _scored(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """A split's forecast table as the backtest's predictions, and the fitted and held-out runs' errors."""
    cols = [c for c in ("run", "flops", "params", "tokens", "tpr", "k") if c in frame]
    out = frame[cols].copy()
    out["true"] = frame["true"].to_numpy(float)
    out["prediction"] = frame["prediction"].to_numpy(float)  # a refused forecast is no number (its reason: flags)
    out["flags"] = [describe(point) for point in frame["flags"]]
    out["flag_kinds"] = [short(point) for point in frame["flags"]]
    out["refused"] = [refused(point) for point in frame["flags"]]
    for column in ("side", "fitted", "usable"):
        out[column] = frame[column].to_numpy()
    tr = out[out["fitted"]]
    held = out["side"] == "test"
    scored = np.isfinite(out["true"])  # a held-out run with no score (NaN) has nothing to check: counted
    te = out[held & np.isfinite(out["prediction"]) & scored]
    tu = te[te["usable"]]
    metrics = {
        "n_train": int(len(tr)),
        "n_test": int(len(te)),
        "n_test_without_score": int((held & ~scored).sum()),
        "train_rmse": rmse(tr["true"], tr["prediction"]),
        "train_r2": r2(tr["true"], tr["prediction"]),
        "train_mae": mae(tr["true"], tr["prediction"]),
        "train_mre": mre(tr["true"], tr["prediction"]),
        "test_mae": mae(te["true"], te["prediction"]),
        "test_mre": mre(te["true"], te["prediction"]),
        "test_rmse": rmse(te["true"], te["prediction"]),
        "n_test_usable": int(len(tu)),
        "test_mae_usable": mae(tu["true"], tu["prediction"]),
        "test_mre_usable": mre(tu["true"], tu["prediction"]),
        "n_refused": int(out.loc[held, "refused"].sum()),
    }
    return out, metrics


def backtest(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    protocol: str = "threshold",
    threshold: float = DEFAULT_THRESHOLD,
    min_flops: float | None = None,
    tpr: float | None = None,
    holdout_tpr: float | None = None,
    holdout_params: float | None = None,
    like_target: tuple[float, float] | None = None,
    splitter=None,
    uncertainty: Uncertainty = NO_INTERVAL,
    n_jobs: int | None = None,
) -> BacktestResult:
    """Fit ``spec`` on the training side of ``protocol`` and score the held-out side.

    With ``uncertainty.n_boot`` > 0 the fit is bootstrapped over runs and the held-out rows get prediction
    intervals at its levels (default 50 % and 90 %), with their coverage in the metrics. Its interval
    ``'extrapolation'`` (the default) adds the extrapolation error estimated by rolling origins inside the training
    runs (:mod:`benchcast.forecasting.extrapolation`); ``'bootstrap'`` is the bootstrap alone.

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
    holdout_params : float, optional
        Split by size instead (protocol ``'params'``): fit the runs with fewer parameters, forecast the rest
        (:class:`~benchcast.evaluation.evaluate.LargerModels`); ``threshold`` becomes the largest fitted compute.
    like_target : (float, float), optional
        A planned run (N, D), placed by the file's FLOPs convention: split like it instead (protocol ``'like-target'``,
        :class:`~benchcast.evaluation.evaluate.LikeTarget`); ``metrics['reach']`` says how far the split reaches.
    splitter : splitter, optional
        Any splitter value of one split (``split(rows) -> [Split]``, your own too) in place of the protocol's
        (protocol ``'splitter'``); ``threshold`` becomes the largest fitted compute.
    uncertainty : Uncertainty
        Bootstrap replicates (0: no intervals), seed, interval kind and levels.
    n_jobs : int, optional
        Workers of the bootstrap.

    Returns
    -------
    BacktestResult
    """
    # the compute range and max_k limit the training side only: the held-out side keeps every run
    spec = replace(
        spec, tpr=spec.tpr if tpr is None else tpr, min_flops=spec.min_flops if min_flops is None else min_flops
    )
    if protocol not in PROTOCOLS:
        raise BenchcastError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}.")
    check_positive("the split's threshold (--threshold, FLOPs)", threshold)
    options = {"nd": {"tpr": holdout_tpr}, "passk": {"max_k": spec.max_k or 32}}.get(protocol, {})
    given, splitter = splitter, PROTOCOL_SPLITTERS[protocol](threshold, **options)
    if sum(x is not None for x in (holdout_params, like_target, given)) > 1:
        raise BenchcastError("give holdout_params, like_target or splitter alone, not both: each places its own split.")
    if holdout_params is not None:
        splitter, protocol = LargerModels(holdout_params), "params"
    reach = ""
    if like_target is not None:
        splitter, reach = _like_target(table, spec, *like_target)
        protocol = "like-target"
    if given is not None:
        splitter, protocol = given, "splitter"
    frame, (model,), (meta,) = evaluate(
        spec, table, splitter, uncertainty=uncertainty, confidence=True, return_models=True, n_jobs=n_jobs
    )
    predictions, metrics = _scored(frame)
    metrics.update({"reach": reach} if reach else {})
    result = next(iter(model.fits.values()))
    if protocol in ("params", "like-target", "splitter"):  # the split's compute: the largest fitted run
        threshold = float(result.diagnostics.flops_max)
    if uncertainty.n_boot:
        _interval_metrics(predictions, metrics, frame, uncertainty, meta)
    return BacktestResult(spec.law, spec.benchmark, protocol, threshold, result, predictions, metrics)


def _like_target(table: pd.DataFrame, spec: FitSpec, params: float, tokens: float) -> tuple[LikeTarget, str]:
    """The split like a planned run of N parameters on D tokens, and how far it reaches, in words."""
    rows, _ = design(table, replace(spec, max_k=None, min_flops=None, max_flops=None))  # the rows evaluate splits
    convention = flops_convention(table, tpr=spec.tpr, min_flops=spec.min_flops, max_flops=spec.max_flops)
    splitter = LikeTarget.of_run(params, tokens, convention, min_flops=spec.min_flops)
    return splitter, splitter.reach(rows)


def compare_backtests(table: pd.DataFrame, specs: list[FitSpec], **options) -> BacktestComparison:
    """The same backtest of several laws (what ``benchcast backtest`` runs)."""
    return BacktestComparison([backtest(table, spec, **options) for spec in track(specs, "backtest: laws")])


def _interval_metrics(predictions: pd.DataFrame, metrics: dict, frame: pd.DataFrame, unc: Uncertainty, meta) -> None:
    """Add the held-out bounds per level and their coverage to a result's parts (``interval_note``: why none)."""
    metrics["interval"] = unc.interval
    metrics["n_boot"] = unc.n_boot
    metrics["boot_failed"] = meta.failed_refits
    metrics["boot_dropped"] = meta.dropped_refits  # refits that did not converge: left out
    if meta.error_model is not None:
        metrics["extrapolation_tau"] = meta.error_model["tau"]
    if meta.note:  # no interval rather than a wrong one: columns present, empty
        metrics["interval_note"] = meta.note
    test = (predictions["side"] == "test").to_numpy()
    true = predictions["true"].to_numpy(float)
    for level in unc.levels:
        pct = int(round(level * 100))
        lower, upper = (frame[bound_column(side, level)].to_numpy(float) for side in ("lower", "upper"))
        predictions[f"lower{pct}"], predictions[f"upper{pct}"] = lower, upper
        nan = np.full(len(frame), np.nan)
        mean = tuple(np.asarray(frame.get(bound_column(side, level, True), nan), float) for side in ("lower", "upper"))
        # coverage where there is an interval and a score (no interval is no miss)
        for suffix, (lo, hi) in (("", (lower, upper)), ("_confidence", mean)):
            has = test & np.isfinite(lo) & np.isfinite(true)
            metrics[f"coverage{pct}{suffix}"] = coverage(true[has], lo[has], hi[has]) if has.any() else float("nan")
            if not suffix:  # what the coverage is a share of
                metrics[f"n_covered{pct}"] = int(has.sum())
