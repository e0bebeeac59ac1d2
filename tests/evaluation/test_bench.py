"""bench: splits that never show a strategy a run above its cutoff, and metrics on hand-computed cases."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

import benchcast as bc
from benchcast.data.example import example_path, load_example
from benchcast.evaluation.backtest import backtest
from benchcast.evaluation.bench import Dataset, FitCache, bench, leaderboard, make_cells, metrics
from benchcast.evaluation.strategies import parse_strategy


def split_for(data, benchmark, metric, cutoff=None):
    """(training table, held-out rows) of one benchmark in the data set's split at ``cutoff`` (default: the first)."""
    cells, _ = make_cells([data])
    return next(
        (c.train, c.held)
        for c in cells
        if (c.benchmark, c.metric) == (benchmark, metric) and (cutoff is None or c.cutoff == cutoff)
    )


CUTOFF = 2e20
STRATEGIES = ["power", "power[bootstrap]", "select", "ensemble"]


@pytest.fixture(scope="module")
def example():
    return load_example()


def dataset(table, cutoffs=(CUTOFF,)):
    return Dataset("example", table, (("arc_easy", "acc_norm"), ("hellaswag", "acc_norm")), cutoffs, tpr=20.0)


def test_split_holds_out_every_run_above_the_cutoff(example):
    data = dataset(example)
    train, held = split_for(data, "arc_easy", "acc_norm", CUTOFF)
    assert train["flops"].max() <= CUTOFF and (held["flops"] > CUTOFF).all()
    everything = example[(example["benchmark"] == "arc_easy") & (example["metric"] == "acc_norm")]
    assert len(held) == int((everything["flops"] > CUTOFF).sum()) > 0
    data_min = Dataset("example", example, data.benchmarks, (CUTOFF,), tpr=20.0, min_flops=1e18)
    assert split_for(data_min, "arc_easy", "acc_norm", CUTOFF)[0]["flops"].min() >= 1e18


def test_no_strategy_sees_a_held_out_score(example):
    """By construction: scrambling every score above the cutoff changes no forecast and no interval."""
    kwargs = {
        "laws": ("power", "power_floor"),
        "candidates": ("power", "power_floor"),
        "uncertainty": bc.Uncertainty(10),
        "n_jobs": 1,
        "progress": False,
    }
    before = bench([dataset(example)], STRATEGIES, **kwargs)
    scrambled = example.copy()
    above = scrambled["flops"] > CUTOFF
    scrambled.loc[above, "value"] = np.random.default_rng(1).uniform(0.3, 0.9, int(above.sum()))
    after = bench([dataset(scrambled)], STRATEGIES, **kwargs)
    cols = ["prediction", "lower50", "upper50", "lower90", "upper90"]
    assert len(before.predictions) == len(after.predictions) > 0
    # bit for bit: the claim is that the held-out values never enter the forecast (same runs, same arithmetic)
    np.testing.assert_array_equal(before.predictions[cols].to_numpy(), after.predictions[cols].to_numpy())
    assert not np.allclose(before.predictions["true"], after.predictions["true"])
    # the exact power law of the example forecasts well, and every strategy reports every cell
    rows = before.rows
    assert set(rows["strategy"]) == set(STRATEGIES) and (rows["status"] == "ok").all()
    assert (rows.loc[rows["strategy"] == "power", "mre"] < 5).all()
    assert set(rows.columns) >= {
        "dataset",
        "benchmark",
        "metric",
        "strategy",
        "cutoff",
        "n_test",
        "mae",
        "mre",
        "mre_usable",
        "coverage50",
        "coverage90",
        "width90",
        "decades",
    }


def test_metrics_hand_computed():
    true = np.array([0.5, 0.4, 0.8, 0.2])
    predicted = np.array([0.55, 0.4, 0.6, np.nan])  # the last point has no forecast
    usable = np.array([True, False, True, True])
    intervals = {
        0.5: (np.array([0.52, 0.3, 0.5, 0.1]), np.array([0.6, 0.5, 0.7, 0.3])),
        0.9: (np.array([0.45, 0.3, 0.5, 0.1]), np.array([0.65, 0.5, 0.9, 0.3])),
    }
    m = metrics(true, predicted, usable, intervals)
    assert m["n_test"] == 3 and m["n_usable"] == 2
    assert m["mae"] == pytest.approx((0.05 + 0 + 0.2) / 3)
    assert m["mre"] == pytest.approx((0.1 + 0 + 0.25) / 3 * 100)
    assert m["mre_usable"] == pytest.approx((0.1 + 0.25) / 2 * 100)
    assert m["coverage50"] == pytest.approx(1 / 3)  # only 0.4 in [0.3, 0.5]
    assert m["coverage90"] == pytest.approx(1.0)
    assert m["width90"] == pytest.approx(0.2)  # median of 0.2, 0.2, 0.4


