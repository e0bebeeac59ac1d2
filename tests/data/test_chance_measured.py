"""Chance levels measured from lm-evaluation-harness outputs: answer choices in --log_samples records and
task configs (v0.4's format, as its EvaluationTracker writes them), checked against each other and the
built-in table; the tasks whose chance level stays unknown are reported."""

import json
from pathlib import Path

import pytest
from conftest import run_cli

import benchcast as bc
from benchcast.data.chance import chance_level, chance_summary, with_chance_levels
from benchcast.data.choices import config_choices, samples_choices
from benchcast.errors import DataError, DataWarning
from benchcast.fitting.spec import design

STAMP = "2024-06-01T12-00-00.123456"
ROOT = Path(__file__).resolve().parents[2]
PYTHIA = ROOT.parent / "shared" / "data" / "pythia" / "zero-shot"


def mc_record(doc_id: int, n_choices: int, *, target="0", mutual_info=False, listed=False) -> dict:
    """One --log_samples line of a multiple_choice task: one loglikelihood request per choice."""
    pairs = [(f"Question {doc_id}?\nAnswer:", f" choice {i}") for i in range(n_choices)]
    if mutual_info:  # lm-eval appends one unconditional request per choice
        pairs += [("", f" choice {i}") for i in range(n_choices)]
    arguments = (
        [list(p) for p in pairs]
        if listed  # early v0.4 wrote the requests' arguments as lists
        else {f"gen_args_{i}": {"arg_0": c, "arg_1": t} for i, (c, t) in enumerate(pairs)}
    )
    metrics = ["acc", "acc_norm"] + (["acc_mutual_info"] if mutual_info else [])
    return {
        "doc_id": doc_id,
        "doc": {"question": f"Question {doc_id}?"},
        "target": target,
        "arguments": arguments,
        "resps": [[[-1.0 - i, False]] for i in range(len(pairs))],
        "filtered_resps": [[-1.0 - i, False] for i in range(len(pairs))],
        "filter": "none",
        "metrics": metrics,
        "doc_hash": "d",
        "prompt_hash": "p",
        "target_hash": "t",
        **{m: 1.0 for m in metrics},
    }


def gen_record(doc_id: int) -> dict:
    """A generate_until line: (context, generation kwargs)."""
    return {
        "doc_id": doc_id,
        "target": "42",
        "arguments": {"gen_args_0": {"arg_0": "Q: 6*7?", "arg_1": {"until": ["\n"], "do_sample": False}}},
        "resps": [["42"]],
        "filtered_resps": ["42"],
        "filter": "strict-match",
        "metrics": ["exact_match"],
        "exact_match": 1.0,
    }


