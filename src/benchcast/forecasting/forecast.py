"""What every forecast is: one frozen table with a row per point and what the points rest on, once
(:class:`ForecastMeta`), built once (:func:`make_forecast`); it keeps the draws behind its intervals so that any level
is answered without a refit."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.draws import score_interval
from benchcast.forecasting.flags import UNINFORMATIVE_LEVEL, describe, refused, short, skewed, uninformative
from benchcast.forecasting.targets import SIX_ND, PlannedRuns
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table
from benchcast.validation import check_level

MEDIAN_WIDTH = 1e-6  # the central interval this narrow is the draws' median


def bound_column(side: str, level: float, mean: bool = False) -> str:
    """The one name of a bound's column: ``lower90``, ``upper97.5``; ``mean_lower90`` for the law's curve."""
    return f"{'mean_' if mean else ''}{side}{level * 100:g}"


@dataclass(frozen=True)
class ForecastMeta:
    """What one forecaster's forecast rests on, the same at each of its points (:attr:`Forecast.meta`)."""

    weights: dict | None = field(default_factory=dict)  # the members' (None in a concatenation's where parts differ)
    covariates: dict = field(default_factory=dict)  # what each member was given, in words
    dropped: dict = field(default_factory=dict)  # rows each member's fit left out
    error_model: dict | None = None  # the extrapolation error that widened the interval
    note: str = ""  # why there is no interval ('' where there is)
    failed_refits: int = 0  # bootstrap refits that failed
    dropped_refits: int = 0  # and that did not converge


