"""Sampling for pass@k (SPEC §1.2, §7): samples per problem, graded, written per sample.

Every sample has its own random stream, keyed by (seed, problem id, sample index) only, so reruns and resumes
draw the same completions: batched with transformers (:mod:`benchcast.collect.engine`,
:mod:`benchcast.collect.streams`), one seeded request each with vLLM; budgets in rounds
(:mod:`benchcast.collect.budget`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.collect import store
from benchcast.collect.budget import allocate, default_first_round, round_sizes
from benchcast.collect.engine import run_requests
from benchcast.collect.models import BACKENDS, load_transformers, load_vllm, prompt_ids, quiet_libraries, require
from benchcast.collect.streams import sample_key
from benchcast.data.grading import extract_answer, grade
from benchcast.errors import BenchcastError

KEY = ["model", "problem_id", "sample_id"]
COLUMNS = ["run", "benchmark", "round", "completion", "extracted", "correct", "error"]


def sample_seed(seed: int, problem_id: str, index: int) -> int:
    """The vLLM request seed of one sample, from (seed, problem id, sample index) only."""
    digest = hashlib.sha256(f"{seed}/{problem_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class _Failed(str):
    """Why a sample could not be drawn (told apart from a completion by its type, not its text)."""


class _Drawer:
    """Draws (problem, index) samples with one backend; loads the model on first use."""

    def __init__(self, model_id, by_id, options):
        self.model_id, self.by_id, self.options = model_id, by_id, options
        self.loaded = None

    def __call__(self, todo: list[tuple[str, int]], round_index: int) -> dict[tuple[str, int], str]:
        """Completion text (or a :class:`_Failed` reason) per (problem, index), in the order of ``todo``."""
        o = self.options
        if o["backend"] == "vllm":
            return self._vllm(todo)
        if self.loaded is None:
            self.loaded = load_transformers(self.model_id, o["dtype"], o["device"])
        model, tokenizer, device = self.loaded
        prompts, errors = {}, {}
        for pid in dict.fromkeys(p for p, _ in todo):
            try:
                prompts[pid] = prompt_ids(tokenizer, str(self.by_id.loc[pid, "prompt"]))
            except Exception as exc:  # a tokenizer can fail on odd text: record it, go on
                errors[pid] = f"tokenize: {exc}"
        ok = [(p, i) for p, i in todo if p in prompts]
        eos = model.generation_config.eos_token_id
        eos_ids = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        found = run_requests(
            model,
            [prompts[p] for p, _ in ok],
            [sample_key(o["seed"], p, i) for p, i in ok],
            batch_size=o["batch_size"],
            progress=o["progress"],
            description=f"sampling {self.model_id}" + (f", round {round_index + 1}" if round_index else ""),
            temperature=o["temperature"],
            max_new_tokens=o["max_new_tokens"],
            eos_ids=eos_ids,
            pad_id=tokenizer.pad_token_id,
            device=device,
        )
        texts = {pair: _Failed(errors[pair[0]]) for pair in todo if pair[0] in errors}
        for index, pair in enumerate(ok):
            value = found[index]
            texts[pair] = (
                _Failed(value) if isinstance(value, str) else tokenizer.decode(value, skip_special_tokens=True)
            )
        return {pair: texts[pair] for pair in todo}

    def _vllm(self, todo):
        o = self.options
        vllm = require("vllm", "vllm")
        if self.loaded is None:
            self.loaded = load_vllm(self.model_id, o["dtype"])
        look = {"n": 1, "temperature": o["temperature"], "top_p": 1.0, "max_tokens": o["max_new_tokens"]}
        params = [vllm.SamplingParams(**look, seed=sample_seed(o["seed"], p, i)) for p, i in todo]  # a seed per sample
        prompts = [str(self.by_id.loc[p, "prompt"]) for p, _ in todo]
        outputs = self.loaded.generate(prompts, params, use_tqdm=o["verbose"]) if todo else []
        return {pair: output.outputs[0].text for pair, output in zip(todo, outputs, strict=True)}


def _rows(model_id, run, benchmark, by_id, texts, round_index, use_math_verify) -> list[dict]:
    rows = []
    for (pid, index), text in texts.items():
        base = {
            "model": model_id,
            "run": run or model_id,
            "benchmark": benchmark,
            "problem_id": pid,
            "sample_id": str(index),
            "round": round_index,
        }
        if isinstance(text, _Failed):  # generation failed: recorded, not dropped
            rows.append({**base, "completion": None, "extracted": None, "correct": None, "error": str(text)})
            continue
        extracted = extract_answer(text)
        correct = grade(extracted, str(by_id.loc[pid, "answer"]), use_math_verify=use_math_verify)
        rows.append({**base, "completion": text, "extracted": extracted, "error": None, "correct": correct})
    return rows


def sample(
    model_id: str,
    problems: pd.DataFrame,
    *,
    n: int = 100,
    budget: int | None = None,
    first_round: int | None = None,
    round_size: int | None = None,
    target_successes: int = 1,
    temperature: float = 1.0,
    max_new_tokens: int = 512,
    backend: str = "transformers",
    dtype: str = "auto",
    device: str | None = None,
    seed: int = 0,
    batch_size: int | None = None,
    benchmark: str = "problems",
    run: str | None = None,
    out: str | Path | None = None,
    previous: pd.DataFrame | None = None,
    progress: bool | None = None,
    verbose: bool = False,
    use_math_verify: bool = True,
) -> pd.DataFrame:
    """Draw samples per problem, extract and grade the final answers; resumable via ``out``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if budget is None and n < 1:
        raise BenchcastError(f"n must be at least one sample per problem, got {n}.")
    if batch_size is not None and batch_size < 1:
        raise BenchcastError(f"the batch size must be at least 1, got {batch_size}.")
    quiet_libraries(verbose)  # here, so that Ray workers are quieted too
    if previous is None:
        previous = store.read_existing(Path(out) if out else None, KEY)
    if "completion" in previous:  # a CSV gives an empty completion (the first token ended it) back as NaN
        previous = previous.assign(completion=previous["completion"].fillna(""))
    ids = [str(p) for p in problems["id"]]
    if budget is None:
        sizes, first = [n * len(ids)], n
    else:
        first = first_round if first_round is not None else default_first_round(budget, len(ids))
        sizes = round_sizes(budget, len(ids), first, round_size)
    mine = previous[previous["model"].astype(str) == model_id] if len(previous) else previous
    correct = {  # a resumed CSV may give the grades back as text
        (str(p), int(i)): c is True or (isinstance(c, (int, float)) and c == 1) or str(c).strip().lower() == "true"
        for p, i, c in zip(mine.get("problem_id", []), mine.get("sample_id", []), mine.get("correct", []), strict=True)
        if str(i).isdigit()
    }
    by_id = problems.set_index(problems["id"].astype(str))
    options = {
        "backend": backend,
        "dtype": dtype,
        "device": device,
        "seed": seed,
        "batch_size": batch_size,
        "progress": progress,
        "temperature": temperature,
        "max_new_tokens": max_new_tokens,
        "verbose": verbose,
    }
    drawer = _Drawer(model_id, by_id, options)
    planned = np.zeros(len(ids), dtype=np.int64)
    frames = [previous] if len(previous) else []
    for round_index, size in enumerate(sizes):
        if round_index == 0:
            target = np.full(len(ids), first, dtype=np.int64)
        else:
            c = [sum(correct.get((p, i), False) for i in range(planned[j])) for j, p in enumerate(ids)]
            target = planned + allocate(planned, np.asarray(c), size, target=target_successes)
        todo = [(p, i) for j, p in enumerate(ids) for i in range(planned[j], target[j]) if (p, i) not in correct]
        planned = target
        if not todo:
            continue
        rows = _rows(model_id, run, benchmark, by_id, drawer(todo, round_index), round_index, use_math_verify)
        correct.update({(r["problem_id"], int(r["sample_id"])): bool(r["correct"]) for r in rows})
        frames.append(pd.DataFrame(rows, columns=[*KEY, *COLUMNS]))
        if out:  # after each round, so that a run that dies loses at most one round
            store.write(_merge(frames), Path(out))
    merged = _merge(frames)
    if out:
        store.write(merged, Path(out))
    return merged


def _merge(frames: list[pd.DataFrame]) -> pd.DataFrame:
    merged = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEY, *COLUMNS])
    merged["sample_id"] = merged["sample_id"].astype(str)
    return merged


def to_counts(samples: pd.DataFrame) -> pd.DataFrame:
    """Per-problem (run, benchmark, problem_id, n, c) from graded samples (failed samples excluded)."""
    ok = samples[samples["error"].isna()] if "error" in samples else samples
    grouped = ok.groupby(["run", "benchmark", "problem_id"], sort=False)["correct"]
    return grouped.agg(n="size", c=lambda s: int(s.astype(bool).sum())).reset_index()
