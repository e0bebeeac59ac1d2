"""Chance levels (issue 32 item 8): the unknown-chance warning suggests only what the choices or the task
state, never a score of the runs; every command that fits data takes --q-rand."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

import benchcast as bc
from benchcast.cli import app
from benchcast.data.chance import estimate_chance, suggested_chance
from benchcast.errors import DataWarning

# commands that fit data from a file (the others read an artifact, samples or nothing, or the bundled ladder)
FITTING_COMMANDS = {
    "fit",
    "backtest",
    "sweep",
    "cutoff",
    "kscan",
    "forecast",
    "recommend",
    "report",
    "bench",
    "reproduce",
}


def _ladder(choices: int | None = None) -> pd.DataFrame:
    # a 4-choice task whose cheapest runs score well above chance (0.25), as small models do
    values = [0.46, 0.47, 0.48, 0.52, 0.56, 0.60, 0.63, 0.66]
    frame = pd.DataFrame(
        {
            "run": [f"r{i}" for i in range(8)],
            "benchmark": "mytask",
            "metric": "acc",
            "value": values,
            "flops": [1e18 * 2**i for i in range(8)],
        }
    )
    if choices is not None:
        frame["choices"] = choices
    return bc.validate(frame)


def _warning(table) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bc.fit(table, "power", "mytask", "acc")
    texts = [str(w.message) for w in caught if issubclass(w.category, DataWarning) and "chance level" in str(w.message)]
    assert len(texts) == 1, texts
    return texts[0]


def test_the_warning_never_suggests_the_cheapest_runs_mean():
    table = _ladder()
    assert estimate_chance(table, "mytask", "acc") == pytest.approx(0.47)
    text = _warning(table)
    assert "0.47" not in text and "estimate_chance" not in text and "cheapest" not in text
    assert "1/n" in text and "--q-rand mytask=VALUE" in text
    assert suggested_chance(table, "mytask", "acc") == (None, "")


def test_the_warning_suggests_one_over_the_choices_the_data_state():
    table = _ladder(choices=4)
    level, where = suggested_chance(table, "mytask", "acc")
    assert level == pytest.approx(0.25) and "choices column" in where
    assert "--q-rand mytask=0.25" in _warning(table)
    # a task of the built-in table states its choices; a generative metric has no choices to state
    assert suggested_chance(table, "logiqa", "acc")[0] == pytest.approx(0.25)
    assert suggested_chance(table, "mytask", "exact_match") == (None, "")


def test_every_command_that_fits_data_takes_q_rand():
    command = typer.main.get_command(app)
    missing = []
    for name in sorted(FITTING_COMMANDS):
        options = {opt for param in command.commands[name].params for opt in getattr(param, "opts", [])}
        if "--q-rand" not in options:
            missing.append(name)
    assert not missing, f"commands that fit data without --q-rand: {missing}"


def test_report_passes_q_rand_to_the_fit(monkeypatch, tmp_path):
    import benchcast.report as report_module

    seen = {}

    def fake_build_report(table, targets, target_flops, *, out, **kwargs):
        seen["q_rand"] = table.loc[table["benchmark"] == "mytask", "q_rand"].unique().tolist()
        return {"out": str(out), "bytes": 0}

    monkeypatch.setattr(report_module, "build_report", fake_build_report)
    data = tmp_path / "ladder.csv"
    _ladder().to_csv(data, index=False)
    args = ["report", str(data), "-b", "mytask", "-m", "acc", "-C", "1e21", "--out", str(tmp_path / "r.html")]
    out = CliRunner().invoke(app, [*args, "--q-rand", "mytask=0.25"])
    assert out.exit_code == 0, out.output
    assert seen["q_rand"] == [0.25]
    # built from outputs already written, nothing is fitted: the option is refused, exit 2, naming it
    refused = CliRunner().invoke(app, ["report", "--from", str(tmp_path), "--q-rand", "mytask=0.25"])
    assert refused.exit_code == 2 and "--q-rand" in refused.output
