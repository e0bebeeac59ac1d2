"""lm-eval results files (v0.4 spelling, re-runs, malformed files) and run metadata."""

import json

import pandas as pd
import pytest

import benchcast as bc
from benchcast.cli.options import parse_q_rand
from benchcast.data.chance import with_chance_levels
from benchcast.data.metadata import read_metadata
from benchcast.errors import DataError, DataWarning

META = "runs:\n  - {run: small, params: 1.0e8, tokens: 2.0e9}\n  - {run: mid, params: 3.0e8, tokens: 6.0e9}\n"
META += "  - {run: big, params: 1.0e9, tokens: 2.0e10}\n"


def results(acc: float, **extra) -> dict:
    return {
        "results": {
            "arc_easy": {"alias": "arc_easy", "acc,none": acc, "acc_stderr,none": 0.01},
            "gsm8k": {
                "alias": "gsm8k",
                "exact_match,strict-match": 0.1,
                "exact_match_stderr,strict-match": "N/A",
                "exact_match,flexible-extract": 0.15,
                "exact_match_stderr,flexible-extract": 0.01,
            },
        },
        **extra,
    }


def ladder(tmp_path, scores=(("small", 0.4), ("mid", 0.5), ("big", 0.6))):
    root = tmp_path / "out"
    for run, acc in scores:
        (root / run).mkdir(parents=True, exist_ok=True)
        (root / run / "results_2025-01-01T00-00-00.000001.json").write_text(json.dumps(results(acc)))
    meta = tmp_path / "runs.yaml"
    meta.write_text(META)
    return root, meta


def test_filters_and_lm_eval_metric_spelling(tmp_path):
    root, meta = ladder(tmp_path)
    table = bc.load(root, metadata=meta)
    assert set(table[table["benchmark"] == "gsm8k"]["metric"]) == {
        "exact_match/strict-match",
        "exact_match/flexible-extract",
    }
    rows = bc.select(table, "gsm8k", "exact_match,flexible-extract")  # lm-eval's spelling
    assert len(rows) == 3 and set(rows["value"]) == {0.15}
    strict = bc.select(table, "gsm8k", "exact_match/strict-match")
    assert strict["stderr"].isna().all()  # "N/A": lm-eval did not compute it
    assert len(bc.select(table, "arc_easy", "acc,none")) == 3


def test_a_rerun_is_kept_once_newest_first_and_named(tmp_path):
    root, meta = ladder(tmp_path)
    newer = root / "small" / "results_2025-02-01T00-00-00.000001.json"
    newer.write_text(json.dumps(results(0.45)))
    with pytest.warns(DataWarning, match=r"run 'small'.*results_2025-01-01.*results_2025-02-01.*kept the newest"):
        table = bc.load(root, metadata=meta)
    arc = bc.select(table, "arc_easy", "acc")
    assert len(arc) == 3  # 3 runs, not 4 points
    assert arc.set_index("run")["value"].to_dict() == {"small": 0.45, "mid": 0.5, "big": 0.6}


def test_undated_reruns_are_refused(tmp_path):
    root, meta = ladder(tmp_path)
    for name in ("a.json", "b.json"):
        (root / "small" / name).write_text(json.dumps(results(0.4)))
    for stamped in root.rglob("results_*.json"):
        stamped.unlink()
    with pytest.raises(DataError, match="dates are unknown"):
        bc.load(root, metadata=meta)


@pytest.mark.parametrize(
    "doc, match",
    [
        ([{"results": {}}], "top level is a list"),
        ({"results": {}}, "'results' is empty"),
        ({"results": {"arc_easy": 0.5}}, r"results\['arc_easy'\] is a float"),
        ({"results": {"arc_easy": {"acc,none": "high"}}}, r"results\['arc_easy'\]\['acc,none'\] holds 'high'"),
        ({"results": {"arc_easy": {"acc,none": True}}}, "holds True"),
        ({"config": {}}, "no 'results' object"),
    ],
)
def test_malformed_results_files(tmp_path, doc, match):
    path = tmp_path / "small" / "results_2025-01-01T00-00-00.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    meta = tmp_path / "runs.yaml"
    meta.write_text(META)
    with pytest.raises(DataError, match=match):
        bc.load(path, metadata=meta)


def test_unreadable_results_files_are_named(tmp_path):
    meta = tmp_path / "runs.yaml"
    meta.write_text(META)
    empty = tmp_path / "small.json"
    empty.write_text("")
    with pytest.raises(DataError, match="small.json: the file is empty"):
        bc.load(empty, metadata=meta)
    latin = tmp_path / "small2.json"
    latin.write_bytes('{"results": {"caf\xe9": {}}}'.encode("latin-1"))
    with pytest.raises(DataError, match="small2.json: not UTF-8"):
        bc.load(latin, metadata=meta)


