"""A law of compute alone fitted across several tokens-per-parameter ratios says so wherever the fit is
shown: its report and artifact, every forecast and plan made from it, and kscan (issue 32 item 6)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import benchcast as bc
from benchcast import Uncertainty
from benchcast.cli import app
from benchcast.forecasting.flags import ACROSS_TPRS, fit_flags

NOTE = "a law of compute alone fitted across 5 tokens-per-parameter ratios (10, 20, 40, 80, 160)"


def test_the_fit_carries_the_note_and_a_fit_at_one_tpr_does_not(apple):
    mixed = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21)
    assert any(NOTE in w for w in mixed.warnings)
    assert NOTE in mixed.report()
    assert [f.kind for f in fit_flags(mixed)] == [ACROSS_TPRS]
    one = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21, tpr=20.0)
    assert not one.warnings and not fit_flags(one)
    # a law of N and D models the ratios: no note
    nd = bc.fit(apple, "nd", "arc_easy", "acc_norm", max_flops=6e21)
    assert not any("compute alone" in w for w in nd.warnings) and not fit_flags(nd)


def test_an_artifact_saved_without_the_note_still_flags_its_forecasts(apple, tmp_path):
    mixed = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21)
    path = mixed.save(tmp_path / "arc.json")
    doc = json.loads(path.read_text())
    doc["warnings"] = []  # as an artifact of an earlier release
    path.write_text(json.dumps(doc))
    fc = bc.forecast(bc.load_fit(path), flops=1e23, uncertainty=Uncertainty(n_boot=50, levels=0.9))
    assert [f.kind for f in fc.flags[0]] == [ACROSS_TPRS]


def test_fit_forecast_and_kscan_commands_say_it(apple_path, tmp_path):
    runner = CliRunner()
    arc = tmp_path / "arc.json"
    args = ["fit", str(apple_path), "--law", "power", "-b", "arc_easy", "-m", "acc_norm", "--max-flops", "6e21"]
    fit = runner.invoke(app, [*args, "--out", str(arc)])
    assert fit.exit_code == 0, fit.output
    assert NOTE in " ".join(fit.output.split())
    fc = runner.invoke(app, ["forecast", str(arc), "--flops", "1e23", "--n-boot", "100"])
    assert fc.exit_code == 0, fc.output
    assert "flagged: across TPRs" in fc.output and NOTE in " ".join(fc.output.split())
    scan = runner.invoke(app, ["kscan", str(apple_path), "--law", "compute", "-b", "humaneval-py"])
    assert scan.exit_code == 0, scan.output
    assert "warning (k = every k): compute is a law of compute alone" in " ".join(scan.output.split())
    at20 = runner.invoke(app, ["kscan", str(apple_path), "--law", "compute", "-b", "humaneval-py", "--tpr", "20"])
    assert at20.exit_code == 0 and "compute alone" not in at20.output


def test_checkpoints_of_one_model_size_are_one_curve():
    # one model size trained for more and more tokens: TPR varies, but the runs lie on one curve of C
    import numpy as np
    from conftest import law_table

    table = law_table("power", [5000.0, 0.18], {"flops": np.geomspace(1e18, 1e21, 10)}, q_rand=0.25)
    assert table["params"].nunique() == 1 and table.eval("tokens / params").nunique() == 10
    result = bc.fit(table, "power", "synthetic", "acc")
    assert not result.warnings and not fit_flags(result)
