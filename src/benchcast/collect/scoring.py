"""Gold-reference scoring (SPEC §1.3, §7): log p(solution | prompt) per problem.

The prompt and the solution are tokenised separately (so the solution's tokens are exactly
those scored) and concatenated; prompt tokens are masked. Batches are sorted by length and padded
on the right; an out-of-memory batch is retried at half the size, down to one problem, and a
problem that still fails is recorded with its error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.collect import store
from benchcast.collect.models import (
    BACKENDS,
    in_halves,
    load_transformers,
    load_vllm,
    prompt_ids,
    quiet_libraries,
    require,
)
from benchcast.errors import DataError
from benchcast.utils.progress import track

KEY = ["model", "problem_id"]


def encode(tokenizer, prompt: str, solution: str) -> tuple[list[int], list[int]]:
    """Token ids of the prompt (with special tokens) and of the solution (without), tokenised apart."""
    return prompt_ids(tokenizer, prompt), list(tokenizer(solution, add_special_tokens=False)["input_ids"])


def score_batch(model, pairs: list[tuple[list[int], list[int]]], pad_id: int, device: str) -> list[float]:
    """Summed log-probabilities of each continuation given its context (one forward pass)."""
    torch = require("torch", "score")
    lengths = [len(c) + len(s) for c, s in pairs]
    width = max(lengths)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(pairs), width), dtype=torch.long)
    for row, (context, continuation) in enumerate(pairs):
        seq = context + continuation
        ids[row, : len(seq)] = torch.tensor(seq)
        mask[row, : len(seq)] = 1
    with torch.no_grad():
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
        # log p(token t | tokens < t) for t = 1 .. width-1, without materialising log_softmax
        targets = ids[:, 1:].to(device)
        picked = torch.gather(logits[:, :-1], 2, targets[..., None])[..., 0]
        token_logprobs = (picked - torch.logsumexp(logits[:, :-1], dim=-1)).cpu().double().numpy()
    out = []
    for row, (context, continuation) in enumerate(pairs):
        start = len(context) - 1  # the first solution token is predicted at position len(context)-1
        out.append(float(token_logprobs[row, start : start + len(continuation)].sum()))
    return out


def _encode_all(tokenizer, problems) -> tuple[dict, dict]:
    """Each problem's (context, continuation) token ids, and the problems whose text failed to tokenise."""
    encoded, errors = {}, {}
    for row in problems.itertuples():
        try:
            encoded[row.id] = encode(tokenizer, str(row.prompt), str(row.solution))
        except Exception as exc:  # a tokenizer can fail on odd text: record it, go on
            errors[row.id] = f"tokenize: {exc}"
    return encoded, errors


def _score_transformers(model_id, problems, batch_size, dtype, device, progress):
    model, tokenizer, device = load_transformers(model_id, dtype, device)
    encoded, errors = _encode_all(tokenizer, problems)
    order = sorted(encoded, key=lambda pid: -(len(encoded[pid][0]) + len(encoded[pid][1])))
    results: dict[str, float] = {}
    queue = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    for batch in track(queue, f"scoring {model_id}", enabled=progress):
        done = in_halves(batch, lambda c: score_batch(model, [encoded[p] for p in c], tokenizer.pad_token_id, device))
        for pid, value in done.items():
            if isinstance(value, Exception):
                errors[pid] = f"score: {value}"
            else:
                results[pid] = value
    tokens = {pid: len(pair[1]) for pid, pair in encoded.items()}
    return results, tokens, errors


def _score_vllm(model_id, problems, dtype, verbose):
    """Gold log-probabilities from vLLM's prompt log-probabilities."""
    vllm = require("vllm", "vllm")
    llm = load_vllm(model_id, dtype)
    pairs, errors = _encode_all(llm.get_tokenizer(), problems)
    params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0)
    ids = list(pairs)
    prompts = [{"prompt_token_ids": pairs[p][0] + pairs[p][1]} for p in ids]
    outputs = llm.generate(prompts, params, use_tqdm=verbose) if ids else []
    results = {}
    for pid, output in zip(ids, outputs, strict=True):
        context, continuation = pairs[pid]
        seq = context + continuation
        try:
            results[pid] = float(sum(output.prompt_logprobs[t][seq[t]].logprob for t in range(len(context), len(seq))))
        except (KeyError, TypeError, IndexError) as exc:
            errors[pid] = f"vllm prompt logprobs: {exc!r}"
    return results, {p: len(pairs[p][1]) for p in ids}, errors


