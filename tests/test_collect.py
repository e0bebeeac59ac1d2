"""Collecting covariates from a tiny randomly initialised causal LM (no network)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
torch.set_num_threads(1)  # two xdist workers on two cores: intra-op threads would only oversubscribe

from benchcast.collect import distributed, store  # noqa: E402
from benchcast.collect.grading import extract_answer, grade  # noqa: E402
from benchcast.collect.problems import load_problems  # noqa: E402
from benchcast.collect.sampling import sample, to_counts  # noqa: E402
from benchcast.collect.scoring import encode, gold_table, score_gold  # noqa: E402
from benchcast.errors import DataError  # noqa: E402

CORPUS = [
    "Question: what is 2 plus 3? Answer: 5",
    "The answer is 42.",
    "Natalia sold 48 clips in April",
    "and half as many in May. How many clips did she sell? #### 72",
    "x = \\frac{1}{2} so \\boxed{7}",
] * 20


def build_tokenizer():
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tokenizers.processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )


def build_tiny(path, tokenizer, *, seed=0, initializer_range=0.02):
    """A randomly initialised 2-layer Llama; a larger initializer_range gives peakier outputs."""
    tokenizer.save_pretrained(path)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        initializer_range=initializer_range,
    )
    torch.manual_seed(seed)
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny-llama"), build_tokenizer())


@pytest.fixture(scope="module")
def tiny_ladder(tmp_path_factory):
    """Four tiny checkpoints that differ in their gold likelihoods (a stand-in for a model ladder)."""
    root = tmp_path_factory.mktemp("ladder")
    tokenizer = build_tokenizer()
    return [
        build_tiny(root / f"ckpt{i}", tokenizer, seed=i, initializer_range=r)
        for i, r in enumerate([0.02, 0.1, 0.3, 1.0])
    ]


@pytest.fixture
def problem_file(tmp_path):
    rows = [
        {
            "id": f"p{i}",
            "question": f"What is {i} plus {i + 1}?" + " Think." * (i % 4),
            "solution": f" {i} plus {i + 1} is {2 * i + 1}. #### {2 * i + 1}",
            "answer": str(2 * i + 1),
        }
        for i in range(7)
    ]
    path = tmp_path / "problems.jsonl"
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    return path


def direct_logprob(model_dir, prompt, solution):
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    context, continuation = encode(tokenizer, prompt, solution)
    ids = torch.tensor([context + continuation])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].double(), dim=-1)
    return sum(float(logprobs[t - 1, ids[0, t]]) for t in range(len(context), ids.shape[1]))


def test_gold_scores_match_direct_computation_and_ignore_batching(tiny_model, problem_file):
    problems = load_problems(problem_file, template="gsm8k")
    assert problems["prompt"].iloc[0].startswith("Question: What is 0 plus 1?")
    results = {b: score_gold(tiny_model, problems, batch_size=b, progress=False) for b in (1, 3, 8)}
    for b in (3, 8):
        assert np.allclose(results[b]["gold_logprob"], results[1]["gold_logprob"], atol=1e-4)
    for row in results[3].itertuples():
        prompt = problems.set_index("id").loc[row.problem_id]
        want = direct_logprob(tiny_model, prompt["prompt"], prompt["solution"])
        assert row.gold_logprob == pytest.approx(want, abs=1e-4)
        assert row.gold_nll == pytest.approx(-want, abs=1e-4) and row.n_solution_tokens > 0
    assert results[1]["error"].isna().all()


def test_scoring_resumes_and_records_failures(tiny_model, problem_file, tmp_path, monkeypatch):
    problems = load_problems(problem_file, template="gsm8k")
    out = tmp_path / "gold.parquet"
    first = score_gold(tiny_model, problems.head(3), out=out, progress=False, run="tiny", params=1e6, tokens=2e7)
    sentinel = pd.read_parquet(out)
    sentinel.loc[0, "gold_logprob"] = -123.0  # a resumed run must keep, not recompute, done rows
    sentinel.to_parquet(out)
    merged = score_gold(tiny_model, problems, out=out, progress=False, run="tiny", params=1e6, tokens=2e7)
    assert len(merged) == 7 and merged["gold_logprob"].iloc[0] == -123.0
    assert len(first) == 3
    table = gold_table(merged)
    assert table["metric"].iloc[0] == "loglikelihood" and table["problems"].iloc[0] == 7
    assert table["value"].iloc[0] == pytest.approx(merged["gold_logprob"].mean())  # a log-likelihood, <= 0
    per_token = gold_table(merged, per_token=True)
    want = (merged["gold_logprob"] / merged["n_solution_tokens"]).mean()
    assert per_token["metric"].iloc[0] == "loglikelihood_per_token" and per_token["value"].iloc[0] == pytest.approx(
        want
    )

    import benchcast.collect.scoring as scoring

    real = scoring.score_batch

    def flaky(model, pairs, pad_id, device):
        if len(pairs) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 1 GiB")
        if any(len(c) > 30 for c, _ in pairs):
            raise RuntimeError("kernel failure")
        return real(model, pairs, pad_id, device)

    monkeypatch.setattr(scoring, "score_batch", flaky)
    again = score_gold(tiny_model, problems, batch_size=8, progress=False)
    ok = again[again["error"].isna()]
    assert len(again) == 7 and len(ok) >= 1  # OOM batches were split and retried
    failed = again[again["error"].notna()]
    assert all("kernel failure" in e for e in failed["error"])
    table = gold_table(again.assign(run="tiny"))
    assert table["problems"].iloc[0] == len(ok) and table["failed"].iloc[0] == len(failed)
    assert table["value"].iloc[0] == pytest.approx(ok["gold_logprob"].mean())  # failures are not in the mean
    with pytest.raises(DataError, match="no successful gold score"):  # pass@k on a problem G lacks: refused
        gold_table(again.assign(run="tiny"), problems=again.assign(run="tiny"))


def test_sample_grade_passk_end_to_end(tiny_model, problem_file, tmp_path):
    problems = load_problems(problem_file, template="gsm8k", limit=3)
    out = tmp_path / "samples.parquet"
    first = sample(tiny_model, problems, n=4, max_new_tokens=8, out=out, progress=False, seed=1)
    assert len(first) == 12 and first["error"].isna().all()
    again = sample(tiny_model, problems, n=6, max_new_tokens=8, out=out, progress=False, seed=1)
    assert len(again) == 18  # resumed: only the two missing samples per problem were drawn
    assert list(again["completion"][:12]) == list(first["completion"])
    counts = to_counts(again)
    assert set(counts["n"]) == {6}
    proc = subprocess.run(
        [sys.executable, "-m", "benchcast", "passk", str(out), "--k", "1,2,6", "--json"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert {r["k"] for r in json.loads(proc.stdout)} == {1, 2, 6}


def test_each_sample_depends_only_on_seed_problem_and_index(tiny_model, problem_file, tmp_path):
    problems = load_problems(problem_file, template="gsm8k", limit=3)
    out = tmp_path / "samples.csv"
    full = sample(tiny_model, problems, n=7, max_new_tokens=10, out=out, progress=False, seed=3, chunk=4)
    assert full["completion"].nunique() > 10  # really sampled, not one greedy answer repeated
    kept = full[~full["sample_id"].isin(["0", "2", "5"]) | (full["problem_id"] == "p1")]
    store.write(kept, out)  # as if the run had died before writing those samples
    resumed = sample(tiny_model, problems, n=7, max_new_tokens=10, out=out, progress=False, seed=3, chunk=3)
    key = ["problem_id", "sample_id"]
    merged = full.merge(resumed, on=key, suffixes=("", "_resumed"))
    assert len(merged) == 21 and (merged["completion"] == merged["completion_resumed"]).all()
    other = sample(tiny_model, problems.head(1), n=7, max_new_tokens=10, progress=False, seed=4)
    assert list(other["completion"]) != list(full["completion"][:7])  # the seed matters


def test_grading():
    assert extract_answer("so the result is \\boxed{\\frac{1}{2}} done") == "\\frac{1}{2}"
    assert extract_answer("reasoning... #### 1,234") == "1,234"
    assert extract_answer("The answer is 17.") == "17"
    assert extract_answer("3 apples and 4 pears make 7") == "7"
    assert extract_answer("no numbers") is None
    assert grade("1,234", "1234") and grade("72.0", "72") and not grade("71", "72")
    assert grade("\\frac{1}{2}", "0.5") and grade("0.5", "\\frac{1}{2}")
    assert not grade(None, "3")


def test_ray_local_matches_local_loop(tiny_model, problem_file):
    ray = pytest.importorskip("ray")
    problems = load_problems(problem_file, template="gsm8k")
    checkpoints = [{"model": tiny_model, "run": "tiny", "params": 1e6, "tokens": 2e7}]
    local = distributed.run("score", checkpoints, problems, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        remote = distributed.run("score", checkpoints, problems, ray_address="local", shards=3)
    finally:
        ray.shutdown()
    merged = local.merge(remote, on=["model", "problem_id"], suffixes=("", "_ray"))
    assert len(merged) == 7 and np.allclose(merged["gold_logprob"], merged["gold_logprob_ray"], atol=1e-5)


def test_cli_score_gold_and_bad_input(tiny_model, problem_file, tmp_path):
    out = tmp_path / "gold.csv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchcast",
            "score-gold",
            "--model",
            tiny_model,
            "--problems",
            str(problem_file),
            "--template",
            "gsm8k",
            "--out",
            str(out),
            "--params",
            "1e6",
            "--tokens",
            "2e7",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows"] == 7 and out.exists()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchcast",
            "score-gold",
            "--model",
            tiny_model,
            "--problems",
            str(tmp_path / "missing.jsonl"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
