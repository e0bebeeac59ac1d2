"""A command that forecast nothing exits 2 saying why (issue 32, item 12); it exited 0 with a table of dashes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from benchcast.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def short_ladder(tmp_path_factory):
    """Three runs: too few for any law to have support, so the default strategy forecasts nothing."""
    flops = np.geomspace(1e18, 1e20, 3)
    params = np.sqrt(flops / 120)
    frame = pd.DataFrame(
        {
            "run": ["a", "b", "c"],
            "params": params,
            "tokens": 20 * params,
            "benchmark": "flat",
            "metric": "acc",
            "value": [0.27, 0.35, 0.42],
            "q_rand": 0.25,
        }
    )
    path = tmp_path_factory.mktemp("short") / "short.csv"
    frame.to_csv(path, index=False)
    return path


def test_forecast_of_nothing_exits_2_with_the_reason(short_ladder):
    result = runner.invoke(app, ["forecast", str(short_ladder), "-b", "flat", "-m", "acc", "--flops", "1e23"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert f"nothing was forecast for flat from {short_ladder}" in text and "no law has support" in text
    assert "Traceback" not in result.output


def test_a_json_forecast_of_nothing_names_the_metric_asked(short_ladder):
    """--json of a refused forecast keeps the benchmark and metric it was asked for ("metric": null before)."""
    import json

    result = runner.invoke(app, ["forecast", str(short_ladder), "-b", "flat:acc", "--flops", "1e23", "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout[result.stdout.index("{") :])
    assert (doc["benchmark"], doc["metric"], doc["prediction"]) == ("flat", "acc", [None])


def test_recommend_of_nothing_at_a_target_exits_2(short_ladder):
    args = ["recommend", str(short_ladder), "-b", "flat", "-m", "acc"]
    result = runner.invoke(app, [*args, "--target-flops", "1e23"])
    assert result.exit_code == 2 and "nothing was forecast for flat" in " ".join(result.output.split())
    # without a target nothing was asked to be forecast: the comparison alone, exit 0
    assert runner.invoke(app, args).exit_code == 0


def test_forecast_of_something_still_exits_0(apple_path):
    result = runner.invoke(
        app,
        [
            "forecast",
            str(apple_path),
            "-b",
            "arc_easy",
            "-m",
            "acc_norm",
            "--tpr",
            "20",
            "--flops",
            "1e23",
            "--n-boot",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
