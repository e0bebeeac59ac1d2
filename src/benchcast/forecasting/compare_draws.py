"""From the recipes' forecasts to :func:`~benchcast.forecasting.compare.compare`'s tables: a curve's draws as one
matrix, the simplest alternative's baseline (each recipe's best run at the largest compute every recipe with a forecast
reaches), each pair's probability from the joint draws and its decision, where two curves cross, and the
effective-compute multipliers against a reference (bounded where a curve's grid does not reach the score)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

BAND = 1.1  # runs within this factor of the largest common budget are "at" it (the simplest alternative)
PAIR_COLUMNS = [
    "benchmark",
    "a",
    "b",
    "p_a_better",
    "decision",
    "baseline_a_better",
    "disagree",
    "crosses_at",
    "reason",
]


def _matrix(curve, kind: str = "prediction") -> tuple[np.ndarray | None, str]:
    """A curve's draws of ``kind`` as one (draws, points) matrix (None: none), and a note where its parts were cut."""
    parts = [(index, d.values) for k, index, d in curve.draws if k == kind]
    if not parts:
        return None, ""
    counts = [v.shape[0] for _, v in parts]
    n = min(counts)
    out = np.full((n, len(curve)), np.nan)
    for index, values in parts:
        out[:, index] = values[:n]
    cut = f"{kind} draws cut to {n} (the fewest of the curve's parts; up to {max(counts)})" if max(counts) > n else ""
    return out, cut


def best_at(runs: pd.DataFrame, budget: float) -> float:
    """A recipe's best run within a factor ``BAND`` of compute ``budget``, else interpolated in log C (NaN outside)."""
    best = runs.groupby("flops")["value"].max().dropna() if len(runs) else pd.Series(dtype=float)
    c, v = best.index.to_numpy(float), best.to_numpy(float)
    near = np.abs(np.log(c / budget)) <= np.log(BAND) if len(c) else np.array([], bool)
    if near.any():
        return float(v[near].max())
    if not len(c) or budget < c.min() or budget > c.max():
        return float("nan")
    return float(np.interp(np.log(budget), np.log(c), v))


def _baseline(chosen: list, planned: float, forecast: np.ndarray) -> tuple[float, np.ndarray, list]:
    """The largest common compute below the plan, each recipe's best-run score there, and why none."""
    runs = [r[r["flops"] < planned] if isinstance(r, pd.DataFrame) else None for r in chosen]
    tops = [float(r["flops"].max()) for r, ok in zip(runs, forecast, strict=True) if ok and r is not None and len(r)]
    if not tops:  # no forecast: the simplest alternative still ranks the recipes with runs
        tops = [float(r["flops"].max()) for r in runs if r is not None and len(r)]
    if not tops:
        return float("nan"), np.full(len(chosen), np.nan), ["no baseline: no run below the planned run"] * len(chosen)
    budget = min(tops)
    values = np.array([np.nan if r is None else best_at(r, budget) for r in runs])
    notes = [
        "" if np.isfinite(v) else f"no baseline: no run at {budget:.3g} FLOPs (nor around it to interpolate)"
        for v in values
    ]
    return budget, values, notes


def _pairs(frame, draws, point_curves, planned, decide, benchmark) -> pd.DataFrame:
    """Every pair of recipes: the probability that ``a`` scores higher, the decision, the baseline, the crossing."""
    rows = []
    info = frame.set_index("recipe")
    for a, b in combinations(frame["recipe"], 2):
        row = dict(zip(PAIR_COLUMNS, [benchmark, a, b, np.nan, "", np.nan, False, np.nan, ""], strict=True))
        rows.append(row)  # filled in below
        missing = [r for r in (a, b) if r not in draws]
        base_a, base_b = info.at[a, "baseline"], info.at[b, "baseline"]
        if np.isfinite(base_a) and np.isfinite(base_b):
            row["baseline_a_better"] = 1.0 if base_a > base_b else 0.0 if base_a < base_b else 0.5
        if missing:
            verb = "have" if len(missing) > 1 else "has"
            row["reason"] = f"left out: {' and '.join(map(str, missing))} {verb} no forecast"
            row["decision"] = "refused"
            continue
        n = min(len(draws[a]), len(draws[b]))
        da, db = draws[a][:n], draws[b][:n]
        finite = np.isfinite(da) & np.isfinite(db)  # a draw without a score says nothing of the order
        if not finite.any():
            row["decision"], row["reason"] = "refused", "no joint draw where both recipes have a score"
            continue
        da, db = da[finite], db[finite]
        p = float(np.mean(da > db) + 0.5 * np.mean(da == db))
        row["p_a_better"] = p
        if not finite.all():
            row["reason"] = f"from the {finite.sum()} of {n} joint draws where both have a score"
        row["decision"] = a if p >= decide else b if p <= 1 - decide else "undecided"
        if np.isfinite(row["baseline_a_better"]) and row["baseline_a_better"] != 0.5 and p != 0.5:
            row["disagree"] = (p > 0.5) != (row["baseline_a_better"] > 0.5)
        row["crosses_at"] = _crossing(point_curves[a], point_curves[b], planned)
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


