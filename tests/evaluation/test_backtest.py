"""Backtest protocols (which runs land where), metrics on hand-computed cases, the threshold
sweep's grid and critical threshold, and the cutoff backtest's handling of replicate targets."""

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import law_table

import benchcast as bc
from benchcast.data.example import load_example as ladder
from benchcast.evaluation.backtest import backtest
from benchcast.evaluation.cutoff import cutoff_backtest, settling
from benchcast.evaluation.sweep import change_span, critical_threshold, sweep
from benchcast.fitting.metrics import coverage, mae, mre, r2, rmse


def test_metrics_hand_computed():
    true, pred = np.array([0.5, 0.25, 0.8]), np.array([0.6, 0.2, 0.8])
    assert mae(true, pred) == pytest.approx((0.1 + 0.05 + 0.0) / 3)
    assert mre(true, pred) == pytest.approx((0.1 / 0.5 + 0.05 / 0.25 + 0) / 3 * 100)
    assert rmse(true, pred) == pytest.approx(np.sqrt((0.01 + 0.0025) / 3))
    ss_tot = np.sum((true - true.mean()) ** 2)
    assert r2(true, pred) == pytest.approx(1 - 0.0125 / ss_tot)
    assert mre(np.array([0.0, 0.5]), np.array([0.1, 0.4])) == pytest.approx(20.0)  # zero truths skipped
    assert coverage(true, true - 0.01, np.array([0.6, 0.2, 0.9])) == pytest.approx(2 / 3)


def _rows():
    return pd.DataFrame(
        {
            "run": ["a", "b", "c", "d", "e", "f"],
            "flops": [1e19, 1e20, 6e21, 7e21, 1e20, 1e22],
            "tpr": [20, 20, 20, 20, 160, 160],
            "k": [1, 1, 1, 64, 32, 1],
        }
    )


def test_splitters_make_the_protocols_splits():
    rows = _rows()

    def sides(splitter):
        (split,) = splitter.split(rows)
        train, test = split.train, split.test
        return list(rows["run"][train]), list(rows["run"][test])

    assert sides(bc.Threshold(6e21)) == (["a", "b", "c", "e"], ["d", "f"])
    assert sides(bc.ThresholdOrTPR(6e21)) == (["a", "b", "c"], ["d", "e", "f"])  # C > 6e21 or the largest TPR
    assert sides(bc.ThresholdAndK(6e21, max_k=32)) == (["a", "b", "e"], ["c", "d", "f"])  # fit C < T and k <= 32
    assert sides(bc.AtTPR(160)) == (["a", "b", "c", "d"], ["e", "f"])
    assert sides(bc.LargestRuns(2))[1] == ["d", "f"]
    assert [split.label for split in bc.Thresholds((1e20, 6e21)).split(rows)] == [1e20, 6e21]
    with pytest.raises(bc.BenchcastError, match="parameters"):
        bc.LargerModels(1e9).split(rows)  # these rows carry no sizes: refused, not guessed
    with pytest.raises(bc.BenchcastError, match="unknown protocol"):
        backtest(ladder(), bc.FitSpec("power", "arc_easy", "acc_norm"), protocol="random")


def test_evaluate_is_the_backtest_and_splits_by_model_size():
    """backtest is evaluate's one split plus metrics: its held-out forecasts are evaluate's rows; a split by size
    fits the smaller models and forecasts the larger, with min_flops limiting the training side only."""
    table, spec = ladder(), bc.FitSpec("power", "arc_easy", "acc_norm", min_flops=5e18)
    frame = bc.evaluate(spec, table, bc.Threshold(2e20))
    bt = backtest(table, spec, threshold=2e20)
    held = frame[frame["side"] == "test"]
    np.testing.assert_allclose(held["prediction"], bt.predictions.loc[bt.predictions["side"] == "test", "prediction"])
    assert (frame.loc[frame["side"] == "train", "flops"] >= 5e18).all() and (held["flops"] > 2e20).all()
    by_size = bc.evaluate(spec, table, bc.LargerModels(1e9))
    test = by_size[by_size["side"] == "test"]
    assert len(test) and (test["params"] >= 1e9).all()
    assert (by_size.loc[by_size["fitted"], "params"] < 1e9).all()
    assert {"prediction", "lower90", "upper90", "flags", "true", "split"} <= set(by_size)


