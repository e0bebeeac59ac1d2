"""Planning from data with the default strategy: the compute at which the forecast ``forecast DATA``
gives reaches a target score, and the interval from that forecast's bounds.

The strategy is the one :func:`benchcast.forecasting.selection.forecast_default` makes for a target
beyond the runs (laws compared and weighted on every selected run), and its forecast at compute C is
:func:`benchcast.forecasting.strategy.blend_forecast` of the same bootstrap replicates, so the plan is
that forecast inverted: the point answer is where the blended forecast equals the target, the interval's
ends where the forecast's upper and lower bounds at the level do (a target inside the forecast's interval
at C is one that C may reach). Each is found by bracketing on a grid of log compute, then refined (the point
forecast by bisection; a bound, which carries the Monte-Carlo noise of its draws, by a line fitted across the
bracket). The forecast's draws at a point do not depend on the other points asked
(:mod:`benchcast.utils.streams`), so ``forecast DATA --flops C`` at the answer gives the target back (a bound:
to within its noise).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.errors import BenchcastError
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.flags import AT_FITTED_RUN, BELOW_DATA, INTERPOLATION, describe
from benchcast.forecasting.intervals import bootstrap
from benchcast.forecasting.selection import check_options, compare_laws, runs_below
from benchcast.forecasting.strategy import MemberForecast, blend_forecast
from benchcast.forecasting.targets import planned_runs
from benchcast.laws.fitted import LOG_FLOPS_RANGE
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView
from benchcast.validation import check_score

PLACEMENTS = (AT_FITTED_RUN, BELOW_DATA, INTERPOLATION)  # flags that already say the answer lies among the runs

GRID_PER_DECADE = 8  # bracketing grid of log compute; Brent's method refines inside a bracket
XTOL_DECADES = 1e-4  # the point answer's precision in decades of compute (0.02 %)
LOCAL_POINTS = 33  # computes across a bound's bracket that its crossing is fitted to


@dataclass
class StrategyPlan(RichView):
    """The compute at which the default strategy's forecast reaches a target score, with an interval.

    Parameters
    ----------
    benchmark : str
    rule : str
        The strategy (``'ensemble'`` by default).
    target : float
        The target score.
    level : float
        The interval's level.
    interval : str
        ``'extrapolation'`` or ``'bootstrap'``.
    n_boot : int
        Bootstrap replicates per law (0: no interval).
    tpr : float or None
        Tokens per parameter of the planned run (selecting the runs, and placing C for laws of N and D).
    weights : dict
        The strategy's laws and weights.
    needed : float
        Compute where the forecast equals the target (inf: not reached within 1e40 FLOPs).
    lower, upper : float or None
        Where the forecast's upper bound, and its lower bound, reach the target (inf: never; None: no interval).
    largest_run : float
        The largest run the laws were fitted to.
    flags : str
        Why the forecast at ``needed`` is doubtful (``''``: nothing).
    remarks : list of str
        What the answer rests on, and where it is read with care (:attr:`notes`).
    """

    benchmark: str
    rule: str
    target: float
    level: float
    interval: str
    n_boot: int
    tpr: float | None
    weights: dict
    needed: float
    lower: float | None = None
    upper: float | None = None
    largest_run: float = np.nan
    flags: str = ""
    remarks: list = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.benchmark}: compute for score {self.target:g} from the {self.rule}"

    @property
    def notes(self) -> list[str]:
        """What the answer rests on, and where it is read with care."""
        return list(self.remarks)

    @property
    def reachable(self) -> bool:
        """Whether the forecast reaches the target within 1e40 FLOPs."""
        return bool(np.isfinite(self.needed))

    def to_dict(self) -> dict:
        """The plan as JSON-ready values (what ``plan DATA --json`` prints)."""
        return jsonable(
            {
                "benchmark": self.benchmark,
                "strategy": self.rule,
                "target": self.target,
                "solves_for": "flops",
                "reachable": self.reachable,
                "needed": self.needed,
                "level": self.level,
                "interval": self.interval,
                "n_boot": self.n_boot,
                "lower": self.lower,
                "upper": self.upper,
                "tpr": self.tpr,
                "weights": self.weights,
                "largest_run": self.largest_run,
                "decades": float(np.log10(self.needed / self.largest_run)) if self.reachable else None,
                "flags": self.flags,
                "notes": self.remarks,
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """One row: the target, the compute needed and its interval."""
        return pd.DataFrame([{"target": self.target, "needed": self.needed, "lower": self.lower, "upper": self.upper}])

    def rich_items(self) -> list:
        """The answer, its interval, then the notes."""
        mix = ", ".join(f"{law} {w:.2f}" for law, w in self.weights.items())
        head = f"{self.benchmark}: the {self.rule} ({mix}) forecast reaches {self.target:g} at "
        if self.reachable:
            items = [Markup(escape(head) + f"[bold]{self.needed:.4g}[/] FLOPs", highlight=False)]
        else:
            items = [
                Markup(
                    escape(
                        f"{self.benchmark}: the {self.rule} ({mix}) forecast does not reach {self.target:g} "
                        "within 1e40 FLOPs"
                    ),
                    highlight=False,
                )
            ]
        if self.lower is not None:
            pct = int(round(self.level * 100))
            upper = f"{self.upper:.4g}" if np.isfinite(self.upper) else "not within 1e40 FLOPs"
            items.append(Markup(escape(f"  {pct} % interval: {self.lower:.4g} .. {upper}"), highlight=False))
        if self.flags:
            items.append(Markup(escape(f"  {self.flags}"), highlight=False))  # each flag says flagged/refused
        return items + [Markup(escape(f"  {note}"), highlight=False) for note in self.notes]


def plan_default(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    *,
    target: float,
    tpr: float | None = None,
    min_flops: float | None = None,
    max_flops: float | None = None,
    proxy: str | None = None,
    rule: str = "ensemble",
    n_boot: int = 1000,
    level: float = 0.9,
    interval: str = "extrapolation",
    seed: int = 0,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> StrategyPlan:
    """The compute at which the default strategy's forecast (as :func:`forecast_default` gives it for a run
    beyond the data) reaches ``target``, with the interval where its bounds at ``level`` reach it.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs.
    benchmark, metric, k : str, str or None, int or None
        The selection; the metric defaults as in :func:`benchcast.fit`.
    target : float
        The target score, in (0, 1) and above chance.
    tpr, min_flops, max_flops, proxy : optional
        Further selection, as in :class:`benchcast.fitting.spec.FitSpec`; ``tpr`` also places the planned run
        of compute C for laws of N and D (on a ladder across TPRs, where the default's laws are of N and D, it
        is needed).
    rule : str
        ``'ensemble'`` (the default strategy), ``'stack'`` or ``'select'``.
    n_boot, level, interval, seed, n_jobs, ray_address
        As :func:`forecast_default` takes them (``n_boot=0``: no interval).

    Returns
    -------
    StrategyPlan
    """
    check_score("target score", target)
    check_options(rule, interval, n_boot, level, None)
    selection = {"tpr": tpr, "min_flops": min_flops, "max_flops": max_flops}
    base = FitSpec("power", benchmark, metric, k=k, proxy=proxy, seed=seed, **selection)
    rec, strategy = compare_laws(runs_below(table, base, None), base, rule=rule)
    if strategy is None:
        raise BenchcastError(f"no plan for {benchmark}: {rec.reason}")
    members = strategy.members
    results = {law: strategy.results[law] for law in members}
    q_rand = max(float(r.spec.q_rand) for r in results.values())
    if target <= q_rand:
        raise BenchcastError(
            f"target {target:g} is at or below the chance level {q_rand:g} of {benchmark}: a model reaches it "
            "without training, so there is no compute to plan."
        )
    in_size = [law for law, r in results.items() if tpr is None and not _places_compute(r)]
    if in_size and tpr is None:
        tprs = sorted({round(float(v), 3) for r in results.values() for v in r.points["tokens"] / r.points["params"]})
        raise BenchcastError(
            f"the default strategy's laws for {benchmark} ({', '.join(in_size)}) are functions of parameters and "
            f"tokens, fitted across the runs' TPRs ({', '.join(f'{v:g}' for v in tprs)}): a planned compute needs "
            "a tokens-per-parameter ratio to split C = 6 N D into N and D. Give --tpr T (tpr=T), e.g. "
            f"--tpr {tprs[len(tprs) // 2]:g}, to plan a run at that ratio (as `forecast DATA --flops C --tpr T` "
            "forecasts one)."
        )
    replicates = (
        {
            law: bootstrap(r, n_boot, seed=seed, n_jobs=n_jobs, progress=None, ray_address=ray_address)
            for law, r in results.items()
        }
        if n_boot
        else {}
    )

    def blended(flops: np.ndarray):
        runs = planned_runs(flops=np.atleast_1d(flops), tpr=tpr)
        forecasts = {}
        for law, result in results.items():
            covariates, used = runs.covariates(result.fitted)
            draws = replicates[law].draws("prediction", **covariates) if n_boot else None
            predicted = np.asarray(result.predict(**covariates), float)
            forecasts[law] = MemberForecast(predicted, draws, float(result.diagnostics.flops_max), used, result)
        options = {"interval": interval, "seed": seed, "pooled": strategy.pooled, "levels": (level,)}
        return blend_forecast(forecasts, strategy.weights, strategy.errors, runs, **options)

    largest = max(float(r.diagnostics.flops_max) for r in results.values())
    smallest = min(float(r.points["flops"].min()) for r in results.values())
    lo, hi = np.log10(smallest), LOG_FLOPS_RANGE[1] / np.log(10)
    grid = 10 ** np.linspace(lo, hi, int(np.ceil((hi - lo) * GRID_PER_DECADE)) + 1)
    on_grid = blended(grid)
    curves = {"needed": on_grid.predicted}
    if n_boot and not on_grid.note:
        low, up = on_grid.intervals[level]
        curves.update({"lower": up, "upper": low})  # the cheapest compute is where the upper bound reaches it
    answers = {
        name: _first_crossing(
            grid, values, target, lambda c, n=name: _value(blended(np.array([c])), n, level), smooth=name != "needed"
        )
        for name, values in curves.items()
    }
    out = StrategyPlan(benchmark, rule, target, level, interval, n_boot, tpr, dict(members), answers["needed"])
    out.lower, out.upper, out.largest_run = answers.get("lower"), answers.get("upper"), largest
    at = blended(np.array([out.needed])) if out.reachable else None
    placed = at is not None and any(f.kind in PLACEMENTS for f in at.point_flags[0])  # its flag says where
    out.remarks = _notes(out, on_grid.note if n_boot else "", smallest, rec.failures, placed)
    if at is not None:
        out.flags = describe(at.point_flags[0])
        out.remarks += [f"flagged: {flag}" for flag in at.flags if flag]
    return out


def _places_compute(result) -> bool:
    """Whether the fitted law places a run of compute C by itself (a law of N and D needs a TPR; the law says)."""
    if not {"params", "tokens"} <= set(result.law_object.covariates):
        return True
    try:
        result.fitted.covariates_at(np.array([float(result.points["flops"].max())]))
    except BenchcastError:
        return False
    return True


def _value(blend, name: str, level: float) -> float:
    """The blended forecast's point (``needed``) or a bound (``lower``: the upper bound; ``upper``: the lower)."""
    if name == "needed":
        return float(blend.predicted[0])
    low, up = blend.intervals.get(level, (np.array([np.nan]), np.array([np.nan])))
    return float((up if name == "lower" else low)[0])


