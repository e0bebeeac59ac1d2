"""The scale pass@k is forecast and judged on past n, x = log(-log pass@k), and the pieces the per-run forecaster
(:mod:`benchcast.generative.past_n`) and the ladder model (:mod:`benchcast.generative.ladder`) share: thinning,
the estimator's counts, equal-tailed bounds of draws."""

from __future__ import annotations

import numpy as np
import pandas as pd

X_LIMIT = 10.0  # |log(-log p)| <= 10 spans p in [exp(-e^10), exp(-e^-10)]: 0 and 1 to any printed digit


def to_x(p):
    """x = log(-log p): +inf at p = 0, -inf at p = 1."""
    with np.errstate(divide="ignore"):
        return np.log(-np.log(np.asarray(p, float)))


def from_x(x):
    """pass@k = exp(-exp(x)), always in [0, 1]."""
    with np.errstate(over="ignore"):
        return np.exp(-np.exp(np.asarray(x, float)))


def x_error(forecast: float, truth: float) -> float:
    """forecast - truth on the x scale, each clipped to +-X_LIMIT (an error tau must see, never an infinite one)."""
    return float(np.clip(to_x(forecast), -X_LIMIT, X_LIMIT) - np.clip(to_x(truth), -X_LIMIT, X_LIMIT))


def thin(n, c, step: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Each problem's samples thinned to n // step without replacement (hypergeometric)."""
    m = n // step
    return m, rng.hypergeometric(c, n - c, m)


def band(x: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Equal-tailed pass@k bounds of x draws (replicates x ks; a row with a NaN set aside) and how many were used."""
    x = x[~np.isnan(x).any(axis=1)]
    if not len(x):
        return np.full(x.shape[1], np.nan), np.full(x.shape[1], np.nan), 0
    tail = (1 - level) / 2
    lower = from_x(np.quantile(x, 1 - tail, axis=0, method="inverted_cdf"))
    return lower, from_x(np.quantile(x, tail, axis=0, method="inverted_cdf")), len(x)


def estimator_counts(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The counts of the unbiased estimator: the first round's where samples were drawn in rounds."""
    if "n_first" in group:
        return group["n_first"].to_numpy(np.int64), group["c_first"].to_numpy(np.int64)
    return group["n"].to_numpy(np.int64), group["c"].to_numpy(np.int64)


def thinned_origins(n, c, seed: int, min_samples: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One run's counts thinned (seeded) to n/10, then n/100, while at least ``min_samples`` remain."""
    rng = np.random.default_rng(seed)
    out = []
    for step in (10, 100):
        m, thinned = thin(n, c, step, rng)
        if m.min() < min_samples:
            break
        out.append((m, thinned))
    return out


def anchor(x, x_model_at_n, x_measured_at_n):
    """A model's x past n (rows x ks ascending) as the measured x plus the model's step from n (NaN: no step)."""
    x = np.atleast_2d(np.asarray(x, float))
    at_n = np.asarray(x_model_at_n, float).reshape(-1, 1)
    measured = np.asarray(x_measured_at_n, float).reshape(-1, 1)
    with np.errstate(invalid="ignore"):
        step = np.where(np.isfinite(at_n), x - at_n, np.nan)
    step = np.where(np.isnan(step), np.nan, np.minimum(step, 0.0))
    with np.errstate(invalid="ignore"):
        one = np.isneginf(measured) & ~np.isnan(x)  # measured pass@n = 1: pass@k = 1 (a failed refit stays NaN)
        out = np.where(np.isposinf(measured), x, np.where(one, -np.inf, measured + step))
    return monotone(out)


def model_at_n_reason(x_model_at_n) -> str:
    """Why :func:`anchor` gave no step (empty: it did): the model's own pass@n is exactly 0 or 1."""
    at_n = float(np.asarray(x_model_at_n, float).reshape(-1)[0])
    if np.isposinf(at_n):
        return "the model's pass@n is 0: no step from n to k"
    if np.isneginf(at_n):
        return "the model's pass@n is 1: no step from n to k"
    return ""


def monotone(x):
    """x (rows x ks, ks ascending) made non-increasing in k row by row (pass@k non-decreasing); NaN stays NaN."""
    x = np.atleast_2d(np.asarray(x, float))
    nan = np.isnan(x)
    return np.where(nan, np.nan, np.minimum.accumulate(np.where(nan, np.inf, x), axis=-1))
