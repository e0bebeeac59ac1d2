"""Progress: a long step piped to a log prints count lines with the real total (a bootstrap counts
its replicates, not its batches); a sub-second step prints nothing; worker processes print nothing."""

import pytest

import benchcast as bc
from benchcast import Uncertainty
from benchcast.data.example import load_example
from benchcast.utils import progress


@pytest.fixture
def piped(monkeypatch):
    """Plain lines on (as the CLI switches them on), stderr not a terminal."""
    monkeypatch.setattr(progress, "_plain_when_piped", True)
    monkeypatch.setattr(progress, "_silenced", False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)


def test_a_short_step_prints_nothing(piped, capsys):
    # every step here ends long before DELAY_S (2 s): silent, however many items it has
    assert list(progress.track(range(50), "short step")) == list(range(50))
    assert capsys.readouterr().err == ""


def test_a_long_step_prints_counts_with_the_real_total(piped, monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # every step counts as long
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    assert list(progress.track(range(4), "long step", sizes=[10, 10, 10, 7], unit="replicates")) == list(range(4))
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("long step: 37/37 replicates done in")
    assert "long step: 10/37 replicates, 0 s" in lines


def test_a_bootstrap_counts_replicates_not_batches(piped, monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    result = bc.fit(load_example(), "power", "arc_easy", "acc_norm")
    bc.bootstrap(result, n_jobs=1, uncertainty=Uncertainty(n_boot=40))
    err = capsys.readouterr().err
    assert "bootstrap power: 40/40 replicates done in" in err
    assert "/2 " not in err and "/4 " not in err  # the batches are not what is counted


def test_a_worker_process_prints_nothing(piped, monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    progress.silence()  # what the process pool's initializer does in each worker
    assert list(progress.track(range(3), "in a worker")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_progress_lines_when_piped(capsys, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # a step shows itself after DELAY_S: here at once
    progress.report_when_piped(True)
    try:
        assert list(progress.track(range(3), "work")) == [0, 1, 2]
    finally:
        progress.report_when_piped(False)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "work: 1/3, 0 s" and err[-1].startswith("work: 3/3 done in ")
    assert list(progress.track(range(2), "quiet")) == [0, 1]  # library use: silent unless asked
    assert capsys.readouterr().err == ""
