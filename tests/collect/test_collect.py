"""Collecting covariates from a tiny randomly initialised causal LM (no network)."""

import dataclasses
import functools
import json
import os
import sys
import types

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli as cli

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")
torch.set_num_threads(1)  # two xdist workers on two cores: intra-op threads would only oversubscribe

from benchcast.collect import distributed, store  # noqa: E402
from benchcast.collect.models import QUIET_ENVIRONMENT, quiet_libraries  # noqa: E402
from benchcast.collect.problems import load_problems  # noqa: E402
from benchcast.collect.sampling import sample, to_counts  # noqa: E402
from benchcast.collect.scoring import encode, gold_table, score_gold  # noqa: E402
from benchcast.data.grading import extract_answer, grade  # noqa: E402
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


@functools.lru_cache(maxsize=8)
def load_direct(model_dir):
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    return tokenizer, transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()


def direct_logprob(model_dir, prompt, solution):
    tokenizer, model = load_direct(model_dir)
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
    proc = cli("passk", out, "--k", "1,2,6", "--json")
    assert proc.returncode == 0, proc.stderr
    assert {r["k"] for r in json.loads(proc.stdout)} == {1, 2, 6}


def test_each_sample_depends_only_on_seed_problem_and_index(tiny_model, problem_file, tmp_path):
    problems = load_problems(problem_file, template="gsm8k", limit=3)
    out = tmp_path / "samples.csv"
    full = sample(tiny_model, problems, n=7, max_new_tokens=10, out=out, progress=False, seed=3, batch_size=4)
    assert full["completion"].nunique() > 10  # really sampled, not one greedy answer repeated
    kept = full[~full["sample_id"].isin(["0", "2", "5"]) | (full["problem_id"] == "p1")]
    store.write(kept, out)  # as if the run had died before writing those samples
    resumed = sample(tiny_model, problems, n=7, max_new_tokens=10, out=out, progress=False, seed=3, batch_size=3)
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
    proc = cli(
        "score-gold",
        "--model",
        tiny_model,
        "--problems",
        problem_file,
        "--template",
        "gsm8k",
        "--out",
        out,
        "--params",
        "1e6",
        "--tokens",
        "2e7",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows"] == 7 and out.exists()
    proc = cli("score-gold", "--model", tiny_model, "--problems", tmp_path / "missing.jsonl", "--out", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def run_cli(*args):
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def arithmetic_file(tmp_path):
    pairs = [(3, 3), (3, 4), (2, 2), (4, 5), (1, 5)]
    rows = [
        {"id": f"q{a}{b}", "question": f"What is {a} plus {b}?", "solution": f" {a} plus {b} is {a + b}. #### {a + b}"}
        for a, b in pairs
    ]
    path = tmp_path / "arithmetic.jsonl"
    pd.DataFrame(rows).assign(answer=[str(a + b) for a, b in pairs]).to_json(path, orient="records", lines=True)
    return path


@pytest.mark.slow  # five CLI commands, four checkpoints
def test_gold_pipeline_end_to_end_from_the_cli(tiny_ladder, arithmetic_file, tmp_path):
    """score-gold -> sample -> passk --gold -> fit/kscan --law gold, four checkpoints, sizes from --runs."""
    names = ["tiny-a", "tiny-b", "tiny-c", "tiny-d"]
    sizes = {name: (1e6 * 2**i, 2e7 * 2**i) for i, name in enumerate(names)}
    entries = "".join(
        f"  - {{run: {name}, model: '{path}', params: {sizes[name][0]:.1e}, tokens: {sizes[name][1]:.1e}}}\n"
        for name, path in zip(names, tiny_ladder, strict=True)
    )
    runs = tmp_path / "runs.yaml"
    runs.write_text("runs:\n" + entries)  # '1.0e+06': YAML 1.1 reads exponents without a sign as text
    assert "e+06" in runs.read_text()
    models = [arg for path in tiny_ladder for arg in ("--model", path)]
    common = ["--problems", arithmetic_file, "--template", "gsm8k", "--runs", runs, "--benchmark", "arith"]
    gold, samples, tidy = tmp_path / "gold.parquet", tmp_path / "samples.parquet", tmp_path / "tidy.csv"
    scored = json.loads(
        run_cli("score-gold", *models, *common, "--out", gold, "--table", tmp_path / "g.csv", "--json").stdout
    )
    assert scored["rows"] == 20 and scored["failed"] == 0
    # seed 3: every tiny checkpoint solves something (the gold fit needs pass@4 > 0 on each run)
    run_cli("sample", *models, *common, "--n", 16, "--max-new-tokens", 8, "--seed", 3, "--out", samples)
    run_cli("passk", samples, "--k", "1,2,4", "--gold", gold, "--out", tidy, "--n-boot", 50)

    # the covariate, computed directly: mean over the five problems of log p(gold | prompt)
    problems = load_problems(arithmetic_file, template="gsm8k")
    direct = {
        name: np.mean([direct_logprob(path, p.prompt, p.solution) for p in problems.itertuples()])
        for name, path in zip(names, tiny_ladder, strict=True)
    }
    table = pd.read_csv(tidy)
    covariate = table[table["metric"] == "loglikelihood"].set_index("run")
    assert sorted(covariate.index) == names
    for name in names:
        assert covariate.loc[name, "value"] == pytest.approx(direct[name], abs=1e-4)
        assert covariate.loc[name, "problems"] == 5 and covariate.loc[name, "benchmark"] == "arith"
    assert len({round(v, 3) for v in direct.values()}) == 4  # the checkpoints really differ
    from_table = pd.read_csv(tmp_path / "g.csv").set_index("run")["value"]
    assert np.allclose(from_table[names], [direct[n] for n in names], atol=1e-4)

    # pass@k rows: run names (not checkpoint paths) and the sizes of --runs, carried through
    passk_rows = table[table["metric"] == "pass@k"]
    assert set(passk_rows["run"]) == set(names)
    for row in passk_rows.itertuples():
        assert (row.params, row.tokens) == pytest.approx(sizes[row.run])
    counts = to_counts(pd.read_parquet(samples))
    pass1 = counts.groupby("run").apply(lambda g: (g["c"] / g["n"]).mean(), include_groups=False)
    at1 = passk_rows[passk_rows["k"] == 1].set_index("run")["value"]
    assert np.allclose(at1[names], pass1[names])
    assert counts["c"].sum() > 0

    # fit reads G = -loglikelihood for each run with no further flags
    fitted = json.loads(run_cli("fit", tidy, "--law", "gold", "-b", "arith", "--k", 4, "--json").stdout)
    assert fitted["law"] == "gold" and fitted["settings"]["gold_metric"] == "loglikelihood"
    used = dict(zip(fitted["points"]["run"], fitted["points"]["gold"], strict=True))
    assert len(used) >= 3 and all(used[n] == pytest.approx(-direct[n], abs=1e-4) for n in used)
    folder = tmp_path / "scan"
    scan = json.loads(run_cli("kscan", tidy, "--law", "gold", "-b", "arith", "--out", folder, "--json").stdout)
    assert {int(r["k"]) for r in scan["scan"]} == {1, 2, 4}
    manifest = json.loads((folder / ".benchcast-manifest.json").read_text())["files"]
    assert set(manifest) == {"kscan-gold-arith.csv", "kscan-gold-arith.png"}


def test_csv_outputs_keep_carriage_returns(tmp_path):
    frame = pd.DataFrame({"model": "m", "problem_id": ["007", "2"], "sample_id": "0", "completion": ["a\rb", "c\r\nd"]})
    store.write(frame, tmp_path / "s.csv")
    back = store.read_existing(tmp_path / "s.csv", ["model", "problem_id", "sample_id"])
    assert list(back["completion"]) == ["a\rb", "c\r\nd"]
    assert list(back["problem_id"]) == ["007", "2"]  # keys stay text, so a resume finds them done


# --- vLLM backends, against a stand-in LLM that follows vLLM's documented output structures ---


@dataclasses.dataclass
class Logprob:  # vllm.logprobs.Logprob
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class SamplingParams:  # vllm.SamplingParams: keyword arguments only
    def __init__(self, **kwargs):
        self.n = kwargs.pop("n", 1)
        self.seed = kwargs.pop("seed", None)
        self.temperature = kwargs.pop("temperature", 1.0)
        self.max_tokens = kwargs.pop("max_tokens", 16)
        self.prompt_logprobs = kwargs.pop("prompt_logprobs", None)
        self.top_p = kwargs.pop("top_p", 1.0)
        assert not kwargs, f"not a SamplingParams argument: {kwargs}"


class PickyTokenizer:
    """The model's tokenizer, except that it fails on text holding 'BOOM' (as real ones do on odd input)."""

    def __init__(self, tokenizer):
        self.inner = tokenizer

    def __call__(self, text, **kwargs):
        if "BOOM" in text:
            raise ValueError("cannot tokenize this text")
        return self.inner(text, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class FakeLLM:
    """vllm.LLM computed with the tiny transformers model: generate() returns RequestOutput-like
    objects with ``prompt_logprobs`` (None, then {token id: Logprob} holding the prompt token and
    the top-k) and ``outputs`` (completions drawn with the request's own seed)."""

    made: list = []

    def __init__(self, model, dtype="auto"):
        assert dtype in ("auto", "half", "float16", "bfloat16", "float", "float32"), dtype
        self.dtype = dtype
        self.tokenizer, self.model = load_direct(model)
        self.requests: list = []
        FakeLLM.made.append(self)

    def get_tokenizer(self):
        return PickyTokenizer(self.tokenizer)

    def generate(self, prompts, sampling_params, use_tqdm=True):
        self.used_tqdm = use_tqdm  # vLLM's own bar: off unless verbose
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        outputs = []
        for prompt, param in zip(prompts, params, strict=True):
            self.requests.append(param)
            ids = prompt["prompt_token_ids"] if isinstance(prompt, dict) else self.tokenizer(prompt)["input_ids"]
            with torch.no_grad():
                logp = torch.log_softmax(self.model(torch.tensor([ids])).logits[0].double(), dim=-1)
            prompt_logprobs = None
            if param.prompt_logprobs is not None:
                prompt_logprobs = [None]
                for t in range(1, len(ids)):
                    row = logp[t - 1]
                    top = torch.topk(row, param.prompt_logprobs).indices.tolist() if param.prompt_logprobs else []
                    prompt_logprobs.append(
                        {
                            tok: Logprob(float(row[tok]), int((row > row[tok]).sum()) + 1, self.tokenizer.decode([tok]))
                            for tok in [ids[t], *top]
                        }
                    )
            generator = torch.Generator().manual_seed(param.seed if param.seed is not None else 0)
            completions = []
            for _ in range(param.n):
                seq = list(ids)
                for _ in range(param.max_tokens):
                    with torch.no_grad():
                        logits = self.model(torch.tensor([seq])).logits[0, -1] / param.temperature
                    seq.append(int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)))
                completions.append(types.SimpleNamespace(text=self.tokenizer.decode(seq[len(ids) :])))
            outputs.append(types.SimpleNamespace(prompt_logprobs=prompt_logprobs, outputs=completions))
        return outputs


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.made = []
    return module


def test_vllm_scoring_agrees_with_transformers_and_records_tokenizer_failures(fake_vllm, tiny_model, problem_file):
    problems = load_problems(problem_file, template="gsm8k")
    problems.loc[4, "solution"] = " BOOM 9"
    reference = score_gold(tiny_model, problems, progress=False, dtype="float32")
    scored = score_gold(tiny_model, problems, backend="vllm", progress=False, dtype="fp32", verbose=True)
    assert FakeLLM.made[-1].dtype == "float32"  # benchcast's 'fp32' spelled as vLLM accepts it
    assert FakeLLM.made[-1].used_tqdm is True  # --verbose: vLLM's own bar
    both = reference.merge(scored, on="problem_id", suffixes=("", "_vllm"))
    ok = both[both["problem_id"] != "p4"]
    assert np.allclose(ok["gold_logprob_vllm"], ok["gold_logprob"], atol=1e-4)
    assert (ok["n_solution_tokens_vllm"] == ok["n_solution_tokens"]).all() and ok["error_vllm"].isna().all()
    failed = scored.set_index("problem_id").loc["p4"]
    assert failed["error"].startswith("tokenize:") and np.isnan(failed["gold_logprob"])
    assert len(scored) == 7  # the other problems were scored, the run went on
    score_gold(tiny_model, problems.head(1), backend="vllm", progress=False)
    assert FakeLLM.made[-1].dtype == "bfloat16"  # 'auto': bf16 on the GPU vLLM runs on


def test_vllm_sampling_one_seeded_request_per_sample(fake_vllm, tiny_model, problem_file, tmp_path):
    from benchcast.collect.sampling import sample_seed

    problems = load_problems(problem_file, template="gsm8k", limit=2)
    out = tmp_path / "samples.parquet"
    full = sample(tiny_model, problems, n=4, max_new_tokens=4, backend="vllm", out=out, progress=False, seed=5)
    requests = FakeLLM.made[-1].requests
    assert FakeLLM.made[-1].used_tqdm is False  # vLLM's own bar is quieted (verbose=False)
    assert [r.n for r in requests] == [1] * 8
    assert [r.seed for r in requests] == [sample_seed(5, p, i) for p in ("p0", "p1") for i in range(4)]
    store.write(full[full["sample_id"] != "2"], out)
    resumed = sample(tiny_model, problems, n=4, max_new_tokens=4, backend="vllm", out=out, progress=False, seed=5)
    assert len(FakeLLM.made[-1].requests) == 2  # only the missing samples were requested
    merged = full.merge(resumed, on=["problem_id", "sample_id"], suffixes=("", "_resumed"))
    assert len(merged) == 8 and (merged["completion"] == merged["completion_resumed"]).all()


def test_runs_files_map_checkpoints_by_model_and_refuse_bad_entries(tmp_path):
    from benchcast.cli.collect import _checkpoints
    from benchcast.collect.store import run_sizes

    runs = tmp_path / "runs.yaml"
    runs.write_text(
        "- {run: small, model: org/ckpt-1, params: 8.0e5, tokens: 1.6e7}\n- {run: org/ckpt-2, params: 2e6}\n"
    )
    small, second = _checkpoints(["org/ckpt-1", "org/ckpt-2"], runs, None, None)
    assert small == {"run": "small", "model": "org/ckpt-1", "params": 8e5, "tokens": 1.6e7, "flops": None}
    assert second["run"] == second["model"] == "org/ckpt-2"  # no model key: matched on the run name
    with pytest.raises(DataError, match="no entry whose 'model'"):
        _checkpoints(["org/ckpt-3"], runs, None, None)
    runs.write_text("- {run: small, model: m, params: eight}\n")
    with pytest.raises(DataError, match=r"runs.yaml: params of run 'small' must be a number, got 'eight'"):
        _checkpoints(["m"], runs, None, None)
    clash = pd.DataFrame({"run": ["a", "a"], "params": [1e6, 2e6]})
    with pytest.raises(DataError, match="run 'a' has several params values"):
        run_sizes(clash, "samples.parquet")


def test_problem_templates(problem_file):
    assert (
        load_problems(problem_file, template="Q {question} {{x}}")["prompt"].iloc[1] == "Q What is 1 plus 2? Think. {x}"
    )
    with pytest.raises(DataError, match="only {question}"):
        load_problems(problem_file, template="Q {question} {answer}")


def test_collect_quiets_the_libraries_bars_and_logs_unless_verbose(tiny_model, problem_file, monkeypatch):
    """score_gold (and sample) silence transformers, huggingface_hub, datasets and tqdm unless
    ``verbose``, which gives them back (no download: the tiny local model)."""
    import huggingface_hub.utils as hub_utils
    from transformers.utils import logging as hf_logging

    for name in QUIET_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)  # the test's own changes to the environment are undone
    problems = load_problems(str(problem_file), template="gsm8k").head(2)
    try:
        score_gold(tiny_model, problems, progress=False)
        assert hf_logging.get_verbosity() == hf_logging.ERROR and not hf_logging.is_progress_bar_enabled()
        assert hub_utils.are_progress_bars_disabled()
        assert os.environ["TQDM_DISABLE"] == "1" and os.environ["TRANSFORMERS_VERBOSITY"] == "error"
        sample(tiny_model, problems.head(1), n=1, max_new_tokens=2, progress=False, verbose=True)
        assert hf_logging.get_verbosity() == hf_logging.WARNING and hf_logging.is_progress_bar_enabled()
        assert not hub_utils.are_progress_bars_disabled() and "TQDM_DISABLE" not in os.environ
    finally:
        quiet_libraries(verbose=True)