def write_samples(folder: Path, task: str, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_{STAMP}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def write_results(folder: Path, model: str, tasks: dict[str, dict], configs: dict[str, dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    results = {
        task: {"alias": task, **{f"{m},{f}": v for (m, f), v in metrics.items()}} for task, metrics in tasks.items()
    }
    doc = {
        "results": results,
        "configs": configs,
        "versions": dict.fromkeys(tasks, 1.0),
        "config": {"model": "hf", "model_args": f"pretrained={model}"},
        "model_name": model,
        "date": 1717243200.0,
    }
    path = folder / f"results_{STAMP}.json"
    path.write_text(json.dumps(doc))
    return path


def mc_scores(value: float) -> dict:
    return {("acc", "none"): value, ("acc_stderr", "none"): 0.01, ("acc_norm", "none"): value + 0.01}


@pytest.fixture
def ladder(tmp_path):
    """Two runs evaluated on: 'mixed' (4 choices on three documents, 2 on one; its samples beside the
    results), 'yesno' (a config listing two choices, no samples), 'trio' (a template of three fields),
    'mutual' (acc_mutual_info: twice the requests), 'multi' (two gold answers of four on one document),
    'gen' (generate_until) and 'cloze' (one loglikelihood request per document: no choices)."""
    tasks = {t: mc_scores(0.4) for t in ("mixed", "yesno", "trio", "mutual", "multi", "cloze")}
    tasks["gen"] = {("exact_match", "strict-match"): 0.1, ("exact_match_stderr", "strict-match"): "N/A"}
    configs = {
        "mixed": {"task": "mixed", "output_type": "multiple_choice", "doc_to_choice": "{{choices.text}}"},
        "yesno": {"task": "yesno", "output_type": "multiple_choice", "doc_to_choice": ["no", "yes"]},
        "trio": {"task": "trio", "output_type": "multiple_choice", "doc_to_choice": "{{[sol1, sol2, 'c, d']}}"},
        "gen": {"task": "gen", "output_type": "generate_until"},
        "cloze": {"task": "cloze", "output_type": "loglikelihood"},
    }
    for run in ("m1", "m2"):
        write_results(tmp_path / "out" / run, run, tasks, configs)
    write_samples(tmp_path / "out" / "m1", "mixed", [mc_record(i, n) for i, n in enumerate((4, 4, 2, 4))])
    write_samples(tmp_path / "out" / "m2", "gen", [gen_record(0), gen_record(1)])
    elsewhere = tmp_path / "samples"
    write_samples(elsewhere, "mutual", [mc_record(i, 4, mutual_info=True, listed=True) for i in range(3)])
    write_samples(elsewhere, "multi", [mc_record(0, 4, target="[0, 2]"), mc_record(1, 4, target="1")])
    cloze = {**mc_record(0, 1), "metrics": ["acc"], "acc": 1.0}
    write_samples(elsewhere, "cloze", [cloze, {**cloze, "doc_id": 1}])
    meta = tmp_path / "runs.yaml"
    meta.write_text("runs:\n  - {run: m1, params: 1.0e8, tokens: 2.0e9}\n  - {run: m2, params: 4.0e8, tokens: 8.0e9}\n")
    return tmp_path / "out", meta, elsewhere


def test_chance_is_the_mean_of_gold_over_choices(ladder):
    out, meta, elsewhere = ladder
    table = bc.load(out, metadata=meta, samples=elsewhere)
    expected = {
        "mixed": (3 * 0.25 + 0.5) / 4,  # from the samples beside the results: 4, 4, 2, 4 choices
        "yesno": 0.5,  # the config's literal list
        "trio": 1 / 3,  # the config's template of one list (a comma inside a string is one item)
        "mutual": 0.25,  # 8 requests per document with acc_mutual_info: 4 choices
        "multi": (2 / 4 + 1 / 4) / 2,  # a random pick hits one of two gold answers half the time
    }
    for task, level in expected.items():
        for metric in ("acc", "acc_norm"):
            found = chance_level(task, metric, table=table)
            assert found.value == pytest.approx(level, abs=1e-12) and found.source.startswith("measured"), task
    assert "2-4 choices (mostly 4)" in chance_level("mixed", "acc", table=table).source
    assert "mean gold/choices over 4 documents" in chance_level("mixed", "acc", table=table).source
    # a generative task and a one-request (cloze) task get no measured level
    assert chance_level("gen", "exact_match/strict-match", table=table).value == 0.0
    assert not chance_level("cloze", "acc", table=table).known
    assert table.loc[table["benchmark"] == "cloze", "q_rand"].isna().all()


def test_tasks_whose_chance_stays_unknown_are_reported(ladder):
    out, meta, _ = ladder
    table = bc.load(out, metadata=meta)  # without the samples folder: mutual, multi and cloze stay unknown
    summary = chance_summary(table)
    unknown = sorted(f"{b}:{m}" for b, by in summary.items() for m, e in by.items() if not e["known"])
    assert unknown == [f"{t}:{m}" for t in ("cloze", "multi", "mutual") for m in ("acc", "acc_norm")]
    assert summary["gen"]["exact_match/strict-match"] == {"q_rand": 0.0, "source": "generative metric", "known": True}
    with pytest.warns(DataWarning, match="chance level of multi .acc. is unknown, so it is taken as 0"):
        design(table, bc.FitSpec("power", "multi", "acc"))  # a fit warns: never a silent 0
    shown = run_cli("inspect", out, "--metadata", meta, "--json")
    assert shown.returncode == 0, shown.stderr
    info = json.loads(shown.stdout)
    assert sorted(info["chance_unknown"]) == unknown
    assert info["chance"]["yesno"]["acc"]["q_rand"] == 0.5
    shown = run_cli("inspect", out, "--metadata", meta, env={"COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "chance level unknown for 6 score metric(s)" in " ".join(text.split())


def test_samples_and_config_must_agree(tmp_path):
    configs = {"quad": {"task": "quad", "output_type": "multiple_choice", "doc_to_choice": ["a", "b"]}}
    write_results(tmp_path / "m1", "m1", {"quad": mc_scores(0.3)}, configs)
    write_samples(tmp_path / "m1", "quad", [mc_record(0, 4), mc_record(1, 4)])
    meta = tmp_path / "runs.yaml"
    meta.write_text("runs:\n  - {run: m1, params: 1.0e8, tokens: 2.0e9}\n")
    with pytest.raises(DataError, match=r"task 'quad': samples_quad_.*gives 4 choices but .*results_.* lists 2"):
        bc.load(tmp_path, metadata=meta)


def test_a_measured_level_must_agree_with_the_built_in_table(tmp_path):
    """A task called piqa with four choices is not the piqa the table knows (two): an error naming both,
    unless the caller gives its level."""
    write_results(tmp_path / "m1", "m1", {"piqa": mc_scores(0.3)}, {})
    write_samples(tmp_path / "m1", "piqa", [mc_record(i, 4) for i in range(3)])
    meta = tmp_path / "runs.yaml"
    meta.write_text("runs:\n  - {run: m1, params: 1.0e8, tokens: 2.0e9}\n")
    table = bc.load(tmp_path, metadata=meta)
    with pytest.raises(DataError, match=r"task 'piqa' \(acc\): the lm-eval files give 4 choices.*table says 2 choices"):
        chance_level("piqa", "acc", table=table)
    assert chance_summary(table)["piqa"]["acc"]["source"].startswith("conflict: task 'piqa'")
    given = with_chance_levels(table, {"piqa": 0.25})
    assert chance_level("piqa", "acc", table=given) == (0.25, "given (--q-rand piqa)")
    # a newer samples file of the task (the one read) with its two choices agrees: the measured level is used
    (tmp_path / "m1" / "samples_piqa_2024-07-01T00-00-00.jsonl").write_text(
        "".join(json.dumps(mc_record(i, 2)) + "\n" for i in range(3))
    )
    agreed = chance_level("piqa", "acc", table=bc.load(tmp_path, metadata=meta))
    assert agreed.value == 0.5 and agreed.source.startswith("measured")


def test_what_a_config_or_a_samples_file_cannot_count():
    mc = {"output_type": "multiple_choice"}
    assert config_choices("t", {**mc, "doc_to_choice": "choices"}, "r.json") is None  # a field of each document
    assert config_choices("t", {**mc, "doc_to_choice": "def f(doc):\n    return doc['c']\n"}, "r.json") is None
    assert config_choices("t", {**mc, "doc_to_choice": ["a"], "use_prompt": "p"}, "r.json") is None  # promptsource
    assert config_choices("t", {**mc, "doc_to_choice": {"A": "x", "B": "y", "C": "z"}}, "r.json").counts == (3,)
    assert config_choices("t", {"output_type": "generate_until", "doc_to_choice": ["a", "b"]}, "r.json") is None


def test_malformed_samples_are_refused(tmp_path):
    odd = {**mc_record(0, 3, mutual_info=True)}
    odd["arguments"] = dict(list(odd["arguments"].items())[:5])
    with pytest.raises(DataError, match="acc_mutual_info doubles the requests, but there are 5"):
        samples_choices(write_samples(tmp_path, "odd", [odd]))
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        path = tmp_path / f"samples_bad_{STAMP}.jsonl"
        path.write_text(json.dumps(mc_record(0, 2)) + "\n{oops\n")
        samples_choices(path)
    clash = [mc_record(0, 2), {**mc_record(0, 3), "filter": "other"}]
    with pytest.raises(DataError, match="document 0 has 3 choices here and 2 before"):
        samples_choices(write_samples(tmp_path, "clash", clash))
    write_results(tmp_path / "m1", "m1", {"t": mc_scores(0.3)}, {})
    meta = tmp_path / "runs.yaml"
    meta.write_text("runs:\n  - {run: m1, params: 1.0e8, tokens: 2.0e9}\n")
    with pytest.raises(DataError, match="nowhere: no such samples file or folder"):
        bc.load(tmp_path / "m1", metadata=meta, samples=tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no lm-eval samples files"):
        bc.load(tmp_path / "m1", metadata=meta, samples=tmp_path / "empty")
    tidy = tmp_path / "tidy.csv"
    tidy.write_text("run,params,tokens,benchmark,metric,value\nr,1e8,2e9,t,acc,0.3\n")
    with pytest.raises(DataError, match="samples files are read only with lm-eval results"):
        bc.load(tidy, samples=tmp_path)


@pytest.mark.skipif(not PYTHIA.exists(), reason=f"shared data not found at {PYTHIA}")
def test_pythia_v03_files_load_as_before():
    """v0.3 files carry no configs and no samples: no measured level, the built-in table's as before
    (and acc_norm of a task with a known number of choices is 1/choices, no longer unknown)."""
    table = bc.load(PYTHIA, metadata=ROOT / "examples" / "pythia" / "runs.yaml")
    assert not {"q_rand", "q_rand_source", "choices"} & set(table.columns)
    assert chance_level("arc_easy", "acc_norm", table=table) == (0.291, "Krajewski et al. 2025 default")
    assert chance_level("logiqa", "acc", table=table) == (0.25, "1/4 choices")
    assert chance_level("logiqa", "acc_norm", table=table) == (0.25, "1/4 choices")
    assert chance_level("hendrycksTest-anatomy", "acc_norm", table=table) == (0.25, "1/4 choices (MMLU subtask)")
    unknown = [(b, m) for b, by in chance_summary(table).items() for m, e in by.items() if not e["known"]]
    assert unknown == []
    assert table["value"].notna().all()  # every value read (no NaN introduced)


def test_bench_warns_of_unknown_chance_levels_its_workers_would_take_as_0(ladder):
    from benchcast.evaluation.bench import Dataset, bench

    out, meta, _ = ladder
    table = bc.load(out, metadata=meta)
    data = Dataset("ladder", table, (("multi", "acc"), ("yesno", "acc")), (1e19,))
    with pytest.warns(DataWarning, match=r"ladder: the chance level of multi:acc is unknown, so it is taken as 0"):
        result = bench(
            [data],
            ["power"],
            laws=("power",),
            candidates=("power",),
            uncertainty=bc.Uncertainty(0),
            n_jobs=1,
            progress=False,
        )
    assert set(result.rows["benchmark"]) == {"multi", "yesno"}
