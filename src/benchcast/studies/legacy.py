"""The law choice of an earlier release, kept to measure the current one against in ``bench``.

One cut at the top quarter of the training runs' log-compute range; every applicable law (or the
given ones) is backtested at it and the lowest held-out MRE wins. Its forecasts carry the
bootstrap-only interval, as they did then. ``bench`` runs it as the ``recommend[holdout]``
strategy when the caller passes :data:`HOLDOUT` among its choosers (the command line does).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.evaluation.backtest import backtest
from benchcast.evaluation.strategies import Chooser
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.selection import applicable_laws

HOLDOUT_FRACTION = 0.25  # the top quarter of the log-compute range is held out


def _holdout_choice(
    table: pd.DataFrame, spec: FitSpec, *, laws: list[str] | None = None, holdout_fraction: float = HOLDOUT_FRACTION
) -> str:
    """The law with the lowest held-out MRE at one cut near the top of the runs."""
    rows, _ = design(table, spec.replace(law="power"))
    log_c = np.log10(rows["flops"].to_numpy(float))
    span = log_c.max() - log_c.min()
    if span < 1.0:
        raise InsufficientDataError(
            f"{spec.benchmark}: runs span {span:.2f} decades of compute; law selection needs more."
        )
    threshold = float(10 ** (log_c.max() - holdout_fraction * span))
    best, best_mre = None, np.inf
    for law in laws or applicable_laws(table, spec):
        try:
            bt = backtest(table, spec.replace(law=law), threshold=threshold)
        except BenchcastError:
            continue
        mre = bt.metrics["test_mre"]
        if np.isfinite(mre) and mre < best_mre:
            best, best_mre = law, mre
    if best is None:
        raise BenchcastError(f"{spec.benchmark}: no law could be backtested at {threshold:.3g} FLOPs.")
    return best


HOLDOUT = Chooser("recommend[holdout]", _holdout_choice, interval="bootstrap")
