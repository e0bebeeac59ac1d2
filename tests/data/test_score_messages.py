"""Plain numbers and the right credit in messages about scores and chance levels (issue 32, item 12)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

import benchcast as bc
from benchcast.cli import app
from benchcast.errors import DataError

runner = CliRunner()


def _table(values) -> pd.DataFrame:
    n = len(values)
    return pd.DataFrame(
        {
            "run": [f"r{i}" for i in range(n)],
            "params": [1e8 * 2**i for i in range(n)],
            "tokens": [2e9 * 2**i for i in range(n)],
            "benchmark": "arc_easy",
            "metric": "acc",
            "value": values,
        }
    )


def test_percent_scores_are_refused_with_a_plain_number_and_a_hint():
    with pytest.raises(DataError) as err:
        bc.validate(_table([31.5, 40.25, 52.0]), "scores.csv")
    message = str(err.value)
    assert "np.float64" not in message and "has 31.5 (3 score(s) above 1" in message
    assert "percentages? divide the column by 100" in message and "scores.csv" in message
    with pytest.raises(DataError) as err:  # not a percentage: no hint
        bc.validate(_table([0.3, 1.5, 0.5]), "scores.csv")
    assert "has 1.5." in str(err.value) and "percent" not in str(err.value)


def test_fit_credits_a_q_rand_option_to_the_option(tmp_path):
    path = tmp_path / "runs.csv"
    _table([0.31, 0.36, 0.42, 0.47, 0.52, 0.58]).to_csv(path, index=False)
    for given, credited in (("0.25", "given (--q-rand option)"), ("arc_easy=0.25", "given (--q-rand arc_easy)")):
        result = runner.invoke(
            app, ["fit", str(path), "--law", "power", "-b", "arc_easy", "-m", "acc", "--q-rand", given]
        )
        assert result.exit_code == 0, result.output
        assert f"q_rand 0.25 ({credited})" in result.output and "q_rand column" not in result.output
    # a q_rand column of the file is credited to it
    _table([0.31, 0.36, 0.42, 0.47, 0.52, 0.58]).assign(q_rand=0.25).to_csv(path, index=False)
    result = runner.invoke(app, ["fit", str(path), "--law", "power", "-b", "arc_easy", "-m", "acc"])
    assert result.exit_code == 0 and "q_rand 0.25 (data (q_rand column))" in result.output
