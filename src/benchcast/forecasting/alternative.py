"""The simplest alternative beside every forecast: what a user would fit by hand, and how both do on the user's own
rolling origins.

On a ladder at one or a few fixed ratios the simplest alternative is a power law in compute alone (``power``); on an
IsoFLOP sweep (several sizes per compute budget; a grid of sizes x ratios read as budgets) it is the same law fitted
to each budget's best run, the compute-optimal envelope (``power_envelope``), the first thing a Chinchilla-style
analysis does. :func:`compare` scores the default and the alternative on the rolling-origin points both forecast
(the default's blend, as its interval is measured; the alternative's own refits), origin by origin, and says which
the evidence favours (:func:`benchcast.forecasting.selection.separated`: the better one's log error is below the
other's by more than twice the standard error of the paired difference over the origins).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.forecasting import selection
from benchcast.laws.downstream import budgets

ISOFLOP_BUDGETS = 3  # an IsoFLOP sweep: at least this many budgets holding ISOFLOP_SIZES sizes or more
ISOFLOP_SIZES = 3


def is_isoflop(rows: pd.DataFrame) -> bool:
    """Whether a ladder is an IsoFLOP sweep: ``ISOFLOP_BUDGETS`` budgets with ``ISOFLOP_SIZES`` sizes or more."""
    runs = rows.drop_duplicates("run") if "run" in rows else rows
    runs = runs[np.isfinite(runs["flops"].to_numpy(float))]
    if "params" not in runs or len(runs) < ISOFLOP_BUDGETS * ISOFLOP_SIZES:
        return False
    sizes = pd.Series(np.round(np.log10(runs["params"].to_numpy(float)), 3)).groupby(budgets(runs["flops"])).nunique()
    return int((sizes >= ISOFLOP_SIZES).sum()) >= ISOFLOP_BUDGETS


def alternative_law(rows: pd.DataFrame) -> str:
    """The simplest alternative's law for these runs: ``power_envelope`` on an IsoFLOP sweep, ``power`` otherwise."""
    return "power_envelope" if is_isoflop(rows) else "power"


@dataclass(frozen=True)
class Comparison:
    """The default and the simplest alternative on the user's rolling origins.

    Attributes
    ----------
    law : str
        The alternative's law.
    mre, mre_alternative : float
        Each one's mean relative error (%) on the rolling-origin points both forecast (NaN: none in common).
    n_points, n_origins : int
        How many points and origins the errors rest on.
    favours : str
        ``'alternative'`` where its errors beat the default's origin by origin (separated), ``'default'`` where the
        default's beat the alternative's, ``''`` where the origins cannot tell them apart.
    """

    law: str
    mre: float
    mre_alternative: float
    n_points: int
    n_origins: int
    favours: str

    def words(self) -> str:
        """The comparison in a sentence, as ``forecast`` and ``recommend`` print it."""
        if not self.n_points:
            return f"simplest alternative {self.law}: no rolling-origin point that both it and the default forecast"
        verdict = {
            "alternative": f"the origins favour {self.law}: the default is not earning its complexity here",
            "default": "the origins favour the default",
            "": "the origins cannot tell them apart",
        }[self.favours]
        return (
            f"simplest alternative {self.law}: rolling-origin MRE {self.mre_alternative:.2f} % against the "
            f"default's {self.mre:.2f} % on the same {self.n_points} points from {self.n_origins} origins; {verdict}"
        )

    def to_dict(self) -> dict:
        """The comparison as JSON-ready values."""
        return {
            "law": self.law,
            "mre": self.mre,
            "mre_alternative": self.mre_alternative,
            "n_points": self.n_points,
            "n_origins": self.n_origins,
            "favours": self.favours,
        }


def compare(default, alternative) -> Comparison:
    """The default ensemble against the alternative (a one-law :class:`~benchcast.forecasting.ensemble.Ensemble`),
    both fitted, on the rolling-origin points along compute that both forecast."""
    law = next(iter(alternative.weights_), "power") if alternative.ok else "power"
    models = {"default": default, "alternative": alternative}
    errors = {name: selection._compute_rows(model.errors_) for name, model in models.items()}
    wide = selection.common_errors(errors) if default.ok and alternative.ok else pd.DataFrame()
    if not len(wide):
        return Comparison(law, np.nan, np.nan, 0, 0, "")
    names = ["default", "alternative"]
    mre = {n: float(np.mean(np.abs(wide[n] - wide["true"]) / wide["true"]) * 100) for n in names}
    per_origin = selection._per_origin(wide, names)
    favours = ""
    if selection.separated(per_origin):
        favours = "alternative" if per_origin["alternative"].mean() < per_origin["default"].mean() else "default"
    return Comparison(
        law, mre["default"], mre["alternative"], len(wide), int(wide["origin_decades"].nunique()), favours
    )


def fit_alternative(table: pd.DataFrame, spec):
    """The simplest alternative, a one-law ensemble, fitted to the runs the default sees."""
    from benchcast.fitting.spec import design
    from benchcast.forecasting.ensemble import Ensemble

    rows, _ = design(table, spec)
    return Ensemble(alternative_law(rows)).fit(table, spec, progress=False)


def beside(forecast, alternative, versus: Comparison, runs):
    """``forecast`` (of ``runs``) with the fitted ``alternative``'s point at each run and ``versus``."""
    from benchcast.forecasting.bootstrap import NO_INTERVAL

    point = np.full(len(forecast), np.nan)
    if alternative.ok:
        point = alternative.predict(runs, NO_INTERVAL).prediction
    return forecast.with_alternative(point, versus)
