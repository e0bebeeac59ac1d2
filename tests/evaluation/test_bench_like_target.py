"""bench --like-target and backtest --like-target split one target's ladder alike (issue #50, item 3)."""

from dataclasses import replace

import numpy as np
import pytest

import benchcast as bc
from benchcast.cli.bench import _split_settings
from benchcast.evaluation.backtest import _like_target as backtest_like_target
from benchcast.evaluation.bench import Dataset, make_cells
from benchcast.fitting.spec import design

BENCHMARK, METRIC = "hellaswag", "acc_norm"


def _bench_runs(table, target, min_flops):
    data = Dataset("d", table, ((BENCHMARK, METRIC),), (1.0,), min_flops=min_flops)
    split, _ = _split_settings(data, None, None, target, own=False)
    ((cell,), _) = make_cells([split])
    train = cell.train[(cell.train["benchmark"] == BENCHMARK) & (cell.train["metric"] == METRIC)]
    return set(train["run"]), set(cell.held["run"])


def _backtest_runs(table, target, min_flops):
    spec = bc.FitSpec("power", BENCHMARK, METRIC, min_flops=min_flops)
    splitter, _ = backtest_like_target(table, spec, *target)
    rows, _ = design(table, replace(spec, min_flops=None))
    (split,) = splitter.split(rows)
    split = split.within(rows["flops"].to_numpy(float), min_flops)  # evaluate's compute floor on the training side
    return set(rows.loc[split.train, "run"]), set(rows.loc[split.test, "run"])


@pytest.mark.parametrize("target", [(7e9, 4e12), (13e9, 5e12), (1.4e9, 2.8e11)])
def test_bench_and_backtest_like_target_fit_and_forecast_the_same_runs(apple, target):
    """DCLM (TPR 10-160), the same ladder with its TPR-80 runs split by rounding (80 and 79.9, as a lab's exports
    give them), and the benchmark missing its largest runs (bench split the data set's runs, backtest the benchmark's,
    before the one harness): both commands fit one set of runs and forecast one set."""
    rounded = apple.copy()
    at_80 = np.isclose(rounded["tpr"], 80, rtol=1e-3) & (rounded["params"] > rounded["params"].median())
    rounded.loc[at_80, "tokens"] *= 0.999
    rounded.loc[at_80, "tpr"] *= 0.999
    largest = apple.loc[apple["flops"] >= np.sort(apple["flops"].unique())[-4], "run"]
    missing = apple[~((apple["benchmark"] == BENCHMARK) & apple["run"].isin(set(largest)))]
    for table in (apple, rounded, missing):
        bench_train, bench_held = _bench_runs(table, target, 3e18)
        back_train, back_held = _backtest_runs(table, target, 3e18)
        assert len(bench_train) >= 6 and bench_held
        assert bench_train == back_train
        assert bench_held == back_held - {r for r in back_held if r in set(table.loc[table["flops"] < 3e18, "run"])}


def test_the_head_to_head_counts_wins_by_wis_and_mre_on_the_cells_both_forecast():
    import pandas as pd

    from benchcast.evaluation.bench_result import BenchResult, head_to_head, leaderboard

    base = {"dataset": "d", "metric": "acc", "cutoff": 1.0, "status": "ok", "coverage50": 0.5, "coverage90": 0.9}
    cells = {"a": ((1.0, 2.0), (3.0, 1.5)), "b": ((4.0, 3.0), (2.0, 2.5)), "c": ((1.0, 1.0), (1.0, 1.0))}
    rows = [
        {**base, "benchmark": b, "strategy": s, "mre": mre, "wis": wis, "flagged": s == "power"}
        for b, pair in cells.items()
        for s, (mre, wis) in zip(("ensemble", "power"), pair, strict=True)
    ]
    rows.append({**base, "benchmark": "d", "strategy": "ensemble", "status": "no support", "mre": np.nan})
    rows = pd.DataFrame(rows)
    row = head_to_head(rows).iloc[0]
    assert row["cells"] == 3 and row["flagged"] == 3  # flagged cells are compared, and counted
    assert (row["wins_mre"], row["losses_mre"]) == (1, 1) and (row["wins_wis"], row["losses_wis"]) == (0, 2)
    assert row["mre"] == pytest.approx(2.0) and row["wis_alternative"] == pytest.approx(5.0 / 3)
    text = " ".join(str(BenchResult(rows, pd.DataFrame(), leaderboard(rows), 0.0)).split())
    assert "ensemble against power (compute alone)" in text
    assert head_to_head(rows[rows["strategy"] != "power"]).empty


