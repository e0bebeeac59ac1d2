"""Sampling for pass@k (SPEC §1.2, §7): n samples per problem, graded, written per sample.

Every sample has its own random stream, seeded from (seed, problem id, sample index) only: a
rerun reproduces each completion, and a resumed run draws exactly the missing samples, each
equal to what an uninterrupted run would have drawn (whichever others are batched with it).
With transformers, samples are batched for speed, and the sampling step is Gumbel-max with one
generator per sample (exact sampling from softmax(logits / temperature), no top-k/top-p); with
vLLM, each sample is a request with its own seed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from benchcast.collect import store
from benchcast.collect.models import BACKENDS, load_transformers, load_vllm, quiet_libraries, require
from benchcast.data.grading import extract_answer, grade
from benchcast.utils.progress import track

KEY = ["model", "problem_id", "sample_id"]


def sample_seed(seed: int, problem_id: str, index: int) -> int:
    """The random seed of one sample, from (seed, problem id, sample index) only.

    Parameters
    ----------
    seed : int
        The run's base seed.
    problem_id : str
        The problem's id.
    index : int
        The sample's index within the problem.

    Returns
    -------
    int
        A 32-bit seed.
    """
    digest = hashlib.sha256(f"{seed}/{problem_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class PerSampleGumbel:
    """A logits processor that draws each row's next token from its own generator.

    Used with greedy decoding: it returns scores that are 0 at the sampled token and -inf
    elsewhere, so the argmax is a draw from softmax(scores / temperature) (Gumbel-max trick).
    """

    def __init__(self, torch, seeds: list[int], temperature: float, device):
        self.torch = torch
        self.temperature = temperature
        self.generators = [torch.Generator(device=device).manual_seed(s) for s in seeds]

    def __call__(self, input_ids, scores):
        torch = self.torch
        logp = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        uniform = torch.stack(
            [torch.rand(scores.shape[-1], generator=g, device=scores.device) for g in self.generators]
        )
        choice = (logp - torch.log(-torch.log(uniform))).argmax(dim=-1)
        out = torch.full_like(scores, float("-inf"))
        return out.scatter_(1, choice[:, None], 0.0)


def _generate_transformers(
    model, tokenizer, device, prompt, indices, *, temperature, max_new_tokens, seed, problem_id, chunk
):
    torch = require("torch", "score")
    transformers = require("transformers", "score")
    encoded = tokenizer(prompt, return_tensors="pt").to(device)
    config = transformers.GenerationConfig(
        do_sample=False,  # sampling is done by PerSampleGumbel; greedy picks its draw
        max_new_tokens=max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=model.generation_config.eos_token_id,
        bos_token_id=model.generation_config.bos_token_id,
    )
    texts = []
    for start in range(0, len(indices), chunk):
        group = indices[start : start + chunk]
        processors = []
        if temperature > 0:
            seeds = [sample_seed(seed, problem_id, i) for i in group]
            processors = [PerSampleGumbel(torch, seeds, temperature, device)]
        batch = {name: tensor.expand(len(group), -1) for name, tensor in encoded.items()}
        with torch.no_grad():
            output = model.generate(
                **batch, generation_config=config, logits_processor=transformers.LogitsProcessorList(processors)
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
    verbose: bool = False,
    use_math_verify: bool = True,
) -> pd.DataFrame:
    """Draw ``n`` samples per problem, extract and grade the final answers; resumable via ``out``.

    Parameters
    ----------
    model_id : str
        Hugging Face model id or local checkpoint path.
    problems : pandas.DataFrame
        The problem set (``id``, ``prompt``, ``answer``).
    n : int
        Samples per problem.
    temperature : float
        Softmax temperature.
    max_new_tokens : int
        Longest completion.
    backend : {'transformers', 'vllm'}
        Generation backend.
    dtype : str
        Model dtype (see :data:`benchcast.collect.models.DTYPES`).
    device : str, optional
        Torch device for transformers; CUDA when available.
    seed : int
        Base seed of every sample's own stream.
    chunk : int
        Samples generated together (transformers).
    benchmark : str
        Benchmark name written on each row.
    run : str, optional
        Run name written on each row; the model id by default.
    out : str or Path, optional
        Output file; samples already in it are kept and not drawn again.
    progress : bool, optional
        Show a progress bar (None: when interactive).
    verbose : bool
        Let transformers, vLLM, datasets and huggingface_hub show their own progress bars and logs
        (default: quiet, :func:`~benchcast.collect.models.quiet_libraries`).
    use_math_verify : bool
        Grade with math-verify when installed.

    Returns
    -------
    pandas.DataFrame
        One row per sample: ``model``, ``problem_id``, ``sample_id``, ``run``, ``benchmark``,
        ``completion``, ``extracted``, ``correct``, ``error``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    quiet_libraries(verbose)  # here, so that Ray workers are quieted too
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
            requests = [(p, i) for p in missing for i in missing[p]]  # one request per sample, own seed
            params = [
                vllm.SamplingParams(
                    n=1, temperature=temperature, top_p=1.0, max_tokens=max_new_tokens, seed=sample_seed(seed, p, i)
                )
                for p, i in requests
            ]
            outputs = llm.generate([str(by_id.loc[p, "prompt"]) for p, _ in requests], params, use_tqdm=verbose)
            for (p, _), output in zip(requests, outputs, strict=True):
                completions.setdefault(p, []).append(output.outputs[0].text)
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
    """Per-problem (run, benchmark, problem_id, n, c) from graded samples (failed samples excluded).

    Parameters
    ----------
    samples : pandas.DataFrame
        Output of :func:`sample`.

    Returns
    -------
    pandas.DataFrame
        One row per problem: samples drawn ``n`` and correct ``c``.
    """
    ok = samples[samples["error"].isna()] if "error" in samples else samples
    grouped = ok.groupby(["run", "benchmark", "problem_id"], sort=False)["correct"]
    return grouped.agg(n="size", c=lambda s: int(s.astype(bool).sum())).reset_index()
