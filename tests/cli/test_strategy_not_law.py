"""`--law ensemble`: a strategy named where a law is asked is refused with where to backtest it, by every command
that takes --law (one option, one check)."""

import pytest
from conftest import run_cli as run

from benchcast.data.example import example_path


@pytest.mark.parametrize("command", ["backtest", "sweep", "cutoff"])
def test_a_strategy_given_as_a_law_names_bench(command):
    proc = run(command, example_path(), "-b", "arc_easy", "-m", "acc_norm", "--law", "ensemble")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    message = " ".join(proc.stderr.replace("│", " ").split())
    assert "'ensemble' is a strategy" in message and "-s ensemble" in message and "Did you mean" not in message
