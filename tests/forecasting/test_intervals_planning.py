"""Bootstrap intervals are calibrated on data from a known law; plan inverts forecast;
recommend ranks laws on real data."""

import json
import re

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast import FitSpec, Uncertainty
from benchcast.forecasting.answers import forecast, recommend
from benchcast.forecasting.bootstrap import bootstrap
from benchcast.forecasting.draws import Draws, ScoreDraws
from benchcast.forecasting.planning import plan
from benchcast.utils import memo

THETA = np.array([5000.0, 0.19])  # power law, -log Q' = A C^-alpha
Q_RAND = 0.25
NOISE = 0.04  # Gaussian noise on log(-log Q'), the law's fitted space


def noisy_ladder(rng, flops):
    law = bc.get_law("power")
    target = law.forward(THETA, {"flops": flops}) + rng.normal(0, NOISE, flops.size)
    score = bc.laws.to_score("loglog", target, Q_RAND)
    frame = pd.DataFrame(
        {
            "run": [f"r{i}" for i in range(flops.size)],
            "flops": flops,
            "benchmark": "synthetic",
            "metric": "acc",
            "value": score,
        }
    )
    return bc.validate(frame)


def test_intervals_cover_at_nominal_rate():
    """Over many seeded synthetic ladders, 50 % and 90 % intervals cover at close to nominal."""
    law = bc.get_law("power")
    flops = np.geomspace(1e18, 1e21, 20)
    queries = np.array([3e18, 3e19, 3e20, 3e21])
    hits = {("prediction", 0.5): [], ("prediction", 0.9): [], ("confidence", 0.5): [], ("confidence", 0.9): []}
    for dataset in range(40):
        rng = np.random.default_rng(dataset)
        result = bc.fit(noisy_ladder(rng, flops), "power", "synthetic", "acc", q_rand=Q_RAND, margin=0.0)
        boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=200, seed=dataset))
        truth = law.predict_score(THETA, {"flops": queries}, Q_RAND)
        new_runs = bc.laws.to_score(
            "loglog", law.forward(THETA, {"flops": queries}) + rng.normal(0, NOISE, queries.size), Q_RAND
        )
        for (kind, level), store in hits.items():
            lower, upper = boot.interval(level, kind, flops=queries)
            observed = new_runs if kind == "prediction" else truth
            store.extend((observed >= lower) & (observed <= upper))
    rates = {key: float(np.mean(v)) for key, v in hits.items()}
    assert 0.80 <= rates[("prediction", 0.9)] <= 0.97, rates
    assert 0.38 <= rates[("prediction", 0.5)] <= 0.62, rates
    assert 0.78 <= rates[("confidence", 0.9)] <= 0.97, rates
    assert 0.35 <= rates[("confidence", 0.5)] <= 0.62, rates


