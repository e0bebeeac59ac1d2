"""Target transforms: the spaces a law is fitted in (score, -log Q', log(-log Q')) and back."""

from __future__ import annotations

import numpy as np


def normalise(score: np.ndarray, q_rand: float) -> np.ndarray:
    """Q' = (Q - Q_rand) / (1 - Q_rand)."""
    return (np.asarray(score, float) - q_rand) / (1.0 - q_rand)


def to_target(kind: str, score: np.ndarray, q_rand: float = 0.0) -> np.ndarray:
    """Map scores to the space a law is fitted in (invalid points give nan, never a warning)."""
    normed = normalise(score, q_rand)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "score":
            return np.asarray(score, float)
        if kind == "neglog":
            return np.where(normed > 0, -np.log(np.where(normed > 0, normed, 1.0)), np.nan)
        if kind == "loglog":
            valid = (normed > 0) & (normed < 1)
            return np.where(valid, np.log(-np.log(np.where(valid, normed, 0.5))), np.nan)
    raise ValueError(f"unknown target transform {kind!r}")


def to_score(kind: str, target: np.ndarray, q_rand: float = 0.0) -> np.ndarray:
    """Inverse of :func:`to_target`."""
    target = np.asarray(target, float)
    if kind == "score":
        return target
    if kind == "neglog":
        return q_rand + (1.0 - q_rand) * np.exp(-target)
    if kind == "loglog":
        return q_rand + (1.0 - q_rand) * np.exp(-np.exp(target))
    raise ValueError(f"unknown target transform {kind!r}")


def safe_log(values: np.ndarray) -> np.ndarray:
    """log that maps 0 to -inf silently (a zero floor is a valid parameter value)."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(values, float))
