"""Error metrics of SPEC §5: MAE and MRE on held-out points, RMSE and R² on fitted points."""

from __future__ import annotations

import numpy as np


def mae(true: np.ndarray, predicted: np.ndarray) -> float:
    """Mean absolute error."""
    true, predicted = np.asarray(true, float), np.asarray(predicted, float)
    return float(np.mean(np.abs(predicted - true))) if true.size else float("nan")


def squared_log_ratio(true: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Per point, the squared log-ratio error of a forecast (predictions clipped at 1e-12)."""
    return (np.log(np.clip(np.asarray(predicted, float), 1e-12, None)) - np.log(np.asarray(true, float))) ** 2


def mre(true: np.ndarray, predicted: np.ndarray) -> float:
    """Mean relative error in percent, over points with a positive true value."""
    true, predicted = np.asarray(true, float), np.asarray(predicted, float)
    keep = true > 0
    if not keep.any():
        return float("nan")
    return float(np.mean(np.abs(predicted[keep] - true[keep]) / true[keep]) * 100.0)


def rmse(true: np.ndarray, predicted: np.ndarray) -> float:
    """Root mean squared error."""
    true, predicted = np.asarray(true, float), np.asarray(predicted, float)
    return float(np.sqrt(np.mean((predicted - true) ** 2))) if true.size else float("nan")


def r2(true: np.ndarray, predicted: np.ndarray) -> float:
    """Coefficient of determination (nan when the true values do not vary)."""
    true, predicted = np.asarray(true, float), np.asarray(predicted, float)
    total = float(np.sum((true - true.mean()) ** 2)) if true.size else 0.0
    if total == 0.0:
        return float("nan")
    return 1.0 - float(np.sum((predicted - true) ** 2)) / total


def coverage(true: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> float:
    """Fraction of true values inside [lower, upper]."""
    true = np.asarray(true, float)
    if not true.size:
        return float("nan")
    return float(np.mean((true >= np.asarray(lower)) & (true <= np.asarray(upper))))


USABLE = "usable: points with Q > Q_rand + margin (K1's near-chance filter of SPEC 3.1: margin 0.05, LBPP 0.02)"


def usable_points(true: np.ndarray, q_rand: float, benchmark: str) -> np.ndarray:
    """Points far enough above chance (:data:`USABLE`) for a relative error to mean something."""
    from benchcast.data.chance import filter_margin

    return np.asarray(true, float) > (q_rand or 0.0) + filter_margin(benchmark)
