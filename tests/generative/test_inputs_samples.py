"""lm-eval --log_samples files: counts per generation, filters, names, refusals."""

import json

import numpy as np
import pytest

from benchcast.errors import DataError, DataWarning
from benchcast.generative.passk import pass_at_k
from benchcast.generative.samples import read_counts

STAMP = "2025-03-14T13-47-58.000112"
TRUE_COUNTS = [3, 4, 0, 3]  # correct generations of 8 per problem
FIRST_CORRECT = [False, True, False, False]  # what lm-eval scores: the first generation only


def generations(c: int, first_correct: bool, n: int = 8, right: str = "42", wrong: str = "7") -> list[str]:
    flags = [first_correct] + [False] * (n - 1)
    rest = c - int(first_correct)
    for i in range(1, 1 + rest):
        flags[i] = True
    return [right if f else wrong for f in flags]


def sample_line(doc_id, gens, target="42", score=None, filt="none", metric="exact_match"):
    return {
        "doc_id": doc_id,
        "doc": {"question": f"q{doc_id}", "answer": target},
        "target": target,
        "arguments": {"gen_args_0": {"arg_0": f"q{doc_id}", "arg_1": {"until": ["\n"]}}},
        "resps": [gens],
        "filtered_resps": [gens],
        "filter": filt,
        "metrics": [metric],
        metric: float(gens[0] == target) if score is None else score,
        "doc_hash": "h",
        "prompt_hash": "h",
        "target_hash": "h",
    }


def write_lines(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def four_problems(tmp_path, name=f"samples_gsm8k_{STAMP}.jsonl"):
    lines = [sample_line(i, generations(c, f)) for i, (c, f) in enumerate(zip(TRUE_COUNTS, FIRST_CORRECT, strict=True))]
    return write_lines(tmp_path / name, lines)


def test_repeats_are_counted_per_generation_not_from_the_first_score(tmp_path):
    counts = read_counts(four_problems(tmp_path), run="m")
    assert list(counts["n"]) == [8] * 4 and list(counts["c"]) == TRUE_COUNTS
    p1, p8 = pass_at_k(counts["n"].to_numpy(), counts["c"].to_numpy(), [1, 8])
    assert p1 == pytest.approx(10 / 32) and p1 == pytest.approx(0.3125)
    assert p8 == pytest.approx(0.75)  # problems 0, 1, 3 have a correct generation


def test_task_and_run_come_from_lm_eval_names(tmp_path):
    folder = tmp_path / "EleutherAI__pythia-160m"
    folder.mkdir()
    path = four_problems(folder)
    (folder / f"results_{STAMP}.json").write_text(
        json.dumps({"results": {"gsm8k": {"exact_match,none": 0.25}}, "model_name": "EleutherAI/pythia-160m"})
    )
    counts = read_counts(path)
    assert set(counts["benchmark"]) == {"gsm8k"}  # not the file stem
    assert set(counts["run"]) == {"EleutherAI/pythia-160m"}  # not the literal 'run'
    (folder / f"results_{STAMP}.json").unlink()
    assert set(read_counts(path)["run"]) == {"EleutherAI__pythia-160m"}  # lm-eval's folder for the model


def test_two_filters_are_two_benchmarks_not_twice_the_problems(tmp_path):
    lines = []
    for i, (c, f) in enumerate(zip(TRUE_COUNTS, FIRST_CORRECT, strict=True)):
        gens = generations(c, f)
        lines.append(sample_line(i, ["[invalid]"] * 8, filt="strict-match"))
        lines.append(sample_line(i, gens, filt="flexible-extract"))
    counts = read_counts(write_lines(tmp_path / f"samples_gsm8k_{STAMP}.jsonl", lines), run="m")
    per = counts.groupby("benchmark")
    assert per.size().to_dict() == {"gsm8k/flexible-extract": 4, "gsm8k/strict-match": 4}
    assert list(counts[counts["benchmark"] == "gsm8k/flexible-extract"]["c"]) == TRUE_COUNTS
    assert counts[counts["benchmark"] == "gsm8k/strict-match"]["c"].sum() == 0


def test_exact_match_uses_the_task_normalisation_from_the_results_file(tmp_path):
    target = "She sold 48 + 24 = 72 clips.\n#### 72"
    gens = ["72", "$72", "72.", "71", "The answer is 70", "72.0"]
    line = sample_line(0, gens, target=target, score=1.0)
    path = write_lines(tmp_path / f"samples_gsm8k_{STAMP}.jsonl", [line])
    options = {
        "ignore_case": True,
        "ignore_punctuation": False,
        "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"],
    }
    config = {"metric_list": [{"metric": "exact_match", "aggregation": "mean", **options}]}
    (tmp_path / f"results_{STAMP}.json").write_text(
        json.dumps({"results": {"gsm8k": {"exact_match,none": 1.0}}, "configs": {"gsm8k": config}})
    )
    counts = read_counts(path, run="m")
    assert (counts["n"].iloc[0], counts["c"].iloc[0]) == (6, 3)  # lm-eval's exact match: "72.0" is wrong
    # without the task's options plain exact match cannot reproduce lm-eval's score (the target is the
    # whole solution); the math grader can, and it counts "72.0" as 72
    (tmp_path / f"results_{STAMP}.json").unlink()
    counts = read_counts(path, run="m")
    assert (counts["n"].iloc[0], counts["c"].iloc[0]) == (6, 4)


