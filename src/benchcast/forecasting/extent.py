"""How far a question lies outside what a fit saw, in the directions :mod:`benchcast.forecasting.flags` did not
measure before: below the smallest fitted run in compute, beyond the largest fitted k, and across the
tokens-per-parameter ratios a law of compute alone cannot tell apart.

Each rule returns ``(kind, reason)`` pairs; :mod:`benchcast.forecasting.flags` (the one place that refuses or
flags a forecast) turns them into flags, so every output that shows a forecast carries them.

* **Below the data.** A forecast at compute below the smallest fitted run: no law here was checked going
  down (the rolling origins that calibrate intervals forecast upward), and near chance a law's curve
  flattens, so a bootstrap interval there is as narrow as the curve is flat (``forecast arc.json --flops
  1e15``, three decades below DCLM's runs, gave 0.2911 [0.2910, 0.2913]). The interval is widened by the
  same error per decade as upward (:func:`outside_decades`), and the point is flagged with its distance.
* **Beyond the largest fitted k.** A law of k (``passk_compute``) asked at, or solved for, a k above the
  largest k it was fitted to extrapolates in k, which no rolling origin measures; flagged with the factor.
* **Across TPRs.** :meth:`benchcast.laws.questions.LawQuestions.across_tprs`.
"""

from __future__ import annotations

import math

import numpy as np

BELOW_DATA = "below the data"
BEYOND_K = "beyond the fitted k"
ACROSS_TPRS = "across TPRs"
BELOW_TOLERANCE = 0.01  # decades: a point within 2 % of the smallest run's compute is at it (rounded sizes)


def below_data(flops: float, flops_min: float) -> list[tuple[str, str]]:
    """The flag of a forecast below the smallest fitted run, with its distance in decades of compute.

    Parameters
    ----------
    flops : float
        The forecast's compute (FLOPs; NaN: unknown, no flag).
    flops_min : float
        The smallest fitted run's compute (FLOPs; NaN: not recorded, no flag).

    Returns
    -------
    list of (kind, reason)
    """
    if not (math.isfinite(flops) and math.isfinite(flops_min) and flops > 0 and flops_min > 0):
        return []
    below = math.log10(flops_min / flops)
    if below <= BELOW_TOLERANCE:
        return []
    return [
        (
            BELOW_DATA,
            f"{below:.2f} decades of compute below the smallest fitted run ({flops_min:.3g} FLOPs): the law was "
            "fitted above it and never checked going down; intervals there are widened by the error per decade "
            "measured upward",
        )
    ]


def beyond_k(k, k_max: float) -> list[tuple[str, str]]:
    """The flag of a forecast (or plan) at a k above the largest fitted k, with the factor beyond it.

    Parameters
    ----------
    k : float or None
        The k asked at or solved for (None or NaN: no flag).
    k_max : float
        The largest k among the fitted points (NaN: unknown, no flag).

    Returns
    -------
    list of (kind, reason)
    """
    if k is None or not (math.isfinite(float(k)) and math.isfinite(k_max) and k_max > 0):
        return []
    factor = float(k) / k_max
    if factor <= 1.0 + 1e-9:
        return []
    return [
        (
            BEYOND_K,
            f"k = {float(k):.4g} is {factor:.3g} times the largest fitted k ({k_max:g}): an extrapolation in k that no "
            "backtest measured, and that the interval does not widen for",
        )
    ]


def fitted_k_max(result) -> float:
    """The largest k a fit of a law of k saw (NaN for a law without k as a covariate).

    Parameters
    ----------
    result : FitResult
        The fit.

    Returns
    -------
    float
    """
    if "k" not in result.law_object.covariates or "k" not in result.points:
        return math.nan
    return float(np.nanmax(result.points["k"].to_numpy(float)))


def outside_decades(flops, flops_min: float, flops_max: float) -> np.ndarray:
    """Each point's distance outside the fitted compute range, the distance the extrapolation error grows
    with in either direction: log10(C / largest) above it (negative inside), log10(smallest / C) below it.

    Parameters
    ----------
    flops : array_like (points,)
        The points' compute.
    flops_min, flops_max : float
        The fitted runs' smallest and largest compute (a NaN smallest: distances above only).

    Returns
    -------
    ndarray (points,)
    """
    flops = np.atleast_1d(np.asarray(flops, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        above = np.log10(flops / flops_max)
        below = np.log10(flops_min / flops) if math.isfinite(flops_min) else np.full(len(flops), -np.inf)
    return np.where(below > BELOW_TOLERANCE, below, above)


def fitted_flops_min(fit) -> float:
    """The smallest fitted run's compute of a fit (NaN where the fit does not record it).

    Parameters
    ----------
    fit : FitResult
        The fit.

    Returns
    -------
    float
    """
    return float(getattr(getattr(fit, "diagnostics", None), "flops_min", math.nan))
