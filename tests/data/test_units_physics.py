"""Sizes checked against physics (issue 49 items 3 and 4): every unit slip of the issue refused, naming the run, the
value and the likely unit; every real ladder of ../shared/data and the example still loads."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.data.example import example_path
from benchcast.errors import DataError

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="module")
def ladder() -> pd.DataFrame:
    return pd.read_csv(example_path())


def _runs(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["run"]))


def _refused(frame: pd.DataFrame, *needles: str) -> str:
    with pytest.raises(DataError) as caught:
        bc.validate(frame, "t.csv")
    text = str(caught.value)
    assert text.startswith("t.csv: run '"), text
    for needle in needles:
        assert needle in text, text
    return text


def test_a_gflops_column_named_flops(ladder):
    _refused(ladder.assign(flops=ladder["flops"] / 1e9), "'20M'", "1e-09 x its 6 N D", "GFLOPs")


def test_half_the_runs_in_gflops(ladder):
    half = ladder["run"].isin(_runs(ladder)[1::2])
    frame = ladder.assign(flops=np.where(half, ladder["flops"] / 1e9, ladder["flops"]))
    _refused(frame, "'30M'", "GFLOPs")


def test_one_run_at_1000_times_its_6nd(ladder):
    run = _runs(ladder)[3]
    frame = ladder.assign(flops=np.where(ladder["run"] == run, ladder["flops"] * 1e3, ladder["flops"]))
    _refused(frame, f"'{run}'", "1e+03 x its 6 N D")


def test_a_gflops_column_holding_flops(ladder):
    """A W&B 'Gflops' column that holds FLOPs, multiplied by 1e9 on reading: one run at 1e9 x its 6 N D."""
    run = _runs(ladder)[5]
    frame = ladder.assign(flops=np.where(ladder["run"] == run, ladder["flops"] * 1e9, ladder["flops"]))
    _refused(frame, f"'{run}'", "read as GFLOPs")


def test_pf_days(ladder):
    _refused(ladder.assign(flops=ladder["flops"] / 8.64e19), "PF-days")


def test_a_run_inconsistent_with_the_others(ladder):
    """Each within 3x of 6 N D, but one 2.5x while the others are 1/2.5x: one file counts FLOPs one way."""
    run = _runs(ladder)[0]
    frame = ladder.assign(flops=ladder["flops"] * np.where(ladder["run"] == run, 2.5, 0.4))
    _refused(frame, f"'{run}'", "median of 0.4 x")


def test_params_in_millions(ladder):
    frame = ladder.assign(params=ladder["params"] / 1e6).drop(columns="flops")
    _refused(frame, "params = 20,", "millions")


def test_a_tpr_column_that_is_not_d_over_n(ladder):
    _refused(ladder.assign(tpr=200.0), "tpr = 200 but tokens / params = 20")


def test_flops_alone_in_pf_days():
    frame = pd.DataFrame({"run": ["a", "b"], "flops": [0.5, 5.0], "benchmark": "x", "metric": "acc", "value": 0.4})
    _refused(frame, "flops = 0.5", "PF-days")


def test_a_convention_within_the_band_is_read():
    """FLOPs 1.3 x 6 N D at every size (attention counted), and a ratio falling with N: kept as the file gives them."""
    params = np.geomspace(2e7, 4e9, 6)
    frame = pd.DataFrame(
        {"run": [f"r{i}" for i in range(6)], "params": params, "tokens": 20 * params, "benchmark": "x"}
        | {"metric": "acc", "value": np.linspace(0.3, 0.6, 6)}
    )
    for ratio in (1.3, np.geomspace(2.0, 1.05, 6)):
        table = bc.validate(frame.assign(flops=ratio * 6 * params * 20 * params), "t")
        assert np.allclose(table["flops"] / (6 * table["params"] * table["tokens"]), ratio)


def test_percent_scores_of_an_unknown_metric_are_refused_when_forecast(ladder):
    """'primary_score' is no metric benchcast knows, so the file loads; a fit reads it as a score and refuses it."""
    frame = ladder.assign(metric="primary_score", value=ladder["value"] * 100)
    table = bc.validate(frame, "t.csv")
    with pytest.raises(DataError, match=r"metric 'primary_score'.*must lie in \[0, 1\].*percentages\? divide"):
        bc.fit(table, "power", "hellaswag", "primary_score")


def test_percent_scores_of_a_known_metric_are_refused_on_reading(ladder):
    with pytest.raises(DataError, match=r"acc_norm.*percentages\? divide the column by 100"):
        bc.validate(ladder.assign(value=ladder["value"] * 100), "t.csv")


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared data not found at {SHARED}")
@pytest.mark.parametrize(
    "path",
    [
        "apple-downstream/metrics_dclm_data_mixture.subset.csv",
        "apple-downstream/metrics_c4_mixture.subset.csv",
        "dclm-recipes/dclm_evals.csv",
    ],
)
def test_real_ladders_pass(path):
    table = bc.load(SHARED / path)
    ratio = table["flops"] / (6 * table["params"] * table["tokens"])
    assert table["run"].nunique() > 10 and np.all((ratio > 1 / 3) & (ratio < 3))