def test_threshold_backtest_on_real_data(apple):
    bt = backtest(apple, bc.FitSpec("power", "arc_easy", "acc_norm"), threshold=6e21, tpr=20, min_flops=3e18)
    pred = bt.predictions
    assert (pred.loc[pred["side"] == "train", "flops"] <= 6e21).all()
    assert (pred.loc[pred["side"] == "train", "flops"] >= 3e18).all()
    assert (pred.loc[pred["side"] == "test", "flops"] > 6e21).all()
    assert set(pred["tpr"]) == {20.0}
    assert bt.metrics["n_test"] == 9 and bt.metrics["n_train"] == 40
    test = pred[pred["side"] == "test"]
    assert bt.metrics["test_mae"] == pytest.approx(np.mean(np.abs(test["prediction"] - test["true"])))
    assert bt.metrics["test_mre"] < 3.0  # the power law forecasts arc_easy within a few percent


def test_passk_protocol_real(apple):
    bt = backtest(apple, bc.FitSpec("passk_compute", "humaneval-py", max_k=32), protocol="passk", tpr=20)
    pred = bt.predictions
    train = pred[pred["side"] == "train"]
    assert (train["k"] <= 32).all() and (train["flops"] < 6e21).all()
    assert set(pred.loc[pred["side"] == "test", "k"]) >= {64, 128}


def test_critical_threshold():
    thresholds = np.geomspace(1e19, 1e22, 8)
    success = np.array([0, 0, 0, 1, 0, 1, 1, 1], bool)
    t_crit = critical_threshold(thresholds, success)
    assert thresholds[2] < t_crit < thresholds[5]
    assert change_span(thresholds, success) == (thresholds[2], thresholds[5])
    assert critical_threshold(thresholds, np.ones(8, bool)) is None


def test_critical_threshold_only_inside_the_observed_change():
    # one failure among successes: the logistic crossing (8.4e19) lies below the grid; not reported
    thresholds = np.geomspace(1e20, 1e22, 9)
    success = np.array([1, 0, 1, 1, 1, 1, 1, 1, 1], bool)
    assert change_span(thresholds, success) == (thresholds[0], thresholds[2])
    assert critical_threshold(thresholds, success) is None
    # unsorted input gives the same answer as sorted
    order = np.array([3, 0, 8, 1, 5, 2, 7, 4, 6])
    good = np.array([0, 1, 1, 1, 1, 1, 1, 1, 1], bool)
    t_crit = critical_threshold(thresholds, good)
    assert thresholds[0] <= t_crit <= thresholds[1]
    assert critical_threshold(thresholds[order], good[order]) == pytest.approx(t_crit, rel=1e-9)


POWER = (600.0, 0.15)  # -log Q = A C^-alpha: Q from 0.30 at 1e18 to 0.74 at 1e22


def _ladder(replicate: bool = False, below_replicate: bool = False):
    flops = np.geomspace(1e18, 1e22, 12)
    extra = []
    q = float(np.exp(-POWER[0] * flops[-1] ** -POWER[1]))
    if replicate:  # a second seed at the most expensive run's compute
        extra.append(dict(run="top-rep2", params=1e9, tokens=flops[-1] / 6e9, flops=flops[-1], value=q))
    if below_replicate:  # a replicate lower down the ladder: one cutoff, not two
        q5 = float(np.exp(-POWER[0] * flops[5] ** -POWER[1]))
        extra.append(dict(run="mid-rep2", params=1e8, tokens=flops[5] / 6e8, flops=flops[5], value=q5))
    extra = [dict(r, benchmark="synthetic", metric="acc") for r in extra]
    return law_table("power", POWER, {"flops": flops}, extra_rows=extra or None), flops


