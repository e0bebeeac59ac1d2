import json

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.errors import DataError, SelectionError


def test_apple_reader_runs_sizes_and_replicates(apple):
    info = bc.summary(apple)
    assert info["runs"] == 149
    assert info["tpr"] == [10.0, 20.0, 40.0, 80.0, 160.0]
    assert 9e17 < info["flops_min"] < 1.1e18 and 3e22 < info["flops_max"] < 4e22
    # replicate blocks with equal (tokens, tpr) stay separate runs
    reps = [r for r in apple["run"].unique() if "-rep" in r]
    assert reps, "the replicate 17.87B TPR-20 run must be kept"
    base = reps[0].rsplit("-rep", 1)[0]
    both = apple[
        (apple["run"].isin([base, reps[0]])) & (apple["benchmark"] == "arc_easy") & (apple["metric"] == "acc_norm")
    ]
    assert len(both) == 2 and both["flops"].nunique() == 1
    # C = 6 N D with N = tokens / tpr
    row = apple.iloc[0]
    assert np.isclose(row["flops"], 6 * row["params"] * row["tokens"])
    assert np.isclose(row["tokens"] / row["params"], row["tpr"])


def test_apple_reader_metrics(apple):
    arc = bc.select(apple, "arc_challenge", "acc").iloc[0]
    assert np.isclose(arc["value"], 0.1697952218430034)
    assert np.isclose(arc["stderr"], 0.010971775157784207)  # *_stderr rows become stderr
    assert "acc_stderr" not in set(apple["metric"])
    he = bc.select(apple, "humaneval-py", "pass@8")
    assert set(he["k"]) == {8} and set(he["metric"]) == {"pass@k"}
    assert sorted(bc.select(apple, "humaneval-py", "pass@k")["k"].unique()) == [1, 2, 4, 8, 16, 32, 64, 128]


def test_c4_reader_uses_given_flops(tmp_path):
    from conftest import C4

    if not C4.exists():
        pytest.skip("no C4 file")
    table = bc.load(C4)
    assert table["run"].nunique() == 44
    raw = pd.read_csv(C4, nrows=1)
    assert np.isclose(table["flops"].iloc[0], raw["flops"].iloc[0])


def test_tidy_reader_aliases_and_mapping(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "model": ["a", "b"],
            "N": [1e8, 2e8],
            "D": [2e9, 4e9],
            "task": ["arc_easy"] * 2,
            "metric": ["acc", "acc"],
            "score": [0.4, 0.5],
        }
    ).to_csv(path, index=False)
    table = bc.load(path)
    assert list(table["run"]) == ["a", "b"]
    assert np.allclose(table["flops"], [6 * 1e8 * 2e9, 6 * 2e8 * 4e9])
    path2 = tmp_path / "t2.csv"
    pd.DataFrame({"id": ["a"], "C": [1e20], "bench": ["x"], "metric": ["acc"], "v": [0.3]}).to_csv(path2, index=False)
    table = bc.read_tidy(path2, columns={"id": "run", "bench": "benchmark", "v": "value"})
    assert table["flops"].iloc[0] == 1e20
    pq = tmp_path / "t.parquet"
    pd.read_csv(path).to_parquet(pq)
    assert len(bc.load(pq)) == 2


def test_lm_eval_reader(tmp_path):
    for run in ("small", "big"):
        folder = tmp_path / "results" / run
        folder.mkdir(parents=True)
        doc = {
            "results": {
                "arc_easy": {
                    "alias": "arc_easy",
                    "acc,none": 0.5 if run == "small" else 0.7,
                    "acc_stderr,none": 0.01,
                    "acc_norm,none": 0.45,
                },
                "gsm8k": {"exact_match,strict-match": 0.1, "exact_match_stderr,strict-match": 0.008},
            },
            "config": {"model_args": f"pretrained=/ckpt/{run}"},
        }
        (folder / "results_2025-01-01T00-00-00.json").write_text(json.dumps(doc))
    meta = tmp_path / "runs.yaml"
    meta.write_text(
        "runs:\n  - {run: small, params: 1.0e8, tokens: 2.0e9}\n  - {run: big, params: 1.0e9, tokens: 2.0e10}\n"
    )
    table = bc.load(tmp_path / "results", metadata=meta)
    assert set(table["run"]) == {"small", "big"}
    big = table[(table["run"] == "big") & (table["metric"] == "acc")].iloc[0]
    assert big["value"] == 0.7 and big["stderr"] == 0.01 and big["flops"] == 6 * 1e9 * 2e10
    assert "exact_match/strict-match" in set(table["metric"])
    with pytest.raises(DataError, match="metadata"):
        bc.load(tmp_path / "results")


@pytest.mark.parametrize(
    "frame, match",
    [
        (
            pd.DataFrame({"run": ["a"], "params": [1e8], "tokens": [1e9], "benchmark": ["x"], "metric": ["acc"]}),
            "missing required column.*'value'",
        ),
        (
            pd.DataFrame(
                {
                    "run": ["a"],
                    "params": ["big"],
                    "tokens": [1e9],
                    "benchmark": ["x"],
                    "metric": ["acc"],
                    "value": [0.5],
                }
            ),
            "'params' must be numeric.*'big'",
        ),
        (
            pd.DataFrame(
                {"run": ["a"], "params": [1e8], "tokens": [-5.0], "benchmark": ["x"], "metric": ["acc"], "value": [0.5]}
            ),
            "'tokens' must be positive.*-5",
        ),
        (
            pd.DataFrame({"run": ["a"], "flops": [0.0], "benchmark": ["x"], "metric": ["acc"], "value": [0.5]}),
            "'flops' must be positive",
        ),
        (
            pd.DataFrame(
                {"run": ["a"], "params": [1e8], "tokens": [1e9], "benchmark": ["x"], "metric": ["acc"], "value": [1.7]}
            ),
            r"must lie in \[0, 1\].*1.7",
        ),
        (
            pd.DataFrame({"run": ["a"], "params": [1e8], "benchmark": ["x"], "metric": ["acc"], "value": [0.5]}),
            "need either a 'flops' column",
        ),
    ],
)
def test_validation_errors(frame, match):
    with pytest.raises(DataError, match=match):
        bc.validate(frame, "test.csv")


def test_non_score_metrics_may_leave_unit_interval():
    table = bc.validate(
        pd.DataFrame({"run": ["a"], "flops": [1e20], "benchmark": ["c4"], "metric": ["loss"], "value": [3.2]})
    )
    assert table["value"].iloc[0] == 3.2


def test_selection_errors_suggest(apple):
    with pytest.raises(SelectionError, match="arc_easy"):
        bc.select(apple, "arc_eazy", "acc")
    with pytest.raises(SelectionError, match="acc_norm"):
        bc.select(apple, "arc_easy", "acc_nrom")
    with pytest.raises(SelectionError, match="available k"):
        bc.select(apple, "humaneval-py", "pass@3")
    with pytest.raises(SelectionError, match="no rows"):
        bc.select(apple, "arc_easy", "acc", max_flops=1e10)


def test_missing_file_and_bad_format(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        bc.load(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="unknown format"):
        bc.load(__file__, format="xls")
