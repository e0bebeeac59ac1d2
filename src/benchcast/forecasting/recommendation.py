"""The result of :func:`benchcast.forecasting.selection.recommend`: which laws to use, how well
that choice forecast inside the user's runs, and (with a target compute) its forecast there."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.forecasting.targets import describe_run
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table

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
            *(f"  note: {failure}" for failure in self.failures),
        ]

    def _target_notes(self) -> list[str]:
        """What each law was given for the planned run, and the flag on its TPR (nothing without a forecast)."""
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
        ``flag`` (a TPR outside the fitted runs'), ``note`` (why there is no forecast or no interval) and
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
        out = [
            f"The {self.rule} (the default strategy), as `recommend --target-flops` gives it: laws compared and "
            f"weighted on the runs cheaper than each target; {pct} % {kind} prediction interval from {self.n_boot} "
            "bootstrap replicates per law."
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
    """Where planned runs were placed and what each law was given (once per distinct answer), then each
    target's TPR flag."""
    out, seen = [], set()
    for row in records:
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
    for row in records:
        if isinstance(row.get("flag"), str) and row["flag"]:
            out.append(f"warning: for {describe_run(row)}: {row['flag']}")
    return out


def _known(value) -> bool:
    return isinstance(value, (int, float)) and bool(np.isfinite(value))


def _shown(value) -> float | str:
    return float(value) if isinstance(value, (int, float)) and np.isfinite(value) else "—"
