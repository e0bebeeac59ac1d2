"""Extrapolation below the data and beyond the fitted k is flagged with its distance, and the interval below
the data grows with it (issue 32 item 7)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

import benchcast as bc
from benchcast import Uncertainty
from benchcast.cli import app
from benchcast.forecasting.flags import BELOW_DATA, BEYOND_K, below_data, beyond_k, ensemble_flags
from benchcast.forecasting.targets import outside_decades


@pytest.fixture(scope="module")
def arc20(apple):
    return bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21, tpr=20.0)


@pytest.fixture(scope="module")
def k5(apple):
    return bc.fit(apple, "passk_compute", "humaneval-py", tpr=20.0)


def test_the_rules_measure_the_distance_both_ways():
    assert below_data(1e15, 1e18)[0][0] == BELOW_DATA
    assert "3.00 decades of compute below the smallest fitted run (1e+18 FLOPs)" in below_data(1e15, 1e18)[0][1]
    assert below_data(1e18, 1e18) == [] and below_data(2e18, 1e18) == [] and below_data(1e15, np.nan) == []
    assert (
        beyond_k(7850, 128)[0][0] == BEYOND_K and "61.3 times the largest fitted k (128)" in beyond_k(7850, 128)[0][1]
    )
    assert beyond_k(128, 128) == [] and beyond_k(None, 128) == []
    # above the runs: log10(C / largest); inside: negative (no widening); below: log10(smallest / C)
    np.testing.assert_allclose(outside_decades([1e23, 1e20, 1e15], 1e18, 1e22), [1.0, -2.0, 3.0])


def test_a_forecast_three_decades_below_the_data_is_flagged_and_not_narrower_than_inside(arc20):
    fc = bc.forecast(arc20, flops=[1e15, 1e19], uncertainty=Uncertainty(n_boot=200, seed=0, levels=0.9))
    below, inside = fc.flags
    assert [f.kind for f in below] == [BELOW_DATA]
    assert "3.00 decades of compute below the smallest fitted run" in below[0].reason
    # a point inside the data is placed (at a fitted run), never flagged as below it
    assert [f.kind for f in inside] == ["at a fitted run"]
    width = np.asarray(fc.upper) - np.asarray(fc.lower)
    # the bootstrap alone gave [0.2910, 0.2913] at 1e15 (the curve is flat near chance): the error per decade
    # now widens it by its 3 decades, so it is wider than the interval at a run inside the data
    assert width[0] > width[1]
    assert width[0] > 0.05


def test_a_strategy_forecast_below_the_data_is_flagged(arc20):
    from benchcast.forecasting.targets import place, planned_runs

    fits = {"power": arc20}
    flags = ensemble_flags(fits, {"power": np.array([0.2911])}, [0.2911], place(planned_runs(flops=[1e15]), fits))[0]
    assert BELOW_DATA in [f.kind for f in flags]


def test_plan_for_k_beyond_the_fitted_k_is_flagged_with_the_factor(k5):
    out = bc.plan(k5, 0.8, flops=1e22, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert out.solves_for == "k" and out.needed > 128
    (flag,) = [f for f in out.flags if f.kind == BEYOND_K]
    assert f"{out.needed / 128:.3g} times the largest fitted k (128)" in flag.reason
    assert out.to_dict()["flags"][0]["kind"] == BEYOND_K
    within = bc.plan(
        k5, 0.3, flops=1e22, uncertainty=Uncertainty(n_boot=0, levels=0.9)
    )  # reached at a k inside the fitted ones: no flag
    assert within.needed <= 128 and not within.flags


def test_a_forecast_at_a_k_beyond_the_fitted_k_is_flagged(k5):
    fc = bc.forecast(k5, flops=1e22, k=1000, uncertainty=Uncertainty(n_boot=50, seed=0, levels=0.9))
    assert BEYOND_K in [f.kind for f in fc.flags[0]]
    assert not any(
        f.kind == BEYOND_K
        for f in bc.forecast(k5, flops=1e22, k=64, uncertainty=Uncertainty(n_boot=50, seed=0, levels=0.9)).flags[0]
    )


def test_plan_and_forecast_commands_print_the_distance(apple_path, tmp_path):
    runner = CliRunner()
    artifact = tmp_path / "k5.json"
    fit = runner.invoke(
        app,
        ["fit", str(apple_path), "--law", "passk_compute", "-b", "humaneval-py", "--tpr", "20", "--out", str(artifact)],
    )
    assert fit.exit_code == 0, fit.output
    out = runner.invoke(app, ["plan", str(artifact), "--target", "0.8", "--flops", "1e22", "--n-boot", "0"])
    assert out.exit_code == 0, out.output
    assert "times the largest fitted k (128)" in " ".join(out.output.split())
    doc = json.loads(runner.invoke(app, ["plan", str(artifact), "--target", "0.8", "--flops", "1e22", "--json"]).output)
    assert [f["kind"] for f in doc["flags"]] == [BEYOND_K]
    arc = tmp_path / "arc.json"
    args = ["fit", str(apple_path), "--law", "power", "-b", "arc_easy", "-m", "acc_norm", "--max-flops", "6e21"]
    assert runner.invoke(app, [*args, "--tpr", "20", "--out", str(arc)]).exit_code == 0
    below = runner.invoke(app, ["forecast", str(arc), "--flops", "1e15", "--n-boot", "100"])
    assert below.exit_code == 0, below.output
    assert "3.00 decades of compute below the smallest fitted run" in " ".join(below.output.split())


def test_a_plan_at_k_reads_the_forecast_at_that_k(k5):
    """plan --k K for a law of k: the compute where the forecast at k = K reaches the target, and the interval where
    that forecast's bounds reach it (not the forecast at the fit's own k)."""
    for k in (1, 16):
        out = bc.plan(k5, 0.3, k=k, uncertainty=Uncertainty(n_boot=30, seed=0, levels=0.9))
        assert out.solves_for == "flops" and out.reachable
        at = bc.forecast(k5, flops=out.needed, k=k, uncertainty=Uncertainty(n_boot=30, seed=0, levels=0.9))
        assert at.prediction[0] == pytest.approx(0.3, abs=1e-4)
        assert out.lower < out.needed < out.upper
    assert (
        bc.plan(k5, 0.3, k=16, uncertainty=Uncertainty(n_boot=0, levels=0.9)).needed
        < bc.plan(k5, 0.3, k=1, uncertainty=Uncertainty(n_boot=0, levels=0.9)).needed
    )  # more tries: less compute


def _where_k_stops_helping(k5) -> float:
    """The compute below which the fitted K5 law's slope in log k (beta + delta log C) turns positive."""
    _, _, beta, delta = (float(v) for v in k5.theta)
    assert delta < 0 < beta  # the premise on the DCLM HumanEval runs: the slope in log k rises as C falls
    return float(np.exp(-beta / delta))


