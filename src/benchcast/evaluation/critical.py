"""The critical threshold of a sweep: where a logistic regression of success on log10 T crosses 0.5,
kept only inside the span of the grid where success changed."""

from __future__ import annotations

import numpy as np

CRITICAL_DEFINITION = (
    "the critical threshold is the T where a logistic regression of success on log10 T crosses "
    "P(success) = 0.5; it is reported only when it lies inside the span of the grid where success was "
    "observed to change (from the lowest to the highest threshold next to a change), else left out"
)


def _logistic_crossing(x: np.ndarray, s: np.ndarray) -> float | None:
    """log10 T where a logistic regression of success on log10 T crosses 0.5 (None if flat)."""
    centre, scale = x.mean(), max(x.std(), 1e-9)
    z = (x - centre) / scale

    def nll(w):  # tiny ridge keeps the estimate finite when the classes separate
        logits = w[0] * z + w[1]
        return float(np.sum(np.logaddexp(0, logits) - s * logits) + 1e-2 * w[0] ** 2)

    from scipy.optimize import minimize  # here: scipy.optimize costs 0.3 s to import

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