def make_forecast(
    benchmark: str,
    name: str,
    runs: PlannedRuns,
    prediction: np.ndarray,
    flags: list,
    uncertainty: Uncertainty,
    *,
    decades=None,
    members: dict | None = None,
    meta: ForecastMeta | None = None,
    draws: tuple = (),
    remarks=(),
    query: dict | None = None,
    shape: tuple = (),
    chance: float = 0.0,
    spread: dict | None = None,
    metric: str = "",
) -> Forecast:
    """The one constructor of a :class:`Forecast`: its table, bounds read off ``draws``, and flags."""
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
            "members": [{law: float(v[i]) for law, v in members.items()} for i in range(n)],
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
        metas=(meta or ForecastMeta(),),
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
        One row per point, per-point values only: the run (``flops``, ``params``, ``tokens``, ``tpr``, ``given``,
        ``convention``), ``prediction`` (NaN where refused), ``lower90``/``upper90`` per asked level
        (``mean_lower90``... for the law's curve, where asked), ``decades`` beyond the largest fitted run, ``flags`` (a
        tuple of :class:`~benchcast.forecasting.flags.Flag` per point) and ``members`` (each law's own forecast).
        :meth:`to_frame` gives it; what the points rest on is :attr:`meta`.
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
    metas, meta_of : tuple of ForecastMeta, tuple of int
        What the points rest on, one per forecaster behind them (several in a concatenation: each target's ensemble
        is fitted on the runs below it), and each point's index into it (empty: every point's is the first).
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
    metas: tuple = (ForecastMeta(),)
    meta_of: tuple = ()

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

    @property
    def meta(self) -> ForecastMeta:
        """What the forecast rests on; of a concatenation with several, each value its parts share (None, {} or ''
        where they differ) and the refits of the part with the most."""
        first, *rest = self.metas
        if not rest:
            return first
        empty = {"weights": None, "covariates": {}, "dropped": {}, "error_model": None, "note": ""}
        shared = {
            name: getattr(first, name) if all(getattr(m, name) == getattr(first, name) for m in rest) else blank
            for name, blank in empty.items()
        }
        refits = {name: max(getattr(m, name) for m in self.metas) for name in ("failed_refits", "dropped_refits")}
        return ForecastMeta(**shared, **refits)

    def _meta_at(self, i: int) -> ForecastMeta:
        """What point ``i`` rests on."""
        return self.metas[self.meta_of[i] if self.meta_of else 0]

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
        of = self.meta_of or (0,) * len(self)
        kept = list(dict.fromkeys(of[i] for i in index)) or [0]  # the metas of the points kept, in order
        metas, meta_of = tuple(self.metas[m] for m in kept), tuple(kept.index(of[i]) for i in index)
        return replace(self, points=points, draws=tuple(draws), query={}, shape=(), metas=metas, meta_of=meta_of)

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
        draws, offset, metas, meta_of = [], 0, [], []
        for part in parts:
            draws += [(kind, at + offset, values) for kind, at, values in part.draws]
            offset += len(part)
            for i in range(len(part)):  # the parts' metas, each once
                meta = part._meta_at(i)
                metas += [] if meta in metas else [meta]
                meta_of.append(metas.index(meta))
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
            metas=tuple(metas) or first.metas,
            meta_of=tuple(meta_of),
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

    def with_flags(self, extra: list) -> Forecast:
        """This forecast with further flags, as a rule over several forecasts gives them.

        Parameters
        ----------
        extra : list of tuple of Flag
            One tuple per point, added to its flags.

        Returns
        -------
        Forecast
        """
        flags = [(*old, *new) for old, new in zip(self.points["flags"], extra, strict=True)]
        return replace(self, points=self.points.assign(flags=flags))

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
            ``lower``/``upper`` at the widest level and ``lower90``... at each, ``decades``, ``flags`` in words, and
            what the point rests on (:attr:`meta`): ``weights``, ``covariates``, ``dropped``, the ``extrapolation``
            error and the refits left out, or a ``note``.
        """
        out, runs = [], self.runs
        for i, row in enumerate(self.points.to_dict("records")):
            meta = self._meta_at(i)
            record = runs.record(i) | {
                "metric": self.metric or None,
                "prediction": row["prediction"],
                "level": self.level,
                "interval": self.uncertainty.interval,
                "n_boot": self.n_boot,
                "decades": row["decades"],
                "covariates": meta.covariates,
                "dropped": meta.dropped,
                "flags": describe(row["flags"]),
                "weights": meta.weights,
            }
            if isinstance(row.get("versus"), dict):
                record["alternative"] = {"prediction": row["alternative"], **row["versus"]}
            if meta.note:
                record["note"] = meta.note
            else:
                if meta.error_model is not None:
                    record["extrapolation"] = meta.error_model
                if meta.failed_refits or meta.dropped_refits:
                    record["failed_refits"], record["dropped_refits"] = meta.failed_refits, meta.dropped_refits
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
        meta = self.meta
        return jsonable(
            {
                "law": self.name,
                "strategy": self.name,
                "benchmark": self.benchmark,
                "metric": self.metric or None,
                # each point's ensemble is fitted on the runs below it: None where the points' weights differ
                "weights": meta.weights,  # else per record
                "covariates": meta.covariates,  # what each law was given ({} where the points' differ)
                "level": self.level,
                "levels": list(self.levels),
                "interval": self.uncertainty.interval,
                **({"extrapolation": meta.error_model} if meta.error_model is not None else {}),
                **({"note": meta.note} if meta.note else {}),
                "n_boot": self.n_boot,
                "failed_refits": meta.failed_refits,
                "dropped_refits": meta.dropped_refits,
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
        laws = list(dict.fromkeys(law for meta in self.metas for law in meta.weights or {}))
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
            f"forecast with {int(round(self.level * 100))} % intervals ("
            f"{self.n_boot} bootstrap replicates over runs per law, {self.meta.failed_refits} failed; "
            f"interval: {self.uncertainty.interval})"
        ]
        metas = self.metas
        out += list(dict.fromkeys(m.note for m in metas if m.note))
        floors = {(m.error_model or {}).get("floor") for m in metas} - {None, ""}
        findings = dict.fromkeys(f for m in metas for f in (m.error_model or {}).get("findings", ()))
        out += [f"extrapolation error: {text}" for text in [*sorted(floors), *findings]]
        placed = any(r.startswith("planned runs placed at") for r in self.remarks)  # a fit's own words for it
        out += [f"planned runs placed at {c}" for c in _distinct(self.points["convention"]) if c and not placed]
        out += list(self.remarks)
        if "versus" in self.points:
            out += [v["words"] for v in _distinct(self.points["versus"]) if isinstance(v, dict)]
        for column, what in (("covariates", "covariates"), ("dropped", "rows dropped from the fits")):
            for words in _distinct(getattr(m, column) for m in metas):
                if words and (column != "dropped" or any(v != "0" for v in words.values())):
                    out.append(f"{what}: " + "; ".join(f"{law}: {w}" for law, w in words.items()))
        mixes: dict[str, list[str]] = {}  # a strategy's weights, once per distinct mix with the points it made
        for i, label in enumerate(self.labels()):
            weights = self._meta_at(i).weights
            if weights and list(weights) != [self.name]:
                mix = ", ".join(f"{law} {w:.2f}" for law, w in weights.items())
                mixes.setdefault(mix, []).append(label)
        unit = " FLOPs" if not self.query or self.query.get("flops") is not None else ""  # points named by compute
        out += [f"weights at {', '.join(labels)}{unit}: {mix}" for mix, labels in mixes.items()]
        failed, dropped = self.meta.failed_refits, self.meta.dropped_refits
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


def _shown(value) -> float | str:
    return float(value) if isinstance(value, (int, float)) and np.isfinite(value) else "—"
