"""Targets as planned runs (issue 24, item 1): a run of N parameters trained on D tokens is forecast
with C = 6 N D and TPR = D / N; a law of N and D is given N and D, a law of compute C (and the output
says it ignores the allocation); a TPR outside the fitted runs' is flagged.

The DCLM ladder (TPR 10 to 160), arc_easy acc_norm, 20 bootstrap replicates per law.
"""

import numpy as np
import pytest

from benchcast.errors import BenchcastError
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.answers import forecast_default, recommend
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.targets import PlannedRuns, planned_runs
from benchcast.report import analyse_benchmark

BENCHMARK, METRIC, N_BOOT = "arc_easy", "acc_norm", 20
RTOL = 1e-12
# a 7B model on 4T tokens: TPR 571, far past every run of the ladder (10 .. 160)
PARAMS, TOKENS = 7e9, 4e12
FLOPS, TPR = 6.0 * PARAMS * TOKENS, TOKENS / PARAMS


def test_planned_runs_derive_compute_and_tpr():
    runs = planned_runs(params=[PARAMS, 1e9], tokens=[TOKENS, 2e10])
    np.testing.assert_array_equal(runs.flops, [1.68e23, 1.2e20])
    np.testing.assert_allclose(runs.tpr, [4000 / 7, 20.0], rtol=RTOL)
    first = runs.by_compute().record(0)
    expected = {"flops": 1.2e20, "params": 1e9, "tokens": 2e10, "tpr": 20.0, "given": "params_tokens"}
    assert first == {**expected, "flops_convention": "C = 6 N D"}
    # a run given by its compute has N and D only where a TPR places it (as FittedLaw.covariates_at splits C)
    assert planned_runs(flops=1e22).record(0)["params"] is None
    placed = planned_runs(flops=1.2e20, tpr=20.0).record(0)
    assert placed["params"] == pytest.approx(1e9, rel=RTOL) and placed["given"] == "flops"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"flops": 1e22, "params": 1e9, "tokens": 2e10}, "not both"),
        ({"flops": 1e22, "tokens": 2e10}, "not both"),
        ({"params": 1e9}, "params was given without tokens"),
        ({"tokens": 2e10}, "tokens was given without params"),
        ({"params": [1e9, 2e9], "tokens": [2e10]}, "got 2 params and 1 tokens"),
        ({}, "give the runs to forecast"),
        ({"params": 1e9, "tokens": -1.0}, "tokens must be positive and finite"),
    ],
)
def test_planned_runs_refuse_a_missing_or_contradictory_combination(arguments, message):
    with pytest.raises(BenchcastError, match=message):
        planned_runs(**arguments)


@pytest.fixture(scope="module")
def nd_strategy(apple):
    """The law of N and D (K4 nd) alone, fitted to every TPR of the ladder."""
    strategy = Ensemble("ensemble", laws=["nd"]).fit(apple, FitSpec("power", BENCHMARK, METRIC, seed=0), progress=False)
    assert strategy.ok and strategy.weights_ == {"nd": 1.0}
    return strategy


def _at(strategy, run, tpr=None, n_boot=N_BOOT, seed=0, **_):
    """The ensemble's forecast of one run, as recommend reports it."""
    runs = run if isinstance(run, PlannedRuns) else [run]
    return strategy.predict(runs, Uncertainty(n_boot, seed, levels=(0.9,)), tpr=tpr).records()[0]


