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
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table


@dataclass
class PlanResult(RichView):
    """The compute (or, for laws with k, the k) at which a fitted law reaches a target score, with a
    bootstrap interval, or a statement that the target lies above the law's limit.

    Parameters
    ----------
    law : str
    target : float
        The target score.
    solves_for : {'flops', 'k'}
    ceiling : float
        The law's limit as compute (or k) grows; ``ceiling_meaning`` says what it is.
    reachable : bool
    needed : float
        The fitted law's answer (inf when unreachable).
    level : float
        The interval's level.
    k, flops, tpr : float or None
        The plan's fixed settings.
    message : str or None
        Why the target is unreachable.
    interval : str or None
        ``'extrapolation'`` or ``'bootstrap'``; None when no bootstrap was run.
    extrapolation : dict or None
        The extrapolation error where it shifted the replicates' targets.
    fraction_below_range, fraction_reachable : float or None
        Shares of the replicates that reach the target below 1e10 FLOPs, or at all.
    n_boot, failed_refits, dropped_refits : int or None
        Usable replicates, refits failed, refits not converged.
    lower, upper : float or None
        The interval (a bound may be inf).
    n_replicates : int or None
        Replicates made (usable or not).
    flags : tuple of Flag
        Why the answer may mislead (:mod:`benchcast.forecasting.flags`): the fit's flags, and its compute or
        k outside the data (below the smallest run, far beyond the largest, beyond the largest fitted k).
    """

    law: str
    target: float
    solves_for: str
    ceiling: float
    ceiling_meaning: str
    reachable: bool
    needed: float
    level: float
    k: float | None
    flops: float | None
    tpr: float | None
    message: str | None = None
    interval: str | None = None
    extrapolation: dict | None = None
    fraction_below_range: float | None = None
    n_boot: int | None = None
    failed_refits: int | None = None
    dropped_refits: int | None = None
    fraction_reachable: float | None = None
    lower: float | None = None
    upper: float | None = None
    n_replicates: int | None = field(default=None, repr=False)
    flags: tuple = ()

    def to_dict(self) -> dict:
        """The plan as JSON-ready values (what ``benchcast plan --json`` prints)."""
        out = {
            "law": self.law,
            "target": self.target,
            "solves_for": self.solves_for,
            "ceiling": self.ceiling,
            "ceiling_meaning": self.ceiling_meaning,
            "reachable": self.reachable,
            "needed": self.needed,
            "level": self.level,
            "k": self.k,
            "flops": self.flops,
            "tpr": self.tpr,
            "flags": [f.to_dict() for f in self.flags],
        }
        if self.message is not None:
            out["message"] = self.message
        if self.interval is not None:
            out["interval"] = self.interval
            if self.extrapolation is not None:
                out["extrapolation"] = self.extrapolation
            for key in ("fraction_below_range", "n_boot", "failed_refits", "dropped_refits", "fraction_reachable"):
                out[key] = getattr(self, key)
            out["lower"], out["upper"] = self.lower, self.upper
        return jsonable(out)

    def to_frame(self) -> pd.DataFrame:
        """One row: the target, the answer, its interval and the law's limit."""
        row = {"target": self.target, "solves for": self.solves_for, "needed": self.needed}
        if self.interval is not None:
            row.update({"lower": self.lower, "upper": self.upper, "reachable share": self.fraction_reachable})
        row["limit"] = self.ceiling
        return pd.DataFrame([row])

    @property
    def title(self) -> str:
        return f"{self.law}: plan for score {self.target:g}"

    @property
    def notes(self) -> list[str]:
        return str(self).splitlines()

    def rich_items(self) -> list:
        """The CLI's lines."""
        what = "k" if self.solves_for == "k" else "compute (FLOPs)"
        if not self.reachable:
            items = [Markup(f"[bold red]unreachable:[/] {escape(self.message)}", highlight=False)]
        else:
            line = escape(f"{self.law}: {what} needed for score {self.target:g}: ") + f"[bold]{self.needed:.4g}[/]"
            items = [Markup(line, highlight=False)]
        if self.interval is not None and self.lower is not None:
            pct = int(round(self.level * 100))
            if self.fraction_reachable is not None:  # k: each replicate's own answer
                how = f"target reachable in {self.fraction_reachable:.0%} of {self.n_replicates} bootstrap replicates"
            else:  # compute: where the forecast's bounds reach the target (the forecast's own interval)
                how = f"where the forecast's {pct} % bounds reach it; {self.n_boot} bootstrap replicates per law"
            upper = f"{self.upper:.4g}" if np.isfinite(self.upper) else "not within 1e40 FLOPs"
            items.append(Markup(escape(f"  {pct} % interval: {self.lower:.4g} .. {upper} ({how})"), highlight=False))
            if self.fraction_below_range:
                items.append(
                    Markup(
                        f"  {self.fraction_below_range:.0%} of the replicates reach the target below 1e10 FLOPs: "
                        "they count as 1e10, an upper bound on their compute"
                    )
                )
        items.append(Markup(escape(f"  the law's limit: {self.ceiling:.4g} ({self.ceiling_meaning})"), highlight=False))
        items += [Markup("[yellow]" + escape(f"  {flag}") + "[/]", highlight=False) for flag in self.flags]
        return items


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


@dataclass
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
        return [
            self._advice(),
            *self._target_notes(),
            *self._search_limit_warnings(),
            *self._floor_notes(),
            *(f"  note: {failure}" for failure in self.failures),
        ]

    def _floor_notes(self) -> list[str]:
        """Laws whose own tau /decade lies below the floor the interval counts it at."""
        from benchcast.forecasting.extrapolation import TAU_FLOOR

        below = [r["law"] for r in self.ranking.to_dict("records") if r.get("tau", np.nan) < TAU_FLOOR]
        if not below:
            return []
        return [
            f"  note: tau /decade of {', '.join(below)} is below {TAU_FLOOR:g}; an interval counts it as {TAU_FLOOR:g}"
        ]

    def _target_notes(self) -> list[str]:
        """What each law was given for the planned run (nothing without a forecast)."""
        return [] if self.forecast is None else self.forecast.context

    def _search_limit_warnings(self) -> list[str]:
        """One warning per law with a parameter at a search limit (an active constraint is only information)."""
        from benchcast.fitting.diagnostics import SEARCH_LIMIT_ADVICE

        if "at_search_limit" not in self.ranking:
            return []
        return [
            f"  warning: {r['law']}: at search limit: {r['at_search_limit']}: {SEARCH_LIMIT_ADVICE}"
            for r in self.ranking.to_dict("records")
            if r["at_search_limit"]
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
                if "lower" in f:
                    planned += f" ({int(round(f['level'] * 100))} % interval {f['lower']:.4f} .. {f['upper']:.4f})"
                planned += f"{'; ' + f['note'] if f.get('note') else ''}"
                planned += f" ({f['flags']})." if f.get("flags") else "."
        if not self.nested_origins:  # a fallback law alone: no rolling origin checked the choice
            return (
                f"{self.benchmark}: use the {self.rule} ({mix}); no rolling origin inside your runs checked it."
                + planned
            )
        return (
            f"{self.benchmark}: use the {self.rule} ({mix}). Chosen from rolling-origin forecasts inside your runs "
            f"(up to {self.extrapolation_decades:.2f} decades ahead); the choice itself, made without the runs it "
            f"was scored on, erred by {self.nested_mre:.2f} % MRE over {self.nested_origins} origin(s)." + planned
        )


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
