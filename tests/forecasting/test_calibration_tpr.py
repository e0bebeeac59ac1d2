"""A run outside the fitted runs' tokens-per-parameter range is an extrapolation too: its distance in TPR
(forecasting.distance), the error per decade of TPR from rolling origins in TPR, and the interval it
widens; a point inside the range keeps its compute-only interval exactly."""

import numpy as np
import pytest

import benchcast as bc
from benchcast.forecasting import calibration as cal
from benchcast.forecasting import distance
from benchcast.forecasting.draws import ScoreDraws
from benchcast.forecasting.strategy import MemberForecast, blend_forecast
from benchcast.forecasting.targets import PlannedRuns
from tests.conftest import law_table

N_GRID = np.geomspace(5e7, 3e9, 8)
TPRS = (10.0, 20.0, 40.0, 80.0)
ND = np.array([(n, t * n) for n in N_GRID for t in TPRS])


def test_tpr_decades_count_only_outside_the_fitted_range():
    out = distance.tpr_decades([5.0, 10.0, 40.0, 80.0, 81.0, 160.0, np.nan], (10.0, 80.0))
    assert out[0] == pytest.approx(np.log10(2.0)) and out[5] == pytest.approx(np.log10(2.0))
    assert np.all(out[[1, 2, 3, 4, 6]] == 0)  # 81: a rounded size inside the tolerance; nan: unknown
    assert np.all(distance.tpr_decades([160.0], (np.nan, np.nan)) == 0)


def test_the_sd_outside_the_tpr_range_adds_the_tpr_term_and_is_unchanged_inside():
    decades = np.array([-0.5, 0.0, 0.7, 1.3])
    spread = cal.Spread(0.05, 0.0, 5, 20, "own", tau_tpr=0.2)
    assert np.array_equal(spread.sd(decades, np.zeros(4)), spread.sd(decades))
    beyond = np.array([0.3, 0.3, 0.0, 0.3])
    expected = np.hypot(0.05 * np.maximum(decades, 0), 0.2 * beyond)
    assert spread.sd(decades, beyond) == pytest.approx(expected)
    # no error per decade of TPR (a law of compute alone): the compute's tau per decade of TPR
    plain = cal.Spread(0.05, 0.0, 5, 20, "own")
    assert plain.sd(decades, beyond)[0] == pytest.approx(0.05 * 0.3)
    assert "tau_tpr" in spread.to_dict() and "tau_tpr" not in plain.to_dict()


def _member(values, fit=None):
    rng = np.random.default_rng(0)
    boot = ScoreDraws(np.clip(values * np.exp(rng.normal(0, 0.01, (20, len(values)))), 0, 1))
    return MemberForecast(values, boot, 1e21, "N, D", fit)


def test_a_run_at_a_new_tpr_inside_the_fitted_compute_gets_a_wider_interval(monkeypatch):
    fit = type("Fit", (), {})()  # the fitted runs' TPR range is read from the fit's points
    fit.points = {"params": np.array([1e8, 1e9]), "tokens": np.array([1e9, 8e10])}  # TPR 10 .. 80
    monkeypatch.setattr(distance, "fitted_tpr_range", lambda fits: (10.0, 80.0))
    monkeypatch.setattr("benchcast.forecasting.strategy.tpr_error", lambda members, weights: 0.3)
    # the stub fit has no diagnostics to flag from: the flags are not under test here (tests/forecasting/test_flags.py)
    monkeypatch.setattr("benchcast.forecasting.strategy.strategy_flags", lambda members, values, *_: [()] * len(values))
    values = np.array([0.5, 0.5])
    runs = PlannedRuns(np.array([1e20, 1e20]), np.array([1e9, 4e8]), np.array([1.6e10, 6.4e10]), np.ones(2, bool))
    errors = _own_errors()
    blended = blend_forecast({"a": _member(values, fit)}, {"a": 1.0}, errors, runs, interval="extrapolation", seed=0)
    (lo_in, lo_out), (hi_in, hi_out) = blended.intervals[0.9]
    assert blended.spread.tau_tpr == 0.3
    assert hi_out - lo_out > 3 * (hi_in - lo_in)  # TPR 160 lies 0.3 decades out; TPR 16 inside
    # inside the range, the interval is the one given by compute alone, exactly
    alone = blend_forecast({"a": _member(values)}, {"a": 1.0}, errors, runs.flops, interval="extrapolation", seed=0)
    assert alone.intervals[0.9][0][0] == lo_in and alone.intervals[0.9][1][0] == hi_in


def _own_errors():
    from tests.forecasting.test_calibration import synthetic_errors

    return synthetic_errors(tau=0.05, noise=0.0, n_per_origin=20)


@pytest.mark.filterwarnings("ignore")
def test_rolling_origins_in_tpr_forecast_the_largest_and_smallest_tpr_from_the_others():
    table = law_table("nd", [1800.0, 0.38, 3300.0, 0.39], {"params": ND[:, 0], "tokens": ND[:, 1]}, q_rand=0.25)
    result = bc.fit(table, "nd", "synthetic", "acc", q_rand=0.25)
    origins = distance.rolling_origin_tpr(result)
    assert set(origins["side"]) == {"above", "below"}
    assert np.allclose(origins["tpr_decades"], np.log10(2.0))  # 80 from 40, 10 from 20
    assert distance.rolling_origin_tpr(result) is origins  # cached per fit
    # noiseless data from the law itself: the refits forecast the left-out TPRs almost exactly
    assert np.abs(np.log(origins["true"] / origins["predicted"])).max() < 0.02
    member = MemberForecast(np.array([0.5]), None, 1e21, "N, D", result)
    assert distance.tpr_error({"nd": member}, {"nd": 1.0}) < 0.1
    compute_only = bc.fit(table, "power", "synthetic", "acc", q_rand=0.25)
    assert distance.rolling_origin_tpr(compute_only).empty
    assert distance.tpr_error({"p": MemberForecast(np.array([0.5]), None, 1e21, "C", compute_only)}, {"p": 1.0}) is None
