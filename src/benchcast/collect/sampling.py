"""Sampling for pass@k (SPEC §1.2, §7): n samples per problem, graded, written per sample.

Each (problem, sample) is seeded from (seed, problem id, sample index), so reruns reproduce
completions and a resumed run draws exactly the samples that are missing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from benchcast.collect import store
from benchcast.collect.grading import extract_answer, grade
from benchcast.collect.models import BACKENDS, load_transformers, load_vllm, require
from benchcast.utils.progress import track

KEY = ["model", "problem_id", "sample_id"]


def sample_seed(seed: int, problem_id: str, index: int) -> int:
    digest = hashlib.sha256(f"{seed}/{problem_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _generate_transformers(
    model, tokenizer, device, prompt, indices, *, temperature, max_new_tokens, seed, problem_id, chunk
):
    torch = require("torch", "score")
    encoded = tokenizer(prompt, return_tensors="pt").to(device)
    texts = []
    for start in range(0, len(indices), chunk):
        group = indices[start : start + chunk]
        torch.manual_seed(sample_seed(seed, problem_id, group[0]))
        with torch.no_grad():
            output = model.generate(
                **encoded,
                do_sample=temperature > 0,
                temperature=max(temperature, 1e-5),
                top_p=1.0,
                top_k=0,
                max_new_tokens=max_new_tokens,
                num_return_sequences=len(group),
                pad_token_id=tokenizer.pad_token_id,
            )
        prompt_length = encoded["input_ids"].shape[1]
        texts += tokenizer.batch_decode(output[:, prompt_length:], skip_special_tokens=True)
    return texts


def sample(
    model_id: str,
    problems: pd.DataFrame,
    *,
    n: int = 100,
    temperature: float = 1.0,
    max_new_tokens: int = 512,
    backend: str = "transformers",
    dtype: str = "auto",
    device: str | None = None,
    seed: int = 0,
    chunk: int = 16,
    benchmark: str = "problems",
    run: str | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    use_math_verify: bool = True,
) -> pd.DataFrame:
    """Draw ``n`` samples per problem, extract and grade the final answers; resumable via ``out``."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    previous = store.read_existing(Path(out) if out else None, KEY)
    done = store.done_keys(previous, KEY)
    missing = {
        str(row.id): [i for i in range(n) if (model_id, str(row.id), str(i)) not in done]
        for row in problems.itertuples()
    }
    missing = {pid: idx for pid, idx in missing.items() if idx}
    rows = []
    if missing:
        by_id = problems.set_index(problems["id"].astype(str))
        completions: dict[str, list[str]] = {}
        errors: dict[str, str] = {}
        if backend == "vllm":
            vllm = require("vllm", "vllm")
            llm = load_vllm(model_id, dtype)
            ids = list(missing)
            requests = [
                vllm.SamplingParams(
                    n=len(missing[p]),
                    temperature=temperature,
                    max_tokens=max_new_tokens,
                    seed=sample_seed(seed, p, missing[p][0]),
                )
                for p in ids
            ]
            outputs = llm.generate([str(by_id.loc[p, "prompt"]) for p in ids], requests)
            completions = {p: [c.text for c in o.outputs] for p, o in zip(ids, outputs, strict=True)}
        else:
            model, tokenizer, device = load_transformers(model_id, dtype, device)
            for pid in track(list(missing), f"sampling {model_id}", enabled=progress):
                try:
                    completions[pid] = _generate_transformers(
                        model,
                        tokenizer,
                        device,
                        str(by_id.loc[pid, "prompt"]),
                        missing[pid],
                        temperature=temperature,
                        max_new_tokens=max_new_tokens,
                        seed=seed,
                        problem_id=pid,
                        chunk=chunk,
                    )
                except Exception as exc:  # one bad problem must not lose the others
                    errors[pid] = f"generate: {exc}"
        for pid, indices in missing.items():
            gold = str(by_id.loc[pid, "answer"])
            texts = completions.get(pid, [None] * len(indices))
            for index, text in zip(indices, texts, strict=True):
                base = {
                    "model": model_id,
                    "run": run or model_id,
                    "benchmark": benchmark,
                    "problem_id": pid,
                    "sample_id": str(index),
                    "completion": text,
                }
                if text is None:  # generation failed: recorded, not dropped
                    rows.append({**base, "extracted": None, "correct": None, "error": errors.get(pid, "no completion")})
                    continue
                extracted = extract_answer(text)
                rows.append(
                    {
                        **base,
                        "extracted": extracted,
                        "error": None,
                        "correct": grade(extracted, gold, use_math_verify=use_math_verify),
                    }
                )
    new = pd.DataFrame(rows, columns=[*KEY, "run", "benchmark", "completion", "extracted", "correct", "error"])
    merged = pd.concat([previous, new], ignore_index=True) if len(previous) else new
    merged["sample_id"] = merged["sample_id"].astype(str)
    if out:
        store.write(merged, Path(out))
    return merged


def to_counts(samples: pd.DataFrame) -> pd.DataFrame:
    """Per-problem (run, benchmark, problem_id, n, c) from graded samples (failed samples excluded)."""
    ok = samples[samples["error"].isna()] if "error" in samples else samples
    grouped = ok.groupby(["run", "benchmark", "problem_id"], sort=False)["correct"]
    return grouped.agg(n="size", c=lambda s: int(s.astype(bool).sum())).reset_index()
