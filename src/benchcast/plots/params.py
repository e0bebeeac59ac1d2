"""Drawing fitted parameters: which sit on a bound, which want a log axis, bound-aware error bars."""

from __future__ import annotations

import numpy as np

from benchcast.laws import get_law


def bound_hits(law_name: str, name: str, values, kind: str | None = None) -> np.ndarray:
    """Which values of a parameter sit on a bound of its range (in the optimiser's space)."""
    param = next(p for p in get_law(law_name).parameters if p.name == name)
    lower, upper = param.at_bounds(values)
    if kind is None:
        return lower | upper
    wanted = {side: param.is_constraint(side) == (kind == "constraint") for side in ("lower", "upper")}
    return (lower & wanted["lower"]) | (upper & wanted["upper"])


# a law's own constraint reached is information; a search limit reached is a warning (the data do
# not determine the parameter): two marks, never one "at a bound"
BOUND_MARKS = {
    "search": {"marker": "x", "s": 40, "color": "red", "label": "at a search limit"},
    "constraint": {"marker": "o", "s": 46, "facecolors": "none", "edgecolors": "0.25", "label": "constraint active"},
}


def mark_bounds(ax, x, values, law_name: str, name: str) -> None:
    """Mark the fits of a parameter at a search limit (red x) or at the law's own constraint (hollow circle)."""
    x, values = np.asarray(x), np.asarray(values, float)
    for kind, look in BOUND_MARKS.items():
        hits = bound_hits(law_name, name, values, kind=kind)
        if hits.any():
            ax.scatter(x[hits], values[hits], zorder=5, **look)


def use_log_axis(law_name: str, name: str, values) -> bool:
    """Scale parameters (declared log by the law), or positive values spanning over two decades."""
    param = next((p for p in get_law(law_name).parameters if p.name == name), None)
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not values.size or (values <= 0).any():
        return False
    return bool((param is not None and param.log) or values.max() / values.min() > 100)


def param_errorbars(law_name: str, name: str, values: np.ndarray, stderr) -> np.ndarray | None:
    """(2, n) error bars of ±1 s.e., cut at the parameter's bounds."""
    if stderr is None:
        return None
    err = np.nan_to_num(np.asarray(stderr, float), nan=0.0)
    param = next(p for p in get_law(law_name).parameters if p.name == name)
    lower = np.clip(np.minimum(err, values - param.lower), 0.0, None)
    upper = np.clip(np.minimum(err, param.upper - values), 0.0, None)
    return np.vstack([lower, upper])
