"""A total sampling budget spent in rounds: the allocation rule, its use by `sample`, resume, passk."""

import json

import numpy as np
import pandas as pd
import pytest

from benchcast import Uncertainty
from benchcast.collect.budget import allocate, default_first_round, round_sizes, simulate
from benchcast.errors import BenchcastError


def test_allocate_gives_unsolved_problems_equal_shares():
    n = np.array([10, 10, 10, 10, 10])
    c = np.array([0, 3, 0, 0, 1])
    assert allocate(n, c, 9).tolist() == [3, 0, 3, 3, 0]
    # 10 over three unsolved: one left over, to the one with fewest samples so far
    assert allocate(np.array([12, 10, 11, 10, 10]), c, 10).tolist() == [3, 0, 3, 4, 0]
    # a target of 2 successes makes the once-solved problem eligible too
    assert allocate(n, c, 8, target=2).tolist() == [2, 0, 2, 2, 2]
    # every problem solved: the round goes to the fewest successes
    assert allocate(n, np.array([2, 3, 2, 5, 4]), 7).tolist() == [4, 0, 3, 0, 0]
    assert allocate(n, c, 0).tolist() == [0] * 5
    with pytest.raises(BenchcastError, match="0 <= c <= n"):
        allocate([1, 2], [2, 0], 4)
    with pytest.raises(BenchcastError, match="equal-length"):
        allocate([1, 2], [0], 4)


def test_round_sizes_spend_the_budget_exactly():
    assert round_sizes(1000, 10, 25) == [250, 188, 188, 188, 186]
    assert round_sizes(1000, 10, 25, round_size=300) == [250, 300, 300, 150]
    assert round_sizes(100, 10, 10) == [100]
    assert default_first_round(12_800, 128) == 25 and default_first_round(5, 10) == 1
    with pytest.raises(BenchcastError, match="cannot give 10 problems 20 samples"):
        round_sizes(100, 10, 20)
    with pytest.raises(BenchcastError, match="at least one sample"):
        round_sizes(100, 10, 0)


def test_simulated_allocation_follows_the_hard_problems():
    p = np.array([0.9] * 5 + [1e-3] * 5 + [0.0] * 5)
    n, c = simulate(p, 15 * 200, first_round=50, rng=np.random.default_rng(1))
    assert n.sum() == 3000
    assert (n[:5] == 50).all()  # solved in the first round: nothing more
    assert (n[10:] > 200).all() and (c[10:] == 0).all()  # never solvable: they get the rest
    assert (c[:5] > 30).all()


def test_beta_fit_and_estimator_use_unequal_n():
    """passk's beta-binomial likelihood takes each problem's own n: with adaptive counts it recovers
    the generating Beta(a, b) as well as with uniform counts; the estimator stops at min n."""
    from benchcast.generative.past_n import passk_table
    from benchcast.generative.success import fit_family

    rng = np.random.default_rng(3)
    p = rng.beta(0.4, 6.0, 3000)
    n, c = simulate(p, 3000 * 60, first_round=20, rng=rng)
    assert n.min() == 20 and n.max() > 100  # really unequal
    fitted = fit_family("beta", n, c)
    assert fitted.to_dict()["a"] == pytest.approx(0.4, rel=0.12) and fitted.to_dict()["b"] == pytest.approx(
        6.0, rel=0.2
    )
    truth = np.mean(1 - (1 - p) ** 1000)
    assert float(fitted.pass_at_k([1000])[0]) == pytest.approx(truth, abs=0.03)
    counts = pd.DataFrame({"run": "r", "benchmark": "b", "problem_id": range(3000), "n": n, "c": c})
    table = passk_table(counts, [1, 20, 50], uncertainty=Uncertainty(0, levels=0.9), family="beta")
    assert table.set_index("k").loc[20, "source"] == "estimator" and table.set_index("k").loc[50, "source"] == "beta"


# --- `sample --budget` with a tiny model (needs the `score` extra) ---


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    import torch

    torch.set_num_threads(1)
    from test_collect import build_tiny, build_tokenizer  # the tiny Llama of the collect tests

    return build_tiny(tmp_path_factory.mktemp("tiny-budget"), build_tokenizer())


@pytest.fixture
def problems(tmp_path):
    from benchcast.collect.problems import load_problems

    frame = pd.DataFrame(
        {"id": [f"q{i}" for i in range(5)], "question": [f"What is {i}?" + " Think." * i for i in range(5)]}
    )
    path = tmp_path / "problems.jsonl"
    frame.assign(answer="7").to_json(path, orient="records", lines=True)
    return load_problems(path)


def _fake_grade(extracted, gold, use_math_verify=True):
    """Correct for completions whose extraction hashes one way: problems then differ in c."""
    import zlib

    return extracted is not None and zlib.crc32(str(extracted).encode()) % 5 == 0


@pytest.fixture
def graded(monkeypatch):
    monkeypatch.setattr("benchcast.collect.sampling.grade", _fake_grade)
    monkeypatch.setattr("benchcast.collect.sampling.extract_answer", lambda text: text)


