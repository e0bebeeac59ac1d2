"""The extrapolation-error model of forecasting.extrapolation: one rolling-origin loop (compute and TPR), the
error model and its one pooling rule (own, the file's other benchmarks, the shipped cross-ladder prior), and
the widening of bootstrap draws (per-point streams, drift moves the interval, t tails)."""

import json

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.forecasting import extrapolation as x
from tests.conftest import law_table

THETA = np.array([5000.0, 0.19])
N_GRID = np.geomspace(5e7, 3e9, 8)
TPRS = (10.0, 20.0, 40.0, 80.0)
ND = np.array([(n, t * n) for n in N_GRID for t in TPRS])
PRIOR = x.Prior(np.log(0.05), 0.1, 0.2, ("a", "b", "c"), np.log(0.08))


def _errors(slopes, d=(0.1, 0.3, 0.6, 1.0), signs=None) -> pd.DataFrame:
    """Rolling-origin forecasts with e = s_j d exactly at origin j (signs: +-1 per point, else +1)."""
    rows = []
    for j, slope in enumerate(slopes):
        for i, dist in enumerate(d):
            sign = 1.0 if signs is None else signs[i % len(signs)]
            rows.append(
                {
                    "axis": "compute",
                    "origin_decades": 0.2 * (j + 1),
                    "run": f"r{i}",
                    "k": 1.0,
                    "decades": dist,
                    "tpr_decades": 0.0,
                    "true": 0.5 * np.exp(sign * slope * dist),
                    "predicted": 0.5,
                    "converged": True,
                }
            )
    return pd.DataFrame(rows)


def test_the_scale_per_decade_is_recovered_exactly_from_errors_that_grow_with_distance():
    # |e| = tau d at every point: e^2 = tau^2 d^2 with no noise term, so the NNLS gives tau itself
    model = x.estimate(_errors([0.07] * 5, signs=(1, -1)))
    assert model.tau == pytest.approx(0.07, rel=1e-9)
    assert (model.drift, model.df, model.source, model.n_origins, model.n_forecasts) == (0.0, np.inf, "own", 5, 20)


def test_without_drift_errors_of_different_slopes_are_all_scatter():
    # tau is their root mean square slope (the drift design is studied in benchmarks/_extrapolation_cells.py)
    assert x.estimate(_errors([0.06, 0.14, 0.06, 0.14])).tau == pytest.approx(np.sqrt((0.06**2 + 0.14**2) / 2))


def test_the_prior_alone_gives_the_error_where_the_file_cannot_measure_it_and_says_so():
    for errors in (None, _errors([0.05, 0.05])):  # no origins; two origins (fewer than MIN_ORIGINS)
        model = x.estimate(errors, PRIOR)
        assert model.source == "prior (3 ladders)" and model.n_origins == 0 and model.n_forecasts == 0
        assert model.tau == pytest.approx(0.08)  # the prior's scale without drift
        assert model.tau_tpr == 0.2  # and its error per decade of TPR
        assert (model.drift, model.df) == (0.0, np.inf)
    with pytest.raises(InsufficientDataError, match="only 2 inner forecast origin"):
        x.estimate(_errors([0.05, 0.05]))


def test_one_pooling_rule_weights_own_and_prior_by_origins():
    own = _errors([0.02] * 4, signs=(1, -1))  # tau 0.02 from 4 origins
    model = x.estimate(own, PRIOR)
    expected = (4 * np.log(0.02) + x.PRIOR_ORIGINS * np.log(0.08)) / (4 + x.PRIOR_ORIGINS)
    assert model.tau == pytest.approx(np.exp(expected), rel=1e-12)
    assert model.source == "own+prior (3 ladders)" and model.n_origins == 4 and model.own_tau == pytest.approx(0.02)
    assert x.estimate(own).tau == pytest.approx(0.02, rel=1e-9)  # no prior: its own alone


def test_the_shipped_prior_loads_and_leaves_ladders_out():
    prior = x.load_prior()
    assert x.PRIOR_FILE.is_file() and prior.ladders == ("dclm", "c4", "dclm-tpr")  # Pythia: no origins
    doc = json.loads(x.PRIOR_FILE.read_text())
    assert doc["ladders"]["pythia"]["log_tau"] is None
    c4 = doc["ladders"]["c4"]
    alone = x.load_prior(exclude=("dclm", "dclm-tpr"))
    assert alone.ladders == ("c4",) and alone.log_tau == pytest.approx(c4["log_tau"])
    assert alone.drift == pytest.approx(c4["drift"]) and alone.tau_tpr is None
    assert 0.005 < np.exp(prior.log_tau_nodrift) < 0.5  # a few percent per decade, as measured
    with pytest.raises(BenchcastError, match="no ladder left"):
        x.load_prior(exclude=("dclm", "c4", "dclm-tpr"))


