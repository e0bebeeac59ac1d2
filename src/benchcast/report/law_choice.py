"""What a report forecasts with, and why: the package's default strategy, as
:func:`~benchcast.forecasting.answers.recommend` makes it, or one law the user names."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.ensemble import Ensemble

BACKTEST_FRACTION = 0.25  # the validation backtest the page shows holds out the top quarter of log C
RECOMMENDED = "recommended"  # the package's default strategy (what recommend and bench call the default)
DEFAULT_RULE = "ensemble"


@dataclass
class LawChoice:
    """What the report forecasts with: the package's default strategy or a law the user named."""

    law: str
    reason: str
    ranking: pd.DataFrame | None  # one row per law compared (None when the user named the law)
    validation_threshold: float
    strategy: Ensemble | None = None
    named: bool = False

    @property
    def label(self) -> str:
        """The strategy as the page names it: ``'ensemble (power_floor 0.50, bnsl_monotone 0.50)'``, or the law."""
        if self.named or self.strategy is None:
            return self.law
        mix = ", ".join(f"{law} {w:.2f}" for law, w in self.strategy.weights_.items())
        return f"{self.strategy.rule} ({mix})"


def choose_law(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    law: str = RECOMMENDED,
    tpr: float | None,
    n_jobs: int | None = 1,
    **unused,
) -> LawChoice:
    """What to forecast with, and why: the default strategy as ``recommend`` makes it, or the law the user names."""
    selected = replace(spec, tpr=tpr)
    rows, _ = design(table, selected)
    log_c = np.log10(rows["flops"].to_numpy(float))
    threshold = float(10 ** (log_c.max() - BACKTEST_FRACTION * (log_c.max() - log_c.min())))
    if law != RECOMMENDED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rows, resolved = design(table, selected.replace(law=law))
            result = fit_rows(rows, resolved, quiet=True)
        return LawChoice(law, "law chosen by you (--law)", None, threshold, Ensemble.of_fit(result), named=True)
    strategy = Ensemble(DEFAULT_RULE).fit(table, selected)
    rec = strategy.choice_
    if not strategy.ok:
        raise BenchcastError(f"No forecast for {spec.benchmark}: {rec.reason}")
    detailed = rec.best if rec.best in strategy.weights_ else next(iter(strategy.weights_))
    checked = "no rolling origin inside the runs checked the choice"  # a fallback law alone: no error to quote
    if np.isfinite(rec.nested_mre):
        checked = (
            f"up to {rec.extrapolation_decades:.2f} decades ahead; the choice itself erred by "
            f"{rec.nested_mre:.2f} % MRE there"
        )
    reason = (
        f"the package's default strategy, as recommend and bench make it: the {DEFAULT_RULE} of the laws with "
        f"support, compared by rolling-origin forecasts inside the runs ({checked}); --law NAME forecasts with "
        "one law"
    )
    if rec.failures:  # members left out, a fallback alone, a spread borrowed from other benchmarks: said here
        reason += ". " + "; ".join(rec.failures)
    return LawChoice(detailed, reason, rec.ranking, threshold, strategy)
