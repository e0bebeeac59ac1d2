"""The extrapolation error inside the one forecaster: rolling origins that never see what they forecast,
widening net of the bootstrap (the larger of the two spreads, not their sum), a point's interval independent of
the points asked with it, the TPR term, and the prior where a ladder cannot measure (issue 30 §2). The error
model's own estimator is tested in test_extrapolation_model.py."""

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.fitting.api import fit_rows
from benchcast.fitting.spec import FitSpec, design
from benchcast.fitting.stages import fit_subsets
from benchcast.forecasting import extrapolation as ext
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.draws import DRAWS, ScoreDraws, net_sd
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.selection import blend_errors, common_errors
from benchcast.forecasting.targets import PlannedRuns
from tests.conftest import law_table

THETA = np.array([5000.0, 0.19])
ND = np.array([[n, n * r] for n in (1e8, 2e8, 4e8, 8e8, 1.6e9) for r in (10.0, 20.0, 40.0, 80.0)])


def lognormal_draws(sd: float, n: int = 4000, points: int = 2, seed: int = 0) -> np.ndarray:
    return 0.5 * np.exp(sd * np.random.default_rng(seed).standard_normal((n, points)))


@pytest.fixture(scope="module")
def misspecified():
    """A power law fitted to a law with a floor: its forecasts drift from the truth as compute grows."""
    flops = np.geomspace(1e18, 1e21, 25)
    table = law_table("power_floor", [3000.0, 0.2, 0.3], {"flops": flops}, q_rand=0.25, noise=0.01, seed=2)
    return bc.fit(table, "power", "synthetic", "acc", q_rand=0.25)


def test_rolling_origin_uses_only_runs_below_each_origin():
    flops = np.geomspace(1e18, 1e21, 25)
    table = law_table("power", THETA, {"flops": flops}, q_rand=0.25, noise=0.0)
    result = bc.fit(table, "power", "synthetic", "acc", q_rand=0.25)
    errors = ext.rolling_origin(result)
    compute = errors[errors["axis"] == "compute"]
    assert set(compute["origin_decades"]) == set(ext.ORIGIN_DECADES)
    assert (compute["flops"] > compute["origin"]).all() and (compute["decades"] > 0).all()
    assert (compute["origin"] <= 1e21 / 10 ** compute["origin_decades"] * (1 + 1e-9)).all()
    np.testing.assert_allclose(compute["predicted"], compute["true"], rtol=1e-6)  # an exact law: no error
    assert ext.estimate(errors).tau == pytest.approx(ext.TAU_FLOOR) and ext.estimate(errors).source == "own"


def test_inner_forecasts_do_not_see_the_runs_they_forecast(apple):
    """Each origin's forecast is a cold fit of the runs up to it (solved in one batch with the other origins):
    changing the scores of the runs above every origin changes the full fit but no inner forecast."""
    spec = {"tpr": 20, "min_flops": 3e18, "max_flops": 6e21}
    result = bc.fit(apple, "power_floor", "winogrande", "acc", **spec)
    top = result.points["flops"].max()
    ahead = (apple["benchmark"] == "winogrande") & (apple["flops"] > top / 10 ** min(ext.ORIGIN_DECADES) * 1.001)
    moved = apple.copy()
    moved.loc[ahead, "value"] = moved.loc[ahead, "value"] + 0.02
    other = bc.fit(moved, "power_floor", "winogrande", "acc", **spec)
    assert not np.allclose(other.theta, result.theta, rtol=1e-3)  # the full fit did see the change
    errors, errors_moved = ext.rolling_origin(result), ext.rolling_origin(other)
    assert len(errors) and errors["converged"].all()
    # the same runs enter each origin's fit: its forecasts agree to the solver's tolerance
    np.testing.assert_allclose(errors["predicted"].to_numpy(), errors_moved["predicted"].to_numpy(), rtol=1e-9)
    assert not np.array_equal(errors["true"].to_numpy(), errors_moved["true"].to_numpy())


