"""What every forecast is: one frozen table with a row per point, built once (:func:`make_forecast`), that keeps the
draws behind its intervals so that any level is answered without a refit."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.forecasting.bootstrap import ROUND, Uncertainty
from benchcast.forecasting.draws import score_interval
from benchcast.forecasting.flags import UNINFORMATIVE_LEVEL, describe, refused, short, skewed, uninformative
from benchcast.forecasting.targets import SIX_ND, PlannedRuns
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table
from benchcast.validation import check_level

RUN_COLUMNS = ("flops", "params", "tokens", "tpr")
MEDIAN_WIDTH = 1e-6  # the central interval this narrow is the draws' median


def bound_column(side: str, level: float, mean: bool = False) -> str:
    """The one name of a bound's column: ``lower90``, ``upper97.5``; ``mean_lower90`` for the law's curve."""
    return f"{'mean_' if mean else ''}{side}{level * 100:g}"


def make_forecast(
    benchmark: str,
    name: str,
    runs: PlannedRuns,
    prediction: np.ndarray,
    flags: list,
    uncertainty: Uncertainty,
    *,
    decades=None,
    weights: dict | None = None,
    members: dict | None = None,
    used: dict | None = None,
    dropped: dict | None = None,
    error_model: dict | None = None,
    note: str = "",
    refits: tuple[int, int] = (0, 0),
    draws: tuple = (),
    remarks=(),
    query: dict | None = None,
    shape: tuple = (),
    chance: float = 0.0,
    spread: dict | None = None,
    metric: str = "",
) -> Forecast:
    """The one constructor of a :class:`Forecast`: the points' table, with its bounds at every asked level read off
    ``draws`` (``(kind, point index, ScoreDraws)`` with kind ``'prediction'`` or ``'confidence'``), and the flags
    its intervals earn (skewed; uninformative above ``chance``, naming the terms of ``spread``: point -> term ->
    (log spread, words))."""
    n = len(runs)
    members = members or {}
    frame = pd.DataFrame(
        {
            "flops": runs.flops,
            "params": runs.params,
            "tokens": runs.tokens,
            "tpr": runs.tpr,
            "given": np.where(runs.sized, "params_tokens", "flops"),
            "convention": [(runs.convention or SIX_ND) if s else "" for s in runs.sized],
            "prediction": np.asarray(prediction, float),
            "decades": np.full(n, np.nan) if decades is None or not len(decades) else np.asarray(decades, float),
            "flags": list(flags) if len(flags) else [()] * n,
            "weights": [dict(weights or {})] * n,
            "members": [{law: float(v[i]) for law, v in members.items()} for i in range(n)],
            "covariates": [dict(used or {})] * n,
            "dropped": [dict(dropped or {})] * n,
            "error_model": [error_model] * n,
            "note": note,
            "failed_refits": refits[0],
            "dropped_refits": refits[1],
        }
    )
    out = Forecast(
        benchmark,
        name,
        frame,
        uncertainty,
        tuple(draws),
        tuple(remarks),
        dict(query or {}),
        shape,
        metric=metric or "",
        chance=float(chance),
    )
    for mean in (False, True):  # a new run's bounds always (NaN where none); the curve's where they were made
        if not mean or any(kind == "confidence" for kind, _, _ in draws):
            for level in uncertainty.levels:
                lower, upper = out._from_draws(level, mean)
                frame[bound_column("lower", level, mean)] = lower
                frame[bound_column("upper", level, mean)] = upper
    (lower, upper), (below, above) = out._from_draws(0.5, False), out._from_draws(MEDIAN_WIDTH, False)
    point = frame["prediction"].to_numpy(float)
    for i in np.flatnonzero(np.isfinite(lower) & ((point < lower) | (point > upper))):  # a skewed bootstrap says so
        frame.at[i, "flags"] = (*frame.at[i, "flags"], skewed(point[i], lower[i], upper[i], (below[i] + above[i]) / 2))
    lower, upper = out._from_draws(UNINFORMATIVE_LEVEL, False)
    for i in np.flatnonzero(np.isfinite(lower) & np.isfinite(point)):
        if flag := uninformative(lower[i], upper[i], chance, (spread or {}).get(int(i))):
            frame.at[i, "flags"] = (*frame.at[i, "flags"], flag)
    return out


@dataclass(frozen=True, eq=False)
class Forecast(RichView):
    """A forecast at each asked point: the prediction, its intervals, its flags and the laws behind it. The one type
    every command's forecast is (:meth:`benchcast.Ensemble.predict` builds it, once).

    Parameters
    ----------
    benchmark : str
        The benchmark forecast.
    name : str
        The strategy (``'ensemble'``...) or the law forecasting alone.
    points : pandas.DataFrame
        One row per point: the run (``flops``, ``params``, ``tokens``, ``tpr``, ``given``, ``convention``),
        ``prediction`` (NaN where refused), ``lower90``/``upper90`` per asked level (``mean_lower90``... for the
        law's curve, where asked), ``decades`` beyond the largest fitted run, ``flags`` (a tuple of
        :class:`~benchcast.forecasting.flags.Flag` per point), ``weights``, ``members`` (each law's own forecast),
        ``covariates`` (what each law was given), ``dropped``, ``error_model``, ``note`` (why there is no interval),
        ``failed_refits`` and ``dropped_refits``. :meth:`to_frame` gives it.
    uncertainty : Uncertainty
        Replicates, seed, interval method and levels the intervals were made with.
    draws : tuple
        The draws behind the intervals (kept: :meth:`interval` answers any level).
    remarks : tuple of str
        Where planned runs were placed, what the choice of laws left out.
    query : dict
        The covariates as asked (a fit's forecast) and ``shape``, their shape.
    shape : tuple
        The query's shape (arrays of the forecast are reshaped to it).
    curves : dict
        Where asked (``forecast_default(..., curves=True)``): per target ratio (tokens per parameter; NaN for runs
        given by compute alone), the forecast along a grid of compute at that ratio through the targets, with 50
        and 90 % intervals (what :meth:`plot` draws).
    metric : str
        The benchmark's metric forecast (``len_norm``, ``acc``...; '' where none was resolved).
    chance : float
        The chance level its uninformative flags were decided with (an ensemble's: the largest over its members), so
        that a figure's band decides by the same one.
    """

    benchmark: str
    name: str
    points: pd.DataFrame
    uncertainty: Uncertainty
    draws: tuple = ()
    remarks: tuple = ()
    query: dict = field(default_factory=dict)
    shape: tuple = ()
    curves: dict = field(default_factory=dict, repr=False)
    metric: str = ""
    chance: float = 0.0

    # -- the points -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.points)

    @property
    def law(self) -> str:
        """The strategy or the law (a one-member forecast is its law's)."""
        return self.name

    @property
    def runs(self) -> PlannedRuns:
        """The points as runs."""
        p = self.points
        convention = next((c for c in p["convention"] if c), "")
        columns = (p[c].to_numpy(float) for c in ("flops", "params", "tokens"))
        return PlannedRuns(*columns, (p["given"] == "params_tokens").to_numpy(), convention)

    @property
    def prediction(self) -> np.ndarray:
        return self.points["prediction"].to_numpy(float)

    @property
    def flags(self) -> list:
        return list(self.points["flags"])

    @property
    def decades(self) -> np.ndarray:
        return self.points["decades"].to_numpy(float)

    @property
    def members(self) -> dict:
        """Each member's own forecast at the points (NaN where it is no member)."""
        laws = dict.fromkeys(law for row in self.points["members"] for law in row)
        return {law: np.array([row.get(law, np.nan) for row in self.points["members"]]) for law in laws}

    def _shared(self, column: str, empty=None):
        """A column's value where every point has the same (one ensemble made them); ``empty`` for no points."""
        values = list(self.points[column])
        if not values:
            return empty
        return values[0] if all(v == values[0] for v in values) else empty

    weights = property(
        lambda self: self._shared("weights", {}),
        doc="The members and their weights ({} where they differ by point: each row's ``weights`` says).",
    )
    used = property(lambda self: self._shared("covariates", {}), doc="What each member was given, in words.")
    dropped = property(lambda self: self._shared("dropped", {}), doc="Rows each member's fit left out.")
    error_model = property(lambda self: self._shared("error_model"), doc="The extrapolation error that widened it.")
    note = property(lambda self: self._shared("note", ""), doc="Why there is no interval ('' where there is).")
    failed_refits = property(lambda self: int(self.points["failed_refits"].max()) if len(self) else 0)
    dropped_refits = property(lambda self: int(self.points["dropped_refits"].max()) if len(self) else 0)
    levels = property(lambda self: tuple(self.uncertainty.levels), doc="The interval levels.")
    n_boot = property(lambda self: self.uncertainty.n_boot, doc="Bootstrap replicates per law (0: no interval).")

    @property
    def level(self) -> float:
        """The widest level asked (the one a single-level view shows)."""
        return max(self.levels)

    # -- intervals ------------------------------------------------------------------------------

    def interval(self, level: float | None = None, mean: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The interval at ``level`` (default: :attr:`level`), from the kept draws; NaN where there is none.

        Parameters
        ----------
        level : float, optional
            Any level in (0, 1), asked or not.
        mean : bool
            The confidence interval of the law's curve instead of a new run's score.

        Returns
        -------
        (lower, upper) : ndarrays (points,)
        """
        level = self.level if level is None else float(check_level(level))
        lower, upper = bound_column("lower", level, mean), bound_column("upper", level, mean)
        if lower in self.points:
            return self.points[lower].to_numpy(float), self.points[upper].to_numpy(float)
        return self._from_draws(level, mean)

    def _from_draws(self, level: float, mean: bool) -> tuple[np.ndarray, np.ndarray]:
        """The interval at ``level`` read off the kept draws."""
        lower, upper = np.full(len(self), np.nan), np.full(len(self), np.nan)
        for kind, index, draws in self.draws:
            if kind == ("confidence" if mean else "prediction"):
                lower[index], upper[index] = score_interval(draws, level)
        return lower, upper

    @property
    def intervals(self) -> dict:
        """The prediction interval at each asked level; empty where there is none (:attr:`note` says why)."""
        found = {level: self.interval(level) for level in self.levels}
        return found if any(np.isfinite(lo).any() for lo, _ in found.values()) else {}

    lower = property(lambda self: self._shaped(self.interval()[0]))
    upper = property(lambda self: self._shaped(self.interval()[1]))
    lower_mean = property(lambda self: self._shaped(self.interval(mean=True)[0]))
    upper_mean = property(lambda self: self._shaped(self.interval(mean=True)[1]))

    def _shaped(self, values):
        return np.reshape(values, self.shape) if self.shape else values

    # -- pieces and wholes ------------------------------------------------------------------------

    def take(self, which) -> Forecast:
        """The forecast at some of its points, with their draws.

        Parameters
        ----------
        which : slice or array of int
            The points kept.

        Returns
        -------
        Forecast
        """
        index = np.atleast_1d(np.arange(len(self))[which])
        draws = []
        for kind, at, values in self.draws:
            column = {int(point): j for j, point in enumerate(at)}  # the part's column of each point it has
            kept = [(new, column[int(old)]) for new, old in enumerate(index) if int(old) in column]
            if kept:
                new, columns = (np.array(v) for v in zip(*kept, strict=True))
                draws.append((kind, new, values.take(columns)))
        points = self.points.iloc[index].reset_index(drop=True)
        return replace(self, points=points, draws=tuple(draws), query={}, shape=())

    @classmethod
    def concat(cls, parts: list[Forecast]) -> Forecast:
        """Forecasts of one benchmark with one uncertainty (one per target: each may see other runs) as one.

        Parameters
        ----------
        parts : list of Forecast
            The forecasts, in order.

        Returns
        -------
        Forecast
        """
        draws, offset = [], 0
        for part in parts:
            draws += [(kind, at + offset, values) for kind, at, values in part.draws]
            offset += len(part)
        points = pd.concat([p.points for p in parts], ignore_index=True)
        remarks = dict.fromkeys(r for p in parts for r in p.remarks)
        first, curves = parts[0], {}
        for part in parts:  # a ratio seen by several parts (each fitted on other runs): the curve through the last
            curves.update(part.curves)
        metric = next((p.metric for p in parts if p.metric), "")  # a refused part resolved none
        return cls(
            first.benchmark,
            first.name,
            points,
            first.uncertainty,
            tuple(draws),
            tuple(remarks),
            curves=curves,
            metric=metric,
        )

    def with_alternative(self, point, versus) -> Forecast:
        """This forecast with the simplest alternative's point at each run (``alternative``) and the comparison of
        both on the rolling origins (``versus``: :class:`~benchcast.forecasting.alternative.Comparison`'s record,
        with ``words``).

        Parameters
        ----------
        point : array_like
            The alternative's forecast of each point.
        versus : Comparison
            The default against the alternative on the user's rolling origins.

        Returns
        -------
        Forecast
        """
        record = {**versus.to_dict(), "words": versus.words()}
        points = self.points.assign(alternative=np.asarray(point, float), versus=[record] * len(self))
        return replace(self, points=points)

    # -- views ---------------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The points' table with the benchmark and the forecaster: what every command emits.

        Returns
        -------
        pandas.DataFrame
            One row per point (:attr:`points`' columns); forecasts of several benchmarks concatenate.
        """
        return self.points.assign(benchmark=self.benchmark, metric=self.metric, forecaster=self.name)[
            ["benchmark", "metric", "forecaster", *self.points.columns]
        ]

    def labels(self) -> list[str]:
        """How each point is named: its compute, else its N and D, else its gold NLL.

        Returns
        -------
        list of str
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

    def records(self) -> list[dict]:
        """One JSON-ready record per point, as ``forecast --json`` lists them and ``recommend`` shows one.

        Returns
        -------
        list of dict
            The run (``flops``, ``params``, ``tokens``, ``tpr``, ``given``), ``prediction`` (None where refused),
            ``lower``/``upper`` at the widest level and ``lower90``... at each, ``decades``, ``flags`` in words,
            ``weights``, ``covariates``, ``dropped``, the ``extrapolation`` error, or a ``note``.
        """
        out, runs = [], self.runs
        for i, row in enumerate(self.points.to_dict("records")):
            record = runs.record(i) | {
                "metric": self.metric or None,
                "prediction": row["prediction"],
                "level": self.level,
                "interval": self.uncertainty.interval,
                "n_boot": self.n_boot,
                "decades": row["decades"],
                "covariates": row["covariates"],
                "dropped": row["dropped"],
                "flags": describe(row["flags"]),
                "weights": row["weights"],
            }
            if isinstance(row.get("versus"), dict):
                record["alternative"] = {"prediction": row["alternative"], **row["versus"]}
            if row["note"]:
                record["note"] = row["note"]
            else:
                if row["error_model"] is not None:
                    record["extrapolation"] = row["error_model"]
                if row["failed_refits"] or row["dropped_refits"]:
                    record["failed_refits"], record["dropped_refits"] = row["failed_refits"], row["dropped_refits"]
                lower, upper = bound_column("lower", self.level), bound_column("upper", self.level)
                if lower in row:
                    record["lower"], record["upper"] = row[lower], row[upper]
                    for level in self.levels:
                        for side in ("lower", "upper"):
                            record[bound_column(side, level)] = row[bound_column(side, level)]
            out.append(record)
        return jsonable(out)

    def to_dict(self) -> dict:
        """The forecast as JSON-ready values (what ``benchcast forecast --json`` prints).

        Returns
        -------
        dict
            The settings, the arrays in the query's shape, each point's flags (``kind``, ``reason``, ``refused``)
            and ``forecasts``, one record per point (:meth:`records`).
        """
        return jsonable(
            {
                "law": self.name,
                "strategy": self.name,
                "benchmark": self.benchmark,
                "metric": self.metric or None,
                # each point's ensemble is fitted on the runs below it: None where the points' weights differ
                "weights": self.weights if self._shared("weights") is not None else None,  # else per record
                "level": self.level,
                "levels": list(self.levels),
                "interval": self.uncertainty.interval,
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
                **({"notes": list(self.remarks)} if self.remarks else {}),
                "flags": [[f.to_dict() for f in point] for point in self.flags],
                "forecasts": self.records(),
            }
        )

    def plot(self, ax=None, fit=None, runs=None, **style):
        """The forecast at each point with its prediction (and, where made, confidence) interval, over the fit's runs
        and curve when ``fit`` is given, or over ``runs`` (coloured by tokens per parameter where they span several);
        where the forecast holds :attr:`curves`, one curve and 50/90 % band per target ratio through its targets, each
        target's value written beside it (:func:`benchcast.plots.plot_forecast`).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            The panel to draw into (default: a new figure).
        fit : FitResult, optional
            The fit the forecast was made from.
        runs : pandas.DataFrame, optional
            The runs to draw under it (``flops`` and ``value``, e.g. from :func:`benchcast.select`).
        **style
            Matplotlib keywords of the forecast markers (``color``, ``marker``...).

        Returns
        -------
        matplotlib.axes.Axes
            The panel, to restyle or save.
        """
        from benchcast.plots.results import plot_forecast  # matplotlib loads only when a figure is drawn

        return plot_forecast(self, fit, ax, runs=runs, **style)

    @property
    def title(self) -> str:
        laws = list(dict.fromkeys(law for row in self.points["weights"] for law in row))
        members = "" if laws == [self.name] or not laws else f" ({', '.join(laws)})"
        metric = f" ({self.metric})" if self.metric else ""
        return f"{self.benchmark}{metric}: forecast of the {self.name}{members}"

    @property
    def notes(self) -> list[str]:
        """:attr:`context`, then one line per flagged or refused point, with every reason."""
        return self.context + [
            f"{label}: {describe(point)}" + (" (no number given)" if refused(point) else "")
            for label, point in zip(self.labels(), self.flags, strict=False)
            if point
        ]

    @property
    def context(self) -> list[str]:
        """Why there is no interval; where planned runs were placed and what each law was given; the weights where
        they differ by point; refits left out."""
        out = [
            f"forecast with {int(round(self.level * 100))} % intervals ({'up to ' * (self.n_boot > ROUND)}"
            f"{self.n_boot} bootstrap replicates over runs per law, {self.failed_refits} failed; "
            f"interval: {self.uncertainty.interval})"
        ]
        out += list(dict.fromkeys(n for n in self.points["note"] if n))
        floors = {(m or {}).get("floor") for m in self.points["error_model"]} - {None, ""}
        findings = dict.fromkeys(f for m in self.points["error_model"] for f in (m or {}).get("findings", ()))
        out += [f"extrapolation error: {text}" for text in [*sorted(floors), *findings]]
        placed = any(r.startswith("planned runs placed at") for r in self.remarks)  # a fit's own words for it
        out += [f"planned runs placed at {c}" for c in _distinct(self.points["convention"]) if c and not placed]
        out += list(self.remarks)
        if "versus" in self.points:
            out += [v["words"] for v in _distinct(self.points["versus"]) if isinstance(v, dict)]
        for column, what in (("covariates", "covariates"), ("dropped", "rows dropped from the fits")):
            for words in _distinct(self.points[column]):
                if words and (column != "dropped" or any(v != "0" for v in words.values())):
                    out.append(f"{what}: " + "; ".join(f"{law}: {w}" for law, w in words.items()))
        mixes: dict[str, list[str]] = {}  # a strategy's weights, once per distinct mix with the points it made
        for label, weights in zip(self.labels(), self.points["weights"], strict=True):
            if weights and list(weights) != [self.name]:
                mix = ", ".join(f"{law} {w:.2f}" for law, w in weights.items())
                mixes.setdefault(mix, []).append(label)
        out += [f"weights at {', '.join(labels)}{_unit(self)}: {mix}" for mix, labels in mixes.items()]
        failed, dropped = self.failed_refits, self.dropped_refits
        if failed or dropped:
            out.append(f"{failed} bootstrap refit(s) failed and {dropped} did not converge: left out of the interval")
        return out

    def rich_items(self) -> list:
        """The CLI's table (a refused forecast as "—"), then the notes."""
        pct = int(round(self.level * 100))
        p = self.points
        sizes = [c for c in ("params", "tokens", "tpr") if p[c].notna().any()]
        by_run = self.query.get("gold") is None or self.query.get("flops") is not None
        head = ["C (FLOPs)", *({"params": "N", "tokens": "D", "tpr": "TPR"}[c] for c in sizes)] if by_run else ["G"]
        bounds = [(False, "")] + ([(True, "curve ")] if bound_column("lower", self.level, True) in p else [])
        columns = [*head, "forecast"] + [f"{w}{pct} % {side}" for _, w in bounds for side in ("lower", "upper")]
        laws = [v["law"] for v in p["versus"] if isinstance(v, dict)] if "versus" in p else []
        if laws:  # the simplest alternative's point beside the default's
            columns.insert(len(head) + 1, f"{laws[0]} (simplest)")
        cells = []
        for i, label in enumerate(self.labels()):
            run = [f"{p['flops'].iloc[i]:.3g}", *(_shown(p[c].iloc[i]) for c in sizes)] if by_run else [label]
            values = [p["prediction"].iloc[i], *([p["alternative"].iloc[i]] if laws else [])]
            for mean, _ in bounds:
                values += [v[i] for v in self.interval(mean=mean)]
            cells.append([*run, *(_shown(v) for v in values), short(p["flags"].iloc[i])])
        table = rich_table(self.title, [*columns, "flags"], cells)
        return [table, *(Markup(escape(note), highlight=False) for note in self.notes)]


def _distinct(values) -> list:
    """The distinct values (dicts: not hashable), in order."""
    out = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def _unit(forecast: Forecast) -> str:
    """' FLOPs' where the points are named by their compute."""
    return " FLOPs" if not forecast.query or forecast.query.get("flops") is not None else ""


def _shown(value) -> float | str:
    return float(value) if isinstance(value, (int, float)) and np.isfinite(value) else "—"
