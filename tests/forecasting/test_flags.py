"""Refused and flagged forecasts (benchcast.forecasting.flags): a score outside [0, 1] never reaches a
user; a fit with few points per parameter, a parameter at a search limit and a forecast far beyond the
data are shown with a flag in every output that shows the number."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import law_table

import benchcast as bc
from benchcast import Uncertainty
from benchcast.data.example import load_example
from benchcast.evaluation.bench import Dataset, bench, leaderboard
from benchcast.evaluation.cutoff import cutoff_backtest
from benchcast.forecasting import flags as fl
from benchcast.forecasting.flags import describe
from benchcast.forecasting.targets import place, planned_runs

FLOPS = np.geomspace(1e18, 1e21, 10)


def forecast_flags(result, predicted, flops):
    """The flags of one fit's forecasts at compute ``flops``: a one-member ensemble's, placed as predict places it."""
    fits, predicted = {result.law: result}, np.atleast_1d(np.asarray(predicted, float))
    return fl.ensemble_flags(fits, {result.law: predicted}, predicted, place(planned_runs(flops=flops), fits))


@pytest.fixture(scope="module")
def above_one():
    """A bnsl fit whose parameters are replaced by ones that forecast above 1 (its asymptote a = 1.2)."""
    flops = np.geomspace(1e18, 1e21, 12)  # two points per parameter: no other flag
    table = law_table("bnsl_monotone", [0.8, -0.5, 0.05, 0.6, 1e20, 0.5], {"flops": flops}, q_rand=0.25)
    result = bc.fit(table, "bnsl", "synthetic", "acc")
    theta = np.array([1.2, -0.5, 0.05, 0.6, 1e20, 0.5])
    return replace(result, fitted=result.law_object.freeze(theta, result.spec.q_rand))


def test_a_forecast_above_one_is_refused_with_its_reason_in_json_and_table(above_one):
    point = float(above_one.predict(flops=1e22))
    assert point > 1.0  # the law's own number is not a score
    fc = bc.forecast(
        above_one, flops=[1e19, 1e22], uncertainty=Uncertainty(n_boot=10, interval="bootstrap", levels=0.9)
    )
    doc = json.loads(json.dumps(fc.to_dict()))
    assert doc["prediction"][1] is None and doc["lower"][1] is None and doc["upper_mean"][1] is None
    assert doc["prediction"][0] == pytest.approx(float(above_one.predict(flops=1e19)))
    refusal = doc["flags"][1][0]
    assert refusal["kind"] == fl.OUTSIDE_RANGE and refusal["refused"] is True
    assert f"{point:.4g}" in refusal["reason"] and "outside [0, 1]" in refusal["reason"]
    assert not any(f["refused"] for f in doc["flags"][0])
    text = str(fc)
    assert "refused: outside [0, 1]" in text and "(no number given)" in text
    assert fl.short(fc.to_frame()["flags"].iloc[1]) == "refused: outside [0, 1]"
    assert fc.to_frame()["prediction"].isna().tolist() == [False, True]


def test_a_fit_with_fewer_than_two_points_per_parameter_is_flagged():
    """power_floor has 3 free parameters: 5 points (fewer than 6) are flagged, 6 are not."""
    theta = [3000.0, 0.2, 0.2]
    five = bc.fit(law_table("power_floor", theta, {"flops": FLOPS[:5]}, q_rand=0.25), "power_floor", "synthetic", "acc")
    six = bc.fit(law_table("power_floor", theta, {"flops": FLOPS[:6]}, q_rand=0.25), "power_floor", "synthetic", "acc")
    assert [f.kind for f in fl.fit_flags(five)] == [fl.FEW_POINTS]
    assert "3 parameters to 5 points" in fl.fit_flags(five)[0].reason
    assert not fl.fit_flags(five)[0].refuses
    assert fl.fit_flags(six) == ()
    fc = bc.forecast(five, flops=2e18, uncertainty=Uncertainty(n_boot=10, interval="bootstrap", levels=0.9))
    # 2e18: inside the runs; 5 of the 10 refits on 5 points fail, so the interval rests on the other 5
    assert fl.short(fc.to_frame()["flags"].iloc[0]) == (
        f"flagged: {fl.FEW_POINTS}, {fl.INTERPOLATION}, {fl.FEW_REPLICATES}"
    )
    assert (
        f"interval from {10 - fc.meta.failed_refits} of 10 replicates: {fc.meta.failed_refits} refits failed"
        in describe(fc.to_frame()["flags"].iloc[0])
    )
    assert np.isfinite(fc.prediction[0])  # flagged, not refused: the number is shown


def test_far_beyond_the_data_is_flagged_past_the_threshold():
    result = bc.fit(law_table("power", [5000.0, 0.19], {"flops": FLOPS}, q_rand=0.25), "power", "synthetic", "acc")
    top = float(result.diagnostics.flops_max)
    near, far = top * 10 ** (fl.MAX_DECADES_BEYOND - 0.01), top * 10 ** (fl.MAX_DECADES_BEYOND + 0.01)
    flags = forecast_flags(result, result.predict(flops=[near, far]), [near, far])
    assert flags[0] == () and [f.kind for f in flags[1]] == [fl.FAR_BEYOND]


def test_a_parameter_at_a_search_limit_is_flagged_in_the_cutoff_table():
    """A power law whose exponent (12) lies past its search range [0, 10]: converged, and flagged."""
    table = law_table("power", [1e216, 12.0], {"flops": np.geomspace(1e18, 1.3e18, 8)}, q_rand=0.0)
    cut = cutoff_backtest(table, bc.FitSpec("power", "synthetic", "acc", q_rand=0.0), progress=False)
    assert len(cut) > 0
    assert (cut["at_search_limit"] == "alpha").all()
    # each held-out run is flagged at the search limit (and, its N fixed, at a TPR beyond the fitted runs')
    assert (cut["flags"] == f"flagged: {fl.SEARCH_LIMIT}, {fl.OUTSIDE_TPR}").all() and not cut["refused"].any()
    assert cut["flag_reasons"].str.contains("flagged: power: alpha at a search limit").all()
    assert cut["converged"].all()  # the solver stopped: the flag says what converged does not
    assert cut.to_dict()["cutoffs"][0]["at_search_limit"] == "alpha"
    assert "flagged: at search limit" in str(cut) and "power: alpha at a search limit" in str(cut)


def test_the_leaderboard_keeps_a_flagged_cell_in_its_means_and_counts_it():
    base = {"dataset": "d", "metric": "acc", "cutoff": 1.0, "mre_usable": 1.0, "mae": 0.1, "coverage50": 0.5}
    base |= {"coverage90": 0.9, "width90": 0.1, "decades": 0.5}
    rows = pd.DataFrame(
        [
            {**base, "benchmark": "a", "strategy": "s", "status": "ok", "mre": 2.0, "flagged": False},
            {**base, "benchmark": "b", "strategy": "s", "status": "ok", "mre": 40.0, "flagged": True},
            {**base, "benchmark": "c", "strategy": "s", "status": "refused: x", "mre": np.nan, "flagged": True},
        ]
    )
    rows["refused"] = rows["status"] == "refused: x"  # bench's rows say it as a flag, not in a string to re-parse
    rows = rows[list(rows)]
    board = leaderboard(rows).set_index("strategy")
    assert board.loc["s", "mre"] == pytest.approx(21.0)  # the flagged cell's 40 % counts; the refused has no number
    assert (board.loc["s", "cells"], board.loc["s", "flagged"], board.loc["s", "refused"]) == (2, 1, 1)


def test_bench_flags_every_cell_far_beyond_its_data(monkeypatch):
    """With the distance threshold at 0 every held-out forecast is 'far beyond': bench still forecasts each
    cell, shows its flags, and keeps it in the leaderboard's means (counted in ``flagged``)."""
    data = Dataset("example", load_example(), (("arc_easy", "acc_norm"),), (2e20,), tpr=20.0)
    options = {
        "laws": ("power",),
        "candidates": ("power",),
        "uncertainty": Uncertainty(0),
        "n_jobs": 1,
        "progress": False,
    }
    plain = bench([data], ["power"], **options)
    assert plain.leaderboard["flagged"].tolist() == [0] and plain.leaderboard["cells"].tolist() == [1]
    monkeypatch.setattr(fl, "MAX_DECADES_BEYOND", 0.0)
    flagged = bench([data], ["power"], **options)
    row = flagged.rows.iloc[0]
    assert row["status"] == "ok" and bool(row["flagged"])
    assert "decades of compute beyond the largest fitted run" in row["flags"]
    assert flagged.leaderboard["flagged"].tolist() == [1] and flagged.leaderboard["cells"].tolist() == [1]
    assert flagged.leaderboard["mre"].iloc[0] == pytest.approx(plain.leaderboard["mre"].iloc[0], rel=1e-6)
    assert flagged.predictions["flags"].str.startswith("flagged").all()
    # bit for bit: a flag only labels the forecast; the number is the same computation
    np.testing.assert_array_equal(flagged.predictions["prediction"], plain.predictions["prediction"])


