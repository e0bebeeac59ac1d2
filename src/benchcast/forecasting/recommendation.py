"""The result of :func:`benchcast.forecasting.selection.recommend`: which laws to use, how well
that choice forecast inside the user's runs, and (with a target compute) its forecast there."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from rich.markup import escape

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
    "at_bound": "at bound",
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
        ``decades_fitted``, ``converged``, ``at_bound`` and, when supported, ``inner_msle``,
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
        """The ranking as a reader sees it: law, inner MRE %, inner MSLE, weight, tau /decade, fitted, at bound."""
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
        """The advice (which laws, how well the choice did, the forecast), then each law not compared."""
        return [self._advice(), *(f"  not compared: {failure}" for failure in self.failures)]

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
            planned = f" At {f['flops']:.3g} FLOPs it forecasts {f['prediction']:.4f}"
            if "lower" in f:
                planned += f" ({int(round(f['level'] * 100))} % interval {f['lower']:.4f} .. {f['upper']:.4f})"
            planned += f"{'; ' + f['note'] if f.get('note') else ''}."
        return (
            f"{self.benchmark}: use the {self.rule} ({mix}). Chosen from rolling-origin forecasts inside your runs "
            f"(up to {self.extrapolation_decades:.2f} decades ahead); the choice itself, made without the runs it "
            f"was scored on, erred by {self.nested_mre:.2f} % MRE over {self.nested_origins} origin(s)." + planned
        )
