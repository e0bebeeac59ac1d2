"""bench at the distance a researcher cares about (issue 32, item 10): ``--holdout-largest K`` holds out the K
largest rungs of the user's own ladder, and flagged cells' numbers are shown with their count, not "—"."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import law_table
from typer.testing import CliRunner

from benchcast.cli import app
from benchcast.errors import BenchcastError
from benchcast.evaluation.bench_result import BenchResult, leaderboard
from benchcast.evaluation.evaluate import LargestRuns

runner = CliRunner()


def holdout_largest(table, n, *, min_flops=None):
    """The cutoff and the rungs held out (:meth:`LargestRuns.rungs`)."""
    return LargestRuns(n, min_flops=min_flops).rungs(table)


# a ladder of 8 rungs 1e18 .. 1e20 (the smallest with a repeat: a seed is not a rung), then two targets
# 2 and 2.3 decades beyond it, as a recipe's small runs plus its 7B and 13B
RUNGS = np.array([*np.geomspace(1e18, 1e20, 8), 1e22, 2e22])


@pytest.fixture(scope="module")
def ladder() -> pd.DataFrame:
    table = law_table("power", [5000.0, 0.19], {"flops": RUNGS}, q_rand=0.25, metric="acc_norm", noise=0.004)
    seed = table.iloc[[0]].assign(run="r0-seed2", value=float(table["value"].iloc[0]) + 0.003)
    return pd.concat([table, seed], ignore_index=True)


def test_holdout_largest_cuts_below_the_k_largest_rungs(ladder):
    cutoff, held = holdout_largest(ladder, 2)
    assert held == pytest.approx((2e22, 1e22), rel=1e-5)
    assert cutoff == pytest.approx(np.sqrt(1e20 * 1e22), rel=1e-5)  # between the 3rd largest and the 2nd
    cutoff, held = holdout_largest(ladder, 3)
    assert len(held) == 3 and 1e20 / 1.0001 <= held[-1] <= 1e20 * 1.0001 and cutoff < 1e20
    cutoff, _ = holdout_largest(ladder, 2, min_flops=1e19)
    assert cutoff == pytest.approx(1e21, rel=1e-5)
    # 10 rungs (the repeat at 1e18 is one): 7 may be held out, leaving 3 to fit on; 8 may not
    assert holdout_largest(ladder, 7)[1][-1] == pytest.approx(RUNGS[3], rel=1e-5)
    with pytest.raises(BenchcastError, match=r"--holdout-largest 8: the ladder has 10 rungs .* from 1 to 7"):
        holdout_largest(ladder, 8)
    with pytest.raises(BenchcastError, match="from 1 to 7"):
        holdout_largest(ladder, 0)


def test_bench_holdout_largest_on_a_synthetic_ladder(ladder, tmp_path):
    path = tmp_path / "ladder.csv"
    ladder.to_csv(path, index=False)
    args = ["bench", "--data", str(path), "-b", "synthetic:acc_norm", "-l", "power", "-s", "power", "--n-boot", "10"]
    result = runner.invoke(app, [*args, "--holdout-largest", "2", "-j", "1", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output[result.output.index("[") :])
    assert len(rows) == 1 and rows[0]["cutoff"] == pytest.approx(1e21, rel=1e-5)
    assert rows[0]["n_test"] == 2  # the two targets, 2 and 2.3 decades beyond the fitted runs
    # those are flagged (far beyond the data): the terminal shows their numbers with the count, not "—"
    result = runner.invoke(app, [*args, "--holdout-largest", "2", "-j", "1"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "held out the 2 largest rung(s) (C = 2e+22, 1e+22 FLOPs); fit on C <= 1e+21" in text
    assert rows[0]["flagged"] and f"{rows[0]['mre']:.3g}" in text  # a flagged cell's number stays in the means
    # --threshold places other cutoffs: refused, exit 2
    both = runner.invoke(app, [*args, "--holdout-largest", "2", "--threshold", "1e20"])
    assert both.exit_code == 2 and "--threshold" in both.output and "Traceback" not in both.output
    too_many = runner.invoke(app, [*args, "--holdout-largest", "9"])
    assert too_many.exit_code == 2 and "has 10 rungs" in " ".join(too_many.output.split())


def test_flagged_cells_stay_in_the_means_with_their_count():
    """A flag qualifies a number, it does not erase it (#50 item 3): every strategy's means over the same cells."""
    base = {"dataset": "d", "metric": "acc", "cutoff": 1.0, "mae": 0.1, "coverage50": 0.5, "width90": 0.1}
    rows = pd.DataFrame(
        [
            {**base, "benchmark": "a", "strategy": "s", "status": "ok", "mre": 4.0, "coverage90": 1.0, "flagged": True},
            {**base, "benchmark": "b", "strategy": "s", "status": "ok", "mre": 8.0, "coverage90": 0.5, "flagged": True},
            {**base, "benchmark": "a", "strategy": "t", "status": "ok", "mre": 1.0, "coverage90": 1.0},
            {**base, "benchmark": "b", "strategy": "t", "status": "ok", "mre": 3.0, "coverage90": 0.0, "flagged": True},
        ]
    )
    rows["flagged"] = rows["flagged"].eq(True)
    board = leaderboard(rows).set_index("strategy")
    assert (board.loc["s", "cells"], board.loc["s", "flagged"]) == (2, 2)
    assert board.loc["s", "mre"] == pytest.approx(6.0) and board.loc["s", "coverage90"] == pytest.approx(0.75)
    assert (board.loc["t", "cells"], board.loc["t", "flagged"]) == (2, 1) and board.loc["t", "mre"] == pytest.approx(2)
    assert board.loc["s", "mre_common"] == pytest.approx(6.0)  # both strategies forecast both cells
    text = str(BenchResult(rows, pd.DataFrame(), leaderboard(rows), 0.0))
    assert "—" not in text.split("flagged:")[0]  # no number hidden behind a flag


def test_bench_holdout_largest_on_dclm(apple, apple_path):
    """The DCLM file's own ladder: the cutoff between its 2nd and 3rd largest computes, every arc_easy run
    above it forecast."""
    cutoff, held = holdout_largest(apple, 2)
    top = np.sort(apple["flops"].unique())[::-1]
    assert held == pytest.approx(tuple(top[:2]), rel=1e-5) and top[2] < cutoff < top[1]
    args = ["bench", "--data", str(apple_path), "-b", "arc_easy:acc_norm", "-l", "power", "-s", "power"]
    result = runner.invoke(app, [*args, "--n-boot", "10", "--holdout-largest", "2", "-j", "1", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output[result.output.index("[") :])
    arc = apple[(apple["benchmark"] == "arc_easy") & (apple["metric"] == "acc_norm")]
    assert rows[0]["cutoff"] == pytest.approx(cutoff) and rows[0]["n_test"] == int((arc["flops"] > cutoff).sum())
    assert np.isfinite(rows[0]["mre"])