def test_a_target_inside_the_ladder_is_refused_not_benched_as_an_empty_table(apple, c4_path):
    """A planned run inside the ladder (no more compute or TPR than its runs) holds out nothing: bench refused it with
    an empty leaderboard and exit 0 before; it now says so. Beside a data set it can bench, that one is warned of."""
    inside = (1.4e9, 2.8e10)  # TPR 20, 2.4e20 FLOPs: among DCLM's runs
    data = Dataset("dclm", apple, ((BENCHMARK, METRIC),), (1.0,))
    inside_split, _ = _split_settings(data, None, None, inside, own=False)
    with pytest.raises(bc.BenchcastError, match="nothing to bench: dclm: no split holds out a scored run"):
        make_cells([inside_split])
    far = Dataset("c4", bc.load(c4_path), ((BENCHMARK, METRIC),), (3e20,))
    with pytest.warns(UserWarning, match="dclm: no split holds out"):
        cells, _ = make_cells([inside_split, far])
    assert cells and all(cell.data.name == "c4" for cell in cells)


def test_a_split_like_the_target_counts_replicate_runs_once():
    """Five sizes trained twice each at TPR 20 are 10 runs but 5 points: a split like a target must keep 6 runs of
    distinct N and D to fit, so it is refused (it counted the 10 rows and kept 8 of them, 4 points, before)."""
    import pandas as pd

    from benchcast.evaluation.evaluate import LikeTarget

    sizes = np.geomspace(1e8, 1.6e9, 5)
    rows = pd.DataFrame(
        [
            {"run": f"r{i}s{s}", "params": n, "tokens": 20 * n, "flops": 120 * n * n, "tpr": 20.0}
            for i, n in enumerate(sizes)
            for s in range(2)
        ]
    )
    with pytest.raises(bc.BenchcastError, match="6 runs of distinct N and D to fit; the ladder has 5"):
        LikeTarget(flops=1e23, tpr=20.0).split(rows)
    (split,) = LikeTarget(flops=1e23, tpr=20.0, min_train=4).split(rows)
    assert split.train.sum() == 8 and split.test.sum() == 2  # both seeds of the largest size held out together


def test_a_split_like_the_target_says_how_a_flops_trend_placed_the_target():
    """bench and backtest --like-target placed the target by the file's FLOPs / (6 N D) trend without a word; the
    reach now says it (and where the trend falls below 6 N D); a file of plain 6 N D adds nothing."""
    import pandas as pd

    from benchcast.evaluation.evaluate import LikeTarget
    from benchcast.forecasting.targets import FlopsConvention

    sizes = np.geomspace(1e8, 1.6e9, 8)
    rows = pd.DataFrame({"run": [f"r{i}" for i in range(8)], "params": sizes, "tokens": 20 * sizes, "tpr": 20.0})
    rows["flops"] = 120 * sizes**2
    trend = FlopsConvention(np.log(1.67) + 0.07 * np.log(1e8), -0.07, "C = r(N) x 6 N D", (1e8, 1.6e9))
    far = LikeTarget.of_run(1e12, 2e13, trend)
    assert "the target placed at C = r(N) x 6 N D; r = 0.876 at N = 1e+12" in far.reach(rows)
    assert "below 6 N D and the trend at every fitted size" in far.reach(rows)
    assert "placed" not in LikeTarget.of_run(1e12, 2e13, FlopsConvention()).reach(rows)
