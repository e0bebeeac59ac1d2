"""Planning at a ratio the ladder never trained at (issue #39, item 1): the runs fitted (--tpr, --min-flops,
--max-flops) and the planned run (--forecast-tpr) are separate; the plan answers C, N and D and carries the flags
a forecast there carries."""

import json

import numpy as np
import pytest
from conftest import run_cli

import benchcast as bc
from benchcast import FitSpec, Uncertainty
from benchcast.forecasting.answers import forecast_default
from benchcast.forecasting.flags import OUTSIDE_TPR
from benchcast.forecasting.planning import plan, plan_default

BENCHMARK, METRIC, TARGET = "hellaswag", "acc_norm", 0.8  # at TPR 380: beyond the largest run, 3.8e22 FLOPs


def test_plan_data_at_a_ratio_beyond_the_ladder_answers_c_n_d_and_inverts_the_forecast(apple):
    """Every DCLM run (TPR 10-160) fitted, the planned run at TPR 380: before, no call could ask this."""
    out = plan_default(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC),
        target=TARGET,
        forecast_tpr=380,
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert np.isfinite(out.needed) and out.tpr == 380
    assert out.tokens / out.params == pytest.approx(380, rel=1e-9)
    assert 6 * out.params * out.tokens == pytest.approx(out.needed, rel=1e-9)
    assert OUTSIDE_TPR in [f.kind for f in out.flags]  # 380 is beyond the fitted 10-160, as forecast says
    assert "N = " in str(out) and "TPR 380" in str(out)
    # the plan's run, forecast back at its N and D, gives the target (a law of N and D is given N and D; the run
    # lies beyond every run, so forecast DATA fits the same runs plan does)
    assert out.needed > out.largest_run
    back = forecast_default(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC),
        params=[out.params],
        tokens=[out.tokens],
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert back.prediction[0] == pytest.approx(TARGET, abs=1e-4)
    # the ratio moves the answer: a more over-trained run of the same score needs more compute
    at_20 = plan_default(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC),
        target=TARGET,
        forecast_tpr=20,
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert OUTSIDE_TPR not in [f.kind for f in at_20.flags] and at_20.needed < out.needed


def test_plan_command_takes_the_planned_ratio_apart_from_the_runs_fitted(apple_path):
    common = ["plan", str(apple_path), "-b", BENCHMARK, "-m", METRIC, "--target", str(TARGET), "--n-boot", "0"]
    refused = run_cli(*common)
    assert refused.exit_code == 2 and "--forecast-tpr" in refused.stderr  # laws of N and D need the ratio
    done = run_cli(*common, "--forecast-tpr", "380", "--json")
    assert done.exit_code == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["tpr"] == 380 and doc["params"] > 0 and doc["tokens"] == pytest.approx(380 * doc["params"])
    assert OUTSIDE_TPR in [f["kind"] for f in doc["flags"]]
    # --tpr 20 fits the TPR-20 runs only, and the planned run may still sit elsewhere
    only_20 = json.loads(run_cli(*common, "--tpr", "20", "--forecast-tpr", "40", "--json").stdout)
    assert only_20["tpr"] == 40 and only_20["needed"] != doc["needed"]


def test_plan_of_a_fit_flags_a_ratio_outside_its_runs(apple):
    fit = bc.fit(apple, "nd", BENCHMARK, METRIC, max_flops=6e21)
    inside, beyond = (
        plan(fit, TARGET, forecast_tpr=t, uncertainty=Uncertainty(n_boot=0, levels=0.9)) for t in (20, 1000)
    )
    assert OUTSIDE_TPR not in [f.kind for f in inside.flags] and OUTSIDE_TPR in [f.kind for f in beyond.flags]
    assert beyond.tokens / beyond.params == pytest.approx(1000) and beyond.needed > inside.needed
    with pytest.raises(bc.BenchcastError, match="forecast-tpr"):
        plan(
            bc.fit(apple, "power", BENCHMARK, METRIC, tpr=20),
            TARGET,
            forecast_tpr=380,
            uncertainty=Uncertainty(n_boot=0, levels=0.9),
        )


def test_recommend_places_its_target_at_the_planned_ratio(apple):
    common = {"target_flops": 1e23, "uncertainty": Uncertainty(n_boot=0, levels=0.9)}
    at_380 = (
        bc.recommend(apple, FitSpec("power", BENCHMARK, metric=METRIC), forecast_tpr=380, **common)
        .forecast.to_frame()
        .iloc[0]
    )
    assert at_380["tpr"] == pytest.approx(380) and OUTSIDE_TPR in [f.kind for f in at_380["flags"]]
    with pytest.raises(bc.BenchcastError, match="own ratio"):
        bc.recommend(
            apple,
            FitSpec("power", BENCHMARK, metric=METRIC),
            forecast_tpr=380,
            target_params=7e9,
            target_tokens=4e12,
            uncertainty=Uncertainty(n_boot=0, levels=0.9),
        )


