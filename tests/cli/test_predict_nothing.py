"""``predict`` whose every point is refused exits 2 saying why, as ``forecast`` and ``plan`` do (issue 32 item 12
on the merged code: ``predict`` printed "-> —" and exited 0)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from benchcast.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def bnsl_fit(tmp_path_factory):
    """bnsl fitted on 8 runs below 3e20 FLOPs of a ladder: 6 parameters barely placed, it forecasts far above 1 at
    2e23 FLOPs (a number the flags refuse), and a score inside the runs."""
    rng = np.random.default_rng(0)
    runs = [(n, n * t) for n in (1.9e8, 4.1e8, 7.9e8, 1.3e9) for t in (20.013, 40.02, 80.0, 160.05)]
    rows = []
    for i, (n, d) in enumerate(runs):
        c = 1.3 * 6 * n * d * rng.uniform(0.97, 1.03)
        for bench, metric in (("arc_easy", "acc_norm"), ("hard4", "acc")):
            x = np.log10(c)
            acc = 0.25 + (
                0.65 / (1 + np.exp(-(x - 21.6) * 1.1)) if bench == "arc_easy" else 0.02 / (1 + np.exp(22.5 - x))
            )
            rows.append(
                dict(
                    run=f"r{i}",
                    params=n,
                    tokens=d,
                    flops=c,
                    benchmark=bench,
                    metric=metric,
                    value=acc + rng.normal(0, 0.005),
                )
            )
    rows[10]["value"] = np.nan  # r5's arc_easy score
    folder = tmp_path_factory.mktemp("bnsl")
    pd.DataFrame(rows).to_csv(folder / "ladder.csv", index=False)
    out = folder / "bnsl.json"
    fitted = runner.invoke(
        app,
        [
            "fit",
            str(folder / "ladder.csv"),
            "--law",
            "bnsl",
            "-b",
            "arc_easy",
            "-m",
            "acc_norm",
            "--max-flops",
            "3e20",
            "--out",
            str(out),
        ],
    )
    assert fitted.exit_code == 0, fitted.output
    return out


def test_predict_of_refusals_only_exits_2_with_the_reason(bnsl_fit):
    for extra in ([], ["--json"]):
        result = runner.invoke(app, ["predict", str(bnsl_fit), "--flops", "2e23", *extra])
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert f"nothing was forecast for bnsl from {bnsl_fit}" in text and "outside [0, 1]: not a score" in text


def test_predict_with_one_forecast_still_exits_0(bnsl_fit):
    result = runner.invoke(app, ["predict", str(bnsl_fit), "--flops", "2e23", "--flops", "1e20", "--json"])
    assert result.exit_code == 0, result.output
    prediction = json.loads(result.stdout)["prediction"]
    assert prediction[0] is None or not np.isfinite(prediction[0])
    assert 0.25 < prediction[1] < 0.5
