"""How a law's backtest error and interval coverage grow with decades of extrapolation."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.evaluation.backtest import BacktestResult, backtest
from benchcast.fitting.spec import FitSpec, design

PROFILE_FRACTIONS = (0.45, 0.65)  # further thresholds of the extrapolation profile (top share of log C held out)
MIN_TRAINING_DECADES = 1.0


def extrapolation_profile(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    tpr: float | None,
    n_boot: int,
    n_jobs: int | None = 1,
    done: Sequence[BacktestResult] = (),
    interval: str = "extrapolation",
) -> pd.DataFrame:
    """Held-out predictions of threshold backtests (``done`` plus one per :data:`PROFILE_FRACTIONS`),
    each with the decades it extrapolates beyond its largest fitted run, its absolute error and
    whether its 50 % and 90 % prediction intervals cover the observed score.

    Parameters
    ----------
    table : pandas.DataFrame
        The tidy results table.
    spec : FitSpec
        The law, benchmark, metric, k and seed to backtest.
    tpr : float, optional
        Tokens per parameter selecting the runs.
    n_boot : int
        Bootstrap replicates per backtest.
    n_jobs : int, optional
        Bootstrap workers.
    done : sequence of BacktestResult
        Backtests already run, included as they are.
    interval : {'extrapolation', 'bootstrap'}
        The intervals' kind.

    Returns
    -------
    pandas.DataFrame
        Held-out rows of every backtest with ``threshold``, ``decades``, ``abs_error``,
        ``covered50`` and ``covered90`` added; empty when no backtest could run.
    """
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
                bt = backtest(
                    table,
                    spec,
                    threshold=threshold,
                    tpr=tpr,
                    n_boot=n_boot,
                    seed=spec.seed,
                    n_jobs=n_jobs,
                    interval=interval,
                )
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
    """Mean absolute error and coverage of the profile in bins of ``width`` decades.

    Parameters
    ----------
    profile : pandas.DataFrame
        Output of :func:`extrapolation_profile`.
    width : float
        Bin width in decades of extrapolation.

    Returns
    -------
    pandas.DataFrame
        One row per bin: ``decades`` (mean), ``n``, ``mae``, ``coverage50``, ``coverage90``.
    """
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
