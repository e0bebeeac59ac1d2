"""``plan DATA`` whose answer lies inside the runs says so once, with one "flagged:" (issue 32 review: the merge
printed "flagged: flagged: inside the fitted runs ..." and then the same interpolation again as a note)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from benchcast.cli import app

runner = CliRunner()


def test_a_plan_inside_the_runs_is_flagged_once(apple_path):
    common = ["plan", str(apple_path), "-b", "arc_easy", "-m", "acc_norm", "--tpr", "20", "--target", "0.8"]
    printed = runner.invoke(app, [*common, "--n-boot", "20"], terminal_width=400)
    assert printed.exit_code == 0, printed.output
    assert "flagged: flagged:" not in printed.stdout
    # 0.8 is reached at ~3.4e22 FLOPs, below DCLM's largest TPR-20 run (3.83e22): an interpolation, said once
    assert printed.stdout.count("interpolation") == 1
    assert "flagged: inside the fitted runs" in printed.stdout
    plan = json.loads(runner.invoke(app, [*common, "--n-boot", "20", "--json"]).stdout)
    assert plan["needed"] < plan["largest_run"] and plan["flags"][-1]["kind"] == "interpolation"
    assert not any("interpolation" in note for note in plan["notes"])