def _first_crossing(grid: np.ndarray, values: np.ndarray, target: float, at, smooth: bool = False) -> float:
    """The smallest compute where ``at(C)`` reaches ``target``: bracketed on ``grid`` (where ``values`` are
    ``at`` on the grid), then refined in log compute; the grid's floor where the first point already reaches
    it, inf where none does.

    The point forecast is smooth in C: bisection to ``XTOL_DECADES``. A bound is not (``smooth``): its draws
    are keyed per point, so it moves by their Monte-Carlo noise between any two computes, and a bisection
    would stop at a jump of that noise. Its crossing is that of a straight line fitted (in log C) to the bound
    at ``LOCAL_POINTS`` computes across the bracket: where the bound reaches the target net of its noise.
    """
    reached = np.isfinite(values) & (values >= target)
    if not reached.any():
        return float("inf")
    i = int(np.argmax(reached))
    if i == 0:
        return float(grid[0])
    below, above = np.log10(grid[i - 1]), np.log10(grid[i])
    if not np.isfinite(values[i - 1]):  # a refused point just below: the bracket's top is the answer we can give
        return float(grid[i])
    if smooth:
        xs = np.linspace(below, above, LOCAL_POINTS)
        ys = np.array([at(10**x) for x in xs])
        ok = np.isfinite(ys)
        slope, intercept = np.polyfit(xs[ok], ys[ok], 1)
        root = (target - intercept) / slope if slope > 0 else above
        return float(10 ** np.clip(root, below, above))
    while above - below > XTOL_DECADES:
        middle = 0.5 * (below + above)
        value = at(10**middle)
        below, above = (below, middle) if np.isfinite(value) and value >= target else (middle, above)
    return float(10**above)