def test_bootstrap_is_deterministic_and_parallel_safe():
    rng = np.random.default_rng(0)
    result = bc.fit(noisy_ladder(rng, np.geomspace(1e18, 1e21, 15)), "power", "synthetic", "acc", q_rand=Q_RAND)
    a = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=40, seed=5)).thetas
    memo.clear()  # the second run's refits computed, not read from the store
    b = bootstrap(result, n_jobs=2, progress=False, uncertainty=Uncertainty(n_boot=40, seed=5)).thetas
    # bit for bit: a replicate's fit does not depend on which process or batch ran it
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "law, bench, metric, k, kwargs",
    [
        ("power", "arc_easy", "acc_norm", None, {}),
        ("bnsl", "arc_easy", "acc_norm", None, {}),
        ("power_floor", "hellaswag", "acc_norm", None, {}),
        ("nd", "arc_easy", "acc_norm", None, {"k": None, "forecast_tpr": 20.0}),
        ("compute", "humaneval-py", "pass@k", 8, {}),
        ("params_tokens", "humaneval-py", "pass@k", 1, {}),
        ("passk_compute", "humaneval-py", None, None, {"k": 16}),
    ],
)
def test_plan_inverts_forecast(apple, law, bench, metric, k, kwargs):
    result = bc.fit(apple, law, bench, metric, k, max_flops=6e21)
    target = 0.6 if bench != "humaneval-py" else 0.3
    out = plan(result, target, **kwargs, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert out.reachable
    needed = out.needed
    if law == "nd":
        params = np.sqrt(needed / (6 * 20.0))
        score = result.predict(params=params, tokens=20.0 * params)
        assert (out.params, out.tokens) == pytest.approx((params, 20.0 * params), rel=1e-12)  # the plan says N, D
    elif law == "params_tokens":
        n_opt = result.fitted.envelope().optimal_params(needed)
        score = result.predict(params=n_opt, tokens=needed / 6 / n_opt)
    else:
        score = result.predict(flops=needed, k=kwargs.get("k"))
    assert float(score) == pytest.approx(target, abs=1e-6)


def test_plan_k_and_ceiling(apple):
    k5 = bc.fit(apple, "passk_compute", "humaneval-py", max_k=32)
    out = plan(k5, 0.7, flops=1e22, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert out.solves_for == "k"
    k = out.needed
    assert k5.predict(flops=1e22, k=k) >= 0.7 > k5.predict(flops=1e22, k=k - 1)
    floor = bc.fit(apple, "power_floor", "piqa", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    q_max = floor.settings["q_rand"] + (1 - floor.settings["q_rand"]) * np.exp(-floor.params["E"])
    out = plan(floor, min(0.999, q_max + 0.01), uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert not out.reachable and "unreachable" in out.message
    assert out.ceiling == pytest.approx(q_max) and "exp(-E)" in out.ceiling_meaning
    # passk_compute: the limit in k at a compute is stated, not the score at a cap
    out = plan(k5, 0.999999, flops=1e22, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    slope_in_log_k = k5.params["beta"] + k5.params["delta"] * np.log(1e22)
    assert out.ceiling == (1.0 if slope_in_log_k < 0 else 0.0)


def test_forecast_interval_contains_point(apple):
    result = bc.fit(apple, "power", "sciq", "acc_norm", tpr=20, max_flops=6e21)
    out = forecast(result, flops=np.array([1e22, 1e23]), n_jobs=1, uncertainty=Uncertainty(n_boot=100, levels=0.9))
    assert np.all(out.lower <= out.prediction) and np.all(out.prediction <= out.upper)
    # a run's interval is at least the curve's (both widened by the same term: equal to Monte-Carlo noise where
    # the extrapolation term dominates both)
    assert np.all(out.upper - out.lower >= out.upper_mean - out.lower_mean - 1e-3)


def test_backtest_reports_coverage(apple):
    spec = bc.FitSpec("power", "piqa", "acc_norm")
    bt = bc.backtest(apple, spec, tpr=20, min_flops=3e18, uncertainty=bc.Uncertainty(100), n_jobs=1)
    test = bt.predictions[bt.predictions["side"] == "test"]
    inside = ((test["true"] >= test["lower90"]) & (test["true"] <= test["upper90"])).mean()
    assert bt.metrics["coverage90"] == pytest.approx(inside)
    assert (test["lower50"] >= test["lower90"] - 1e-12).all()


def test_recommend_weights_laws_by_rolling_origin_forecasts(apple):
    rec = recommend(
        apple,
        FitSpec("power", "sciq", metric="acc_norm", tpr=20, min_flops=3e18),
        target_flops=1e22,
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=20, levels=0.9),
    )
    # the default: the equal-weight mean of the laws with a ceiling, both supported on SciQ
    assert rec.supported and set(rec.ranking["law"]) == {"power_floor", "bnsl_monotone"}
    assert rec.weights == {"power_floor": 0.5, "bnsl_monotone": 0.5} and rec.rule == "ensemble"
    assert rec.ranking["inner_msle"].is_monotonic_increasing and rec.best == rec.ranking["law"].iloc[0]
    # the choice's error is measured on runs it did not choose on, and is a real number
    assert rec.nested_origins >= 1 and 0 < rec.nested_mre < 20
    # deepest origin: 1 decade below the top run, plus at most one rung of the ladder (1/12 decade)
    assert 1.0 <= rec.extrapolation_decades <= 1.0 + 1 / 12 + 1e-6 and (rec.ranking["tau"] >= 0).all()
    # the planned run: the mean of the two laws' forecasts, inside its extrapolation-aware interval
    f = rec.forecast.records()[0]
    fits = {law: bc.fit(apple, law, "sciq", "acc_norm", tpr=20, min_flops=3e18, max_flops=1e22) for law in rec.weights}
    assert f["prediction"] == pytest.approx(np.mean([float(r.predict(flops=1e22)) for r in fits.values()]), rel=1e-6)
    assert f["lower"] < f["prediction"] < f["upper"] and f["interval"] == "extrapolation"
    assert "At 1e+22 FLOPs it forecasts" in str(rec)
    laws = ["power", "power_floor"]
    stacked = recommend(
        apple,
        FitSpec("power", "sciq", metric="acc_norm", tpr=20, min_flops=3e18),
        target_flops=1e22,
        laws=laws,
        rule="stack",
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    inverse = 1 / stacked.ranking.set_index("law")["inner_msle"]
    assert stacked.weights["power"] == pytest.approx(inverse["power"] / inverse.sum())
    picked = recommend(
        apple,
        FitSpec("power", "sciq", metric="acc_norm", tpr=20, min_flops=3e18),
        target_flops=1e22,
        laws=laws,
        rule="select",
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert picked.weights[picked.best] == 1.0 and "use the select" in str(picked)


def test_recommend_reports_no_support_near_chance():
    """Scores at chance everywhere: no law has support, so no forecast is made."""
    flops = np.geomspace(1e18, 1e21, 20)
    table = bc.validate(
        pd.DataFrame(
            {
                "run": [f"r{i}" for i in range(20)],
                "flops": flops,
                "benchmark": "hellaswag",
                "metric": "acc_norm",
                "value": 0.25 + 0.001 * np.sin(np.arange(20)),
            }
        )
    )
    rec = recommend(table, FitSpec("power", "hellaswag", metric="acc_norm"), laws=["power", "power_floor"])
    assert not rec.supported and rec.best is None and "no law has support" in rec.reason
    assert rec.notes[0].startswith("No forecast for hellaswag")


def test_cli_forecast_plan_recommend(apple_path, tmp_path):
    out = tmp_path / "fit.json"
    from conftest import run_cli as run

    assert run("fit", apple_path, "-l", "power", "-b", "arc_easy", "-m", "acc_norm", "--out", out).returncode == 0
    proc = run("forecast", out, "--flops", "1e22", "--boot", "50", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["lower"][0] < json.loads(proc.stdout)["upper"][0]
    proc = run("plan", out, "--target", "0.8", "--boot", "20", "--json")
    assert json.loads(proc.stdout)["reachable"]
    proc = run("plan", out, "--target", "1.5")
    assert proc.returncode == 2 and "target score must lie in (0, 1)" in proc.stderr
    proc = run("recommend", apple_path, "-b", "piqa", "-m", "acc_norm", "--tpr", "20", "--min-flops", "3e18", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (
        doc["best"] in {"power", "power_floor", "bnsl", "bnsl_monotone"}
        and doc["rule"] == "ensemble"
        and doc["supported"]
    )


# -- calibration beyond the closed-form law, and replicates fitted as well as a cold refit ----------


def _ladder(score: np.ndarray, flops: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"run": [f"r{i}" for i in range(flops.size)], "flops": flops, "benchmark": "synthetic", "metric": "acc"}
    )
    return bc.validate(frame.assign(value=score))


def _coverage90(make_scores, law: str, n_datasets: int, n_boot: int, n_fresh: int = 4) -> float:
    """Share of fresh draws inside the 90 % prediction interval, over seeded synthetic ladders,
    at compute values inside the fitted range."""
    flops = np.geomspace(1e18, 1e21, 24)
    queries = np.geomspace(2e18, 5e20, 6)
    hits = []
    for dataset in range(n_datasets):
        rng = np.random.default_rng(100 + dataset)
        result = bc.fit(_ladder(make_scores(flops, rng), flops), law, "synthetic", "acc", q_rand=Q_RAND, margin=0.0)
        boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=n_boot, seed=dataset))
        assert boot.n_failed + boot.n_dropped <= 0.05 * n_boot, boot.to_dict()
        lower, upper = boot.interval(0.9, "prediction", flops=queries)
        fresh = np.stack([make_scores(queries, rng) for _ in range(n_fresh)])
        hits.extend(((fresh >= lower) & (fresh <= upper)).ravel())
    return float(np.mean(hits))


def power_floor_scores(flops, rng):
    """-log Q' = A C^-alpha + E with Gaussian noise on -log Q' (the law's fitted space)."""
    neglog = 40.0 * flops**-0.08 + 0.3 + rng.normal(0, 0.02, flops.size)
    return bc.laws.to_score("neglog", neglog, Q_RAND)


def bnsl_scores(flops, rng):
    """A broken power law with its break inside the range, written out (not taken from the law
    object, whose parametrisation may change), with Gaussian noise on the score."""
    x = flops / 1e18
    clean = 0.85 - 0.5 * x**-0.05 * (1 + (flops / 1e20) ** (1 / 0.5)) ** (-0.4 * 0.5)
    return clean + rng.normal(0, 0.01, flops.size)


def test_power_floor_intervals_are_calibrated():
    assert 0.80 <= _coverage90(power_floor_scores, "power_floor", n_datasets=8, n_boot=60) <= 0.97


@pytest.mark.slow
def test_bnsl_intervals_are_calibrated():
    """The constrained BNSL (the one the default forecast uses): the synthetic curve obeys its
    constraints."""
    assert 0.80 <= _coverage90(bnsl_scores, "bnsl_monotone", n_datasets=4, n_boot=25) <= 0.97


def _cold_losses(result, counts):
    """Each resample's loss fitted cold, by the engine alone."""
    from benchcast.fitting.engine.search import minimize_law
    from benchcast.forecasting.bootstrap import _Data

    data = _Data.of(result)
    spec = result.spec
    fits = (
        minimize_law(
            data.law, *data.take(row), loss=spec.loss, huber_delta=spec.huber_delta, seed=spec.seed, with_stderr=False
        )
        for row in counts
    )
    return np.array([fit.loss for fit in fits])


@pytest.mark.parametrize("law, bench, n_boot, n_cold", [("power_floor", "hellaswag", 120, 25)])
def test_replicates_reach_the_cold_refit_loss(apple, law, bench, n_boot, n_cold):
    """Each replicate's loss is that of a cold fit of its resample (or lower), and it converged."""
    from benchcast.forecasting.bootstrap import resample_counts

    result = bc.fit(apple, law, bench, "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=n_boot, seed=3))
    assert boot.n_failed == 0 and boot.n_dropped <= 0.01 * n_boot and boot.converged.mean() >= 0.99
    cold = _cold_losses(result, resample_counts(result, 3, range(n_cold)))
    excess = (boot.losses[:n_cold] - cold) / cold
    assert np.mean(excess <= 1e-6) >= 0.99, np.sort(excess)[-5:]


@pytest.mark.slow
def test_bnsl_replicates_fit_as_well_as_cold_refits(arc_easy_bnsl):
    """The unrestricted BNSL's replicates start from the full-data optimum and two candidates of a
    shared pool (replicates.refit_weighted), a cold refit from its own 128 best-ranked starts.
    Neither search is global on this law's several basins: of the 29 converged DCLM arc_easy
    replicates, 16 end where the cold refit does, 7 below it and 6 above (by 0.5-5 %: a basin the
    replicate's three starts do not reach). Asserted: most end at or below the cold refit, at most
    a quarter above, and none far above."""
    from benchcast.fitting.engine.replicates import refit_weighted
    from benchcast.forecasting.bootstrap import _Data, resample_counts

    result = arc_easy_bnsl
    assert result.law_object.replicate_strategy(result.spec.loss) == "batched"
    counts = resample_counts(result, 3, range(30))
    data = _Data.of(result)
    _, pool, ok = refit_weighted(data.law, data.X, data.y, counts, result.theta)
    cold = _cold_losses(result, counts)
    assert ok.mean() >= 0.9, ok.sum()
    excess = (pool[ok] - cold[ok]) / cold[ok]
    assert np.mean(excess <= 1e-6) >= 0.6, np.sort(excess)
    assert np.mean(excess > 1e-3) <= 0.25 and excess.max() <= 0.1, np.sort(excess)
    boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=30, seed=3))
    assert boot.converged.mean() >= 0.9 and boot.n_failed + boot.n_dropped == int((~boot.usable).sum())


def test_unconverged_replicates_are_dropped_and_counted(apple):
    """A replicate that did not converge is left out of the intervals and counted."""
    result = bc.fit(apple, "power_floor", "piqa", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=20, seed=0))
    assert boot.n_dropped == 0 and boot.n_failed == 0
    lower, upper = boot.interval(0.9, flops=np.array([1e22]))
    boot.converged[:5] = False
    assert boot.n_dropped == 5 and np.isnan(boot.thetas[:5]).all() and boot.to_dict()["n_used"] == 15
    assert boot.draws("confidence", flops=np.array([1e22])).values.shape == (15, 1)
    boot.converged[:] = False
    with pytest.raises(bc.BenchcastError, match="20 did not converge"):
        boot.interval(0.9, flops=np.array([1e22]))


def test_replicates_with_too_few_distinct_runs_fail_without_a_crash(apple):
    """A batch of replicates each drawing fewer distinct runs than the law has parameters (a short
    ladder's bootstrap chunk) is reported failed, not passed to the batched refit as an empty batch
    (which crashed `bench` on DCLM LBPP with a shape mismatch)."""
    from benchcast.forecasting.bootstrap import fit_replicates

    result = bc.fit(apple, "power_floor", "piqa", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    counts = np.zeros((3, len(result.points)))
    counts[:, :2] = [[5, 4], [1, 8], [9, 0]]  # at most 2 distinct runs each
    thetas, losses, converged, failed = fit_replicates(result, counts)
    assert failed.all() and not converged.any()
    assert thetas.shape == (3, len(result.params)) and np.isnan(thetas).all()


# -- the one forecast distribution, and the results that show it -----------------------------------


def test_score_draws_by_hand():
    """Quantiles, intervals, coverage and blends of a small array, computed by hand."""
    values = np.array([[0.1, 1.0], [0.2, 2.0], [0.3, 3.0], [0.4, 4.0], [0.5, 5.0]])
    draws = ScoreDraws(values, {"flops": np.array([1e21, 1e22])})
    assert draws.n_replicates == 5 and draws.n_points == 2 and draws.shape == (2,)
    np.testing.assert_array_equal(draws.quantile(0.5), [0.3, 3.0])
    lower, upper = draws.interval(0.5)  # quantiles 0.25 and 0.75: the 2nd and 4th of 5 draws
    np.testing.assert_array_equal(lower, [0.2, 2.0])
    np.testing.assert_array_equal(upper, [0.4, 4.0])
    assert draws.coverage([0.25, 5.0], 0.5) == 0.5  # inside at the first point, above at the second
    assert draws.coverage([0.2, 4.0], 0.5) == 1.0  # the bounds belong to the interval
    np.testing.assert_array_equal(draws.take([1]).quantile(0.5), [3.0])
    with pytest.raises(bc.BenchcastError, match="interval level"):
        draws.interval(1.5)
    # a replicate missing at one point is left out there only
    holed = values.copy()
    holed[4, 1] = np.nan
    np.testing.assert_array_equal(ScoreDraws(holed).quantile(0.5), [0.3, 2.5])
    # a query's shape comes back
    assert ScoreDraws(values[:, :1], shape=()).quantile(0.5).shape == ()
    # blend: replicate b of each law with a positive weight, as many replicates as the fewest
    other = ScoreDraws(np.array([[10.0, 20.0], [30.0, 40.0]]))
    mix = ScoreDraws.blend({"a": draws, "b": other, "c": draws}, {"a": 0.25, "b": 0.75, "c": 0.0})
    np.testing.assert_array_equal(mix.values, 0.25 * values[:2] + 0.75 * other.values)
    np.testing.assert_allclose(mix.values, [[7.525, 15.25], [22.55, 30.5]])
    assert mix.points is draws.points
    # draws that may be infinite are read without interpolation (plan's compute draws)
    compute = Draws(np.array([[1.0], [2.0], [np.inf], [4.0]]), method="inverted_cdf")
    assert compute.interval(0.5) == (np.array([1.0]), np.array([4.0]))
    assert compute.quantile(0.95)[0] == np.inf


def test_two_stage_draws_lie_where_its_forecast_can(apple):
    """A two-stage law's stage 2 is unbounded: its point forecast is clipped to [0, 1] by the fitted
    law, and so are its draws, which are made by the same path."""
    result = bc.fit(apple, "two_stage_linear", "arc_easy", "acc_norm", tpr=20, proxy="dclm:loss")
    boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=20, seed=0))
    flops = np.array([1e22, 1e26, 1e30])
    with pytest.warns(bc.FitWarning, match="clipped"):
        point = result.predict(flops=flops)
    assert point.max() == 1.0  # saturated far out
    for kind in ("prediction", "confidence"):
        draws = boot.draws(kind, flops=flops)
        assert draws.values.min() >= 0.0 and draws.values.max() <= 1.0, kind
        lower, upper = draws.interval(0.9)
        assert np.all((lower >= 0.0) & (upper <= 1.0))
    unclipped = result.law_object.forward(boot.thetas[boot.usable], result.covariates(flops=flops)[0])
    assert unclipped.max() > 1.0  # without the fitted law's path these draws would leave [0, 1]


def test_forecast_and_plan_show_themselves(apple):
    """Forecast and Plan: the CLI's JSON keys, the CLI's text, and an HTML table with the numbers."""
    result = bc.fit(apple, "power", "sciq", "acc_norm", tpr=20, max_flops=6e21)
    out = forecast(
        result,
        flops=np.array([1e22, 1e23]),
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=20, interval="bootstrap", levels=0.9),
    )
    assert list(out.to_dict()) == [
        "law",
        "strategy",
        "benchmark",
        "metric",
        "weights",
        "covariates",
        "level",
        "levels",
        "interval",
        "n_boot",
        "failed_refits",
        "dropped_refits",
        "query",
        "prediction",
        "lower",
        "upper",
        "lower_mean",
        "upper_mean",
        "intervals",
        "flags",
        "forecasts",
    ]
    html = out._repr_html_()
    assert html.count("<tr>") == 3 and "<table>" in html
    assert f"{out.prediction[1]:.4g}" in html and f"{out.upper[0]:.4g}" in html
    assert "forecast with 90 % intervals (20 bootstrap replicates" in str(out)
    assert out.meta.error_model is None and len(out.to_dict()["forecasts"]) == 2
    planned = plan(result, 0.8, n_jobs=1, uncertainty=Uncertainty(n_boot=20, interval="bootstrap", levels=0.9))
    assert planned.to_dict()["interval"] == "bootstrap" and planned.reachable
    html = planned._repr_html_()
    assert "<table>" in html and f"{planned.needed:.4g}" in html and f"{planned.upper:.4g}" in html
    assert f"needed for score 0.8: {planned.needed:.4g}" in str(planned)
    assert "where the forecast's 90 % bounds reach it; 20 bootstrap replicates per law" in str(planned)
    bare = plan(result, 0.8, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert bare.to_dict()["lower"] is None and bare.to_dict()["interval"] is None


def test_plan_refuses_a_question_the_law_cannot_tell_apart():
    """The API, not only the command line, refuses a tpr, k or flops the fitted law has no use for
    (the answer would be the same without it), and a k together with flops for a law across k."""
    from conftest import law_table

    table = law_table("power", [2000.0, 0.17], {"flops": np.geomspace(1e19, 1e22, 12)}, benchmark="arc")
    power = bc.fit(table, "power", "arc")
    baseline = plan(power, 0.7, uncertainty=Uncertainty(n_boot=0, levels=0.9)).needed
    assert np.isfinite(baseline)
    for question, word in (
        ({"forecast_tpr": 20.0}, "forecast_tpr"),
        ({"k": 4}, "k (--k)"),
        ({"flops": 1e23}, "flops (--flops)"),
    ):
        with pytest.raises(bc.BenchcastError, match=re.escape(word) + ".*'power'"):
            plan(power, 0.7, **question, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    theta = [9.0, -0.19, 0.5, -0.013]
    flops, ks = np.meshgrid(np.geomspace(1e18, 3e22, 12), [1, 2, 4, 8, 16])
    k5 = bc.fit(
        law_table("passk_compute", theta, {"flops": flops.ravel(), "k": ks.ravel()}, metric="pass@k"),
        "passk_compute",
        "synthetic",
    )
    with pytest.raises(bc.BenchcastError, match="not both"):
        plan(k5, 0.5, k=4, flops=1e22, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    with pytest.raises(bc.BenchcastError, match="k must be an integer >= 1"):
        plan(k5, 0.5, k=2.5, uncertainty=Uncertainty(n_boot=0, levels=0.9))


def test_batched_replicates_over_workers_are_the_in_process_replicates(apple, monkeypatch):
    """From 1000 replicates a batched law's bootstrap is one solve per local worker (below, one in this process;
    over Ray, sixteen tasks); each replicate's refit is its own, so the replicates are the in-process ones."""
    import benchcast.forecasting.bootstrap as boot
    from benchcast.utils import memo

    batches = []
    real_map = boot.parallel_map

    def recorded(func, items, **options):
        batches.append([len(batch) for batch in items])
        return real_map(func, items, **options)

    monkeypatch.setattr(boot, "parallel_map", recorded)
    fit = bc.fit(apple, "power_floor", "hellaswag", "acc_norm", tpr=20)
    n = boot.BATCHED_OVER_WORKERS
    alone = bootstrap(fit, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=n, seed=3))
    memo.clear()  # else the same replicates are the stored ones: solved again over the workers
    spread = bootstrap(fit, n_jobs=2, progress=False, uncertainty=Uncertainty(n_boot=n, seed=3))
    fewer = bootstrap(fit, n_jobs=2, progress=False, uncertainty=Uncertainty(n_boot=n - 1, seed=3))
    assert batches == [[n], [n // 2, n // 2], [n - 1]]
    np.testing.assert_allclose(alone.fitted_thetas, spread.fitted_thetas, rtol=1e-9)
    assert np.array_equal(alone.converged, spread.converged) and np.array_equal(alone.failed, spread.failed)
    np.testing.assert_allclose(fewer.fitted_thetas, alone.fitted_thetas[: n - 1], rtol=1e-9)
    assert np.isfinite(alone.fitted_thetas).all(axis=1).mean() > 0.9  # the replicates were refitted