def score_gold(
    model_id: str,
    problems: pd.DataFrame,
    *,
    backend: str = "transformers",
    batch_size: int = 8,
    dtype: str = "auto",
    device: str | None = None,
    benchmark: str = "problems",
    run: str | None = None,
    params: float | None = None,
    tokens: float | None = None,
    out: str | Path | None = None,
    progress: bool | None = None,
    verbose: bool = False,
) -> pd.DataFrame:
    """One row per problem: gold log-probability, solution tokens, NLL (SPEC §1.3 rows)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    quiet_libraries(verbose)  # here, so that Ray workers are quieted too
    previous = store.read_existing(Path(out) if out else None, KEY)
    done = store.done_keys(previous, KEY)
    todo = problems[[(model_id, str(pid)) not in done for pid in problems["id"]]]
    if len(todo):
        if backend == "vllm":
            results, n_tokens, errors = _score_vllm(model_id, todo, dtype, verbose)
        else:
            results, n_tokens, errors = _score_transformers(model_id, todo, batch_size, dtype, device, progress)
        rows = []
        for pid in todo["id"]:
            logprob = results.get(pid, np.nan)
            count = n_tokens.get(pid, 0)
            rows.append(
                {
                    "model": model_id,
                    "run": run or model_id,
                    "benchmark": benchmark,
                    "problem_id": str(pid),
                    "gold_logprob": logprob,
                    "n_solution_tokens": count,
                    "gold_nll": -logprob,
                    "gold_nll_per_token": -logprob / count if count else np.nan,
                    "params": params,
                    "tokens": tokens,
                    "error": errors.get(pid),
                }
            )
        new = pd.DataFrame(rows)
    else:
        new = pd.DataFrame(columns=previous.columns)
    merged = pd.concat([previous, new], ignore_index=True) if len(previous) else new
    if out:
        store.write(merged, Path(out))
    return merged


GOLD_METRIC = "loglikelihood"
GOLD_METRIC_PER_TOKEN = "loglikelihood_per_token"
AGGREGATION = "mean over problems of log p(gold solution | prompt), summed over solution tokens"
AGGREGATION_PER_TOKEN = "mean over problems of log p(gold solution | prompt) / solution tokens"


def gold_metric(per_token: bool = False) -> str:
    """Metric name of the gold covariate rows (``fit --gold-metric``)."""
    return GOLD_METRIC_PER_TOKEN if per_token else GOLD_METRIC


def gold_table(
    scores: pd.DataFrame,
    *,
    per_token: bool = False,
    problems: pd.DataFrame | None = None,
    source: str = "gold scores",
) -> pd.DataFrame:
    """The benchmark-level gold covariate per (run, benchmark), as tidy rows for the gold law."""
    missing = [c for c in ("run", "benchmark", "problem_id", "gold_logprob", "n_solution_tokens") if c not in scores]
    if missing:
        raise DataError(f"{source}: lacks column(s) {missing}; expected the output of `benchcast score-gold`.")
    scores = scores.assign(problem_id=scores["problem_id"].astype(str), run=scores["run"].astype(str))
    failed = scores["error"].notna() if "error" in scores else pd.Series(False, index=scores.index)
    failed |= ~np.isfinite(scores["gold_logprob"].astype(float))
    ok = scores[~failed]
    if problems is not None:
        wanted = problems[["run", "benchmark", "problem_id"]].astype(str).drop_duplicates()
        joined = wanted.merge(ok, on=["run", "benchmark", "problem_id"], how="left", indicator=True)
        lacking = joined[joined["_merge"] == "left_only"]
        if len(lacking):
            first = lacking.iloc[0]
            raise DataError(
                f"{source}: {len(lacking)} sampled problem(s) have no successful gold score, e.g. problem "
                f"{first['problem_id']!r} of run {first['run']!r} on {first['benchmark']!r}; score them "
                "(score-gold resumes) or drop them, so that G and pass@k cover the same problems."
            )
        ok = joined.drop(columns="_merge")
    per_problem = ok["gold_logprob"].astype(float)
    if per_token:
        per_problem = per_problem / ok["n_solution_tokens"].astype(float)
    grouped = ok.assign(per_problem=per_problem).groupby(["run", "benchmark"], sort=False)
    sizes = {c: (c, "first") for c in ("params", "tokens", "flops") if c in ok.columns}
    frame = grouped.agg(value=("per_problem", "mean"), problems=("per_problem", "size"), **sizes).reset_index()
    n_failed = scores[failed].groupby(["run", "benchmark"]).size()  # scoring failed: not in the mean
    frame["failed"] = [int(n_failed.get((r, b), 0)) for r, b in zip(frame["run"], frame["benchmark"], strict=True)]
    return frame.assign(metric=gold_metric(per_token), aggregation=AGGREGATION_PER_TOKEN if per_token else AGGREGATION)
