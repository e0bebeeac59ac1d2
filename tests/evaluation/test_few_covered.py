"""A backtest's coverage from few held-out forecasts is said to be a count of so few, not a rate."""

import numpy as np
from conftest import run_cli as run

import benchcast as bc
from benchcast.data.example import example_path


def test_a_coverage_of_two_forecasts_is_said_to_be_of_two(apple_path):
    flops = np.sort(bc.load(example_path())["flops"].unique())
    threshold = float(np.sqrt(flops[-3] * flops[-2]))  # the two largest computes held out
    args = ["backtest", example_path(), "-b", "arc_easy", "-m", "acc_norm", "--threshold", threshold]
    proc = run(*args, "--n-boot", "50", "--interval", "bootstrap")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "power: coverage from 2 held-out forecast(s), each in or out: one run moves it by 1/2" in text
    # DCLM at TPR 20 above 1e20 FLOPs: many held-out forecasts, a rate
    wide = run("backtest", apple_path, "-b", "arc_easy", "-m", "acc_norm", "--tpr", "20", "--threshold", "1e20")
    assert wide.returncode == 0, wide.stderr
    assert "cov 90" in wide.stdout and "held-out forecast(s), each in or out" not in wide.stdout