def _notes(plan: StrategyPlan, interval_note: str, smallest: float, failures: list[str], placed: bool) -> list[str]:
    """What the plan rests on, and where to read it with care."""
    pct = int(round(plan.level * 100))
    kind = "extrapolation-aware" if plan.interval == "extrapolation" else "bootstrap-only"
    notes = [
        f"the {plan.rule} (the default strategy) fitted to every selected run (largest {plan.largest_run:.3g} "
        f"FLOPs), as `forecast DATA --flops C` forecasts a run beyond them; the interval is where that forecast's "
        f"{pct} % {kind} prediction bounds reach the target ({plan.n_boot} bootstrap replicates per law)."
    ]
    if plan.tpr is not None:
        notes.append(f"runs at TPR {plan.tpr:g}: the planned run is placed at that ratio.")
    if not plan.n_boot:
        notes.append("no interval: --n-boot 0.")
    elif interval_note:
        notes.append(interval_note)
    if plan.reachable and plan.needed <= plan.largest_run and not placed:
        notes.append(
            f"the target is reached inside the fitted runs (at {plan.needed:.3g} <= {plan.largest_run:.3g} FLOPs): "
            "an interpolation of the curve through them, not a forecast beyond them"
            + (f" (at or below the smallest run, {smallest:.3g} FLOPs)" if plan.needed <= smallest else "")
            + "."
        )
    if plan.upper is not None and not np.isfinite(plan.upper):
        notes.append(
            f"no upper end: the forecast's {pct} % lower bound does not reach the target within 1e40 FLOPs (the "
            "interval widens with the distance beyond the runs faster than the forecast rises)."
        )
    if plan.lower is not None and smallest < plan.lower <= plan.largest_run:
        notes.append(
            f"the interval's lower end ({plan.lower:.3g} FLOPs) lies inside the fitted runs: read off the curve "
            "fitted to every run (a forecast there from the cheaper runs alone may differ)."
        )
    if plan.lower is not None and plan.lower <= smallest:
        notes.append("the interval's lower end is the smallest run's compute: the bound reaches the target there.")
    return notes + list(failures)