def test_leaderboard_averages_cells_and_counts_abstentions():
    base = {
        "dataset": "d",
        "metric": "acc",
        "cutoff": 1.0,
        "mre_usable": 1.0,
        "mae": 0.1,
        "coverage50": 0.5,
        "width90": 0.1,
        "decades": 0.5,
    }
    rows = pd.DataFrame(
        [
            {**base, "benchmark": "a", "strategy": "s", "status": "ok", "mre": 2.0, "coverage90": 1.0},
            {**base, "benchmark": "b", "strategy": "s", "status": "ok", "mre": 4.0, "coverage90": 0.5},
            {**base, "benchmark": "a", "strategy": "t", "status": "ok", "mre": 1.0, "coverage90": 0.8},
            {**base, "benchmark": "b", "strategy": "t", "status": "no support", "mre": np.nan, "coverage90": np.nan},
        ]
    )
    board = leaderboard(rows).set_index("strategy")
    assert board.loc["s", "mre"] == pytest.approx(3.0) and board.loc["s", "coverage90"] == pytest.approx(0.75)
    assert board.loc["s", "mre_common"] == pytest.approx(2.0)  # only benchmark a is forecast by both
    assert board.loc["t", "no_support"] == 1 and board.loc["t", "cells"] == 1


def test_bench_cli_json_and_outputs(tmp_path):
    cmd = [
        "bench",
        "--data",
        example_path(),
        "--tpr",
        "20",
        "--threshold",
        "2e20",
        "-b",
        "arc_easy:acc_norm",
        "-l",
        "power",
        "-s",
        "power",
        "-s",
        "power[bootstrap]",
        "--boot",
        "10",
        "-j",
        "1",
        "--out",
        tmp_path,
        "--json",
    ]
    proc = run_cli(*cmd)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["strategy"] for r in rows} == {"power", "power[bootstrap]"}
    assert all(r["n_test"] > 0 and r["cutoff"] == 2e20 for r in rows)
    assert (tmp_path / "bench_rows.csv").exists() and (tmp_path / "bench_extrapolation.png").exists()
    # the leaderboard as text: strategy names print as written (a second escape showed 'power\\[bootstrap]')
    text = run_cli(*cmd[:-2], tmp_path / "text")
    assert text.returncode == 0 and "power[bootstrap]" in text.stdout and "\\[" not in text.stdout
    bad = run_cli(*cmd[:1], "--preset", "nope")
    assert bad.returncode == 2 and "unknown preset" in bad.stderr


def test_presets_hold_the_issue_settings(apple_path):
    from benchcast.studies.presets import preset_dataset

    dclm = preset_dataset("apple-dclm", apple_path)
    assert len(dclm.benchmarks) == 12 and dclm.cutoffs == (6e21,) and (dclm.tpr, dclm.min_flops) == (20.0, 3e18)
    train, held = split_for(dclm, "hellaswag", "acc_norm", 6e21)
    assert len(held) == 9 and held["run"].nunique() == 9  # the 9 held-out TPR-20 runs of the issue
    c4 = preset_dataset("apple-c4", apple_path.parent / "metrics_c4_mixture.subset.csv")
    assert len(c4.benchmarks) == 8 and ("triviaqa_1shot", "exact_match") in c4.benchmarks
    with pytest.raises(bc.BenchcastError, match="unknown preset"):
        preset_dataset("apple-fineweb", apple_path)


def test_one_interval_for_every_strategy(example):
    """interval='bootstrap' benches every strategy once with the bootstrap alone: the same numbers as the
    '[bootstrap]' rows of the default run; an unknown kind is refused by the one check."""
    kwargs = {"laws": ("power", "power_floor"), "candidates": ("power", "power_floor"), "n_jobs": 1}
    kwargs["uncertainty"] = bc.Uncertainty(10)
    both = bench([dataset(example)], ["power", "power[bootstrap]"], progress=False, **kwargs)
    boot = bench([dataset(example)], ["power"], progress=False, strategy_interval="bootstrap", **kwargs)
    assert list(boot.rows["strategy"].unique()) == ["power[bootstrap]"]
    cols = ["prediction", "lower90", "upper90"]
    expected = both.predictions[both.predictions["strategy"] == "power[bootstrap]"][cols].to_numpy()
    np.testing.assert_array_equal(boot.predictions[cols].to_numpy(), expected)
    with pytest.raises(bc.BenchcastError, match="interval"):
        bench([dataset(example)], ["power"], progress=False, strategy_interval="bayes", **kwargs)