def test_sweep_grid_leaves_out_thresholds_without_held_out_runs():
    table, flops = _ladder()
    spec = bc.FitSpec("power", "synthetic", "acc", q_rand=0.0)
    grid = [3e19, 3e20, 3e21, 2e22, 5e22]  # the last two are above every run: nothing held out
    result = sweep(table, spec, thresholds=grid, progress=False)
    assert list(result.table["threshold"]) == [3e19, 3e20, 3e21]
    assert [r["threshold"] for r in result.skipped] == [2e22, 5e22]
    assert all("no held-out runs" in r["skipped"] for r in result.skipped)
    assert result.table["test_mre"].notna().all()
    # noiseless power-law data: every threshold forecasts exactly, so success never changes
    assert result.table["success"].all() and result.critical is None
    assert "every threshold succeeds" in result.note
    held_out = [int((flops > t).sum()) for t in (3e19, 3e20, 3e21)]
    assert list(result.table["n_test"]) == held_out
    assert "MRE" in result.definitions["success"] and "logistic" in result.definitions["critical_threshold"]
    with pytest.raises(bc.SelectionError):  # a wrong selection is an error, not a gap in the grid
        sweep(table, bc.FitSpec("power", "nonexistent", "acc"), thresholds=grid, progress=False)
    with pytest.raises(bc.BenchcastError, match="positive finite"):
        sweep(table, spec, thresholds=[1e20, -1.0], progress=False)


def test_cutoff_holds_out_replicates_of_the_target():
    table, flops = _ladder(replicate=True, below_replicate=True)
    cut = cutoff_backtest(table, bc.FitSpec("power", "synthetic", "acc", q_rand=0.0), progress=False)
    assert (cut["n_target_runs"] == 2).all()  # the target and its replicate
    assert cut["target_flops"].iloc[0] == pytest.approx(flops[-1])
    # the last cutoff is the next compute below the target: it still extrapolates
    assert cut["cutoff_flops"].iloc[-1] == pytest.approx(flops[-2])
    assert (cut["extrapolation_decades"] > 0.3).all()
    assert cut["extrapolation_decades"].iloc[-1] == pytest.approx(np.log10(flops[-1] / flops[-2]))
    # one row per distinct compute: the replicate at flops[5] does not make a second cutoff
    assert cut["cutoff_flops"].is_unique
    assert list(cut["cutoff_flops"]) == pytest.approx(list(flops[3:-1]))  # min_points = 4 runs
    assert cut["mre"].max() < 1e-6  # noiseless data: every cutoff recovers the law


def test_sweep_and_cutoff_real(apple):
    spec = bc.FitSpec("power", "arc_easy", "acc_norm")
    result = sweep(apple, spec, thresholds=[1e20, 1e21, 6e21], tpr=20, min_flops=3e18, progress=False)
    assert list(result.table["threshold"]) == [1e20, 1e21, 6e21] and result.table["test_mre"].notna().all()
    cut = cutoff_backtest(apple, spec, tpr=20, progress=False)
    assert cut["cutoff_flops"].is_monotonic_increasing
    assert (cut["extrapolation_decades"] > 0).all()
    assert cut["extrapolation_decades"].is_monotonic_decreasing
    # the DCLM file has two 17.87B TPR-20 runs with the same compute: both are targets
    assert (cut["n_target_runs"] == 2).all()
    assert cut["extrapolation_decades"].iloc[-1] > 0.05
    settled = settling(cut, ["A", "alpha"])
    assert set(settled) == {"A", "alpha"}
    assert 0 <= settled["alpha"]["training_decades"] <= cut["training_decades"].max()


def test_settling_hand_case():
    frame = pd.DataFrame(
        {
            "cutoff_flops": [1, 10, 100, 1000],
            "training_decades": [0, 1, 2, 3],
            "extrapolation_decades": [3, 2, 1, 0.5],
            "p": [5.0, 2.0, 1.05, 1.0],
        }
    )
    out = settling(frame, ["p"])
    assert out["p"]["training_decades"] == 2 and out["p"]["final"] == 1.0