# -- item 2: one FLOPs convention, a function of the run ----------------------------------------------------------


def _ladder_with_a_falling_convention():
    """The bundled ladder with FLOPs / (6 N D) falling with N as a real ladder's does: 1.67 at its smallest run, 1.15
    at its largest (the issue's public ladder's range)."""
    from benchcast.data.example import load_example

    table = load_example()
    n = table["params"].to_numpy(float)
    ratio = 1.67 * (n / n.min()) ** -0.07
    return table.assign(flops=ratio * 6 * n * table["tokens"].to_numpy(float)), n.min()


def test_a_planned_run_is_placed_by_the_trend_of_the_files_flops_per_6nd_and_plan_inverts_it():
    from benchcast.forecasting.targets import flops_convention

    table, smallest = _ladder_with_a_falling_convention()
    convention = flops_convention(table)
    assert convention.slope == pytest.approx(-0.07, abs=1e-9) and convention.ratio(smallest) == pytest.approx(1.67)
    far = 7e9  # beyond the ladder's largest model: the ratio extrapolated, and the words say how far
    assert convention.ratio(far) == pytest.approx(1.67 * (far / smallest) ** -0.07, rel=1e-9)
    assert "extrapolated" in convention.at(far) and "log-linear in N" in convention.words
    fc = forecast_default(
        table,
        FitSpec("power", "arc_easy", metric="acc_norm"),
        params=[far],
        tokens=[far * 300],
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert fc.runs.flops[0] == pytest.approx(convention.ratio(far) * 6 * far * far * 300, rel=1e-9)
    assert any("extrapolated" in note for note in fc.notes)
    given = forecast_default(
        table,
        FitSpec("power", "arc_easy", metric="acc_norm"),
        params=[far],
        tokens=[far * 300],
        flops_per_6nd=1.1,
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert given.runs.flops[0] == pytest.approx(1.1 * 6 * far * far * 300, rel=1e-12)  # the override, one ratio
    # plan places its run by the same rule: its C, N and D agree, and forecast back at N and D gives the target
    target = float(fc.prediction[0])
    out = plan_default(
        table,
        FitSpec("power", "arc_easy", metric="acc_norm"),
        target=target,
        forecast_tpr=300,
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert out.needed == pytest.approx(convention.ratio(out.params) * 6 * out.params * out.tokens, rel=1e-9)
    assert out.params == pytest.approx(far, rel=1e-3)  # the same run, to the plan's precision in compute
    assert any("r(N) x 6 N D" in note and "r = " in note for note in out.notes)  # the plan says how it placed it
    # the trend extrapolated to 1e12 parameters gives r = 0.783: below 6 N D and the trend at every fitted size, which the
    # forecast's placement now says (it placed OLMo's 400B at 0.68 x 6 N D with only "extrapolated" beside it)
    huge = forecast_default(
        table,
        FitSpec("power", "arc_easy", metric="acc_norm"),
        params=[far, 1e12],
        tokens=[far * 300, 3e14],
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    (placed,) = [note for note in huge.notes if "planned runs placed" in note]
    assert placed.count("below 6 N D and the trend at every fitted size") == 1 and "r = 0.783 at N = 1e+12" in placed


# -- item 3: backtests at the question's distance --------------------------------------------------------------


def test_bench_and_backtest_hold_out_the_larger_models(tmp_path):
    """--holdout-params N: fit the models smaller than N, forecast the larger ones, on bench and backtest alike."""
    from benchcast.data.example import load_example

    table = load_example()
    path = tmp_path / "ladder.csv"
    table.to_csv(path, index=False)
    args = ["bench", "--data", str(path), "-b", "arc_easy:acc_norm", "-l", "power", "-s", "power", "--n-boot", "10"]
    done = run_cli(*args, "--holdout-params", "1e9", "-j", "1", "--json")
    assert done.exit_code == 0, done.stderr
    (row,) = json.loads(done.stdout[done.stdout.index("[") :])
    larger = table[(table["params"] >= 1e9) & (table["benchmark"] == "arc_easy") & (table["metric"] == "acc_norm")]
    assert row["n_test"] == larger["run"].nunique()  # every larger model, whatever its compute
    assert row["cutoff"] == pytest.approx(table.loc[table["params"] < 1e9, "flops"].max())
    bt = bc.backtest(table, bc.FitSpec("power", "arc_easy", "acc_norm"), holdout_params=1e9)
    held = bt.predictions[bt.predictions["side"] == "test"]
    assert bt.protocol == "params" and set(held["run"]) == set(larger["run"])
    assert bt.fit.points["params"].max() < 1e9 and bt.threshold == pytest.approx(bt.fit.diagnostics.flops_max)
    refused = run_cli("backtest", str(path), "-b", "arc_easy", "--holdout-params", "1e9", "--threshold", "1e20")
    assert refused.exit_code == 2 and "--threshold" in refused.stderr


def test_bench_on_a_multi_tpr_ladder_benches_the_forecasters_own_candidates(apple_path, tmp_path):
    common = [
        "bench",
        "--data",
        str(apple_path),
        "-b",
        "arc_easy:acc_norm",
        "--n-boot",
        "10",
        "--interval",
        "bootstrap",
    ]
    done = run_cli(*common, "--threshold", "6e21", "-j", "2", "--json")
    assert done.exit_code == 0, done.stderr
    strategies = {row["strategy"].split("[")[0] for row in json.loads(done.stdout[done.stdout.index("[") :])}
    assert {"nd_floor", "power_floor_tpr", "power"} <= strategies  # the candidates beside the simplest alternative


def test_a_backtest_like_the_target_reaches_as_far_as_the_ladder_allows(apple, apple_path):
    """LikeTarget / bench --like-target: the largest runs and the highest TPRs held out, so that the backtest reaches
    beyond its fitted runs about as far as a 7B run on 4T tokens (TPR 571) lies beyond DCLM's ladder (TPR 10-160)."""
    from benchcast.fitting.spec import design

    rows, _ = design(apple, bc.FitSpec("power", BENCHMARK, METRIC))
    target = bc.LikeTarget(6 * 7e9 * 4e12, 4e12 / 7e9)
    (split,) = target.split(rows)
    train, test = split.train, split.test
    asked_c = np.log10(target.flops / rows["flops"].max())
    asked_t = np.log10(target.tpr / rows["tpr"].max())
    got_c = np.log10(rows["flops"].max() / rows.loc[train, "flops"].max())
    got_t = np.log10(rows["tpr"].max() / rows.loc[train, "tpr"].max())
    assert got_c == pytest.approx(asked_c, abs=0.1) and got_t == pytest.approx(np.log10(4), abs=0.01)  # 160 -> 40
    assert abs(got_t - asked_t) < abs(np.log10(2) - asked_t)  # the ratio nearest the asked distance, not 80
    assert (rows.loc[test, "tpr"] > 41).sum() == (rows["tpr"] > 41).sum() and train.sum() >= target.min_train
    assert f"{got_c:.2f} decades of compute" in target.reach(rows)
    with pytest.raises(bc.BenchcastError, match="keeps at least 1000 runs"):  # refused, not fitted on fewer
        bc.LikeTarget(target.flops, target.tpr, min_train=1000).split(rows)
    args = ["bench", "--data", str(apple_path), "-b", f"{BENCHMARK}:{METRIC}", "-l", "power", "-s", "power"]
    done = run_cli(*args, "--n-boot", "10", "--like-target", "7e9", "4e12", "-j", "1")
    assert done.exit_code == 0, done.stderr
    assert "the backtest reaches" in " ".join(done.stdout.split())


def test_backtest_like_the_target_holds_out_what_the_splitter_holds_out(apple, apple_path):
    """backtest --like-target N D (#39 item 3 on backtest too): the held-out runs are LikeTarget's, placed by the
    file's FLOPs convention, and the output says how far the split reaches."""
    from benchcast.evaluation.backtest import backtest
    from benchcast.fitting.spec import design

    spec = bc.FitSpec("nd_floor", BENCHMARK, METRIC, min_flops=3e18)
    done = backtest(apple, spec, like_target=(13e9, 5e12))
    rows, _ = design(apple, bc.FitSpec("nd_floor", BENCHMARK, METRIC))  # every run: min_flops limits the fit only
    target = bc.LikeTarget(6 * 13e9 * 5e12, 5e12 / 13e9)  # DCLM's FLOPs are 6 N D
    (split,) = target.split(rows)
    cut, test = split.label, split.test
    assert done.protocol == "like-target" and done.metrics["reach"] == target.reach(rows)
    held = done.predictions[done.predictions["side"] == "test"]
    assert set(held["run"]) == set(rows.loc[test, "run"]) and not set(held["run"]) & set(done.fit.points["run"])
    assert done.threshold <= cut and (rows.loc[test, "tpr"] > 150).any()  # TPR 160 among the held-out runs
    args = ["backtest", str(apple_path), "-b", BENCHMARK, "-m", METRIC, "-l", "nd_floor", "--min-flops", "3e18"]
    shown = run_cli(*args, "--like-target", "13e9", "5e12", "--n-boot", "0")
    assert shown.exit_code == 0 and "split like the target: the backtest reaches" in " ".join(shown.stdout.split())
    both = run_cli(*args, "--like-target", "13e9", "5e12", "--holdout-params", "5e9")
    assert both.exit_code == 2 and "--holdout-params" in both.stderr
    with pytest.raises(bc.BenchcastError, match="not both"):
        backtest(apple, spec, like_target=(13e9, 5e12), holdout_params=5e9)
    unsized = rows.assign(tpr=np.where(rows["run"] == rows["run"].iloc[0], np.nan, rows["tpr"]))
    with pytest.raises(bc.BenchcastError, match="1 of .* runs have no tokens per parameter"):
        target.split(unsized)  # refused, not a raw error from an empty maximum