def test_sample_spends_the_budget_in_rounds_and_resumes_exactly(tiny, problems, graded, tmp_path):
    """A resumed budgeted run draws the same samples (bit-identical completions) with the same
    per-problem n as the uninterrupted one."""
    from benchcast.collect import store
    from benchcast.collect.sampling import sample, to_counts

    options = {"budget": 60, "first_round": 4, "round_size": 10, "max_new_tokens": 6, "seed": 2, "progress": False}
    out = tmp_path / "s.csv"
    full = sample(tiny, problems, out=out, **options)
    assert len(full) == 60 and full["error"].isna().all()
    counts = to_counts(full).set_index("problem_id")
    assert counts["n"].sum() == 60 and counts["n"].min() >= 4 and counts["n"].nunique() > 1
    assert sorted(full["round"].unique()) == [0, 1, 2, 3, 4]
    # each round's samples are what the allocation rule gives for the counts before it
    ids = list(problems["id"])
    planned = np.full(5, 4)
    sample_index = full["sample_id"].astype(int)
    for r, size in enumerate(round_sizes(60, 5, 4, 10)[1:], start=1):
        c = [
            int(full[(full["problem_id"] == p) & (sample_index < planned[j])]["correct"].sum())
            for j, p in enumerate(ids)
        ]
        extra = allocate(planned, c, size)
        got = full[full["round"] == r].groupby("problem_id").size().reindex(ids, fill_value=0).to_numpy()
        assert got.tolist() == extra.tolist()
        planned = planned + extra
    assert full["correct"].sum() > 0
    # as if the run had died in round 2, with some samples of round 1 lost too
    kept = full[(full["round"] < 2) & ~((full["round"] == 1) & (full["sample_id"].astype(int) % 2 == 0))]
    store.write(kept, out)
    resumed = sample(tiny, problems, out=out, **options)
    key = ["problem_id", "sample_id"]
    both = full.merge(resumed, on=key, suffixes=("", "_resumed"))
    assert len(resumed) == 60 and len(both) == 60
    assert (both["completion"] == both["completion_resumed"]).all()
    assert (both["round"] == both["round_resumed"]).all()


def test_sample_cli_budget_records_n_per_problem(tiny, problems, graded, tmp_path):
    from typer.testing import CliRunner

    from benchcast.cli import app

    path = tmp_path / "problems.jsonl"
    problems.to_json(path, orient="records", lines=True)
    out = tmp_path / "s.parquet"
    runner = CliRunner()
    args = ["sample", "--model", tiny, "--problems", str(path), "--out", str(out), "--max-new-tokens", "4"]
    result = runner.invoke(app, [*args, "--budget", "40", "--first-round", "2", "--batch-size", "7", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["summary"][0]["samples"] == 40 and payload["summary"][0]["min_n"] >= 2
    assert sum(r["n"] for r in payload["per_problem"]) == 40
    # passk reads the unequal n: the estimator up to the smallest n, the beta model beyond it
    passk = runner.invoke(
        app, ["passk", str(out), "--k", "1,2,40", "--extrapolate-to", "1000", "--family", "beta", "--json"]
    )
    assert passk.exit_code == 0, passk.output
    rows = {(r["k"], r["source"]) for r in json.loads(passk.output)}
    min_n = payload["summary"][0]["min_n"]
    assert (1, "estimator") in rows and (40, "beta") in rows and (1000, "beta") in rows
    assert all(source == "estimator" for k, source in rows if k <= min_n)
    refused = runner.invoke(app, [*args, "--first-round", "2"])
    assert refused.exit_code == 2 and "--budget" in refused.output


def test_shards_split_the_budget(tiny, problems, graded):
    from benchcast.collect import distributed

    frame = distributed.run(
        "sample",
        [{"model": tiny, "run": "t"}],
        problems,
        shards=2,
        budget=23,
        max_new_tokens=3,
        progress=False,
    )
    n = frame.groupby("problem_id").size()
    assert n.sum() == 23 and len(n) == 5 and n.min() >= 1


def test_failed_samples_are_recorded_and_drawn_again_on_resume(tiny, problems, tmp_path, monkeypatch):
    from benchcast.collect import engine
    from benchcast.collect.sampling import sample
    from benchcast.collect.streams import sample_key

    bad = {sample_key(0, "q2", i) for i in range(3)}
    real = engine.generate

    def failing(model, prompts, keys, **options):
        if bad & set(keys):
            raise ValueError("error: kernel failure")  # a message that looks like text must stay an error
        return real(model, prompts, keys, **options)

    out = tmp_path / "s.parquet"
    reference = sample(tiny, problems, n=3, max_new_tokens=4, batch_size=1, progress=False)
    monkeypatch.setattr(engine, "generate", failing)
    first = sample(tiny, problems, n=3, max_new_tokens=4, batch_size=1, out=out, progress=False)
    failed = first[first["error"].notna()]
    assert set(failed["problem_id"]) == {"q2"} and len(failed) == 3 and failed["completion"].isna().all()
    assert all(e == "generate: error: kernel failure" for e in failed["error"])
    monkeypatch.setattr(engine, "generate", real)
    resumed = sample(tiny, problems, n=3, max_new_tokens=4, batch_size=1, out=out, progress=False)
    assert resumed["error"].isna().all() and len(resumed) == 15
    both = reference.merge(resumed, on=["problem_id", "sample_id"], suffixes=("", "_resumed"))
    assert (both["completion"] == both["completion_resumed"]).all()  # bit-identical text
