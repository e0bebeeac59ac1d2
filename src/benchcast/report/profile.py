"""How the backtest error and interval coverage of what the page forecasts with grow with decades of
extrapolation: the rows of threshold backtests (:func:`held_out_rows`, for one law's backtests and the default
strategy's, :func:`benchcast.report.analysis.judge`) and their summary per bin."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast.fitting.spec import FitSpec, design

PROFILE_FRACTIONS = (0.45, 0.65)  # further thresholds of the extrapolation profile (top share of log C held out)
MIN_TRAINING_DECADES = 1.0


def profile_thresholds(table: pd.DataFrame, spec: FitSpec, tpr: float | None) -> list[float]:
    """One threshold per :data:`PROFILE_FRACTIONS` of log C held out, leaving :data:`MIN_TRAINING_DECADES` to fit."""
    rows, _ = design(table, replace(spec, tpr=tpr))
    log_c = np.log10(rows["flops"].to_numpy(float))
    span = log_c.max() - log_c.min()
    thresholds = [float(10 ** (log_c.max() - fraction * span)) for fraction in PROFILE_FRACTIONS]
    return [t for t in thresholds if np.log10(t) - log_c.min() >= MIN_TRAINING_DECADES]


def held_out_rows(predictions: pd.DataFrame, threshold: float, largest: float) -> pd.DataFrame:
    """A backtest's held-out rows with a forecast: decades beyond its largest fitted run, error, 50/90 % covered."""
    test = predictions[(predictions["side"] == "test") & np.isfinite(predictions["prediction"])].copy()
    test["threshold"] = threshold
    test["decades"] = np.log10(test["flops"] / largest)
    test["abs_error"] = (test["prediction"] - test["true"]).abs()
    for level in (50, 90):
        if f"lower{level}" not in test:
            test[f"lower{level}"] = test[f"upper{level}"] = np.nan
        inside = (test["true"] >= test[f"lower{level}"]) & (test["true"] <= test[f"upper{level}"])
        test[f"covered{level}"] = inside.where(test[f"lower{level}"].notna())
    return test


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