def test_a_pass_at_k_law_that_falls_with_k_is_refused_there_not_printed(k5):
    """passk_compute (K5) fitted on HumanEval has pass@k fall with k below a compute: refused there, whatever k is
    asked (printed before as 0.000413, 0.000358, 0.000294 for k = 1, 8, 128 at 3e17, flagged only as below the data)."""
    from benchcast.forecasting.flags import FALLS_WITH_K

    turn = _where_k_stops_helping(k5)
    low, high = turn / 3, turn * 30
    no_interval = Uncertainty(n_boot=0, levels=0.9)
    falling = [float(bc.forecast(k5, flops=[low], k=k, uncertainty=no_interval).prediction[0]) for k in (1, 8)]
    assert np.isnan(falling).all()
    fc = bc.forecast(k5, flops=[low, high], k=8, uncertainty=no_interval)
    refusal, kept = fc.flags
    assert refusal[0].kind == FALLS_WITH_K and refusal[0].refuses and f"{low:.3g} FLOPs" in refusal[0].reason
    assert FALLS_WITH_K not in {f.kind for f in kept} and 0 < float(fc.prediction[1]) < 1
    # the law itself, at the same compute: pass@k non-decreasing in k above the turn, falling below it
    law = k5.fitted
    assert law.score_at(high, k=8.0) >= law.score_at(high, k=1.0)
    assert law.score_at(low, k=8.0) < law.score_at(low, k=1.0)


