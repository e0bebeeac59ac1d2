"""Kept from the former tests/plots/test_figures.py, unchanged (it checks utils.progress, not a figure)."""

from benchcast.utils import progress


def test_progress_lines_when_piped(capsys):
    progress.report_when_piped(True)
    try:
        assert list(progress.track(range(3), "work")) == [0, 1, 2]
    finally:
        progress.report_when_piped(False)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "work: 0/3" and err[-1].startswith("work: 3/3 done in ")
    assert list(progress.track(range(2), "quiet")) == [0, 1]  # library use: silent unless asked
    assert capsys.readouterr().err == ""
