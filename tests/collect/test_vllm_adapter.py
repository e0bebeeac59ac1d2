"""The vLLM adapter against a stand-in `vllm` module that records every call (no GPU, no torch).

The stand-in follows vLLM's documented interface: ``LLM(model=..., dtype=...)``, ``get_tokenizer()``,
``generate(prompts, sampling_params, use_tqdm=...)`` returning ``RequestOutput``-like objects with
``outputs[i].text`` and ``prompt_logprobs`` (None, then {token id: Logprob}), and keyword-only
``SamplingParams``. Its completions are a function of the request's seed, so the rows can be checked.
"""

import json
import sys
import types

import pandas as pd
import pytest

from benchcast.collect.problems import load_problems
from benchcast.collect.sampling import sample, sample_seed, to_counts
from benchcast.collect.scoring import score_gold

SAMPLING_ARGUMENTS = {"n", "seed", "temperature", "top_p", "max_tokens", "prompt_logprobs"}


class Logprob:
    def __init__(self, logprob):
        self.logprob = logprob


class SamplingParams:
    def __init__(self, **kwargs):
        unknown = set(kwargs) - SAMPLING_ARGUMENTS
        assert not unknown, f"not a SamplingParams argument: {unknown}"
        self.kwargs = kwargs


class Tokenizer:
    """Characters as tokens (id = code point + 10), with BOS = 1."""

    bos_token_id, eos_token_id = 1, 2

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": ([1] if add_special_tokens else []) + [ord(ch) + 10 for ch in text]}


def token_logprob(position: int, token: int) -> float:
    return -0.01 * ((position * 31 + token) % 97) - 0.001


class LLM:
    made: list = []

    def __init__(self, model, dtype="auto"):
        self.model, self.dtype, self.calls = model, dtype, []
        LLM.made.append(self)

    def get_tokenizer(self):
        return Tokenizer()

    def generate(self, prompts, sampling_params, use_tqdm=True):
        params = sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(prompts)
        self.calls.append({"prompts": list(prompts), "params": [p.kwargs for p in params], "use_tqdm": use_tqdm})
        outputs = []
        for prompt, param in zip(prompts, params, strict=True):
            args = param.kwargs
            logprobs = None
            if args.get("prompt_logprobs") is not None:
                ids = prompt["prompt_token_ids"]
                logprobs = [None] + [{ids[t]: Logprob(token_logprob(t, ids[t]))} for t in range(1, len(ids))]
            texts = [completion(args.get("seed")) for _ in range(args.get("n", 1))]
            outputs.append(
                types.SimpleNamespace(prompt_logprobs=logprobs, outputs=[types.SimpleNamespace(text=t) for t in texts])
            )
        return outputs


def completion(seed) -> str:
    return f" so the answer is {seed % 4}." if seed is not None else " no seed"


@pytest.fixture
def vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = LLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    LLM.made = []
    return module


@pytest.fixture
def problems(tmp_path):
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "question": ["What is 1 plus 2?", "What is 0 times 5?", "Name 2."],
            "solution": [" 1 plus 2 is 3. #### 3", " It is 0. #### 0", " #### 2"],
            "answer": ["3", "0", "2"],
        }
    )
    path = tmp_path / "problems.jsonl"
    frame.to_json(path, orient="records", lines=True)
    return path


def test_sampling_makes_one_seeded_request_per_sample_and_grades_the_rows(vllm, problems):
    table = load_problems(problems, template="gsm8k")
    rows = sample("org/model", table, n=3, backend="vllm", seed=4, temperature=0.8, max_new_tokens=5, progress=False)
    (llm,) = LLM.made
    assert (llm.model, llm.dtype) == ("org/model", "bfloat16")
    (call,) = llm.calls
    want = [(p, i) for p in ("a", "b", "c") for i in range(3)]
    assert call["prompts"] == [table.set_index("id").loc[p, "prompt"] for p, _ in want]
    assert call["params"] == [
        {"n": 1, "seed": sample_seed(4, p, i), "temperature": 0.8, "top_p": 1.0, "max_tokens": 5} for p, i in want
    ]
    assert call["use_tqdm"] is False
    assert list(zip(rows["problem_id"], rows["sample_id"].astype(int), strict=True)) == want
    for row in rows.itertuples():
        text = completion(sample_seed(4, row.problem_id, int(row.sample_id)))
        assert row.completion == text and row.extracted == text.split()[-1].rstrip(".")
        assert row.correct == (row.extracted == str(table.set_index("id").loc[row.problem_id, "answer"]))
    assert rows["error"].isna().all() and set(rows["round"]) == {0}


def test_a_budget_makes_one_engine_and_one_generate_call_per_round(vllm, problems):
    table = load_problems(problems)
    rows = sample("m", table, budget=30, first_round=2, round_size=8, backend="vllm", seed=1, progress=False)
    (llm,) = LLM.made  # loaded once for every round
    assert [len(c["params"]) for c in llm.calls] == [6, 8, 8, 8]
    assert len(rows) == 30 and to_counts(rows)["n"].sum() == 30
    seeds = [p["seed"] for c in llm.calls for p in c["params"]]
    assert len(set(seeds)) == 30  # no sample drawn twice


def test_gold_scores_come_from_prompt_logprobs(vllm, problems):
    table = load_problems(problems, template="gsm8k")
    scores = score_gold("org/model", table, backend="vllm", dtype="fp16", progress=False)
    (llm,) = LLM.made
    assert llm.dtype == "float16"
    (call,) = llm.calls
    assert call["params"] == [{"max_tokens": 1, "prompt_logprobs": 0}] * 3
    tokenizer = Tokenizer()
    for prompt, row in zip(call["prompts"], table.itertuples(), strict=True):
        context = tokenizer(row.prompt)["input_ids"]
        solution = tokenizer(row.solution, add_special_tokens=False)["input_ids"]
        assert prompt == {"prompt_token_ids": context + solution}
        ids = context + solution
        want = sum(token_logprob(t, ids[t]) for t in range(len(context), len(ids)))
        got = scores.set_index("problem_id").loc[row.id]
        assert got["gold_logprob"] == pytest.approx(want, rel=1e-12)
        assert got["n_solution_tokens"] == len(solution) and got["gold_nll"] == pytest.approx(-want, rel=1e-12)


def test_cli_runs_the_vllm_backend(vllm, problems, tmp_path):
    from typer.testing import CliRunner

    from benchcast.cli import app

    runner = CliRunner()
    out = tmp_path / "s.csv"
    common = ["--model", "m", "--problems", str(problems), "--backend", "vllm", "--json"]
    result = runner.invoke(app, ["sample", *common, "--out", str(out), "--n", "4", "--max-new-tokens", "7"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"][0]
    assert summary["samples"] == 12 and summary["min_n"] == summary["max_n"] == 4
    assert {p["max_tokens"] for p in LLM.made[-1].calls[0]["params"]} == {7}
    made = len(LLM.made)
    again = runner.invoke(app, ["sample", *common, "--out", str(out), "--n", "4"])
    assert again.exit_code == 0 and len(LLM.made) == made  # resumed: nothing to draw, no engine loaded
    gold = runner.invoke(app, ["score-gold", *common, "--out", str(tmp_path / "g.csv")])
    assert gold.exit_code == 0, gold.output
    assert json.loads(gold.output)["rows"] == 3 and LLM.made[-1].calls[0]["params"][0]["prompt_logprobs"] == 0
