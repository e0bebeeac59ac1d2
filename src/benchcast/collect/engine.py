"""Batched sampling with transformers: samples of many problems per batch, one forward per step.

Requests are sorted by prompt length, padded on the left and decoded with the KV cache; each token is drawn from
the sample's own counter-based stream (:mod:`benchcast.collect.streams`), so a sample does not depend on its batch;
an out-of-memory batch is retried as two halves (docs/guide/collect.md, "A sampler for large n").
"""

from __future__ import annotations

import inspect
import os

from benchcast.collect.models import in_halves, require
from benchcast.collect.streams import draw, uniforms
from benchcast.utils.progress import track

CPU_MAX_BATCH = 64  # on a CPU, larger batches are compute-bound and lose cache locality (measured slower)
GPU_MAX_BATCH = 4096
MEMORY_FRACTION = 0.6  # of the free memory, for the batch's KV cache and sampling buffers


def batch_size_for(
    *,
    layers: int,
    kv_heads: int,
    head_dim: int,
    hidden: int,
    vocab: int,
    prompt_length: int,
    max_new_tokens: int,
    dtype_bytes: int,
    free_bytes: float,
    cap: int = GPU_MAX_BATCH,
) -> int:
    """Samples per batch that fit in a fraction of the free memory."""
    length = prompt_length + max_new_tokens
    kv = 2 * layers * kv_heads * head_dim * length * dtype_bytes
    prefill = 6 * prompt_length * hidden * dtype_bytes
    sampling = vocab * (4 + 3 * 8)
    per_sample = kv + prefill + sampling
    return int(max(1, min(cap, MEMORY_FRACTION * free_bytes // per_sample)))


def auto_batch_size(model, device: str, prompt_length: int, max_new_tokens: int) -> int:
    """:func:`batch_size_for` with the model's config and the device's free memory."""
    torch = require("torch", "score")
    config = model.config
    config = getattr(config, "text_config", None) or config
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    if str(device).startswith("cuda"):
        free, cap = torch.cuda.mem_get_info(torch.device(device))[0], GPU_MAX_BATCH
    else:
        try:
            free, cap = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), CPU_MAX_BATCH
        except (ValueError, OSError, AttributeError):
            free, cap = 4 * 2**30, CPU_MAX_BATCH
    return batch_size_for(
        layers=config.num_hidden_layers,
        kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=head_dim,
        hidden=config.hidden_size,
        vocab=config.vocab_size,
        prompt_length=prompt_length,
        max_new_tokens=max_new_tokens,
        dtype_bytes=next(model.parameters()).element_size(),
        free_bytes=float(free),
        cap=cap,
    )


def generate(model, prompts, keys, *, temperature, max_new_tokens, eos_ids, pad_id, device) -> list[list[int]]:
    """New tokens of each row, decoded together (left padding, KV cache, one stream per row)."""
    torch = require("torch", "score")
    rows, width = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((rows, width), pad_id, dtype=torch.long)
    mask = torch.zeros((rows, width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp_(min=0)  # a padded row's first real token is at position 0
    key_tensor = torch.tensor(keys, dtype=torch.int64, device=device)
    eos = torch.tensor(sorted(set(eos_ids)) or [-1], dtype=torch.long, device=device)
    # the forward's names for 'logits of the last position only' and the KV cache (they moved between releases)
    names = inspect.signature(model.forward).parameters
    logits_keyword = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in names), None)
    cache_keyword = "cache" if "cache" in names else "past_key_values"
    extra = {logits_keyword: 1} if logits_keyword else {}
    out = torch.full((rows, max_new_tokens), pad_id, dtype=torch.long, device=device)
    finished = torch.zeros(rows, dtype=torch.bool, device=device)
    with torch.inference_mode():
        result = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **extra)
        position = positions[:, -1:]
        alive = torch.arange(rows, device=device)  # the batch row of each row still decoding
        steps = 0
        for step in range(max_new_tokens):
            token = draw(torch, result.logits[:, -1, :], uniforms(torch, key_tensor, step), temperature)
            token = torch.where(finished, pad_id, token)
            out[alive, step] = token
            finished |= torch.isin(token, eos)
            steps = step + 1
            if step == max_new_tokens - 1:
                break
            cache = getattr(result, "cache", None)
            cache = result.past_key_values if cache is None else cache
            if step % 8 == 7:  # a host sync every 8 steps, not every step: which rows have ended
                done = int(finished.sum())
                if done == len(alive):
                    break
                if 4 * done >= len(alive) and hasattr(cache, "batch_select_indices"):
                    # a quarter or more have ended: drop them from the batch and the cache
                    keep = torch.nonzero(~finished)[:, 0]
                    cache.batch_select_indices(keep)
                    alive, key_tensor, finished = alive[keep], key_tensor[keep], finished[keep]
                    mask, position, token = mask[keep], position[keep], token[keep]
            mask = torch.cat([mask, torch.ones((len(alive), 1), dtype=mask.dtype, device=device)], dim=1)
            position = position + 1
            result = model(
                input_ids=token[:, None],
                attention_mask=mask,
                position_ids=position,
                use_cache=True,
                **{cache_keyword: cache},
                **extra,
            )
    tokens = out[:, :steps].cpu().tolist()
    ends = set(eos_ids)
    completions = []
    for row in tokens:
        end = next((i for i, t in enumerate(row) if t in ends), None)
        completions.append(row if end is None else row[: end + 1])
    return completions


def plan_batches(lengths: list[int], batch_size_of) -> list[list[int]]:
    """Request indices cut into batches of similar prompt length (longest first)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, start = [], 0
    while start < len(order):
        size = max(1, int(batch_size_of(lengths[order[start]])))
        batches.append(order[start : start + size])
        start += size
    return batches


def run_requests(
    model, prompts, keys, *, batch_size=None, progress=None, description="sampling", **options
) -> dict[int, list[int] | str]:
    """Every request's new tokens, in batches (halved on out-of-memory); a failure is its message."""
    lengths = [len(p) for p in prompts]
    results: dict[int, list[int] | str] = {}
    device, max_new_tokens = options["device"], options["max_new_tokens"]
    batches = plan_batches(lengths, lambda n: batch_size or auto_batch_size(model, device, n, max_new_tokens))
    for batch in track(batches, description, enabled=progress, sizes=[len(b) for b in batches], unit="samples"):
        done = in_halves(batch, lambda c: generate(model, [prompts[i] for i in c], [keys[i] for i in c], **options))
        results.update({i: f"generate: {v}" if isinstance(v, Exception) else v for i, v in done.items()})
    return results
