"""A backtest of :func:`~benchcast.forecasting.compare.compare`'s decisions: hold out each recipe's runs at the
ladder's largest common budget, compare the recipes there from the rest, and score the order against the runs held
out, beside the simplest alternative (rank by each recipe's best remaining run at the largest common budget)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.errors import BenchcastError
from benchcast.forecasting.compare import Comparison, compare, select_each
from benchcast.forecasting.compare_draws import BAND, best_at
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table

GAP = 1.5  # the runs fitted lie below the held-out budget / GAP (default)
SCORES = [
    "benchmark",
    "pairs",
    "answered",
    "decision_accuracy",
    "baseline_accuracy",
    "baseline_all",
    "brier",
    "decided",
    "decided_accuracy",
    "multiplier_coverage",
    "n_multipliers",
    "level_bias",
    "level_mae",
    "baseline_level_mae",
    "level_coverage",
    "n_levels",
]


@dataclass(frozen=True, eq=False)
class CompareBacktest(RichView):
    """Decisions of :func:`compare` scored against held-out runs (:func:`compare_backtest`).

    Parameters
    ----------
    scores : pandas.DataFrame
        Per benchmark, then ``'pooled'``: ``pairs`` with a truth, ``answered`` (with a p_a_better),
        ``decision_accuracy`` (share of answered pairs ordered right: p_a_better > 0.5 where a scored higher; 0.5
        counts half),
        ``baseline_accuracy`` (the simplest alternative's on the same pairs; ``baseline_all`` on every pair with a
        truth), ``brier`` (of p_a_better), ``decided`` (share decided at the comparison's level) and
        ``decided_accuracy``, ``multiplier_coverage`` where true multipliers were given; and the levels forecast at the
        held-out budget against each recipe's truth there: ``level_bias`` (mean forecast - truth), ``level_mae``,
        ``baseline_level_mae`` (the simplest alternative's level, each recipe's best run at its baseline budget, on
        the same recipes), ``level_coverage`` (share inside the forecast's interval) over ``n_levels`` recipes.
    pairs : pandas.DataFrame
        Every pair with ``truth_a_better`` (and ``truth_note``: why there is none) beside the comparison's columns.
    comparison : Comparison
        The comparison made from the runs below the held-out budget.
    holdout_flops : float
        The compute held out and forecast (the largest common budget).
    fit_below : float
        The runs fitted are those below this compute.
    """

    scores: pd.DataFrame
    pairs: pd.DataFrame
    comparison: Comparison
    holdout_flops: float
    fit_below: float

    def to_frame(self) -> pd.DataFrame:
        """The scores' table."""
        return self.scores.copy()

    def to_dict(self) -> dict:
        """The scores and pairs as JSON records."""
        return jsonable(
            {
                "fit_below": self.fit_below,
                "holdout_flops": self.holdout_flops,
                "scores": self.scores.to_dict("records"),
                "pairs": self.pairs.to_dict("records"),
            }
        )

    @property
    def title(self) -> str:
        """The scores' table's title: the recipe column and the held-out compute."""
        return f"backtest of the decisions between recipes ({self.comparison.by}) at {self.holdout_flops:.3g} FLOPs"

    def rich_items(self) -> list:
        """The scores' table and how they were made."""
        rows = [list(r) for r in self.scores[SCORES].itertuples(index=False)]
        notes = [
            f"fitted on the runs below {self.fit_below:.3g} FLOPs; truth: each recipe's best run at "
            f"{self.holdout_flops:.3g} FLOPs (within a factor {BAND:g}, else interpolated in log C)",
            "baseline: each recipe's best run at the largest compute of the runs fitted that every recipe with a "
            "forecast reaches (the same rule)",
            *self._no_truth(),
        ]
        return [rich_table(self.title, SCORES, rows, ".3g"), *(Markup(escape(n), highlight=False) for n in notes)]

    def _no_truth(self) -> list[str]:
        """Per benchmark, how many pairs have no truth and the first reasons (64 recipes made 9,800 lines of them)."""
        out = []
        for benchmark, pairs in self.pairs.groupby("benchmark", sort=False):
            missing = pairs.loc[pairs["truth_note"].astype(bool), "truth_note"]
            if len(missing):
                reasons = list(dict.fromkeys(missing))
                more = f"; and {len(reasons) - 3} more" if len(reasons) > 3 else ""
                shown = "; ".join(reasons[:3]) + more
                out.append(f"{benchmark}: {len(missing)} of {len(pairs)} pairs have no truth ({shown}; --json: each)")
        return out


def compare_backtest(
    table: pd.DataFrame,
    by: str,
    benchmark,
    metric: str | None = None,
    *,
    fit_below: float | None = None,
    true_multipliers=None,
    **options,
) -> CompareBacktest:
    """Hold out each recipe's runs at the ladder's largest common budget, compare the recipes there from the rest
    (:func:`benchcast.compare`), and score the decisions against the runs held out.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs, with a recipe column ``by``.
    by, benchmark, metric
        As :func:`benchcast.compare` takes them.
    fit_below : float, optional
        Fit only the runs below this compute (default and at most: the held-out budget / 1.5).
    true_multipliers : callable, optional
        ``f(benchmark, recipe, reference, flops)`` -> the true multiplier (synthetic ladders): its coverage is scored.
    **options
        Further keywords of :func:`benchcast.compare` (``uncertainty``, ``errors``, ``decide``, ``tpr``...).

    Returns
    -------
    CompareBacktest
    """
    if "flops" in options or "params" in options:
        raise BenchcastError("a backtest forecasts the held-out budget itself: drop flops= / params= and tokens=.")
    asked = [benchmark] if isinstance(benchmark, str) else list(benchmark)
    pairs = [(b.partition(":")[0], b.partition(":")[2] or metric) for b in asked]
    k, tpr = options.get("k"), options.get("tpr")
    names = sorted(table[by].dropna().unique(), key=str)
    chosen = {(bench, own): select_each(table, by, names, bench, own, k, tpr=tpr) for bench, own in pairs}
    tops = {}
    for (bench, _), per in chosen.items():
        for name, rows in per.items():
            if isinstance(rows, pd.DataFrame) and rows["flops"].nunique() > 1:
                tops[(bench, name)] = float(rows["flops"].max())
    if not tops:
        raise BenchcastError(f"no recipe of '{by}' has runs of two or more computes to hold out its largest.")
    top = min(tops.values())
    below = top / GAP if fit_below is None else min(fit_below, top / GAP)
    train = table[table["flops"] < below]
    comparison = compare(train, by, [f"{b}:{m}" if m else b for b, m in pairs], flops=top, **options)
    truth, why = {}, {}  # per (benchmark, recipe): the recipe's best held-out run at the budget, or why none
    for (bench, _), per in chosen.items():
        for name, rows in per.items():
            if not isinstance(rows, pd.DataFrame):
                why[(bench, name)] = f"{name}: {rows}"
                continue
            truth[(bench, name)] = best_at(rows, top)  # as the baseline takes it, on every run
            if not np.isfinite(truth[(bench, name)]):
                why[(bench, name)] = f"{name}: no run at {top:.3g} FLOPs (nor around it to interpolate)"
    judged = comparison.pairs.copy()
    ta = np.array([truth.get((r.benchmark, r.a), np.nan) for r in judged.itertuples()])
    tb = np.array([truth.get((r.benchmark, r.b), np.nan) for r in judged.itertuples()])
    judged["truth_a_better"] = np.where(np.isfinite(ta - tb) & (ta != tb), (ta > tb).astype(float), np.nan)
    judged["truth_note"] = [
        "; ".join(why[key] for key in ((r.benchmark, r.a), (r.benchmark, r.b)) if key in why)
        or ("a tie held out" if np.isfinite(a - b) and a == b else "")
        for r, a, b in zip(judged.itertuples(), ta, tb, strict=True)
    ]
    coverage = _coverage(comparison, true_multipliers, top)
    levels = comparison.recipes.assign(
        truth=[truth.get((r.benchmark, r.recipe), np.nan) for r in comparison.recipes.itertuples()]
    )
    rows = [
        _scores(bench, judged[judged["benchmark"] == bench], coverage.get(bench), levels[levels["benchmark"] == bench])
        for bench, _ in pairs
    ]
    rows.append(_scores("pooled", judged, [c for v in coverage.values() for c in v] if coverage else None, levels))
    return CompareBacktest(pd.DataFrame(rows, columns=SCORES), judged, comparison, top, below)


def _coverage(comparison: Comparison, truth, top: float) -> dict:
    """Per benchmark: whether each non-reference multiplier's interval holds the true one."""
    out = {}
    for r in comparison.multipliers.itertuples() if truth is not None else ():
        if r.recipe != r.reference and np.isfinite(r.lower) and np.isfinite(r.upper):
            m = truth(r.benchmark, r.recipe, r.reference, top)
            lower, upper = 0.0 if r.lower_censored else r.lower, np.inf if r.upper_censored else r.upper
            out.setdefault(r.benchmark, []).append(bool(lower <= m <= upper))
    return out


def _levels(recipes: pd.DataFrame) -> list:
    """The forecast levels' bias, error and interval coverage against the truth, and the baseline's error, over the
    recipes with a forecast, a baseline and a truth."""
    pred, base, true = (recipes[c].to_numpy(float) for c in ("prediction", "baseline", "truth"))
    ok = np.isfinite(pred) & np.isfinite(base) & np.isfinite(true)
    if not ok.any():
        return [float("nan")] * 4 + [0]
    low, up = recipes["lower"].to_numpy(float)[ok], recipes["upper"].to_numpy(float)[ok]
    inside = (low <= true[ok]) & (true[ok] <= up)
    covered = float(np.mean(inside)) if np.isfinite(low).all() and np.isfinite(up).all() else float("nan")
    error = pred[ok] - true[ok]
    return [
        float(np.mean(error)),
        float(np.mean(np.abs(error))),
        float(np.mean(np.abs(base[ok] - true[ok]))),
        covered,
        int(ok.sum()),
    ]


def _scores(name: str, pairs: pd.DataFrame, covered, levels: pd.DataFrame | None = None) -> list:
    """One row of scores over ``pairs`` (and ``levels``: the recipes' forecasts with their truth)."""
    known = pairs[pairs["truth_a_better"].notna() & pairs["baseline_a_better"].notna()]
    ok = known[known["p_a_better"].notna()]
    p, y = ok["p_a_better"].to_numpy(float), ok["truth_a_better"].to_numpy(float)
    right = np.where(p == 0.5, 0.5, ((p > 0.5) == (y > 0.5)).astype(float))  # p = 1/2 counts half, as a tie
    decided = ok["decision"].to_numpy(str) != "undecided"
    nan = float("nan")
    return [
        name,
        len(known),
        len(ok),
        float(np.mean(right)) if len(ok) else nan,
        _baseline_accuracy(ok),
        _baseline_accuracy(known),
        float(np.mean((p - y) ** 2)) if len(ok) else nan,
        float(np.mean(decided)) if len(ok) else nan,
        float(np.mean(right[decided])) if decided.any() else nan,  # a decided pair has p != 1/2
        float(np.mean(covered)) if covered else nan,
        len(covered) if covered else 0,
        *(_levels(levels) if levels is not None else [nan] * 4 + [0]),
    ]


def _baseline_accuracy(pairs: pd.DataFrame) -> float:
    """Share of ``pairs`` the simplest alternative orders right (a tie counts half)."""
    if not len(pairs):
        return float("nan")
    base, y = pairs["baseline_a_better"].to_numpy(float), pairs["truth_a_better"].to_numpy(float)
    return float(np.mean(np.where(base == 0.5, 0.5, (base > 0.5) == (y > 0.5))))
