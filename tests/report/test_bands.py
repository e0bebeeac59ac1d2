"""The report's strategy bands are the forecast recommend and forecast make: a strategy with too few
rolling origins of its own borrows the spread pooled over the table's other benchmarks there too."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

import benchcast as bc
from benchcast.forecasting import calibration as cal
from benchcast.forecasting.strategy import StrategyFit
from benchcast.report.bands import strategy_bands


def test_the_bands_borrow_the_pooled_spread_as_recommend_does(apple):
    result = bc.fit(apple, "power", "arc_easy", "acc_norm", tpr=20)
    pooled = cal.Spread(0.05, 0.0, 4, 40, "pooled")
    options = {"tpr": 20.0, "n_boot": 10, "seed": 0, "interval": "extrapolation", "n_jobs": 1}
    grid, targets = np.geomspace(1e20, 1e23, 4), np.array([1e23])
    fits = {"pooled": pooled, "none": None}
    shown = {}
    for name, spread in fits.items():
        strategy = StrategyFit("ensemble", {"power": 1.0}, {"power": result}, pd.DataFrame(), pooled=spread)
        _, at_targets, notes = strategy_bands(SimpleNamespace(strategy=strategy), grid, targets, **options)
        shown[name] = (at_targets, notes)
    at_targets, notes = shown["pooled"]
    assert not notes and at_targets.spread.source == "pooled"
    lower, upper = at_targets.intervals[0.9]
    assert np.isfinite(lower).all() and (upper > lower).all()
    # the same run from the strategy's own forecast (recommend's): the same interval
    own = StrategyFit("ensemble", {"power": 1.0}, {"power": result}, pd.DataFrame(), pooled=pooled)
    direct = own.forecast(targets, n_boot=10, seed=0, tpr=20.0)
    np.testing.assert_allclose(direct.intervals[0.9][0], lower)
    # without a pooled spread, no interval, and the page says why
    assert shown["none"][1] and "no prediction interval" in shown["none"][1][0]
