"""What :func:`benchcast.forecast` and :func:`benchcast.plan` return: a forecast with its intervals,
and the compute (or k) a target score needs. Each shows itself as a table (``_repr_html_`` in a
notebook), prints as the CLI prints it (``str``), and gives the CLI's JSON (``to_dict``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.forecasting.flags import describe, refused, short
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
    """A point forecast with a prediction interval (a new run's score) and a confidence interval
    (the law's mean curve) at each queried point.

    Parameters
    ----------
    law, benchmark : str
        The fitted law and its benchmark.
    level : float
        The intervals' level.
    interval : {'extrapolation', 'bootstrap'}
        How the prediction interval was made.
    extrapolation : dict or None
        The extrapolation error (:class:`benchcast.forecasting.calibration.Spread`) where used.
    n_boot, failed_refits, dropped_refits : int
        Usable bootstrap replicates behind the intervals, refits that failed, refits that did not converge.
    query : dict
        The covariates asked for.
    prediction, lower, upper, lower_mean, upper_mean : arrays
        The forecast, the prediction interval and the confidence interval, one value per point (NaN
        where the forecast is refused).
    run_notes : list of str
        For planned runs (N and D): what the law was given, and a TPR outside the fitted runs'.
    flags : list of tuple of Flag
        Per point, why its forecast is refused or doubtful (:mod:`benchcast.forecasting.flags`).
    """

    law: str
    benchmark: str
    level: float
    interval: str
    extrapolation: dict | None
    n_boot: int
    failed_refits: int
    dropped_refits: int
    query: dict
    prediction: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lower_mean: np.ndarray
    upper_mean: np.ndarray
    run_notes: list = field(default_factory=list)
    flags: list = field(default_factory=list)

    def to_dict(self) -> dict:
        """The forecast as JSON-ready values (what ``benchcast forecast --json`` prints); a refused point's
        values are null, and ``flags`` gives each point's reasons (``kind``, ``reason``, ``refused``)."""
        return jsonable(
            {
                "law": self.law,
                "level": self.level,
                "interval": self.interval,
                **({"extrapolation": self.extrapolation} if self.extrapolation is not None else {}),
                "n_boot": self.n_boot,
                "failed_refits": self.failed_refits,
                "dropped_refits": self.dropped_refits,
                "query": self.query,
                "prediction": self.prediction,
                "lower": self.lower,
                "upper": self.upper,
                "lower_mean": self.lower_mean,
                "upper_mean": self.upper_mean,
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
        """How each queried point is named: its compute, else its N and D, else its gold NLL.

        Returns
        -------
        list of str
            One label per queried point.
        """
        query = self.query
        if query.get("flops") is not None:
            return [f"{c:.3g}" for c in np.atleast_1d(query["flops"])]
        if query.get("params") is not None:
            if query.get("tokens") is None:
                return [f"N={n:.3g}" for n in np.atleast_1d(np.asarray(query["params"], float)).ravel()]
            params, tokens = (np.atleast_1d(a).ravel() for a in np.broadcast_arrays(query["params"], query["tokens"]))
            return [f"N={n:.3g}, D={d:.3g}, TPR {d / n:.3g}" for n, d in zip(params, tokens, strict=True)]
        return [f"G={query.get('gold')}"]

    def to_frame(self) -> pd.DataFrame:
        """One row per queried point: the forecast, both intervals and its flags (``'refused: ...'``)."""
        values = (self.prediction, self.lower, self.upper, self.lower_mean, self.upper_mean)
        flags = [short(point) for point in self.flags] or [""] * len(self.prediction)
        rows = [list(row) for row in zip(self.labels(), *values, flags, strict=False)]
        return pd.DataFrame(rows, columns=list(FORECAST_COLUMNS))

    @property
    def title(self) -> str:
        return (
            f"{self.law} on {self.benchmark}: forecast with {int(round(self.level * 100))} % intervals "
            f"({self.n_boot} bootstrap replicates over runs, {self.failed_refits} failed; "
            f"interval: {self.interval})"
        )

    @property
    def notes(self) -> list[str]:
        """For planned runs: what the law was given and each flag on a run's TPR; then one line per
        flagged or refused point, with every reason."""
        return list(self.run_notes) + [
            f"{label}: {describe(point)}" + (" (no number given)" if refused(point) else "")
            for label, point in zip(self.labels(), self.flags, strict=False)
            if point
        ]

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
        if self.interval is not None:
            items.append(
                Markup(
                    f"  {int(round(self.level * 100))} % interval: {self.lower:.4g} .. {self.upper:.4g} "
                    f"(target reachable in {self.fraction_reachable:.0%} of {self.n_replicates} bootstrap replicates)"
                )
            )
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