def _crossing(a, b, planned: float | None) -> float:
    """The largest compute up to the planned run where two point curves cross (NaN: they do not)."""
    low = max(a[0][0], b[0][0])
    high = planned if planned is not None else min(a[0][-1], b[0][-1])
    grid = np.geomspace(low, high, 200) if high > low else np.array([])
    if not len(grid):
        return np.nan
    diff = np.interp(np.log(grid), np.log(a[0]), a[1]) - np.interp(np.log(grid), np.log(b[0]), b[1])
    change = np.flatnonzero(np.sign(diff[:-1]) * np.sign(diff[1:]) < 0)
    if not len(change):
        return np.nan
    i = change[-1]
    t = diff[i] / (diff[i] - diff[i + 1])
    return float(np.exp(np.log(grid[i]) + t * (np.log(grid[i + 1]) - np.log(grid[i]))))


def _inverse(grid: np.ndarray, values: np.ndarray, score) -> np.ndarray:
    """Per draw (row), the compute where the curve first reaches ``score``: 0 below the grid, inf beyond it."""
    values = np.fmax.accumulate(np.nan_to_num(values, nan=-np.inf), axis=1)
    score = np.broadcast_to(np.asarray(score, float), (len(values),))
    out = np.full(len(values), np.inf)
    logs = np.log(grid)
    for b in range(len(values)):
        v, s = values[b], score[b]
        if not np.isfinite(s):
            out[b] = np.nan
        elif s <= v[0]:
            out[b] = 0.0
        elif s <= v[-1]:
            j = int(np.searchsorted(v, s))
            t = (s - v[j - 1]) / (v[j] - v[j - 1]) if v[j] > v[j - 1] else 0.0
            out[b] = np.exp(logs[j - 1] + t * (logs[j] - logs[j - 1]))
    return out


MULTIPLIER_COLUMNS = [
    "benchmark",
    "recipe",
    "reference",
    "multiplier",
    "lower",
    "upper",
    "point_censored",
    "lower_censored",
    "upper_censored",
    "crosses_at",
    "note",
]


def _no_multiplier(benchmark, name, ref, why: str) -> list:
    """A recipe's row saying why it has no multiplier."""
    return [benchmark, name, ref, np.nan, np.nan, np.nan, "", False, False, np.nan, f"no multiplier: {why}"]


def _no_multipliers(benchmark, ref, frame, why: str) -> pd.DataFrame:
    """A row per recipe saying why there are no multipliers on ``benchmark``."""
    return pd.DataFrame([_no_multiplier(benchmark, n, ref, why) for n in frame["recipe"]], columns=MULTIPLIER_COLUMNS)


def _multipliers(benchmark, ref, draws, grids, point_curves, planned, level, frame) -> pd.DataFrame:
    """Per recipe: C_ref / C_recipe at the reference's planned score, censored at the grid's reach."""
    rows, target = [], frame.set_index("recipe").at[ref, "prediction"]
    for name in frame["recipe"]:
        if name not in grids:
            rows.append(_no_multiplier(benchmark, name, ref, "no forecast"))
            continue
        grid, values = grids[name]
        if name == ref:  # its own multiplier is 1 by definition
            rows.append([benchmark, name, ref, 1.0, 1.0, 1.0, "", False, False, np.nan, "the reference"])
            continue
        ref_grid, ref_law = grids[ref]
        score = ref_law[:, int(np.argmin(np.abs(np.log(ref_grid / planned))))]  # the reference's law at the plan
        n = min(len(values), len(score))
        need = _inverse(grid, values[:n], score[:n])
        point = _inverse(point_curves[name][0], point_curves[name][1][None, :], target)[0]
        floor, ceiling = planned / grid[-1], planned / grid[0]  # the multipliers a grid can tell apart
        with np.errstate(divide="ignore"):
            ratio = np.log(planned) - np.log(need[np.isfinite(need) | (need == np.inf)])
            tail = (1 - level) / 2
            quantiles = (float(np.exp(np.quantile(ratio, q, method="inverted_cdf"))) for q in (tail, 1 - tail))
            lo, hi = quantiles if len(ratio) else (np.nan, np.nan)
            mult = planned / point if point > 0 else np.inf
        low_c, high_c = lo <= floor, hi >= ceiling
        lo, hi = max(lo, floor), min(hi, ceiling)
        censored = "<" if mult <= floor else ">" if mult >= ceiling else ""
        mult = float(np.clip(mult, floor, ceiling))
        note = []
        if low_c or high_c or censored:
            note.append(f"bounds held by the curves' reach ({floor:.3g} to {ceiling:.3g})")
        if not lo <= mult <= hi:
            note.append("the point (from the forecast's curve) lies outside the interval (from the law's draws)")
        cross = _crossing(point_curves[name], point_curves[ref], planned)
        rows.append([benchmark, name, ref, mult, lo, hi, censored, low_c, high_c, cross, "; ".join(note)])
    return pd.DataFrame(rows, columns=MULTIPLIER_COLUMNS)
