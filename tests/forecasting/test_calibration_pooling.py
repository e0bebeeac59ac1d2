"""The error per decade pooled across a data set's benchmarks on the log scale (tau_pooling)."""

import numpy as np
import pytest

from benchcast.forecasting import calibration as cal
from benchcast.forecasting import tau_pooling as tp
from benchcast.forecasting.draws import ScoreDraws
from benchcast.forecasting.strategy import MemberForecast, blend_forecast
from tests.forecasting.test_calibration import synthetic_errors


def test_prior_shrinks_log_tau_by_origins():
    own = cal.Spread(0.2, 0.01, 5, 50, "own", n_unconverged=1)
    shrunk = tp.TauPrior(np.log(0.02), 7).shrink(own)
    m, m0 = 5, tp.PRIOR_ORIGINS
    assert shrunk.tau == pytest.approx(np.exp((m * np.log(0.2) + m0 * np.log(0.02)) / (m + m0)))
    assert shrunk.source == "own+benchmarks" and shrunk.n_pooled == 7 and shrunk.n_unconverged == 1
    assert shrunk.to_dict()["n_pooled"] == 7
    # an exact inner forecast (tau 0) counts as the floor, not as minus infinity
    assert tp.TauPrior(np.log(0.02), 3).shrink(cal.Spread(0.0, 0.0, 3, 30, "own")).tau > tp.TAU_FLOOR


def test_priors_leave_each_benchmark_out():
    errors = {
        name: synthetic_errors(tau, 0.0, n_per_origin=50, seed=i)
        for i, (name, tau) in enumerate({"a": 0.01, "b": 0.1, "c": 1.0}.items())
    }
    one_origin = synthetic_errors(0.5, 0.0, n_per_origin=50)
    errors["d"] = one_origin[one_origin["origin_decades"] == 0.2]  # no spread of its own: pools, is not pooled
    own = {name: tp.own_spread(frame) for name, frame in errors.items()}
    assert own["d"] is None and own["a"].tau == pytest.approx(0.01, rel=0.3)
    priors = tp.leave_one_out_priors(errors)
    for name in "abc":
        others = [np.log(own[o].tau) for o in "abc" if o != name]
        assert priors[name].log_tau == pytest.approx(np.mean(others)) and priors[name].n_benchmarks == 2
    assert priors["d"].n_benchmarks == 3
    # two benchmarks with a spread: each has one other, too few to pool
    assert tp.leave_one_out_priors({"a": errors["a"], "b": errors["b"]}) == {}


def test_blend_forecast_uses_the_prior_only_where_given():
    rng = np.random.default_rng(0)
    draws = ScoreDraws(0.5 * np.exp(0.01 * rng.standard_normal((40, 1))))
    members = {"power": MemberForecast(np.array([0.5]), draws, 1e21)}
    errors = synthetic_errors(0.3, 0.0, n_per_origin=50)
    blend = {"interval": "extrapolation", "seed": 0}
    alone = blend_forecast(members, {"power": 1.0}, errors, [1e22], **blend)
    pooled = blend_forecast(members, {"power": 1.0}, errors, [1e22], prior=tp.TauPrior(np.log(0.03), 5), **blend)
    assert alone.spread.source == "own" and alone.spread.n_pooled == 0
    assert pooled.spread.source == "own+benchmarks" and pooled.spread.tau < alone.spread.tau
    width = {name: np.diff(np.ravel(f.intervals[0.9])).item() for name, f in (("alone", alone), ("pooled", pooled))}
    assert width["pooled"] < width["alone"]