def test_the_batched_origins_are_the_one_by_one_cold_fits(apple):
    result = bc.fit(apple, "bnsl_monotone", "arc_easy", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    batched = ext.rolling_origin(result, axes=("compute",))
    for _, group in batched.groupby("origin_decades"):
        inner = result.points[result.points["flops"] <= float(group["origin"].iloc[0]) * (1 + 1e-9)]
        alone = fit_rows(inner.reset_index(drop=True), result.spec, quiet=True)
        ahead = result.points[result.points["flops"] > float(group["origin"].iloc[0]) * (1 + 1e-9)]
        np.testing.assert_allclose(group["predicted"], alone.predict_frame(ahead.reset_index(drop=True)), rtol=1e-6)


@pytest.mark.parametrize("law, tpr", [("bnsl_monotone", 20.0), ("nd_floor", None)])
def test_the_fit_and_its_origins_in_one_solve_are_the_fit_and_origins_one_by_one(apple, law, tpr, monkeypatch):
    """The full fit is one more subset of the origins' batch (issue 31 §1); along TPR as along compute."""
    rows, spec = design(apple, FitSpec(law, "arc_easy", "acc_norm", tpr=tpr, min_flops=3e18, max_flops=6e21))
    rows.loc[rows.index[3], "value"] = np.nan  # a row the fit drops and counts
    calls = []
    monkeypatch.setattr(ext, "fit_subsets", lambda *a, **k: calls.append(len(a[2])) or fit_subsets(*a, **k))
    together = ext.fit_with_rolling_origins(rows, spec)
    monkeypatch.undo()
    assert len(calls) == 1 and calls[0] >= 6  # the full fit and every origin: one batch
    alone = fit_rows(rows, spec, quiet=True)
    np.testing.assert_allclose(together.predict_frame(rows), alone.predict_frame(rows), rtol=1e-8)
    assert together.diagnostics.converged == alone.diagnostics.converged and together.spec == alone.spec
    assert [(d["run"], d["reason"]) for d in together.dropped] == [(d["run"], d["reason"]) for d in alone.dropped]
    assert len(alone.dropped) == 1
    made, held = ext.rolling_origin(alone), ext.rolling_origin(together)
    assert set(made["axis"]) == ({"compute", "tpr"} if tpr is None else {"compute"})
    pd.testing.assert_frame_equal(held.drop(columns="predicted"), made.drop(columns="predicted"))
    np.testing.assert_allclose(held["predicted"], made["predicted"], rtol=1e-6)


def test_a_blend_is_unconverged_where_any_of_its_laws_is():
    flops = np.geomspace(1e18, 1e21, 25)
    table = law_table("power", THETA, {"flops": flops}, q_rand=0.25, noise=0.01, seed=1)
    errors = ext.rolling_origin(bc.fit(table, "power", "synthetic", "acc", q_rand=0.25))
    assert errors["converged"].all()
    moved = errors.copy()
    moved.loc[moved["origin_decades"] == 0.6, "converged"] = False
    wide = common_errors({"a": moved, "b": errors})
    assert (wide["converged"] == (wide["origin_decades"] != 0.6)).all()
    blended = blend_errors(wide, pd.Series({"a": 0.5, "b": 0.5}))
    assert ext.estimate(blended).n_unconverged == 1


def test_widening_is_lognormal_around_the_bootstrap():
    model = ext.ErrorModel(0.1)
    boot = np.full((20, 2), 0.5)  # a bootstrap without spread: the interval is the extrapolation term alone
    lower, upper = ScoreDraws(ext.widen(boot, np.array([0.0, 0.5]), model, seed=3)).interval(0.9)
    assert lower[0] == pytest.approx(0.5) and upper[0] == pytest.approx(0.5)  # no distance, no widening
    z = 1.6448536
    assert lower[1] == pytest.approx(0.5 * np.exp(-z * 0.05), rel=0.01)
    assert upper[1] == pytest.approx(0.5 * np.exp(z * 0.05), rel=0.01)


def test_widened_draws_have_the_larger_of_the_two_spreads_not_their_sum():
    boot = lognormal_draws(0.05, n=2000)
    draws = ext.widen(boot, np.array([2.0, 0.3]), ext.ErrorModel(0.1), seed=1)  # tau d = 0.2 and 0.03
    assert len(draws) == np.ceil(DRAWS / 2000) * 2000
    log_sd = np.log(draws).std(axis=0)
    assert log_sd[0] == pytest.approx(0.2, rel=0.05)  # not sqrt(0.05^2 + 0.2^2)
    assert log_sd[1] == pytest.approx(0.05, rel=0.05)  # the bootstrap as it is
    np.testing.assert_allclose(draws[:2000, 1], boot[:, 1], rtol=1e-12, atol=0)  # log and exp: to the last bits
    assert net_sd(boot, np.array([0.13, 0.03]))[0] == pytest.approx(np.sqrt(0.13**2 - 0.05**2), rel=0.02)


def test_the_curves_draws_get_the_term_a_runs_draws_get():
    run = lognormal_draws(0.08, n=2000, points=1, seed=2)
    mean = lognormal_draws(0.02, n=2000, points=1, seed=3)
    model, decades = ext.ErrorModel(0.1), np.array([1.0])
    shared = ext.widen(mean, decades, model, seed=1, reference=run)
    assert np.log(shared).std() == pytest.approx(np.sqrt(0.02**2 + 0.1**2 - 0.08**2), rel=0.05)
    assert np.log(shared).std() < np.log(ext.widen(run, decades, model, seed=1)).std()


def test_widening_leaves_out_a_replicate_only_where_it_is_not_finite():
    model = ext.ErrorModel(0.1)
    boot = np.random.default_rng(0).uniform(0.4, 0.6, (20, 2))
    holed = boot.copy()
    holed[3, 1] = np.nan
    full, with_hole = ext.widen(boot, np.array([0.5, 0.5]), model), ext.widen(holed, np.array([0.5, 0.5]), model)
    np.testing.assert_array_equal(full[:, 0], with_hole[:, 0])  # bit for bit: the claim is batch independence
    assert np.isnan(with_hole[:, 1]).sum() == np.ceil(DRAWS / 20)
    with pytest.raises(bc.BenchcastError, match="no bootstrap draws"):
        ext.widen(np.full((5, 2), np.nan), np.array([0.5, 0.5]), model)


@pytest.mark.parametrize("interval", ["extrapolation", "bootstrap"])
def test_a_points_interval_does_not_depend_on_the_other_points_asked_for(misspecified, interval):
    alone = bc.forecast(
        misspecified, n_jobs=1, flops=[1e22], uncertainty=Uncertainty(n_boot=30, interval=interval, levels=0.9)
    )
    together = bc.forecast(
        misspecified,
        n_jobs=1,
        flops=[3e22, 1e22, 1e23],
        uncertainty=Uncertainty(n_boot=30, interval=interval, levels=0.9),
    )
    for key in ("lower", "upper", "lower_mean", "upper_mean"):
        assert getattr(together, key)[1] == getattr(alone, key)[0], key  # bit for bit: the claim is batch independence


def test_the_interval_widens_with_distance_and_is_the_forecasts_default(misspecified):
    out = bc.forecast(misspecified, n_jobs=1, flops=[2e21, 1e23], uncertainty=Uncertainty(n_boot=30, levels=0.9))
    assert out.uncertainty.interval == "extrapolation" and out.meta.error_model["tau"] > 0
    assert "own" in out.meta.error_model["source"] and "prior" in out.meta.error_model["source"]
    width = out.upper - out.lower
    boot = bc.forecast(
        misspecified, n_jobs=1, flops=[2e21, 1e23], uncertainty=Uncertainty(n_boot=30, interval="bootstrap", levels=0.9)
    )
    assert width[1] > width[0] and width[1] > boot.upper[1] - boot.lower[1]
    with pytest.raises(bc.BenchcastError, match="unknown interval"):
        bc.forecast(misspecified, flops=1e23, uncertainty=Uncertainty(n_boot=30, interval="conformal", levels=0.9))


def test_a_ladder_too_short_to_measure_gets_the_prior_and_says_so():
    """Five runs over a decade: fewer rolling origins than the error needs, yet the forecast has an interval, from
    the cross-ladder prior shipped with the package; the output names its source."""
    flops = np.geomspace(1e20, 1e21, 5)
    table = law_table("power", THETA, {"flops": flops}, q_rand=0.25, noise=0.005, seed=4)
    result = bc.fit(table, "power", "synthetic", "acc", q_rand=0.25)
    assert ext.rolling_origin(result)["origin_decades"].nunique() < ext.MIN_ORIGINS
    out = bc.forecast(result, n_jobs=1, flops=[1e22], uncertainty=Uncertainty(n_boot=30, levels=0.9))
    prior = ext.load_prior()
    assert out.meta.error_model["source"] == f"prior ({len(prior.ladders)} ladders)"
    assert out.meta.error_model["tau"] == pytest.approx(np.exp(prior.log_tau_nodrift), rel=1e-12)
    assert np.isfinite(out.lower[0]) and out.lower[0] < out.prediction[0] < out.upper[0]


@pytest.mark.filterwarnings("ignore")
def test_a_run_at_a_tpr_outside_the_fitted_runs_gets_the_tpr_term():
    table = law_table("nd", [1800.0, 0.38, 3300.0, 0.39], {"params": ND[:, 0], "tokens": ND[:, 1]}, q_rand=0.25)
    result = bc.fit(table, "nd", "synthetic", "acc", q_rand=0.25)
    errors = ext.rolling_origin(result)
    tpr = errors[errors["axis"] == "tpr"]
    assert set(tpr["side"]) == {"above", "below"} and np.allclose(tpr["tpr_decades"], np.log10(2.0))
    assert np.abs(np.log(tpr["true"] / tpr["predicted"])).max() < 0.02  # noiseless: the left-out TPRs almost exact
    ensemble = Ensemble.of_fit(result, errors)
    model = ensemble.error_model_
    assert model.tau_tpr is not None and model.tau_tpr < 0.1
    # the same compute inside the fitted TPRs (16) and outside them (640): the latter is further away
    n = np.array([1e9, 2.5e8])
    runs = PlannedRuns(np.full(2, 6 * 1e9 * 1.6e10), n, 6 * 1e9 * 1.6e10 / (6 * n), np.ones(2, bool))
    made = ensemble.predict(runs, Uncertainty(30, interval="extrapolation"))
    lower, upper = made.interval(0.9)
    assert upper[1] - lower[1] > upper[0] - lower[0]
    assert ext.rolling_origin(bc.fit(table, "power", "synthetic", "acc", q_rand=0.25)).query("axis == 'tpr'").empty


def test_the_points_of_a_forecast_share_their_draws_so_bounds_are_monotone_along_a_grid(misspecified):
    """Common random numbers (issue #39): replicate b draws the same extrapolation error and residual at every point,
    so along a grid finer than the Monte-Carlo noise the upper bound rises with the forecast at every step (with a
    stream per point it fell at 8 of these 20 steps). The shared stream is not a bootstrap replicate's: numpy's
    seeding ignores trailing zero words, so it ends in 1."""
    from benchcast.utils.streams import common_rng

    assert not np.array_equal(common_rng(3, 11).random(4), np.random.default_rng([3, 11]).random(4))
    made = bc.forecast(
        misspecified, n_jobs=1, flops=np.linspace(1e22, 1.2e22, 21), uncertainty=Uncertainty(n_boot=30, levels=0.9)
    )
    assert (np.diff(made.prediction) > 0).all()
    assert (np.diff(made.interval(0.9)[1]) >= 0).all()


def test_a_forecast_without_compute_says_why_it_has_no_extrapolation_interval():
    """A law of gold NLL alone: its points have no compute, so no distance for the extrapolation error; the forecast
    says so (and the bootstrap-only interval exists)."""
    law = bc.get_law("gold")
    theta = [law.example_params[p.name] for p in law.parameters]
    table = law_table("gold", theta, {"gold": np.linspace(0.6, 3.0, 20)}, q_rand=0.25, noise=0.005, seed=1)
    result = bc.fit(table, "gold", "synthetic", "acc", q_rand=0.25)
    out = bc.forecast(result, gold=[1.2], n_jobs=1, uncertainty=Uncertainty(n_boot=30, levels=0.9))
    assert np.isnan(out.lower[0]) and "give no compute" in out.meta.note and "--interval bootstrap" in out.meta.note
    assert "give no compute" in str(out)
    boot = bc.forecast(
        result, gold=[1.2], n_jobs=1, uncertainty=Uncertainty(n_boot=30, interval="bootstrap", levels=0.9)
    )
    assert boot.lower[0] < boot.prediction[0] < boot.upper[0] and not boot.meta.note


def test_an_artifact_holds_its_rolling_origins_and_a_forecast_of_it_reads_them(misspecified, tmp_path, monkeypatch):
    """``fit --out`` saves the rolling origins (issue 31: a forecast of the artifact does not refit them); read
    back they are the table rolling_origin makes and give the same interval as made afresh."""
    held = ext.with_rolling_origins(misspecified)
    made = ext.rolling_origin(misspecified)
    loaded = bc.load_fit(held.save(tmp_path / "fit.json"))
    pd.testing.assert_frame_equal(ext.rolling_origin(loaded), made)
    # the stored table is what the forecast reads: no refit is made
    monkeypatch.setattr(ext, "fit_subsets", lambda *a, **k: pytest.fail("refitted the stored origins"))
    uncertainty = Uncertainty(n_boot=50, seed=1)
    stored = Ensemble.of_fit(loaded).predict([1e22], uncertainty)
    monkeypatch.undo()
    fresh = Ensemble.of_fit(misspecified).predict([1e22], uncertainty)
    assert np.allclose(stored.interval(0.9), fresh.interval(0.9), rtol=1e-12, atol=0)
    # made for other origins, or for other points than the fit's (an edited artifact): made afresh
    assert len(ext.rolling_origin(loaded, origin_decades=(0.5,))) < len(made)
    doc = loaded.to_dict()
    doc["points"] = {column: values[:-8] for column, values in doc["points"].items()}
    fewer = bc.FitResult.from_dict(doc)
    assert ext.rolling_origin(fewer)["flops"].max() <= fewer.points["flops"].max()
    assert made["flops"].max() > fewer.points["flops"].max()
    # a stored table that lost a column is refused on load, saying which columns it has
    doc = loaded.to_dict()
    del doc["rolling_origins"]["table"]["predicted"]
    with pytest.raises(bc.BenchcastError, match="rolling origins' table has columns"):
        bc.FitResult.from_dict(doc)


def test_rolling_origins_along_tpr_round_trip_with_their_nans(apple, tmp_path):
    """TPR origins have no compute origin (NaN) and a side: the artifact gives them back as made."""
    rows, spec = design(apple, FitSpec("nd_floor", "arc_easy", "acc_norm", min_flops=3e18, max_flops=6e21))
    fit = ext.fit_with_rolling_origins(rows, spec)
    table = fit.rolling_origins["table"]
    assert table["origin_decades"].isna().any() and set(table["side"]) == {"", "above", "below"}
    loaded = bc.load_fit(fit.save(tmp_path / "fit.json"))
    pd.testing.assert_frame_equal(ext.rolling_origin(loaded), table, check_dtype=False)


def test_the_error_model_is_a_value_passed_to_predict(misspecified):
    """As statsforecast takes its interval method: a caller's error model widens the interval in place of the
    ensemble's own, and the forecast records the one it used."""
    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.forecasting.ensemble import Ensemble

    ensemble, unc = Ensemble.of_fit(misspecified), Uncertainty(30)
    own = ensemble.predict([1e23], unc, n_jobs=1)
    wider = ensemble.predict([1e23], unc, n_jobs=1, error_model=ext.ErrorModel(4 * own.meta.error_model["tau"]))
    assert wider.meta.error_model["tau"] == pytest.approx(4 * own.meta.error_model["tau"])
    assert np.diff(wider.interval(0.9), axis=0)[0, 0] > np.diff(own.interval(0.9), axis=0)[0, 0]
    assert wider.prediction[0] == own.prediction[0]  # the point is not a draw


def test_a_forecast_answers_any_level_from_its_draws_and_keeps_them_when_taken(misspecified):
    """interval(level) at a level not asked is the interval of a forecast asked at it; take() keeps each point's
    draws, a point taken twice included; a level outside (0, 1) is refused."""
    asked = bc.forecast(misspecified, n_jobs=1, flops=[3e22, 1e23], uncertainty=Uncertainty(n_boot=30, levels=0.8))
    made = bc.forecast(misspecified, n_jobs=1, flops=[3e22, 1e23], uncertainty=Uncertainty(n_boot=30, levels=0.9))
    np.testing.assert_allclose(made.interval(0.8), asked.interval(0.8), rtol=1e-12)
    twice = made.take([1, 1, 0])
    np.testing.assert_allclose(twice.interval(0.8)[0], made.interval(0.8)[0][[1, 1, 0]], rtol=1e-12)
    with pytest.raises(bc.BenchcastError):
        made.interval(1.5)


SIZES = [1e8, 4e8, 1.6e9]


@pytest.mark.parametrize(
    "law, points",
    [
        ("power_floor", {"params": np.full(6, 1e8), "tokens": 10 ** np.arange(18, 20.01, 0.4) / 6e8}),
        ("nd_floor", {"params": np.repeat(SIZES, 3), "tokens": np.repeat(SIZES, 3) * np.tile([10.0, 40.0, 160.0], 3)}),
    ],
)
def test_replicate_runs_add_no_rolling_origin(law, points):
    """An origin needs n_params + 2 distinct points below it: three seeds of one N and D are one point, so a ladder
    run in triplicate has the same origins as the ladder run once (row counts admitted origins it could not fit)."""
    once = pd.DataFrame(points).assign(flops=lambda f: 6 * f["params"] * f["tokens"])
    thrice = pd.concat([once] * 3, ignore_index=True)
    spec, fitted = FitSpec(law=law, benchmark="synthetic"), bc.get_law(law)

    def origins(frame):
        found = ext._origins(frame, fitted, spec, ext.AXES, ext.ORIGIN_DECADES)
        for o in found:  # each refit has the points it needs
            assert len(frame[o.inner].drop_duplicates()) >= fitted.n_params + 2
        return [(o.axis, o.delta, o.side) for o in found]

    alone = origins(once)
    assert alone and origins(thrice) == alone  # the ladder has origins, and its replicates add none