def test_a_strategy_with_a_member_outside_one_is_refused(above_one):
    """recommend's and forecast DATA's forecast (Ensemble.predict): no number, the reason instead."""
    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.forecasting.ensemble import Ensemble
    from benchcast.forecasting.forecast import Forecast

    strategy = Ensemble.of_fit(above_one)
    made = strategy.predict([1e22], Uncertainty(0, interval="bootstrap"))
    row = made.records()[0]
    assert np.isnan(made.prediction[0]) and row["prediction"] is None
    assert row["flags"].startswith("refused: bnsl forecasts 1.")
    kept_made = strategy.predict([1e19], Uncertainty(0, interval="bootstrap"))
    kept = kept_made.records()[0]
    assert kept["prediction"] == pytest.approx(float(above_one.predict(flops=1e19)))
    assert kept["flags"].startswith("flagged: inside the fitted runs")  # not refused: an interpolation
    shown = Forecast.concat([kept_made, made])
    text = str(shown)
    assert "refused" in text and "outside [0, 1]" in text
    assert json.loads(json.dumps(shown.to_dict()))["forecasts"][1]["prediction"] is None


def test_a_forecast_clipped_into_0_1_is_refused_like_one_outside_it(apple):
    """A two-stage law clips its unbounded second stage to [0, 1] (quietly in bench's workers): the 1.0 it
    then gives is a number outside [0, 1] all the same, refused with the law's reason, never a score."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bc.fit(apple, "two_stage_linear", "arc_easy", "acc_norm", tpr=20)
    theta = result.fitted.vector.copy()
    theta[result.law_object.param_names.index("a")] += 1.0  # stage 2 now above 1 everywhere
    shifted = replace(result, fitted=result.law_object.freeze(theta, result.spec.q_rand))
    with pytest.warns(bc.errors.FitWarning, match="clipped"):
        point = shifted.predict(flops=np.array([1e21]))
    assert point[0] == 1.0  # the clipped number
    flags = forecast_flags(shifted, point, [1e21])
    assert fl.refused(flags[0]) and flags[0][0].kind == fl.OUTSIDE_RANGE and "clipped" in flags[0][0].reason
    unshifted = forecast_flags(result, result.predict(flops=np.array([1e21])), [1e21])
    assert [f.kind for f in unshifted[0]] == [fl.AT_FITTED_RUN]  # not refused (1e21 is a fitted run)


def test_an_infinite_forecast_is_refused_and_no_forecast_is_not_flagged():
    """inf (an overflowing law) is outside [0, 1] like any other number there; nan is no forecast at all."""
    for value in (np.inf, -np.inf):
        (flag,) = fl.value_flags("bnsl", value)
        assert flag.refuses and flag.kind == fl.OUTSIDE_RANGE
    assert fl.value_flags("bnsl", np.nan) == ()
    assert np.isnan(fl.withhold([np.inf], [fl.value_flags("bnsl", np.inf)])[0])


@pytest.mark.filterwarnings("error")
def test_the_leaderboard_reads_cells_never_flagged_as_unflagged():
    """Where no cell was forecast, ``flagged`` is an all-NaN float column: it reads as False (no pandas
    fill-value warning, an error in later pandas)."""
    base = {"dataset": "d", "metric": "acc", "cutoff": 1.0, "strategy": "s", "flagged": np.nan}
    base |= dict.fromkeys(("mre", "coverage50", "coverage90"), np.nan)
    rows = pd.DataFrame([{**base, "benchmark": b, "status": "no support"} for b in ("a", "b")])
    board = leaderboard(rows).set_index("strategy")
    assert (board.loc["s", "cells"], board.loc["s", "no_support"], board.loc["s", "flagged"]) == (0, 2, 0)


def test_a_protocol_s_premise_is_listed_but_not_counted_as_a_flag():
    """bench --holdout-tpr: every held-out run lies outside the fitted TPRs by construction."""
    outside = fl.Flag(fl.OUTSIDE_TPR, "target TPR 160 lies outside the fitted runs' TPR (10 .. 80)", False)
    far = fl.Flag(fl.FAR_BEYOND, "1.6 decades of compute beyond the largest fitted run", False)
    premise = fl.cell_flags([(outside,), (outside,)], premise=(fl.OUTSIDE_TPR,))
    assert not premise["flagged"] and "TPR 160" in premise["flags"]
    # listed as what it is: a cell marked unflagged beside "flagged: target TPR ..." read as a contradiction
    assert premise["flags"] == "the split's premise, not a flag: " + outside.reason
    # bench's per-point table words a point's flags the same way
    assert fl.describe((outside, far), (fl.OUTSIDE_TPR,)) == f"{far}; the split's premise, not a flag: {outside.reason}"
    assert fl.cell_flags([(outside,), (outside,)])["flagged"]  # elsewhere it is a flag like any other
    assert fl.cell_flags([(outside,), (outside, far)], premise=(fl.OUTSIDE_TPR,))["flagged"]


def test_an_interval_from_few_replicates_is_flagged_with_its_counts():
    from benchcast.forecasting.flags import FEW_REPLICATES, refit_flags

    assert refit_flags(200, 150) == () and refit_flags(0, 0) == ()  # 150 of 200 left (a quarter lost): not flagged
    (flag,) = refit_flags(200, 48)
    assert flag.kind == FEW_REPLICATES and not flag.refuses
    assert flag.reason == "interval from 48 of 200 replicates: 152 replicates lost"
    (flag,) = refit_flags(200, 48, {"power": (152, 0)})
    assert flag.reason == "interval from 48 of 200 replicates: 152 refits failed"
    # two members: the replicates left are the blend's, of the 200 asked for, and each member's failures are named
    (flag,) = refit_flags(200, 98, {"power": (90, 20), "nd": (60, 0)})
    assert flag.reason == (
        "interval from 98 of 200 replicates: power: 90 refits failed, 20 did not converge; nd: 60 refits failed"
    )


def test_an_ensemble_s_refit_flag_counts_the_blended_replicates_of_n_boot():
    """Two members at 20 replicates, each losing a different 8: the interval is read from the blended draws, 12 of
    20 (not "24 of 40", the members' refits added up)."""
    from benchcast.fitting.spec import FitSpec
    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.forecasting.ensemble import Ensemble

    table = law_table("power", [5000.0, 0.19], {"flops": np.geomspace(1e18, 1e21, 12)}, q_rand=0.25, noise=0.003)
    ens = Ensemble("ensemble", laws=["power", "power_floor"]).fit(
        table, FitSpec("power", "synthetic", "acc"), progress=False
    )
    unc = Uncertainty(20, interval="bootstrap")
    for i, law in enumerate(ens.weights_):
        made = ens._boot(law, unc)
        lost = np.zeros(20, bool)
        lost[8 * i : 8 * i + 8] = True
        ens._boots[(law, 20, unc.seed)] = replace(made, failed=made.failed | lost)
    fc = ens.predict([1e22], unc)
    (flag,) = [f for f in fc.flags[0] if f.kind == fl.FEW_REPLICATES]
    left = int(flag.reason.split(" of ")[0].split()[-1])
    assert left <= 20 and "of 20 replicates" in flag.reason
    assert flag.reason == "interval from 12 of 20 replicates: power: 8 refits failed; power_floor: 8 refits failed"


def test_a_ladder_that_never_leaves_chance_is_flagged_for_no_rise(apple, c4_path):
    """C4's GSM8K (every run within chance + 0.05) is flagged; DCLM's GSM8K, whose largest runs rise, and C4's
    ARC-Easy are not; the reason names the runs and their best score."""
    c4 = bc.load(c4_path, "apple")
    flat = bc.fit(c4, "bnsl_monotone", "gsm8k_cot_llama", "exact_match", tpr=20)
    (flag,) = [f for f in fl.fit_flags(flat) if f.kind == fl.NO_RISE]
    best = float(flat.points["value"].max())
    assert f"best {best:.3g}" in flag.reason and "largest fitted runs all score within chance + 0.05" in flag.reason
    assert not flag.refuses
    for table, benchmark, metric in ((apple, "gsm8k_cot_llama", "exact_match"), (c4, "arc_easy", "acc_norm")):
        rising = bc.fit(table, "bnsl_monotone", benchmark, metric, tpr=20)
        assert fl.NO_RISE not in [f.kind for f in fl.fit_flags(rising)]


def test_forecasts_of_one_benchmark_that_fall_as_k_grows_are_flagged_in_pairs():
    """Each k is fitted on its own: where a larger k's forecast lies below a smaller k's at one run, both rows say so
    (the DCLM HumanEval forecasts at 1e23 printed pass@64 0.8031 under pass@32 0.8209 without a word); a rise, a fall
    within rounding and a point neither forecasts stay unflagged."""
    flags = fl.falls_across_k([1, 8, 32], [[0.5, 0.6, 0.3], [0.7, 0.55, 0.31], [0.69, 0.8, np.nan]])
    kinds = [[[f.kind for f in point] for point in row] for row in flags]
    assert kinds == [
        [[], [fl.ACROSS_K], []],
        [[fl.ACROSS_K], [fl.ACROSS_K], []],
        [[fl.ACROSS_K], [], []],
    ]
    assert "pass@32 0.69 < pass@8 0.7" in flags[2][0][0].reason and not flags[2][0][0].refuses
    assert fl.falls_across_k([1, 8], [[0.5], [0.4996]]) == [[()], [()]]  # 4e-4 down: rounding, not a fall


def test_consistent_in_k_flags_only_one_benchmark_at_several_k_of_the_same_runs():
    from benchcast.forecasting.answers import consistent_in_k
    from benchcast.forecasting.forecast import make_forecast

    runs = planned_runs(flops=[1e23, 1e24])

    def made(benchmark, metric, prediction, at=runs):
        return make_forecast(benchmark, "ensemble", at, np.array(prediction), [], Uncertainty(n_boot=0), metric=metric)

    answers = [
        made("humaneval-py", "pass@32", [0.82, 0.93]),
        made("humaneval-py", "pass@64", [0.80, 0.95]),  # below pass@32 at 1e23 only
        made("mbpp", "pass@1", [0.9, 0.9]),  # another benchmark: not compared
        made("mbpp", "pass@8", [0.5, 0.5], at=planned_runs(flops=[1e21, 1e22])),  # other runs: not compared
        "a refusal",
    ]
    out = consistent_in_k(answers)
    assert [f.kind for f in out[0].flags[0]] == [fl.ACROSS_K] and out[1].flags[0][0].kind == fl.ACROSS_K
    assert out[0].flags[1] == () and out[1].flags[1] == ()
    assert out[2] is answers[2] and out[3] is answers[3] and out[4] == "a refusal"
    assert "pass@64 0.8 < pass@32 0.82" in out[1].records()[0]["flags"]  # the words every view prints


def test_plans_of_one_score_whose_compute_rises_with_k_are_flagged_and_name_their_metric():
    """plan DATA at several k of one benchmark: the compute for one score must not rise with k (DCLM's HumanEval at
    0.85 answered pass@32 1.53e23, pass@64 2.47e23, pass@128 1.31e23), and each plan names its metric (the three
    rows were three 'humaneval-py' in the table and --json)."""
    from benchcast.forecasting.answers import consistent_in_k
    from benchcast.forecasting.results import Plan

    def made(metric, needed, target=0.85):
        return Plan("humaneval-py", "ensemble", target, "flops", needed, 0.9, metric=metric)

    plans = [made("pass@32", 1.53e23), made("pass@64", 2.47e23), made("pass@128", 1.31e23), made("pass@64", 9e23, 0.9)]
    out = consistent_in_k(plans)
    assert [[f.kind for f in p.flags] for p in out] == [[fl.ACROSS_K], [fl.ACROSS_K], [], []]
    assert "pass@64 2.47e+23 FLOPs > pass@32 1.53e+23 FLOPs" in out[1].flags[0].reason
    assert out[3] is plans[3]  # another target: not compared
    assert out[0].to_dict()["metric"] == "pass@32" and out[0].to_frame()["metric"].iloc[0] == "pass@32"
    within = consistent_in_k([made("pass@32", 1.53e23), made("pass@64", 1.5301e23)])  # within a thousandth
    assert all(not p.flags for p in within)
