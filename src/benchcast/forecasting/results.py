"""What :func:`benchcast.forecast` and :func:`benchcast.plan` return: a forecast with its intervals,
and the compute (or k) a target score needs. Each shows itself as a table (``_repr_html_`` in a
notebook), prints as the CLI prints it (``str``), and gives the CLI's JSON (``to_dict``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.forecasting.forecast import Forecast
from benchcast.forecasting.targets import describe_run
from benchcast.laws.fitted import MAX_K
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table


@dataclass(frozen=True)
class Plan(RichView):
    """The compute (or, for laws with k, the k) at which a forecaster reaches a target score, with an interval, or
    why it does not: one type for a fitted law's plan (:func:`benchcast.plan`) and the default strategy's
    (:func:`benchcast.plan_default`).

    Parameters
    ----------
    benchmark : str
    forecaster : str
        The law, or the strategy (``'ensemble'``).
    target : float
        The target score.
    solves_for : {'flops', 'k'}
    needed : float
        The forecaster's answer (inf: not reached within 1e40 FLOPs, or above the law's limit).
    level : float
        The interval's level.
    weights : dict
        The laws and their weights.
    lower, upper : float or None
        The interval (a bound may be inf; None: no interval).
    interval : str or None
        ``'extrapolation'`` or ``'bootstrap'``; None when no bootstrap was run.
    n_boot : int or None
        Bootstrap replicates per law (usable replicates, for a k).
    k, flops, tpr : float or None
        The plan's fixed settings (``tpr``: the planned run's tokens per parameter).
    params, tokens : float or None
        The planned run's N and D at ``tpr`` (C = 6 N D), where the plan places one.
    ceiling : float or None
        The law's limit as compute (or k) grows; ``ceiling_meaning`` says what it is.
    ceiling_meaning : str
    largest_run : float
        The largest run the laws were fitted to.
    message : str or None
        Why the target is unreachable, or why there is no interval.
    extrapolation : dict or None
        The extrapolation error where it widened the forecast that was inverted.
    fraction_below_range, fraction_reachable : float or None
        Shares of a k plan's replicates that reach the target below 1e10 FLOPs, or at all.
    n_replicates, failed_refits, dropped_refits : int or None
        Replicates made, refits failed, refits not converged.
    flags : tuple of Flag
        Why the answer may mislead (:mod:`benchcast.forecasting.flags`).
    remarks : tuple of str
        What the answer rests on, and where it is read with care.
    metric : str
        The benchmark's metric planned for (``acc_norm``, ``pass@8``...; '' where none was resolved).
    """

    benchmark: str
    forecaster: str
    target: float
    solves_for: str
    needed: float
    level: float
    weights: dict = field(default_factory=dict)
    lower: float | None = None
    upper: float | None = None
    interval: str | None = None
    n_boot: int | None = None
    k: float | None = None
    flops: float | None = None
    tpr: float | None = None
    params: float | None = None
    tokens: float | None = None
    ceiling: float | None = None
    ceiling_meaning: str = ""
    largest_run: float = np.nan
    message: str | None = None
    extrapolation: dict | None = None
    fraction_below_range: float | None = None
    fraction_reachable: float | None = None
    n_replicates: int | None = field(default=None, repr=False)
    failed_refits: int | None = None
    dropped_refits: int | None = None
    flags: tuple = ()
    remarks: tuple = ()
    metric: str = ""

    law = property(lambda self: self.forecaster, doc="The law or strategy that planned.")
    rule = property(lambda self: self.forecaster, doc="The law or strategy that planned.")

    @property
    def reachable(self) -> bool:
        """Whether the target is reached (within 1e40 FLOPs, or below the law's limit)."""
        return bool(np.isfinite(self.needed))

    def to_dict(self) -> dict:
        """The plan as JSON-ready values (what ``benchcast plan --json`` prints).

        Returns
        -------
        dict
            Every field, ``reachable``, ``decades`` beyond the largest run, and ``flags`` as objects.
        """
        out = {
            "benchmark": self.benchmark,
            "metric": self.metric or None,
            "law": self.forecaster,
            "strategy": self.forecaster,
            "target": self.target,
            "solves_for": self.solves_for,
            "reachable": self.reachable,
            "needed": self.needed,
            "level": self.level,
            "lower": self.lower,
            "upper": self.upper,
            "interval": self.interval,
            "n_boot": self.n_boot,
            "k": self.k,
            "flops": self.flops,
            "tpr": self.tpr,
            "params": self.params,
            "tokens": self.tokens,
            "weights": self.weights,
            "ceiling": self.ceiling,
            "ceiling_meaning": self.ceiling_meaning,
            "largest_run": self.largest_run,
            "decades": float(np.log10(self.needed / self.largest_run))
            if self.reachable and self.solves_for == "flops" and np.isfinite(self.largest_run)
            else None,
            "flags": [f.to_dict() for f in self.flags],
            "notes": list(self.remarks),
        }
        optional = ("message", "extrapolation", "fraction_below_range", "fraction_reachable")
        optional += ("failed_refits", "dropped_refits")
        out.update({key: getattr(self, key) for key in optional if getattr(self, key) is not None})
        return jsonable(out)

    def to_frame(self) -> pd.DataFrame:
        """One row: the target, the answer, its interval and the law's limit.

        Returns
        -------
        pandas.DataFrame
        """
        row = {"metric": self.metric} if self.metric else {}  # which of the benchmark's metrics
        row.update({"target": self.target, "solves for": self.solves_for, "needed": self.needed})
        row.update({"lower": self.lower, "upper": self.upper})
        if self.fraction_reachable is not None:
            row["reachable share"] = self.fraction_reachable
        if self.ceiling is not None:
            row["limit"] = self.ceiling
        return pd.DataFrame([row])

    @property
    def title(self) -> str:
        metric = f" ({self.metric})" if self.metric else ""
        return f"{self.benchmark}{metric}: plan for score {self.target:g} from the {self.forecaster}"

    @property
    def notes(self) -> list[str]:
        """What the answer rests on, and where it is read with care."""
        return list(self.remarks)

    def rich_items(self) -> list:
        """The answer, its interval, the law's limit, the flags, then the notes."""
        what = "k" if self.solves_for == "k" else "compute (FLOPs)"
        mix = ", ".join(f"{law} {w:.2f}" for law, w in self.weights.items() if w > 0)
        who = escape(f"{self.forecaster}" + (f" ({mix})" if mix and list(self.weights) != [self.forecaster] else ""))
        if not self.reachable:
            why = self.message or f"the forecast does not reach {self.target:g} within 1e40 FLOPs"
            items = [Markup(f"[bold red]unreachable:[/] {who}: {escape(why)}", highlight=False)]
        else:
            line = f"{who}: {escape(f'{what} needed for score {self.target:g}: ')}[bold]{self.needed:.4g}[/]"
            items = [Markup(line, highlight=False)]
            if self.params is not None:
                size = f"  a run of N = {self.params:.3g} parameters on D = {self.tokens:.3g} tokens (TPR {self.tpr:g})"
                items.append(Markup(escape(size), highlight=False))
        if self.lower is not None:
            pct = int(round(self.level * 100))
            if self.fraction_reachable is not None:  # k: each replicate's own answer
                how = f"target reachable in {self.fraction_reachable:.0%} of {self.n_replicates} bootstrap replicates"
            else:  # compute: where the forecast's bounds reach the target (the forecast's own interval)
                how = f"where the forecast's {pct} % bounds reach it; {self.n_boot} bootstrap replicates per law"
            unbounded = f"not within {MAX_K:.0e} attempts" if self.solves_for == "k" else "not within 1e40 FLOPs"
            lower, upper = (f"{v:.4g}" if np.isfinite(v) else unbounded for v in (self.lower, self.upper))
            items.append(Markup(escape(f"  {pct} % interval: {lower} .. {upper} ({how})"), highlight=False))
            if self.fraction_below_range:
                items.append(
                    Markup(
                        f"  {self.fraction_below_range:.0%} of the replicates reach the target below 1e10 FLOPs: "
                        "they count as 1e10, an upper bound on their compute"
                    )
                )
        elif self.message and self.reachable:
            items.append(Markup(escape(f"  {self.message}"), highlight=False))
        if self.ceiling is not None:
            limit = f"  the law's limit: {self.ceiling:.4g} ({self.ceiling_meaning})"
            items.append(Markup(escape(limit), highlight=False))
        items += [Markup("[yellow]" + escape(f"  {flag}") + "[/]", highlight=False) for flag in self.flags]
        return items + [Markup(escape(f"  {note}"), highlight=False) for note in self.notes]


# the ranking's columns as a reader sees them (what the CLI and notebooks show)
RANKING_LABELS = {
    "law": "law",
    "inner_mre": "inner MRE %",
    "inner_msle": "inner MSLE",
    "weight": "weight",
    "tau": "tau /decade",
    "n_fit": "fitted",
    "n_dropped": "dropped",
    "constraint_active": "constraint active",
    "at_search_limit": "at search limit",
}


@dataclass(frozen=True)
class Recommendation(RichView):
    """Which laws to use on a benchmark, judged by rolling-origin forecasts inside the user's runs.

    Parameters
    ----------
    benchmark : str
        The benchmark the laws were compared on.
    rule : str
        ``'ensemble'``, ``'stack'`` or ``'select'`` (see :func:`weights_for`).
    supported : bool
        False when no law had enough rolling origins with usable points: then no weights and no forecast.
    reason : str
        Why there is no recommendation (empty when ``supported``).
    ranking : pandas.DataFrame
        One row per compared law: ``law``, ``tau`` (extrapolation spread per decade), ``n_fit``,
        ``decades_fitted``, ``converged``, ``constraint_active`` (the law's own constraints the fit reached,
        as ``a ≤ 1``: information), ``at_search_limit`` (parameters at a search limit: the data do not
        determine them) and, when supported, ``inner_msle``,
        ``inner_mre`` (%) and ``weight``; best first.
    weights : dict[str, float]
        The rule's weight of each law.
    best : str or None
        The law with the lowest inner error.
    nested_mre : float
        The choice's own out-of-sample MRE (%): made at each origin without the runs it is scored on.
    nested_origins : int
        Origins behind ``nested_mre``.
    extrapolation_decades : float
        The furthest the inner forecasts reached beyond their training runs (decades of compute).
    failures : list of str
        Laws that could not be compared, each with its reason.
    forecast : Forecast or None
        With a target compute: the combination's forecast there and its interval.
    """

    benchmark: str
    rule: str
    supported: bool
    reason: str
    ranking: pd.DataFrame
    weights: dict
    best: str | None
    nested_mre: float
    nested_origins: int
    extrapolation_decades: float
    failures: list[str] = field(default_factory=list)
    forecast: Forecast | None = None  # at target_flops: the combination's forecast and interval
    errors: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)  # the blend's rolling-origin forecasts
    needs_fallback: bool = False  # no candidate has support and the ladder's fallback is not fitted yet
    # the default against the simplest alternative on its rolling origins (alternative.Comparison)
    versus: object = None

    def to_dict(self) -> dict:
        """Every field, the ranking as records (what ``recommend --json`` prints); NaN as None."""
        return jsonable(
            {
                "benchmark": self.benchmark,
                "rule": self.rule,
                "supported": self.supported,
                "reason": self.reason,
                "best": self.best,
                "weights": self.weights,
                "nested_mre": self.nested_mre,
                "nested_origins": self.nested_origins,
                "extrapolation_decades": self.extrapolation_decades,
                "ranking": self.ranking.to_dict("records"),
                "failures": self.failures,
                "forecast": None if self.forecast is None else self.forecast.records()[0],
                "alternative": None if self.versus is None else self.versus.to_dict(),
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """The ranking as a reader sees it: law, inner MRE %, inner MSLE, weight, tau /decade, fitted, the
        constraints active and the parameters at a search limit."""
        shown = [c for c in RANKING_LABELS if c in self.ranking]
        return self.ranking[shown].rename(columns=RANKING_LABELS)

    @property
    def title(self) -> str:
        if not self.supported:
            return f"{self.benchmark}: no law has support"
        return (
            f"{self.benchmark}: rolling-origin forecasts inside the runs (up to {self.extrapolation_decades:.2f} "
            "decades ahead)"
        )

    @property
    def notes(self) -> list[str]:
        """The advice (which laws, how well the choice did, the forecast), a warning per law at a search
        limit, then each law left out (and why) and where the interval's spread comes from."""
        from benchcast.fitting.diagnostics import SEARCH_LIMIT_ADVICE
        from benchcast.forecasting.extrapolation import TAU_FLOOR

        records = self.ranking.to_dict("records")
        below = ", ".join(r["law"] for r in records if r.get("tau", np.nan) < TAU_FLOOR)
        floor = f"  note: tau /decade of {below} is below {TAU_FLOOR:g}; an interval counts it as {TAU_FLOOR:g}"
        return [
            self._advice(),
            *([] if self.versus is None or self.forecast is not None else [self.versus.words()]),
            *([] if self.forecast is None else self.forecast.context),  # what each law was given for the planned run
            *(
                f"  warning: {r['law']}: at search limit: {r['at_search_limit']}: {SEARCH_LIMIT_ADVICE}"
                for r in records
                if r.get("at_search_limit")  # an active constraint is only information
            ),
            *([floor] if below else []),
            *(f"  note: {failure}" for failure in self.failures),
        ]

    def rich_items(self) -> list:
        """The ranking (when some law had support), then the advice and each law not compared.

        Returns
        -------
        list
            A Rich table (when supported) and one unhighlighted markup line per note.
        """
        items = []
        if self.supported:
            ranking = self.to_frame()
            items.append(rich_table(self.title, list(ranking.columns), ranking.values.tolist()))  # escapes its cells
        return items + [Markup(escape(note), highlight=False) for note in self.notes]

    def _advice(self) -> str:
        if not self.supported:
            return f"No forecast for {self.benchmark}: {self.reason}"
        mix = ", ".join(f"{law} {w:.2f}" for law, w in self.weights.items() if w > 0)
        planned = ""
        if self.forecast is not None:
            f = self.forecast.records()[0]
            where = f"For {describe_run(f)}" if f.get("given") == "params_tokens" else f"At {f['flops']:.3g} FLOPs"
            if not np.isfinite(f["prediction"]):  # refused: the reason instead of a number
                planned = f" {where} there is no forecast ({f.get('flags') or f.get('note')})."
            else:
                planned = f" {where} it forecasts {f['prediction']:.4f}"
                if "alternative" in f:
                    other = f["alternative"]
                    planned += f" ({other['law']}, the simplest alternative: {other['prediction']:.4f})"
                if "lower" in f:
                    planned += f" ({int(round(f['level'] * 100))} % interval {f['lower']:.4f} .. {f['upper']:.4f})"
                planned += f"{'; ' + f['note'] if f.get('note') else ''}"
                planned += f" ({f['flags']})." if f.get("flags") else "."
        checked = (
            f". Chosen from rolling-origin forecasts inside your runs (up to {self.extrapolation_decades:.2f} decades "
            f"ahead); the choice itself, made without the runs it was scored on, erred by {self.nested_mre:.2f} % MRE "
            f"over {self.nested_origins} origin(s)."
            if self.nested_origins
            # the choice is unchecked, not the laws: their own rolling-origin errors are in the ranking
            else "; no nested rolling origin checked the choice (one law alone, or too few origins); the ranking shows "
            "the rolling-origin errors of the laws it uses."
        )
        return f"{self.benchmark}: use the {self.rule} ({mix}){checked}{planned}"
