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
