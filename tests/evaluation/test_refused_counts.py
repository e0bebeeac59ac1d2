"""Refused forecasts beside every error (issue 32 item 5): a law that refused most of its held-out points is
no success and ranks after one that forecast them all."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import benchcast as bc
from benchcast.cli import app
from benchcast.evaluation.backtest_result import SUMMARY_COLUMNS
from benchcast.evaluation.refusals import MAX_REFUSED_SHARE, ranked, refused_cell, too_many_refused
from benchcast.evaluation.sweep_result import succeeds

SCIQ = ["-b", "sciq", "-m", "acc_norm", "--tpr", "20", "--min-flops", "3e18"]


def test_the_rule_counts_refusals_against_success():
    frame = pd.DataFrame({"test_mre": [8.97, 8.97, 8.97, 12.0], "n_test": [9, 33, 30, 33], "n_refused": [24, 0, 3, 0]})
    # 24 of 33 refused: no success whatever the MRE over the other 9; 3 of 33 (9 %) is within the rule
    assert succeeds(frame, 10.0).tolist() == [False, True, True, False]
    assert too_many_refused(24, 33) and not too_many_refused(3, 33) and not too_many_refused(0, 0)
    assert MAX_REFUSED_SHARE == pytest.approx(0.1)
    assert refused_cell(24, 33) == "24 of 33" and refused_cell(0, 33) == "0"


def test_a_ranking_puts_the_law_that_refused_most_after_the_ones_that_forecast_all():
    frame = pd.DataFrame(
        {"law": ["bnsl", "power", "nd"], "mre": [1.0, 3.1, 5.0], "refused": [24, 0, 1], "total": [33, 33, 33]}
    )
    assert ranked(frame, "mre", "refused", "total")["law"].tolist() == ["power", "nd", "bnsl"]


def test_sweep_at_6e19_is_no_success_when_bnsl_refuses_24_of_33(apple):
    spec = bc.FitSpec(law="bnsl", benchmark="sciq", metric="acc_norm", tpr=20.0)
    result = bc.sweep(apple, spec, thresholds=[6e19, 9.9e20], min_flops=3e18, progress=False)
    first = result.table.iloc[0]
    # the MRE over the 9 forecasts made is below 10 %, but 24 of the 33 held-out points have no number
    assert (int(first["n_test"]), int(first["n_refused"])) == (9, 24)
    assert first["test_mre"] < 10.0
    assert not bool(first["success"])
    later = result.table.iloc[1]
    assert int(later["n_refused"]) == 0 and bool(later["success"])
    assert "at most 10% of the held-out points" in result.definitions["success"]


def test_sweep_command_shows_refused_beside_the_error(apple_path):
    out = CliRunner().invoke(app, ["sweep", str(apple_path), "--law", "bnsl", *SCIQ])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if "6e+19" in line and "sciq" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    # benchmark, law, threshold, fitted, held out, refused, MRE, MRE usable, success
    assert cells[4:6] == ["33", "24 of 33"]
    assert cells[-1] == "False"
    doc = json.loads(CliRunner().invoke(app, ["sweep", str(apple_path), "--law", "bnsl", *SCIQ, "--json"]).output)
    first = next(r for r in doc["sweep"] if np.isclose(r["threshold"], 6e19))
    assert first["n_refused"] == 24 and first["success"] is False


def test_backtest_summary_counts_refused_and_says_what_they_do(apple_path):
    args = ["backtest", str(apple_path), "--law", "power", "--law", "bnsl", *SCIQ, "--threshold", "6e19"]
    out = CliRunner().invoke(app, [*args, "--n-boot", "0"])
    assert out.exit_code == 0, out.output
    assert SUMMARY_COLUMNS[2:4] == ("held out", "refused")
    bnsl = next(line for line in out.output.splitlines() if line.startswith("│ bnsl"))
    cells = [c.strip() for c in bnsl.strip("│ ").split("│")]
    assert cells[2:4] == ["33", "24 of 33"]
    power = next(line for line in out.output.splitlines() if line.startswith("│ power"))
    assert [c.strip() for c in power.strip("│ ").split("│")][2:4] == ["33", "0"]
    text = " ".join(out.output.split())
    assert "bnsl: 24 of 33 held-out forecasts refused; MAE and MRE are over the other 9" in text
    assert "more than 10% refused" in text


def test_a_question_every_candidate_refuses_for_one_reason_is_that_refusal_not_no_support():
    """bench's default strategy said "no support" where every law said why (a loss named as the score): the
    ensemble's row now gives the laws' reason; candidates failing for reasons of their own still lack support."""
    from types import SimpleNamespace

    from benchcast.evaluation.strategies import Combine, NoForecast
    from benchcast.forecasting.ensemble import Member

    said = "metric 'loss' is a loss or likelihood, not a score"
    cell = SimpleNamespace(benchmark="c4", candidates=("power_floor", "nd_floor"), fallbacks=("power",))
    cell.members = {law: Member(law, None, error=said) for law in ("power_floor", "nd_floor", "power")}
    with pytest.raises(NoForecast) as refused:
        Combine().make(cell)
    assert refused.value.status == f"failed: {said}"
    alone = SimpleNamespace(benchmark="c4", candidates=("power_floor",), fallbacks=(), members=dict(cell.members))
    with pytest.raises(NoForecast) as one:  # a pool of one law (--candidate power_floor) says its reason too
        Combine().make(alone)
    assert one.value.status == f"failed: {said}"
    cell.members["nd_floor"] = Member("nd_floor", None, error="nd_floor needs 6 runs, has 4")
    with pytest.raises(NoForecast) as unsupported:
        Combine().make(cell)
    assert unsupported.value.status == "no support"