def _boot(points: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(0.4 * np.exp(rng.normal(0, 0.01, (50, points))), 0, 1)


def test_a_points_draws_do_not_depend_on_the_other_points_widened_with_it():
    boot, decades = _boot(3), np.array([0.3, 0.8, 1.2])
    model = x.ErrorModel(0.1, drift=0.05, df=4.0)
    together = x.widen(boot, decades, model, seed=3)
    alone = x.widen(boot[:, [1]], decades[[1]], model, seed=3)
    np.testing.assert_array_equal(together[:, 1], alone[:, 0])  # bit-identical: the point's own stream
    assert together.shape == (int(np.ceil(4000 / 50)) * 50, 3)
    assert not np.array_equal(together[:, 0], together[:, 2])


def test_drift_shifts_the_draws_by_drift_times_distance_and_leaves_the_bootstrap_alone():
    boot, decades = _boot(2), np.array([0.5, 1.0])
    kept = boot.copy()
    base = x.widen(boot, decades, x.ErrorModel(0.05), seed=0)
    moved = x.widen(boot, decades, x.ErrorModel(0.05, drift=0.1), seed=0)
    np.testing.assert_allclose(moved / base, np.broadcast_to(np.exp(0.1 * decades), base.shape), rtol=1e-12)
    np.testing.assert_array_equal(boot, kept)  # the point forecast is the caller's: nothing here moves it


def test_t_tails_are_wider_than_normal_at_the_same_scale():
    from scipy import stats

    boot = np.full((40, 1), 0.3)  # no bootstrap spread: the draws are 0.3 exp(tau D eps)
    normal = np.log(x.widen(boot, [1.0], x.ErrorModel(0.1), seed=0) / 0.3)
    heavy = np.log(x.widen(boot, [1.0], x.ErrorModel(0.1, df=3.0), seed=0) / 0.3)
    q_normal, q_heavy = np.quantile(normal, 0.95), np.quantile(heavy, 0.95)
    assert q_heavy > 1.2 * q_normal
    assert q_normal == pytest.approx(0.1 * stats.norm.ppf(0.95), rel=0.06)
    assert q_heavy == pytest.approx(0.1 * stats.t.ppf(0.95, 3), rel=0.08)


def test_widening_is_net_of_the_bootstrap_clipped_and_skips_nan_replicates():
    rng = np.random.default_rng(1)
    boot = np.clip(0.5 * np.exp(rng.normal(0, 0.2, (100, 2))), 0, 1)
    boot[3, 0] = np.nan
    draws = x.widen(boot, [0.1, 3.0], x.ErrorModel(0.05), seed=0)
    # 0.1 decades: 0.005 of extrapolation sd under the bootstrap's 0.2, nothing added; 3 decades: 0.15 < 0.2 too
    assert np.nanstd(np.log(draws[:, 0])) == pytest.approx(np.nanstd(np.log(boot[:, 0])), rel=1e-9)
    assert np.isnan(draws[3::100, 0]).all() and np.isfinite(draws[:, 1]).all()
    wide = x.widen(np.full((10, 1), 0.9), [10.0], x.ErrorModel(0.5), seed=0)
    assert wide.max() == 1.0 and wide.min() >= 0.0
    with pytest.raises(BenchcastError, match="no bootstrap draws"):
        x.widen(np.full((5, 1), np.nan), [1.0], x.ErrorModel(0.1))


def test_the_model_reads_as_json():
    out = x.ErrorModel(0.1, 0.02, df=np.inf, source="own").to_dict()
    assert out["df"] is None and out["tau"] == 0.1 and out["drift"] == 0.02 and out["source"] == "own"
    assert json.loads(json.dumps(x.ErrorModel(0.1, df=4.0).to_dict()))["df"] == 4.0


@pytest.mark.filterwarnings("ignore")
def test_rolling_origins_along_compute_use_only_the_runs_below_each_origin():
    flops = np.geomspace(1e18, 1e21, 25)
    result = bc.fit(
        law_table("power", THETA, {"flops": flops}, q_rand=0.25, noise=0.0), "power", "synthetic", "acc", q_rand=0.25
    )
    errors = x.rolling_origin(result)
    assert set(errors["axis"]) == {"compute"} and set(errors["origin_decades"]) == set(x.ORIGIN_DECADES)
    assert (errors["flops"] > errors["origin"]).all() and (errors["decades"] > 0).all()
    np.testing.assert_allclose(errors["decades"], np.log10(errors["flops"] / errors["origin"]))
    np.testing.assert_allclose(errors["predicted"], errors["true"], rtol=1e-6)  # an exact law: no error
    assert x.estimate(errors).tau < 1e-3 + 1e-12  # at the floor
    assert x.rolling_origin(result, axes=("tpr",)).empty  # a law of compute alone has no TPR origin


@pytest.mark.filterwarnings("ignore")
def test_rolling_origins_along_tpr_forecast_the_largest_and_smallest_tpr_from_the_others():
    table = law_table("nd", [1800.0, 0.38, 3300.0, 0.39], {"params": ND[:, 0], "tokens": ND[:, 1]}, q_rand=0.25)
    result = bc.fit(table, "nd", "synthetic", "acc", q_rand=0.25)
    errors = x.rolling_origin(result)
    tpr = errors[errors["axis"] == "tpr"]
    assert set(tpr["side"]) == {"above", "below"} and len(tpr) >= len(N_GRID)  # runs at TPR 80 and 10 (usable)
    np.testing.assert_allclose(tpr["tpr_decades"], np.log10(2.0))  # 80 from 40, 10 from 20
    assert np.abs(np.log(tpr["true"] / tpr["predicted"])).max() < 0.02
    model = x.estimate(errors)
    assert model.tau_tpr is not None and model.tau_tpr < 0.05
    assert x.log_errors(errors, "tpr")["d"].to_numpy() == pytest.approx(np.log10(2.0))


def test_origins_whose_refit_did_not_converge_are_kept_and_counted():
    errors = _errors([0.07] * 5, signs=(1, -1))
    errors.loc[errors["origin_decades"] == 0.4, "converged"] = False
    model = x.estimate(errors)
    assert model.n_unconverged == 1 and model.n_origins == 5 and model.to_dict()["n_unconverged"] == 1
    assert model.tau == pytest.approx(0.07, rel=1e-9)  # their forecasts stay in the error