def test_a_plan_where_the_law_falls_with_k_is_refused(k5):
    """plan --flops asks the k needed at a compute: where the law has pass@k fall with k there is no plan (it said
    'unreachable: limit 0 as k grows' for a target pass@1 already passed); nor for a compute plan answered there."""
    turn = _where_k_stops_helping(k5)
    no_interval = Uncertainty(n_boot=0, levels=0.9)
    with pytest.raises(bc.BenchcastError, match="pass@k fall as k grows"):
        bc.plan(k5, 1e-4, flops=turn / 3, uncertainty=no_interval)
    below_turn = float(k5.fitted.score_at(turn / 2, k=8.0))  # the score the law gives at k = 8 below the turn
    with pytest.raises(bc.BenchcastError, match=re.escape(f"pass@k fall as k grows at {turn / 2:.3g} FLOPs")):
        bc.plan(k5, below_turn, k=8, uncertainty=no_interval)
    # just above the turn a k plan is answered, and a replicate that reaches the target at one attempt counts as 1
    out = bc.plan(k5, 1e-4, flops=turn * 1.1, uncertainty=Uncertainty(n_boot=20, seed=0, levels=0.9))
    assert out.needed == 1 and out.lower == 1 and out.fraction_reachable == 1


def test_a_k_past_the_search_is_not_called_above_the_limit(k5):
    """A target below the law's limit as k grows but past the k searched says so, not 'unreachable by its limit'."""
    out = bc.plan(k5, 0.99, flops=3e19, uncertainty=Uncertainty(n_boot=10, seed=0, levels=0.9))
    assert not out.reachable and out.ceiling > 0.99
    assert "within k = 1e+09 attempts" in out.message and "above the target" in out.message
    # its interval's unbounded ends are in attempts (it printed 'inf .. not within 1e40 FLOPs')
    assert "90 % interval: not within 1e+09 attempts .. not within 1e+09 attempts" in str(out)


def test_a_plan_below_the_smallest_run_has_no_interval_that_leaves_its_point_out(k5):
    """A compute plan answered below the smallest fitted run has no interval (its bounds are searched from that run
    up): it printed 1.211e+18 .. 1.211e+18 around a point of 5.4e17."""
    out = bc.plan(k5, 1e-3, k=8, uncertainty=Uncertainty(n_boot=20, seed=0, levels=0.9))
    smallest = float(k5.points["flops"].min())
    assert out.needed < smallest
    assert out.lower is None and out.upper is None
    assert "no interval: the compute needed lies below the smallest fitted run" in out.message


def test_a_law_of_k_counts_its_chance_drops_in_points_not_runs(apple):
    """passk_compute has a row per run and k: its chance filter's count is of points (it said '153 of 440 runs' of
    DCLM's 55 lbpp runs)."""
    from benchcast.forecasting.flags import NEAR_CHANCE, fit_flags

    fit = bc.fit(apple, "passk_compute", "lbpp", tpr=20.0)
    (flag,) = [f for f in fit_flags(fit) if f.kind == NEAR_CHANCE]
    rows = fit.diagnostics.n_used + fit.diagnostics.n_dropped
    assert rows > fit.points["run"].nunique()  # the premise: more rows than runs
    assert f"of {rows} points (a run's every k)" in flag.reason and "runs" not in flag.reason
