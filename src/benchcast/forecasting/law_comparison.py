"""Comparing laws on their rolling-origin forecasts inside the fitted runs: the points every law
forecasts, each law's error there, the weights a selection rule gives, and the choice's nested error."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.forecasting import calibration as cal

SELECTION_RULES = ("ensemble", "stack", "select")


def common_errors(errors: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Rolling-origin forecasts of every law on the inner points they all forecast: one column of
    forecasts per law, plus origin_decades, origin, run, k, flops, decades, true and converged
    (every law's inner refit converged there).

    Parameters
    ----------
    errors : dict
        Law name to its rolling-origin forecasts (:func:`benchcast.forecasting.calibration.rolling_origin`).

    Returns
    -------
    DataFrame
        One row per (origin, run, k) every law forecast finitely, with a positive true score; empty
        where a law has no forecasts.
    """
    key = ["origin_decades", "run", "k"]
    if not errors or any(e is None or e.empty for e in errors.values()):
        return pd.DataFrame()
    columns = [frame.set_index(key)["predicted"].rename(law) for law, frame in errors.items()]
    base = next(iter(errors.values())).set_index(key)[["origin", "flops", "decades", "true"]]
    base = base[~base.index.duplicated()]
    converged = [
        frame.set_index(key)["converged"].astype(bool).rename(f"converged {law}")
        for law, frame in errors.items()
        if "converged" in frame
    ]
    wide = pd.concat([base, *columns, *converged], axis=1, join="inner")
    if converged:
        flags = [c.name for c in converged]
        wide["converged"] = wide[flags].all(axis=1)
        wide = wide.drop(columns=flags)
    wide = wide[np.isfinite(wide[list(errors)]).all(axis=1) & (wide["true"] > 0)]
    return wide.reset_index()


def inner_scores(wide: pd.DataFrame, laws: list[str]) -> pd.Series:
    """Per law: mean over origins of the mean squared log-ratio error of its inner forecasts.

    Parameters
    ----------
    wide : DataFrame
        What :func:`common_errors` returns.
    laws : list of str
        The laws (columns of ``wide``) to score.

    Returns
    -------
    Series
        Law name to its score (squared log-ratio; lower is better).
    """
    true = np.log(wide["true"].to_numpy(float))
    origin = wide["origin_decades"].to_numpy()
    out = {}
    for law in laws:
        squared = (np.log(np.clip(wide[law].to_numpy(float), 1e-12, None)) - true) ** 2
        out[law] = float(pd.Series(squared).groupby(origin).mean().mean())
    return pd.Series(out)


def weights_for(rule: str, scores: pd.Series) -> pd.Series:
    """``ensemble``: equal weights over the laws with support; ``stack``: weights proportional to
    1/score; ``select``: all weight on the lowest score.

    Parameters
    ----------
    rule : {'ensemble', 'stack', 'select'}
        The selection rule.
    scores : Series
        Law name to its score (:func:`inner_scores`).

    Returns
    -------
    Series
        Law name to its weight; the weights sum to 1.
    """
    if rule not in SELECTION_RULES:
        raise BenchcastError(f"unknown selection rule {rule!r}; expected one of {', '.join(SELECTION_RULES)}.")
    if rule == "ensemble":
        return pd.Series(1.0 / len(scores), index=scores.index)
    if rule == "select":
        best = scores == scores.min()
        return best.astype(float) / float(best.sum())
    inverse = 1.0 / np.maximum(scores, 1e-12)
    return inverse / inverse.sum()


def blend_errors(wide: pd.DataFrame, weights: pd.Series) -> pd.DataFrame:
    """The rolling-origin forecasts of a weighted combination of laws (for its own calibration).

    Parameters
    ----------
    wide : DataFrame
        What :func:`common_errors` returns.
    weights : Series
        Law name to weight (laws with weight <= 0 are left out).

    Returns
    -------
    DataFrame
        The shape of :func:`benchcast.forecasting.calibration.rolling_origin`'s, ``predicted`` blended.
    """
    kept = ["origin_decades", "origin", "run", "k", "flops", "decades", "true", "converged"]
    out = wide[[c for c in kept if c in wide]].copy()
    out["predicted"] = sum(w * wide[law].to_numpy(float) for law, w in weights.items() if w > 0)
    return out


def nested_error(wide: pd.DataFrame, laws: list[str], rule: str) -> dict:
    """The choice's own out-of-sample error: at each origin, choose from the deeper origins'
    forecasts of runs at or below it, then score the choice's forecasts of the runs above it.

    Parameters
    ----------
    wide : DataFrame
        What :func:`common_errors` returns.
    laws : list of str
        The candidate laws.
    rule : {'ensemble', 'stack', 'select'}
        The selection rule.

    Returns
    -------
    dict
        ``mre`` (percent, mean over the scored origins; NaN if none) and ``n_origins``.
    """
    records = []
    for delta, group in wide.groupby("origin_decades"):
        origin = float(group["origin"].iloc[0])
        seen = wide[(wide["origin_decades"] > delta) & (wide["flops"] <= origin * (1 + 1e-9))]
        if seen["origin_decades"].nunique() < cal.MIN_ORIGINS:
            continue
        weights = weights_for(rule, inner_scores(seen, laws))
        predicted = sum(w * group[law].to_numpy(float) for law, w in weights.items() if w > 0)
        true = group["true"].to_numpy(float)
        records.append(float(np.mean(np.abs(predicted - true) / true) * 100))
    return {"mre": float(np.mean(records)) if records else float("nan"), "n_origins": len(records)}


def members_with_support(errors: dict[str, pd.DataFrame]) -> list[str]:
    """The laws a combination can use: each with at least ``calibration.MIN_ORIGINS`` rolling origins
    of its own, taken in the given order while the points they all forecast keep that many origins
    (a law that would leave the others too few common origins is left out, not the combination).

    Parameters
    ----------
    errors : dict
        Law name to its rolling-origin forecasts (None or empty: the law has none).

    Returns
    -------
    list of str
        The supported laws, in the order of ``errors``; empty where none has support.
    """
    own = [
        law
        for law, frame in errors.items()
        if frame is not None
        and not frame.empty
        and cal.log_errors(frame)["origin_decades"].nunique() >= cal.MIN_ORIGINS
    ]
    members: list[str] = []
    for law in own:
        wide = common_errors({name: errors[name] for name in (*members, law)})
        if len(wide) and wide["origin_decades"].nunique() >= cal.MIN_ORIGINS:
            members.append(law)
    return members


def pooled_spread(errors: list[pd.DataFrame]) -> cal.Spread | None:
    """The extrapolation spread estimated from several benchmarks' rolling-origin forecasts at once.

    Parameters
    ----------
    errors : list of DataFrame
        Rolling-origin forecasts, each with a ``benchmark`` column (empty or None ones are skipped).

    Returns
    -------
    Spread or None
        None where there are none or too few to estimate.
    """
    frames = [e for e in errors if e is not None and not e.empty]
    if not frames:
        return None
    try:
        return cal.estimate_spread(pd.concat(frames, ignore_index=True), group=("benchmark", "origin_decades"))
    except BenchcastError:
        return None


def _n_origins(errors: pd.DataFrame) -> int:
    return int(cal.log_errors(errors)["origin_decades"].nunique())
