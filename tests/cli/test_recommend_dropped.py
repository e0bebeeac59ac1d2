"""``recommend`` counts the rows each law's fit dropped, with their reasons, beside the runs it fitted (issue 32
item 4 on the merged code: its table said "fitted 12" of 18 runs, one with a NaN score, and nothing more)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from benchcast.cli import app

runner = CliRunner()


def test_recommend_and_forecast_count_the_dropped_rows_with_their_reasons(tmp_path):
    rng = np.random.default_rng(0)
    runs = [(n, n * t) for n in (190e6, 300e6, 470e6, 760e6, 1.3e9) for t in (10.02, 20.013, 39.97)]
    rows = []
    for i, (n, d) in enumerate(runs):
        c = 1.3 * 6 * n * d
        acc = 0.25 + 0.6 / (1 + (c / 3e20) ** -0.35) + rng.normal(0, 0.004)
        rows.append(dict(run=f"r{i:02d}", params=n, tokens=d, flops=c, benchmark="hellaswag", metric="acc", value=acc))
    frame = pd.DataFrame(rows).assign(q_rand=0.25)
    frame.loc[3, "value"] = np.nan
    path = tmp_path / "nan.csv"
    frame.to_csv(path, index=False)
    args = ["recommend", str(path), "-b", "hellaswag", "-m", "acc"]
    doc = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert doc["supported"]
    for row in doc["ranking"]:
        assert row["n_fit"] == 14 and row["n_dropped"] == "1 (score is NaN: 1)"
    printed = runner.invoke(app, args, terminal_width=300)
    assert printed.exit_code == 0, printed.output
    assert "dropped" in printed.stdout and "1 (score is NaN: 1)" in printed.stdout
    # the forecast of a planned run says it too, once per distinct answer
    forecast = runner.invoke(
        app,
        ["forecast", str(path), "-b", "hellaswag", "-m", "acc", "-N", "7e9", "-D", "1.4e11", "--n-boot", "20"],
        terminal_width=300,
    )
    assert forecast.exit_code == 0, forecast.output
    assert forecast.stdout.count("rows dropped from the fits: ") == 1
    assert "1 (score is NaN: 1)" in forecast.stdout
