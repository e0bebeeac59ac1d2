"""A target that is a fitted run is flagged as one when the file's FLOPs vary around its convention (issue 32,
item 1, on the merged code): the issue's public ladder counts FLOPs as 1.15 .. 1.67 x 6 N D, so a planned run
``-N 13202396160 -D 5e12`` placed at the median convention lands more than 1 % away from its own run's FLOPs
and, matched by compute alone, was reported as a forecast 0.01 decades beyond the data, with no flag."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from benchcast.cli import app
from benchcast.forecasting.flags import placements

N13, D13 = 13202396160.0, 5e12


def _fit(rows):
    return SimpleNamespace(points=pd.DataFrame(rows, columns=["run", "params", "tokens", "flops"]))


def test_a_point_of_a_fitted_runs_n_and_d_is_that_run_whatever_its_flops():
    fit = _fit([("small", 1e9, 2e10, 1.3 * 6 * 1e9 * 2e10), ("r13b", N13, D13, 1.28 * 6 * N13 * D13)])
    planned = 1.308 * 6 * N13 * D13  # the median convention: 2.2 % above the run's own FLOPs
    (by_size,) = placements([fit], [planned], tpr=[D13 / N13], params=[N13])
    assert by_size[0] == "at a fitted run" and "'r13b'" in by_size[1]
    (by_compute,) = placements([fit], [planned], tpr=[D13 / N13])  # without N: compute alone, as before
    assert by_compute == ("", "")
    # another N at the same TPR is another run (a 7B at 378.7 tokens per parameter is beyond the 13B)
    (other,) = placements([fit], [1.308 * 6 * 7e9 * 7e9 * D13 / N13], tpr=[D13 / N13], params=[7e9])
    assert other[0] != "at a fitted run"


def _ladder() -> pd.DataFrame:
    """16 runs 190M-1.3B at four token multipliers and 7B and 13B runs, FLOPs 1.2 .. 1.45 x 6 N D per run."""
    rng = np.random.default_rng(3)
    runs = [(n, n * t) for n in (1.9e8, 4.1e8, 7.9e8, 1.3e9) for t in (20.013, 40.02, 80.0, 160.05)]
    runs += [(7e9, 4e12), (N13, D13)]
    factors = rng.uniform(1.2, 1.45, len(runs))
    factors[-1] = 1.25  # the 13B run sits 4 % below the median convention
    rows = []
    for i, ((n, d), r) in enumerate(zip(runs, factors, strict=True)):
        c = r * 6 * n * d
        acc = 0.25 + 0.65 / (1 + np.exp(-(np.log10(c) - 21.6) * 1.1)) + rng.normal(0, 0.004)
        rows.append(dict(run=f"r{i}", params=n, tokens=d, flops=c, benchmark="hellaswag", metric="acc", value=acc))
    return pd.DataFrame(rows).assign(q_rand=0.25)


def test_forecast_and_report_flag_the_13b_target_on_a_ladder_of_varying_flops(tmp_path):
    path = tmp_path / "ladder.csv"
    _ladder().to_csv(path, index=False)
    common = ["-b", "hellaswag", "-m", "acc", "-N", str(N13), "-D", str(D13), "--n-boot", "20", "--json"]
    forecast = CliRunner().invoke(app, ["forecast", str(path), *common])
    assert forecast.exit_code == 0, forecast.output
    row = json.loads(forecast.stdout)["forecasts"][0]
    assert row["flops"] > 1.03 * 1.25 * 6 * N13 * D13  # placed at the median convention, off its run's FLOPs
    assert "the target is fitted run 'r17'" in row["flags"]
    report = CliRunner().invoke(app, ["report", str(path), *common, "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.output
    assert "the target is fitted run 'r17'" in json.loads(report.stdout)["benchmarks"][0]["forecasts"][0]["flags"]