def test_a_missing_coverage_is_a_mark_and_its_reason_in_the_terminal():
    from benchcast.evaluation.bench import BenchResult

    rows = pd.DataFrame(
        [
            {
                "dataset": "d",
                "benchmark": "b",
                "metric": "acc",
                "strategy": "power",
                "cutoff": 1e21,
                "status": "ok",
                "n_test": 2,
                "mae": 0.01,
                "mre": 2.0,
                "n_usable": 2,
                "mre_usable": 2.0,
                "coverage50": np.nan,
                "coverage90": np.nan,
                "width90": np.nan,
                "decades": 0.5,
            },
            {
                "dataset": "d",
                "benchmark": "b",
                "metric": "acc",
                "strategy": "ensemble",
                "cutoff": 1e21,
                "status": "no support",
                "n_test": 2,
                "decades": 0.5,
            },
        ]
    )
    text = str(BenchResult(rows, pd.DataFrame(), leaderboard(rows), 1.0, {}))
    assert "nan" not in text and "—" in text
    assert "d, power: no held-out run has an interval" in text
    assert "d, ensemble: no cell forecast (1 without support, 0 failed)" in text


def test_split_holds_out_a_tpr_whatever_its_compute(apple_path):
    apple = bc.load(str(apple_path), "apple")
    data = Dataset("dclm", apple, (("arc_easy", "acc_norm"),), (6e21,), min_flops=3e18, holdout_tprs=(160.0,))
    train, held = split_for(data, "arc_easy", "acc_norm", 6e21)
    assert not np.isclose(train["tpr"], 160).any()
    assert train["flops"].max() <= 6e21 and train["flops"].min() >= 3e18
    at_160 = np.isclose(held["tpr"], 160)
    assert at_160.any() and (held.loc[~at_160, "flops"] > 6e21).all()
    assert (held["flops"] >= 3e18).all()
    assert set(held["tpr"].round()) == {10.0, 20.0, 40.0, 80.0, 160.0}


def test_strategy_names_are_read_once_into_values():
    from benchcast.evaluation.strategies import Combine, FixedLaw, Switch, parse_strategy
    from benchcast.studies.legacy import HOLDOUT

    assert parse_strategy("power[bootstrap]") == FixedLaw("power", "bootstrap")
    assert parse_strategy("stack", "bootstrap") == Combine("stack", "bootstrap")
    assert parse_strategy("stack", "bootstrap").name == "stack[bootstrap]" and parse_strategy("select").name == "select"
    assert parse_strategy("power[bootstrap]", "extrapolation").interval == "bootstrap"  # a suffix keeps its own
    assert parse_strategy("switch") == Switch() and parse_strategy(HOLDOUT.name, "bootstrap", (HOLDOUT,)) is HOLDOUT
    with pytest.raises(bc.BenchcastError, match="interval"):
        parse_strategy("power[bayes]")


def test_a_training_side_is_fitted_once_whichever_splits_share_it(example):
    """Two cutoffs between the same two runs split the runs alike: each law is fitted once per benchmark (the fit cache
    of one command keys a fit by its law and training runs), and both cutoffs' rows come from that one fit."""
    flops = np.sort(example["flops"].unique())
    low, high = flops[-4], flops[-3]  # no run between them
    cuts = (low * 1.01, high * 0.99)
    result = bench([dataset(example, cuts)], ["power"], uncertainty=bc.Uncertainty(10), n_jobs=1, progress=False)
    assert result.settings["fits"] == {"needed": 4, "fitted": 2}  # 2 benchmarks x 2 cutoffs, one fit per benchmark
    rows = result.rows.set_index(["benchmark", "cutoff"])
    assert (rows["status"] == "ok").all() and set(rows.index.get_level_values("cutoff")) == set(cuts)
    assert (rows.xs(cuts[0], level="cutoff")["n_test"] == rows.xs(cuts[1], level="cutoff")["n_test"]).all()


def test_bench_is_evaluate_over_the_fit_cache(example):
    """bench's per-point table is evaluate's forecast table over the one fit cache (each law fitted once, up front),
    and the evaluation results are frozen."""
    data = dataset(example)
    strategy = parse_strategy("power")
    cache = FitCache.of([data], [strategy], uncertainty=bc.Uncertainty(0), n_jobs=1, progress=False)
    assert cache.counts["fitted"] == cache.counts["needed"] == len(cache.cells)  # one law, one fit per cell
    spec = bc.FitSpec("power", "arc_easy", "acc_norm", tpr=20.0)
    frame = bc.evaluate(spec, example, data.splitter, forecaster=strategy, cache=cache)
    benched = bench([data], ["power"], uncertainty=bc.Uncertainty(0), n_jobs=1, progress=False)
    points = benched.predictions[benched.predictions["benchmark"] == "arc_easy"]
    assert list(frame["run"]) == list(points["run"]) and (frame["status"] == "ok").all()
    np.testing.assert_allclose(frame["prediction"], points["prediction"], rtol=1e-12)
    with pytest.raises(AttributeError):
        benched.rows = None  # a result is a value
    bt = backtest(example, spec, threshold=CUTOFF)
    with pytest.raises(AttributeError):
        bt.metrics = {}