def test_metadata_numbers_names_and_shapes(tmp_path):
    meta = tmp_path / "runs.yaml"
    # PyYAML reads 8.0e5 (no sign in the exponent) as text; it must still be a number
    meta.write_text("runs:\n  - {run: a, model: /ckpt/a-final, params: 8.0e5, tokens: '1.6e7'}\n")
    runs = read_metadata(meta).runs
    assert runs["run"].tolist() == ["a"]  # 'model' does not replace the run name
    assert runs["model"].tolist() == ["/ckpt/a-final"]
    assert runs["params"].iloc[0] == 800000.0 and runs["tokens"].iloc[0] == 1.6e7
    meta.write_text("runs:\n  - {run: a, params: lots, tokens: 1.0e9}\n")
    with pytest.raises(DataError, match="run 'a'.*'params' must be a number.*'lots'"):
        read_metadata(meta)
    meta.write_text("runs:\n  - {run: a, params: 1e400, tokens: 1.0e9}\n")
    with pytest.raises(DataError, match="'params' must be a positive finite number"):
        read_metadata(meta)
    meta.write_text("run: [a, b]\nparams: [1.0e8, 2.0e8]\ntokens: [1.0e9, 2.0e9]\n")
    with pytest.raises(DataError, match="run 'run' maps to list"):
        read_metadata(meta)
    meta.write_text("runs:\n  - {run: a, params: 1.0e8, tokens: 1.0e9}\n  - {run: a, params: 1.0e8, tokens: 1.0e9}\n")
    with pytest.raises(DataError, match="listed more than once"):
        read_metadata(meta)


def test_checkpointed_runs_from_a_step_in_the_file(tmp_path):
    root = tmp_path / "evals" / "m"
    root.mkdir(parents=True)
    for step, acc in ((0, 0.25), (1000, 0.3), (2000, 0.35)):
        doc = {
            "results": {"arc_easy": {"acc": acc, "acc_stderr": 0.01}},
            "config": {"model_args": f"pretrained=org/m,revision=step{step}"},
        }
        (root / f"ckpt{step}.json").write_text(json.dumps(doc))
    meta = tmp_path / "runs.yaml"
    meta.write_text("tokens_per_step: 1000\nfinal_step: 2000\nruns:\n  - {run: m, params: 1.0e6, path: 'm/*.json'}\n")
    with pytest.warns(DataWarning, match="skipped 1 step-0"):
        table = bc.load(tmp_path / "evals", metadata=meta, checkpoints="all")
    assert sorted(table["run"]) == ["m@step1000", "m@step2000"]
    assert table.set_index("run")["tokens"].to_dict() == {"m@step1000": 1e6, "m@step2000": 2e6}
    assert table.set_index("run")["final"].to_dict() == {"m@step1000": False, "m@step2000": True}
    meta.write_text(meta.read_text().replace("final_step: 2000", "final_step: 2000\nsteps: final"))
    final = bc.load(tmp_path / "evals", metadata=meta)
    assert final["run"].tolist() == ["m"] and final["value"].tolist() == [0.35]


def test_q_rand_option_parser():
    # the levels as the commands apply them (data.chance.with_chance_levels): benchmark:metric, then benchmark, then all
    table = pd.DataFrame(
        {
            "benchmark": ["piqa", "mystery", "mystery", "arc_easy", "csqa"],
            "metric": ["acc", "acc_norm", "acc", "acc", "acc"],
        }
    )
    given = with_chance_levels(table, parse_q_rand(["piqa=0.5", "mystery:acc_norm=0.3", "mystery=0.25"]))
    assert given["q_rand"].tolist()[:3] == [0.5, 0.3, 0.25] and given["q_rand"].iloc[3:].isna().all()
    assert given["q_rand_source"].tolist()[:3] == [
        "given (--q-rand piqa)",
        "given (--q-rand mystery:acc_norm)",
        "given (--q-rand mystery)",
    ]
    every = with_chance_levels(table, parse_q_rand(["0.2", "piqa=0.5"]))  # one VALUE for every benchmark
    assert every["q_rand"].tolist() == [0.5, 0.2, 0.2, 0.2, 0.2]
    assert every["q_rand_source"].iloc[4] == "given (--q-rand option)"
    for bad, match in (
        ("piqa", "not a number"),
        ("=0.3", "BENCHMARK=VALUE"),
        ("piqa=x", "not a number"),
        ("piqa=1.2", r"\[0, 1\)"),
    ):
        with pytest.raises(DataError, match=match):
            parse_q_rand([bad])


def test_tidy_metadata_csv_and_model_only_names(tmp_path):
    meta = tmp_path / "runs.csv"
    pd.DataFrame({"model": ["x"], "params": [1e8], "tokens": [2e9]}).to_csv(meta, index=False)
    assert read_metadata(meta).runs["run"].tolist() == ["x"]