def test_a_law_of_n_and_d_is_given_n_and_d(nd_strategy):
    """forecast of (N, D) = forecast of C = 6ND placed at TPR D/N, interval included. A point's draws are
    keyed by its covariates' bits, so the run is one whose split of C gives N and D back exactly: 1e9
    parameters on 4e11 tokens (TPR 400, beyond the ladder's 10 .. 160)."""
    params, tokens = 1e9, 4e11
    options = {"n_boot": N_BOOT, "seed": 0, "n_jobs": 1, "level": 0.9}
    by_size = _at(nd_strategy, planned_runs(params=params, tokens=tokens), **options)
    by_compute = _at(nd_strategy, 6 * params * tokens, tpr=tokens / params, **options)
    for key in ("prediction", "lower", "upper"):
        assert by_size[key] == pytest.approx(by_compute[key], rel=RTOL)
    assert by_size["lower"] < by_size["prediction"] < by_size["upper"]
    assert by_size["covariates"] == {"nd": "N, D"}
    assert by_compute["covariates"] == {"nd": "N, D (C split at TPR 400)"}
    assert (by_size["flops"], by_size["params"], by_size["tokens"], by_size["tpr"]) == (2.4e21, 1e9, 4e11, 400.0)
    assert by_size["given"] == "params_tokens" and by_compute["given"] == "flops"
    # TPR 400 lies beyond the ladder's runs: flagged, and a law of N and D says it extrapolates in TPR
    tpr_flag = "flagged: target TPR 400 lies outside the fitted runs' TPR (10 .. 160); nd extrapolate(s) in TPR"
    assert tpr_flag in by_size["flags"]  # one flag among the point's flags, not a second list
    assert by_size["flags"] == by_compute["flags"]
    # the allocation matters to a law of N and D: the same compute at TPR 40 (inside the runs') forecasts otherwise
    at_40 = _at(nd_strategy, 2.4e21, tpr=40.0, **options)
    assert at_40["flops"] == 2.4e21 and "TPR" not in at_40["flags"]
    assert abs(at_40["prediction"] - by_size["prediction"]) > 1e-3


def test_a_law_of_n_and_d_needs_a_size_or_a_tpr(nd_strategy):
    with pytest.raises(BenchcastError, match="give the planned run as its parameters and tokens"):
        _at(nd_strategy, FLOPS, n_boot=0)


@pytest.fixture(scope="module")
def compute_only(apple):
    """The default strategy (compute-only laws) fitted to the TPR-20 runs, forecasting (N, D) and C = 6ND."""
    common = {"uncertainty": Uncertainty(N_BOOT, 0, levels=0.9), "n_jobs": 1}
    runs = FitSpec("power", BENCHMARK, metric=METRIC, tpr=20.0)
    by_size = recommend(apple, runs, target_params=PARAMS, target_tokens=TOKENS, **common)
    by_compute = recommend(apple, runs, target_flops=FLOPS, **common)
    return by_size, by_compute


def test_a_compute_law_is_given_c_and_says_it_ignores_the_allocation(compute_only):
    by_size, by_compute = (rec.forecast.records()[0] for rec in compute_only)
    assert by_size["prediction"] == by_compute["prediction"]  # the same C: the same forecast, exactly
    # but a run at a TPR outside the fitted runs' is further from them: a wider interval (forecasting.distance)
    assert by_size["lower"] < by_compute["lower"] and by_size["upper"] > by_compute["upper"]
    ignores = "C = 6ND (ignores tokens per parameter)"
    assert by_size["covariates"] == {"power_floor": ignores, "bnsl_monotone": ignores}
    assert by_compute["covariates"] == {"power_floor": "C", "bnsl_monotone": "C"}
    tpr_flag = (
        "flagged: target TPR 571 lies outside the fitted runs' TPR (20); {} (compute only) ignore(s) the allocation"
    )
    members = ", ".join(by_size["weights"])  # in the order of their weights
    assert set(by_size["weights"]) == {"power_floor", "bnsl_monotone"} and tpr_flag.format(members) in by_size["flags"]
    assert "TPR" not in by_compute["flags"]  # its TPR is the selection's, where every fitted run is
    shown = str(compute_only[0])
    assert "For 7e+09 parameters on 4e+12 tokens (C = 1.68e+23 FLOPs, TPR 571) it forecasts" in shown
    assert f"covariates: {'; '.join(f'{law}: {ignores}' for law in by_size['weights'])}" in shown
    assert tpr_flag.format(members) in " ".join(shown.split())  # in the advice, once: the flags of its forecast


