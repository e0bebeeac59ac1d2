"""A splitter defined here, in a test file, reaches evaluate, backtest, bench and the report's validation with no edit to
the package: a splitter is any value with ``split(rows) -> list[Split]`` (issue #51, item 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import benchcast as bc
from benchcast.data.example import load_example
from benchcast.evaluation.bench import Dataset, bench
from benchcast.evaluation.evaluate import Split
from benchcast.report.analysis import analyse_benchmark

BENCHMARK, METRIC = "arc_easy", "acc_norm"


@dataclass(frozen=True)
class EverySecondRun:
    """Hold out every second run, cheapest first; fit the others (an interpolation check, not a protocol)."""

    def split(self, rows):
        order = rows.groupby("run")["flops"].first().sort_values(kind="stable")
        test = rows["run"].isin(set(order.index[1::2])).to_numpy()
        return [Split(0.0, ~test, test)]


@pytest.fixture(scope="module")
def table():
    return load_example()


@pytest.fixture(scope="module")
def held(table):
    rows = table[(table["benchmark"] == BENCHMARK) & (table["metric"] == METRIC)]
    return set(rows.sort_values("flops", kind="stable")["run"].iloc[1::2])


def test_evaluate_and_backtest_take_a_splitter_of_your_own(table, held):
    spec = bc.FitSpec("power", BENCHMARK, METRIC)
    frame = bc.evaluate(spec, table, EverySecondRun())
    assert set(frame.loc[frame["side"] == "test", "run"]) == held
    assert not set(frame.loc[frame["side"] == "train", "run"]) & held
    bt = bc.backtest(table, spec, splitter=EverySecondRun())
    assert bt.protocol == "splitter" and set(bt.predictions.loc[bt.predictions["side"] == "test", "run"]) == held
    assert np.isfinite(bt.metrics["test_mre"]) and bt.threshold == pytest.approx(
        table.loc[~table["run"].isin(held), "flops"].max()
    )


def test_bench_takes_a_splitter_of_your_own(table, held):
    data = Dataset("example", table, ((BENCHMARK, METRIC),), split=EverySecondRun())
    result = bench([data], ["power", "ensemble"], uncertainty=bc.Uncertainty(10), n_jobs=1, progress=False)
    assert set(result.rows["strategy"]) == {"power", "ensemble"} and (result.rows["status"] == "ok").all()
    assert (result.rows["n_test"] == len(held)).all()
    assert set(result.predictions["run"]) == held
    # a fit once per training side: the ensemble's power_floor and the fixed power law share none, each fitted once
    assert result.settings["fits"]["fitted"] == result.settings["fits"]["needed"]


def test_the_reports_validation_takes_a_splitter_of_your_own(table, held):
    page = analyse_benchmark(
        table, BENCHMARK, METRIC, target_flops=[1e22], uncertainty=bc.Uncertainty(20), splitter=EverySecondRun()
    )
    sides = page.validation.predictions
    assert set(sides.loc[sides["side"] == "test", "run"]) == held
    assert set(sides.loc[sides["side"] == "train", "run"]).isdisjoint(held)
    assert np.isfinite(page.validation.metrics["test_mre"])
