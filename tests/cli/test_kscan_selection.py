"""``kscan`` fits only the selected runs (issue 32 item 1: every command that fits takes fit's run selection;
kscan's --min-flops/--max-flops came with the merge without a test)."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from benchcast.cli import app


def test_kscan_fits_the_runs_within_min_and_max_flops(apple, apple_path):
    args = ["kscan", str(apple_path), "--law", "compute", "-b", "humaneval-py", "--tpr", "20", "--ks", "1,8", "--json"]
    runner = CliRunner()
    every = json.loads(runner.invoke(app, args).stdout)["scan"]
    some = json.loads(runner.invoke(app, [*args, "--min-flops", "1e19", "--max-flops", "1e21"]).stdout)["scan"]
    rows = apple[(apple["benchmark"] == "humaneval-py") & (apple["metric"] == "pass@k") & (apple["k"] == 1)]
    at20 = rows[(rows["tpr"] - 20).abs() < 0.2]
    inside = int(((at20["flops"] >= 1e19) & (at20["flops"] <= 1e21)).sum())
    assert [r["k"] for r in some] == [1, 8]
    assert inside == 24 and [r["n_used"] for r in some] == [24, 24] and every[0]["n_used"] == 54  # of 55 at TPR 20
    assert not pd.Series([r["E0"] for r in some]).equals(pd.Series([r["E0"] for r in every]))


def test_kscan_says_the_rows_each_k_left_out_and_why(apple_path):
    """lbpp's 28 runs with pass@2..128 of 1 beside a pass@1 of 0 are left out at k >= 2, said under the table and in
    --json (the points column fell from 74 to 69 without a word)."""
    args = ["kscan", str(apple_path), "--law", "compute", "-b", "lbpp", "--ks", "1,8"]
    runner = CliRunner()
    doc = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    inconsistent = "pass@k outside [pass@j, (k/j) pass@j] of the run's smaller k"
    assert inconsistent not in doc["left_out"]["1"] and doc["left_out"]["8"][inconsistent] == 28
    shown = " ".join(runner.invoke(app, args).stdout.split())
    assert f"left out (k = 8): at or below chance (0): log undefined: 52, {inconsistent}: 28" in shown
