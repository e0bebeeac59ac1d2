"""examples/notebook_session.py, the README's notebook session as a script, runs end to end on the
DCLM file and writes its figures (a few replicates per interval: what is under test is that every
call of the session works as written)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.conftest import DCLM, require_shared

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "notebook_session.py"


@pytest.mark.slow
def test_the_notebook_session_runs_and_writes_its_figures(tmp_path, monkeypatch, capsys):
    data = require_shared(DCLM)
    monkeypatch.setenv("BENCHCAST_N_BOOT", "20")
    monkeypatch.setattr("sys.argv", [str(SCRIPT), str(data), str(tmp_path)])
    runpy.run_path(str(SCRIPT), run_name="__main__")
    out = capsys.readouterr().out
    assert "arc_easy (acc_norm): forecast of the ensemble" in out and "use the ensemble" in out
    assert "arc_easy (acc_norm): forecast of the power_floor" in out
    assert "forecast with 90 % intervals (20 bootstrap replicates" in out
    written = {p.name: p.read_bytes()[:5] for p in tmp_path.iterdir()}
    assert written["default_forecast.svg"].startswith(b"<?xml")
    assert written["fit_and_forecast.png"].startswith(b"\x89PNG")
    assert written["backtest_bnsl_monotone.pdf"].startswith(b"%PDF")
    assert written["backtest_power_floor.png"].startswith(b"\x89PNG")
