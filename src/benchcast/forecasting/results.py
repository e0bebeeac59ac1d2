"""What :func:`benchcast.forecast` and :func:`benchcast.plan` return: a forecast with its intervals,
and the compute (or k) a target score needs. Each shows itself as a table (``_repr_html_`` in a
notebook), prints as the CLI prints it (``str``), and gives the CLI's JSON (``to_dict``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.forecasting.flags import describe, refused, short
from benchcast.forecasting.targets import describe_run
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table

FORECAST_COLUMNS = (
    "query",
    "forecast",
    "prediction lower",
    "prediction upper",
    "confidence lower",
    "confidence upper",
    "flags",
)


class _Fields:
    """``result["name"]`` reads the field ``name``, as the dicts these results replace were read."""

    def __getitem__(self, key: str):
        if key not in self.to_dict():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: str) -> bool:
        return key in self.to_dict()


@dataclass
class Forecast(_Fields, RichView):
    """A forecast at each asked point: the prediction, its intervals, its flags, and the laws behind it. The one
    type every command's forecast is (:meth:`benchcast.forecasting.ensemble.Ensemble.predict` makes it).

    Parameters
    ----------
    benchmark : str
        The benchmark forecast.
    name : str
        The strategy (``'ensemble'``...) or the law forecasting alone.
    runs : PlannedRuns
        The points: compute, and N, D and TPR where known.
    prediction : ndarray (points,)
        The weighted forecast (NaN where refused).
    weights : dict of str to float
        The members and their weights.
    members : dict of str to ndarray
        Each member's own forecast at the points.
    used : dict of str to str
        What each member was given, in words.
    flags : list of tuple of Flag
        Per point, every reason its forecast is refused or doubtful (:mod:`benchcast.forecasting.flags`), a TPR
        outside the fitted runs' included.
    levels : tuple of float
        The interval levels.
    interval : {'extrapolation', 'bootstrap'}
        How the intervals were made.
    n_boot : int
        Bootstrap replicates per law (0: no interval).
    dropped : dict of str to str
        Rows of the selection each member's fit left out, with the reasons.
    choice_notes : list of str
        What the choice of laws left out, and why.
    intervals, mean_intervals : dict of float to (ndarray, ndarray)
        The prediction interval (a new run's score) and, where asked, the confidence interval (the law's curve)
        at each level; empty where there is none (``note`` says why).
    error_model : dict or None
        The extrapolation error that widened the draws.
    note : str
        Why there is no interval ('' where there is one or none was asked).
    failed_refits, dropped_refits : int
        Bootstrap refits that failed, and that did not converge (left out).
    query : dict
        The covariates as asked (``forecast`` of a fit artifact), and their shape.
    run_notes : list of str
        Where planned runs were placed, what the law was given.
    decades : ndarray (points,)
        Each point's distance beyond the largest fitted run, in decades of compute (negative inside).
    """

    benchmark: str
    name: str
    runs: object
    prediction: np.ndarray
    weights: dict
    members: dict
    used: dict
    flags: list
    levels: tuple
    interval: str
    n_boot: int
    dropped: dict = field(default_factory=dict)
    choice_notes: list = field(default_factory=list)
    intervals: dict = field(default_factory=dict)
    mean_intervals: dict = field(default_factory=dict)
    error_model: dict | None = None
    note: str = ""
    failed_refits: int = 0
    dropped_refits: int = 0
    query: dict = field(default_factory=dict)
    shape: tuple = ()
    run_notes: list = field(default_factory=list)
    decades: np.ndarray = field(default_factory=lambda: np.array([]))

    # -- the points, per level --------------------------------------------------------------------

    @property
    def law(self) -> str:
        """The strategy or the law (a one-member forecast is its law's)."""
        return self.name

    @property
    def level(self) -> float:
        """The widest level asked (the one a single-level view shows)."""
        return max(self.levels)

    def bounds(self, level: float | None = None, mean: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The interval at ``level`` (default: :attr:`level`), NaN where there is none.

        Parameters
        ----------
        level : float, optional
        mean : bool
            The confidence interval of the law's curve instead of a new run's.

        Returns
        -------
        (lower, upper) : ndarrays (points,)
        """
        level = self.level if level is None else level
        found = (self.mean_intervals if mean else self.intervals).get(level)
        if found is None:
            missing = np.full(len(self.prediction), np.nan)
            return missing, missing
        return found

    @property
    def lower(self):
        return self._shaped(self.bounds()[0])

    @property
    def upper(self):
        return self._shaped(self.bounds()[1])

    @property
    def lower_mean(self):
        return self._shaped(self.bounds(mean=True)[0])

    @property
    def upper_mean(self):
        return self._shaped(self.bounds(mean=True)[1])

    @property
    def extrapolation(self) -> dict | None:
        """The extrapolation error behind the interval (None: bootstrap alone, or no interval)."""
        return self.error_model

    def take(self, which) -> Forecast:
        """The forecast at some of its points.

        Parameters
        ----------
        which : slice or array of int
            The points kept.

        Returns
        -------
        Forecast
        """
        index = np.arange(len(self.prediction))[which]
        cut = {level: (lo[index], hi[index]) for level, (lo, hi) in self.intervals.items()}
        mean = {level: (lo[index], hi[index]) for level, (lo, hi) in self.mean_intervals.items()}
        return replace(
            self,
            runs=self.runs.take(index),
            prediction=self.prediction[index],
            members={law: np.asarray(v)[index] for law, v in self.members.items()},
            flags=[self.flags[i] for i in index],
            intervals=cut,
            mean_intervals=mean,
            query={},
            shape=(),
            decades=np.asarray(self.decades)[index] if len(self.decades) else self.decades,
        )

    def _shaped(self, values):
        return np.reshape(values, self.shape) if self.shape else values

    def record(self, i: int, level: float | None = None) -> dict:
        """Point ``i`` as ``recommend`` and ``forecast DATA`` report it.

        Parameters
        ----------
        i : int
            The point.
        level : float, optional
            The interval's level (default: :attr:`level`).

        Returns
        -------
        dict
            The run (``flops``, ``params``, ``tokens``, ``tpr``: None where unknown; ``given``), ``prediction``,
            ``level``, ``interval``, ``n_boot``, ``covariates`` and ``dropped``, ``flags`` (every flag, in words),
            ``extrapolation`` (the error model), ``lower``/``upper`` or a ``note``.
        """
        level = self.level if level is None else level
        out = {
            **self.runs.record(i),
            "prediction": float(self.prediction[i]),
            "level": level,
            "interval": self.interval,
            "n_boot": self.n_boot,
            "covariates": dict(self.used),
            "dropped": dict(self.dropped),
            "flags": describe(self.flags[i]),
            "weights": dict(self.weights),
        }
        if self.note:
            out["note"] = self.note
            return out
        if self.error_model is not None:
            out["extrapolation"] = self.error_model
        if self.failed_refits or self.dropped_refits:  # the replicates behind the interval, as counted
            out["failed_refits"], out["dropped_refits"] = self.failed_refits, self.dropped_refits
        lower, upper = self.bounds(level)
        out["lower"], out["upper"] = float(lower[i]), float(upper[i])
        return out

    # -- views ---------------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        """The forecast as JSON-ready values (what ``benchcast forecast --json`` prints); a refused point's
        values are null, and ``flags`` gives each point's reasons (``kind``, ``reason``, ``refused``)."""
        return jsonable(
            {
                "law": self.name,
                "benchmark": self.benchmark,
                "weights": self.weights,
                "level": self.level,
                "levels": list(self.levels),
                "interval": self.interval,
                **({"extrapolation": self.error_model} if self.error_model is not None else {}),
                **({"note": self.note} if self.note else {}),
                "n_boot": self.n_boot,
                "failed_refits": self.failed_refits,
                "dropped_refits": self.dropped_refits,
                "query": self.query or {"flops": self.runs.flops},
                "prediction": self._shaped(self.prediction),
                "lower": self.lower,
                "upper": self.upper,
                "lower_mean": self.lower_mean,
                "upper_mean": self.upper_mean,
                "intervals": {
                    str(level): {"lower": self._shaped(lo), "upper": self._shaped(hi)}
                    for level, (lo, hi) in self.intervals.items()
                },
                **({"notes": self.run_notes} if self.run_notes else {}),
                "flags": [[f.to_dict() for f in point] for point in self.flags],
            }
        )

    def plot(self, ax=None, fit=None, **style):
        """The forecast at each point with its prediction and confidence intervals, over the fit's
        runs and curve when ``fit`` is given (:func:`benchcast.plots.plot_forecast`).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            The panel to draw into (default: a new figure).
        fit : FitResult, optional
            The fit the forecast was made from.
        **style
            Matplotlib keywords of the forecast markers (``color``, ``marker``...).

        Returns
        -------
        matplotlib.axes.Axes
            The panel, to restyle or save.
        """
        from benchcast.plots.results import plot_forecast  # matplotlib loads only when a figure is drawn

        return plot_forecast(self, fit, ax, **style)

    def labels(self) -> list[str]:
        """How each point is named: its compute, else its N and D, else its gold NLL.

        Returns
        -------
        list of str
            One label per point.
        """
        query = self.query or {"flops": self.runs.flops}
        if query.get("flops") is not None:
            return [f"{c:.3g}" for c in np.atleast_1d(query["flops"]).ravel()]
        if query.get("params") is not None:
            if query.get("tokens") is None:
                return [f"N={n:.3g}" for n in np.atleast_1d(np.asarray(query["params"], float)).ravel()]
            params, tokens = (np.atleast_1d(a).ravel() for a in np.broadcast_arrays(query["params"], query["tokens"]))
            return [f"N={n:.3g}, D={d:.3g}, TPR {d / n:.3g}" for n, d in zip(params, tokens, strict=True)]
        return [f"G={g:.3g}" for g in np.atleast_1d(np.asarray(query.get("gold"), float)).ravel()]

    def to_frame(self) -> pd.DataFrame:
        """One row per point: the forecast, both intervals and its flags (``'refused: ...'``)."""
        lower, upper = self.bounds()
        lower_mean, upper_mean = self.bounds(mean=True)
        values = (self.prediction, lower, upper, lower_mean, upper_mean)
        flags = [short(point) for point in self.flags] or [""] * len(self.prediction)
        rows = [list(row) for row in zip(self.labels(), *values, flags, strict=False)]
        return pd.DataFrame(rows, columns=list(FORECAST_COLUMNS))

    @property
    def title(self) -> str:
        members = "" if list(self.weights) == [self.name] else f" ({', '.join(self.weights)})"
        return (
            f"{self.name}{members} on {self.benchmark}: forecast with {int(round(self.level * 100))} % intervals "
            f"({self.n_boot} bootstrap replicates over runs per law, {self.failed_refits} failed; "
            f"interval: {self.interval})"
        )

    @property
    def notes(self) -> list[str]:
        """Why there is no interval; for planned runs what the law was given; then one line per flagged or refused
        point, with every reason."""
        out = [self.note] if self.note else []
        if (self.error_model or {}).get("floor"):
            out.append(f"extrapolation error: {self.error_model['floor']}")
        return (
            out
            + list(self.run_notes)
            + [
                f"{label}: {describe(point)}" + (" (no number given)" if refused(point) else "")
                for label, point in zip(self.labels(), self.flags, strict=False)
                if point
            ]
        )

    def rich_items(self) -> list:
        """The CLI's table (a refused forecast as "—"), then the notes."""
        rows = [
            [label, *(float(v) if np.isfinite(v) else "—" for v in rest[:-1]), rest[-1]]
            for label, *rest in self.to_frame().itertuples(index=False, name=None)
        ]
        notes = [Markup(escape(note), highlight=False) for note in self.notes]
        return [rich_table(self.title, list(FORECAST_COLUMNS), rows), *notes]


@dataclass
class PlanResult(_Fields, RichView):
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
    forecast : dict or None
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
    forecast: dict | None = None  # at target_flops: the combination's forecast and interval
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
                "forecast": self.forecast,
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
        if self.forecast is None:
            return []
        return _covariate_notes([self.forecast])

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
            f = self.forecast
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
class StrategyForecast(RichView):
    """The default strategy's forecast of runs of given compute from a table (``benchcast forecast DATA -b``).

    Parameters
    ----------
    benchmark : str
        The benchmark forecast.
    rule : str
        The strategy (``'ensemble'`` by default).
    level : float
        The intervals' level.
    interval : str
        ``'extrapolation'`` or ``'bootstrap'``.
    n_boot : int
        Bootstrap replicates per law behind each interval (0: none).
    rows : pandas.DataFrame
        One row per target: the run (``flops``, ``params``, ``tokens``, ``tpr``, ``given``), ``prediction``,
        ``lower``/``upper`` (where there is an interval), ``weights``, ``covariates`` (what each law was given),
        ``note`` (why there is no forecast or no interval) and
        ``flags`` (why a forecast is refused, NaN then, or doubtful: :mod:`benchcast.forecasting.flags`), as
        :func:`recommend` gives them.
    """

    benchmark: str
    rule: str
    level: float
    interval: str
    n_boot: int
    rows: pd.DataFrame

    def to_dict(self) -> dict:
        """The settings and one record per target (what ``forecast --json`` prints); NaN as None."""
        return jsonable(
            {
                "benchmark": self.benchmark,
                "strategy": self.rule,
                "level": self.level,
                "interval": self.interval,
                "n_boot": self.n_boot,
                "forecasts": self.rows.to_dict("records"),
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per target: the run (compute; N, D and TPR where known), forecast, interval bounds and flags."""
        shown = ("flops", "params", "tokens", "tpr", "prediction", "lower", "upper", "flags")
        known = self.rows.replace("", np.nan).notna().any()  # a column of empty flags is not shown either
        return self.rows[[c for c in shown if c in self.rows and (c in ("flops", "prediction") or known[c])]]

    @property
    def title(self) -> str:
        return f"{self.benchmark}: forecast of the {self.rule}"

    @property
    def notes(self) -> list[str]:
        """What the forecast is, the laws and weights behind it, and why a target has no forecast or interval."""
        pct = int(round(self.level * 100))
        kind = "extrapolation-aware" if self.interval == "extrapolation" else "bootstrap-only"
        interval = (
            f"{pct} % {kind} prediction interval from {self.n_boot} bootstrap replicates per law"
            if self.n_boot
            else "no interval (0 bootstrap replicates asked for)"
        )
        out = [
            f"The {self.rule} (the default strategy), as `recommend --target-flops` gives it: laws compared and "
            f"weighted on the runs cheaper than each target; {interval}."
        ]
        mixes: dict[str, list[str]] = {}
        for row in self.rows.to_dict("records"):
            weights = row.get("weights")
            if isinstance(weights, dict) and weights:
                mix = ", ".join(f"{law} {w:.2f}" for law, w in weights.items())
                mixes.setdefault(mix, []).append(f"{row['flops']:.3g}")
        out += [f"weights at {', '.join(targets)} FLOPs: {mix}" for mix, targets in mixes.items()]
        out += _covariate_notes(self.rows.to_dict("records"))
        for row in self.rows.to_dict("records"):
            if isinstance(row.get("note"), str) and row["note"]:
                out.append(f"— at {row['flops']:.3g} FLOPs: {row['note']}")
            if isinstance(row.get("flags"), str) and row["flags"]:
                out.append(f"at {row['flops']:.3g} FLOPs: {row['flags']}")
            failed, dropped = row.get("failed_refits"), row.get("dropped_refits")
            if isinstance(failed, (int, float)) and failed == failed and (failed or dropped):
                out.append(
                    f"at {row['flops']:.3g} FLOPs: {int(failed)} bootstrap refit(s) failed and {int(dropped)} did not "
                    "converge: left out of the interval"
                )
        return out

    def plot(self, ax=None, runs=None, **style):
        """The forecast at each target with its prediction interval, over ``runs`` when given
        (:func:`benchcast.plots.plot_strategy_forecast`).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            The panel to draw into (default: a new figure).
        runs : pandas.DataFrame, optional
            The runs to draw under it (``flops`` and ``value``, e.g. from :func:`benchcast.select`).
        **style
            Matplotlib keywords of the forecast markers.

        Returns
        -------
        matplotlib.axes.Axes
            The panel.
        """
        from benchcast.plots.results import plot_strategy_forecast  # matplotlib loads only when a figure is drawn

        return plot_strategy_forecast(self, runs=runs, ax=ax, **style)

    def rich_items(self) -> list:
        """The forecasts (a value that does not exist as "—"), then the notes.

        Returns
        -------
        list
            A Rich table and one unhighlighted markup line per note.
        """
        pct = int(round(self.level * 100))
        records = self.rows.to_dict("records")
        sizes = [c for c in ("params", "tokens", "tpr") if any(_known(row.get(c)) for row in records)]
        cells = []
        for row in records:
            values = [row.get("prediction"), row.get("lower"), row.get("upper")]
            run = [f"{row['flops']:.3g}", *(f"{row[c]:.3g}" if _known(row.get(c)) else "—" for c in sizes)]
            flags = row.get("flags") if isinstance(row.get("flags"), str) else ""
            mark = ("refused" if _shown(values[0]) == "—" else "flagged") if flags else ""
            cells.append([*run, *(_shown(v) for v in values), mark])
        labels = {"params": "N", "tokens": "D", "tpr": "TPR"}
        columns = ["C (FLOPs)", *(labels[c] for c in sizes), "forecast", f"{pct} % lower", f"{pct} % upper", "flags"]
        return [rich_table(self.title, columns, cells)] + [Markup(escape(n), highlight=False) for n in self.notes]


def _covariate_notes(records: list[dict]) -> list[str]:
    """Where planned runs were placed and what each law was given (once per distinct answer), and where the floor of
    the extrapolation error binds."""
    out, seen = [], set()
    for row in records:
        floor = (row.get("extrapolation") or {}).get("floor") if isinstance(row.get("extrapolation"), dict) else None
        if floor and floor not in seen:
            seen.add(floor)
            out.append(f"extrapolation error: {floor}")
        if isinstance(row.get("flops_convention"), str) and f"c:{row['flops_convention']}" not in seen:
            seen.add(f"c:{row['flops_convention']}")
            out.append(f"planned runs placed at {row['flops_convention']}")
        used = row.get("covariates")
        if isinstance(used, dict) and used:
            line = "covariates: " + "; ".join(f"{law}: {words}" for law, words in used.items())
            if line not in seen:
                seen.add(line)
                out.append(line)
        dropped = row.get("dropped")
        if isinstance(dropped, dict) and any(v != "0" for v in dropped.values()):
            line = "rows dropped from the fits: " + "; ".join(f"{law}: {words}" for law, words in dropped.items())
            if line not in seen:
                seen.add(line)
                out.append(line)
    return out


def _known(value) -> bool:
    return isinstance(value, (int, float)) and bool(np.isfinite(value))


def _shown(value) -> float | str:
    return float(value) if isinstance(value, (int, float)) and np.isfinite(value) else "—"


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
