"""Backtest protocols (which runs land where), metrics on hand-computed cases, sweep, cutoff,
and a reduced reproduction run on the real data."""

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.evaluation.backtest import backtest, critical_threshold, cutoff_backtest, settling, split, sweep
from benchcast.evaluation.metrics import coverage, mae, mre, r2, rmse


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


def test_split_protocols():
    rows = _rows()
    train, test = split(rows, "threshold", 6e21)
    assert list(rows["run"][train]) == ["a", "b", "c", "e"] and list(rows["run"][test]) == ["d", "f"]
    train, test = split(rows, "threshold", 6e21, min_flops=5e19)
    assert list(rows["run"][train]) == ["b", "c", "e"] and "a" not in set(rows["run"][test])
    train, test = split(rows, "nd", 6e21)  # held out: C > 6e21 or the largest TPR
    assert list(rows["run"][test]) == ["d", "e", "f"] and list(rows["run"][train]) == ["a", "b", "c"]
    train, test = split(rows, "passk", 6e21, max_k=32)  # fit C < T and k <= 32
    assert list(rows["run"][train]) == ["a", "b", "e"] and list(rows["run"][test]) == ["c", "d", "f"]
    with pytest.raises(bc.BenchcastError, match="unknown protocol"):
        split(rows, "random")


def test_threshold_backtest_on_real_data(apple):
    bt = backtest(apple, bc.FitSpec("power", "arc_easy", "acc_norm"), threshold=6e21, tpr=20, min_flops=3e18)
    pred = bt.predictions
    assert (pred.loc[pred["side"] == "train", "flops"] <= 6e21).all()
    assert (pred.loc[pred["side"] == "train", "flops"] >= 3e18).all()
    assert (pred.loc[pred["side"] == "test", "flops"] > 6e21).all()
    assert set(pred["tpr"]) == {20.0}
    assert bt.metrics["n_test"] == 9 and bt.metrics["n_train"] == 40
    test = pred[pred["side"] == "test"]
    assert bt.metrics["test_mae"] == pytest.approx(np.mean(np.abs(test["predicted"] - test["true"])))
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
    assert critical_threshold(thresholds, np.ones(8, bool)) is None


def test_sweep_and_cutoff_real(apple):
    spec = bc.FitSpec("power", "arc_easy", "acc_norm")
    frame, t_crit = sweep(apple, spec, thresholds=[1e20, 1e21, 6e21], tpr=20, min_flops=3e18, progress=False)
    assert list(frame["threshold"]) == [1e20, 1e21, 6e21] and frame["test_mre"].notna().all()
    cut = cutoff_backtest(apple, spec, tpr=20, progress=False)
    assert cut["cutoff_flops"].is_monotonic_increasing
    assert (cut["extrapolation_decades"] > 0).all()
    assert cut["extrapolation_decades"].is_monotonic_decreasing
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


def test_reduced_reproduction(apple, tmp_path):
    from benchcast.evaluation.reproduce import reproduce_krajewski2025

    result = reproduce_krajewski2025(
        apple,
        tmp_path,
        n_jobs=1,
        progress=False,
        benchmarks=[("arc_easy", "acc_norm"), ("humaneval-py", "pass@1")],
        thresholds=[1e21, 6e21],
        n_boot=20,  # intervals are exercised, not calibrated, here: bnsl replicates are full cold refits
    )
    direct = result.tables["direct"]
    assert list(direct["benchmark"]) == ["arc_easy", "humaneval-py", "average"]
    assert direct["power_mre"].iloc[0] < 3.0 and direct["bnsl_points"].iloc[0] == 40
    for name in ("direct", "two_stage", "nd", "passk_compute", "power_floor", "average", "proxy", "sweep"):
        assert (tmp_path / f"{name}.csv").exists(), name
    for figure in ("direct_laws.png", "two_stage_vs_direct.png", "sweep.png"):
        assert (tmp_path / figure).stat().st_size > 5000
    floor = result.tables["power_floor"]
    assert ((floor["q_max"] > 0) & (floor["q_max"] <= 1)).all()