def test_forecast_of_planned_runs_is_recommends(apple, compute_only):
    """forecast_default with params/tokens: one row per run, ordered by compute, each recommend's answer."""
    out = forecast_default(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC, tpr=20.0),
        params=[PARAMS, 1e9],
        tokens=[TOKENS, 2e10],
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    assert list(out.to_frame()["flops"]) == [1.2e20, FLOPS] and list(out.to_frame()["params"]) == [1e9, PARAMS]
    row, expected = out.records()[1], compute_only[0].forecast.records()[0]
    for key in ("prediction", "lower", "upper"):
        assert row[key] == pytest.approx(expected[key], rel=RTOL)
    assert row["covariates"] == expected["covariates"] and row["flags"] == expected["flags"]
    assert "TPR" not in out.records()[0]["flags"]  # TPR 20: inside the fitted runs'
    assert out.to_frame().columns[:7].tolist() == [
        "benchmark",
        "metric",
        "forecaster",
        "flops",
        "params",
        "tokens",
        "tpr",
    ]
    assert set(out.to_frame()["metric"]) == {METRIC} and out.to_dict()["metric"] == METRIC
    assert {"prediction", "lower90", "upper90", "decades", "flags"} <= set(out.to_frame())
    assert not {"weights", "covariates", "note", "failed_refits"} & set(out.to_frame())  # per forecast: out.metas
    assert [meta.weights for meta in out.metas] == [r["weights"] for r in out.records()]  # each target its own fit
    records = out.to_dict()["forecasts"]
    assert records[1]["given"] == "params_tokens" and records[1]["tpr"] == pytest.approx(TPR, rel=RTOL)
    with pytest.raises(BenchcastError, match="not both"):
        forecast_default(
            apple,
            FitSpec("power", BENCHMARK, metric=METRIC),
            flops=[1e22],
            params=[PARAMS],
            tokens=[TOKENS],
            uncertainty=Uncertainty(n_boot=0, levels=0.9),
        )


def test_report_forecasts_a_planned_run_as_recommend_does(apple, compute_only):
    report = analyse_benchmark(
        apple,
        BENCHMARK,
        METRIC,
        target_params=[PARAMS],
        target_tokens=[TOKENS],
        tpr=20.0,
        uncertainty=Uncertainty(N_BOOT),
        n_jobs=1,
    )
    row, expected = report.forecast.records()[0], compute_only[0].forecast.records()[0]
    assert row["prediction"] == pytest.approx(expected["prediction"], rel=RTOL)
    assert row["lower90"] == pytest.approx(expected["lower"], rel=RTOL)
    assert row["upper90"] == pytest.approx(expected["upper"], rel=RTOL)
    assert (row["flops"], row["params"], row["tokens"], row["given"]) == (FLOPS, PARAMS, TOKENS, "params_tokens")
    assert row["flags"] == expected["flags"] and report.covariates == expected["covariates"]
    assert any(w.startswith("7e+09 parameters on 4e+12 tokens") and "TPR 571" in w for w in report.warnings)


def test_the_report_curve_is_drawn_at_the_planned_runs_tpr():
    """Laws of N and D draw the report's curve at the planned runs' TPR where they share one, else at 20
    (or at --forecast-tpr when given)."""
    from benchcast.report.bands import curve_tpr

    assert curve_tpr(planned_runs(params=[1e9, 2e9], tokens=[4e11, 8e11]), None) == 400.0
    assert curve_tpr(planned_runs(params=[1e9, 2e9], tokens=[4e11, 4e10]), None) == 20.0
    assert curve_tpr(planned_runs(params=[1e9], tokens=[4e11]), 40.0) == 40.0
    assert curve_tpr(planned_runs(flops=[1e22]), None) == 20.0