def test_backtest_sweep_and_cutoff_results_show_themselves(apple):
    """BacktestResult: the CLI's JSON keys and text, and an HTML table with the held-out forecasts;
    Sweep and CutoffResult give the JSON of their commands."""
    spec = bc.FitSpec("power", "arc_easy", "acc_norm")
    bt = backtest(apple, spec, tpr=20, min_flops=3e18)
    keys = ["law", "benchmark", "protocol", "threshold", "metrics", "params", "fit_warnings", "predictions"]
    assert list(bt.to_dict()) == keys
    html = bt._repr_html_()
    held_out = bt.predictions[bt.predictions["side"] == "test"]
    assert html.count("<tr>") == len(held_out) + 1
    assert all(f"{v:.4g}" in html for v in held_out["prediction"])
    text = str(bt)
    assert "arc_easy: threshold backtest at" in text and "power: held-out predictions" in text
    swept = sweep(apple, spec, thresholds=[1e21, 6e21], tpr=20, min_flops=3e18, progress=False)
    assert list(swept.to_dict()) == ["definitions", "sweep", "critical", "skipped", "intervals"]
    assert swept.to_dict()["intervals"].startswith("interval coverage not computed")  # no bootstrap asked
    assert (swept.to_frame()["n_boot"] == 0).all() and "--n-boot 100 adds it" in str(swept)
    assert "<table>" in swept._repr_html_() and "critical threshold" in str(swept)
    cut = cutoff_backtest(apple, spec, tpr=20, progress=False)
    assert list(cut.to_dict()) == ["law", "cutoffs", "settling", "interval"] and len(cut) == len(cut.table)
    assert cut.to_dict()["interval"] is None  # no bootstrap, no interval
    assert f"{cut.table['mre'].iloc[0]:.4g}" in cut._repr_html_() and "within 10% of the final fit" in str(cut)


def test_a_missing_coverage_is_a_mark_and_its_reason_in_the_terminal():
    """Too few runs to measure the extrapolation error: the interval is the cross-ladder prior's, and says so.
    Where a coverage does not exist (no interval) the terminal shows "—" and why, never "nan"."""
    from dataclasses import replace

    from benchcast.data.example import load_example
    from benchcast.evaluation.backtest import compare_backtests

    example = load_example()
    spec = bc.FitSpec("power", "arc_easy", "acc_norm")
    # two training runs' worth of range: no inner origin of its own, so the prior gives the error per decade; its
    # 4 distinct points are 2 per free parameter: neither flagged nor noted weakly constrained (one rule)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bc.FitWarning)
        both = compare_backtests(example, [spec], threshold=3e18, uncertainty=bc.Uncertainty(10))
    bt = both.backtests[0]
    assert np.isfinite(bt.metrics["coverage90"]) and "interval_note" not in bt.metrics
    missing = dict(bt.metrics, coverage50=np.nan, coverage90=np.nan, interval_note="no interval: (a reason)")
    both.backtests[0] = replace(bt, metrics=missing)
    text = str(both)
    assert "nan" not in text and "—" in text
    assert "no held-out run has an interval" in text and "--interval bootstrap" in text
    # the bootstrap alone gives an interval, and the title says which kind
    boot = compare_backtests(example, [spec], threshold=3e18, uncertainty=bc.Uncertainty(10, interval="bootstrap"))
    assert np.isfinite(boot.backtests[0].metrics["coverage90"])
    assert "bootstrap-only intervals" in " ".join(str(boot).split())


def test_evaluate_fits_an_unfitted_ensemble_afresh_on_each_training_side():
    """The default strategy as the forecaster: the same as an Ensemble fitted by hand to the smaller models."""
    from benchcast.forecasting.ensemble import Ensemble

    table, spec = ladder(), bc.FitSpec("power", "arc_easy", "acc_norm")
    frame, _, (meta,) = bc.evaluate(spec, table, bc.LargerModels(1e9), forecaster=bc.Ensemble(), return_models=True)
    held = frame[frame["side"] == "test"]
    by_hand = Ensemble().fit(table[table["params"] < 1e9], spec, progress=False)
    assert meta.weights == by_hand.weights_
    np.testing.assert_allclose(held["prediction"], by_hand.predict(held["flops"].to_numpy()).prediction, rtol=1e-9)


def test_cutoff_backtest_holds_its_k_to_max_k_on_both_sides():
    """A law across k fitted with max_k: neither the fitted nor the held-out rows go above it."""
    theta = [9.0, -0.19, 0.5, -0.013]
    flops, ks = np.meshgrid(np.geomspace(1e18, 3e22, 10), [1, 2, 4, 8, 16])
    table = law_table("passk_compute", theta, {"flops": flops.ravel(), "k": ks.ravel()}, metric="pass@k")
    spec = bc.FitSpec("passk_compute", "synthetic", "pass@k", max_k=4)
    result = cutoff_backtest(table, spec, n_targets=1)
    assert len(result.table) and (result.table["n_held_out"] == 3).all()  # k = 1, 2, 4 of the largest run