def test_refuses_when_no_grader_reproduces_lm_eval(tmp_path):
    # lm-eval says the first generation ("7") is right; neither exact match nor the math grader agree
    line = sample_line(0, ["7", "42", "42"], target="42", score=1.0)
    path = write_lines(tmp_path / f"samples_gsm8k_{STAMP}.jsonl", [line])
    with pytest.raises(DataError, match="per-generation correctness cannot be determined"):
        read_counts(path, run="m")


def test_per_generation_score_lists_are_used_and_checked(tmp_path):
    line = sample_line(0, ["a", "b", "c"], score=[1, 0, 1])
    counts = read_counts(write_lines(tmp_path / f"samples_x_{STAMP}.jsonl", [line]), run="m")
    assert (counts["n"].iloc[0], counts["c"].iloc[0]) == (3, 2)
    bad = sample_line(0, ["a", "b", "c"], score=[1, 2, 0])
    with pytest.raises(DataError, match="must be 0 or 1.*2"):
        read_counts(write_lines(tmp_path / f"samples_x_{STAMP}.jsonl", [bad]), run="m")
    null = sample_line(0, ["a"], score=None)
    null["exact_match"] = None
    with pytest.raises(DataError, match="null"):
        read_counts(write_lines(tmp_path / f"samples_x_{STAMP}.jsonl", [null]), run="m")


def test_take_first_filter_counts_one_generation_and_says_so(tmp_path):
    line = sample_line(0, ["42"] * 4)
    line["filtered_resps"] = ["42"]
    with pytest.warns(DataWarning, match="kept only the first"):
        counts = read_counts(write_lines(tmp_path / f"samples_x_{STAMP}.jsonl", [line]), run="m")
    assert (counts["n"].iloc[0], counts["c"].iloc[0]) == (1, 1)


def test_malformed_sample_files_name_the_file(tmp_path):
    odd = tmp_path / f"samples_x_{STAMP}.jsonl"
    odd.write_bytes(b"\xff\xfe{}\n")
    with pytest.raises(DataError, match="samples_x.*UTF-8"):
        read_counts(odd)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="empty.jsonl.*empty"):
        read_counts(empty)
    nameless = write_lines(tmp_path / "mine.jsonl", [sample_line(0, ["42"])])
    with pytest.raises(DataError, match="cannot tell the task"):
        read_counts(nameless)
    repeated = write_lines(tmp_path / f"samples_x_{STAMP}.jsonl", [sample_line(0, ["42"]), sample_line(0, ["42"])])
    with pytest.raises(DataError, match="doc_id 0 appears twice"):
        read_counts(repeated, run="m")


def test_a_table_of_scores_is_told_what_reads_it(tmp_path):
    """A scaling table (pass@k scores per run, as the Apple files) given as samples names the commands that read it;
    another table without problem ids is told only what is missing."""
    scores = tmp_path / "scores.csv"
    scores.write_text("run,flops,benchmark,metric_type,score\nr1,1e20,humaneval-py,pass@1,0.1\n")
    with pytest.raises(DataError, match=r"scores.csv: missing column 'problem_id' .*table of scores per run.*kscan"):
        read_counts(scores)
    other = tmp_path / "other.csv"
    other.write_text("id,outcome\n1,0\n")
    with pytest.raises(DataError, match=r"other.csv: missing column 'problem_id' \(found id, outcome\)\.$"):
        read_counts(other)


def test_per_problem_tables_refuse_repeated_problems(tmp_path):
    path = tmp_path / "pp.csv"
    path.write_text("problem_id,n,c\n1,10,3\n1,10,4\n")
    with pytest.raises(DataError, match="more than one"):
        read_counts(path, benchmark="b", run="r")
    path.write_text("problem_id,n,c\n1,inf,3\n")
    with pytest.raises(DataError, match="'n' must hold non-negative integers"):
        read_counts(path, benchmark="b", run="r")


def test_counts_are_integers(tmp_path):
    counts = read_counts(four_problems(tmp_path), run="m")
    assert np.issubdtype(counts["n"].dtype, np.integer) and np.issubdtype(counts["c"].dtype, np.integer)
