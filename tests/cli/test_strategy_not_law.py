"""`backtest --law ensemble`: a strategy named where a law is asked is refused with where to backtest it."""

from conftest import run_cli as run

from benchcast.data.example import example_path


def test_backtest_names_bench_for_a_strategy_given_as_a_law():
    proc = run("backtest", example_path(), "-b", "arc_easy", "-m", "acc_norm", "--law", "ensemble")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    message = " ".join(proc.stderr.split())
    assert "'ensemble' is a strategy" in message and "-s ensemble" in message and "Did you mean" not in message
