"""Sampling throughput (new tokens per second): benchcast's batched sampler against the sampler it
replaced and against plain transformers ``generate(do_sample=True)``.

A random Llama (no download), P problems with random prompts of 16-48 tokens, S samples per problem,
T new tokens each (end-of-sequence switched off, so every method makes exactly P x S x T tokens):

* ``old``: the sampler before this change (commit 7981c2e), reproduced here: ``generate`` on chunks
  of 16 samples of one problem, with a logits processor that calls ``torch.rand`` once per sample
  per step (Gumbel-max), greedy decoding picking the draw.
* ``generate``: ``model.generate(do_sample=True)`` with one problem's S samples per call.
* ``new``: ``benchcast.collect.engine.run_requests``: samples of all problems batched together
  (batch size from the memory estimate, or ``--batch-size``), counter-based streams on the device.
* ``new, one problem per batch``: the same with batch size S, to separate batching from the rest.

    python benchmarks/sampler_throughput.py                       # CPU: a small model
    python benchmarks/sampler_throughput.py --model gpu           # CUDA: ~1.3 B parameters, bf16

Prints the device, the model's size, tokens/s per method and repeat (the methods interleaved) and
the ratios of the new sampler's best to the others' best.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import transformers

from benchcast.collect import engine
from benchcast.collect.streams import sample_key

MODELS = {  # hidden, layers, heads, intermediate, vocabulary
    "cpu": (128, 2, 4, 344, 8192),
    "gpu": (2048, 24, 16, 5504, 50304),  # ~1.3 B parameters, the shape of the measurement in issue 33
}


class PerSampleGumbel:
    """The replaced sampler's logits processor: one torch.rand per sample per step."""

    def __init__(self, seeds, temperature, device):
        self.temperature = temperature
        self.generators = [torch.Generator(device=device).manual_seed(s) for s in seeds]

    def __call__(self, input_ids, scores):
        logp = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        uniform = torch.stack(
            [torch.rand(scores.shape[-1], generator=g, device=scores.device) for g in self.generators]
        )
        choice = (logp - torch.log(-torch.log(uniform))).argmax(dim=-1)
        return torch.full_like(scores, float("-inf")).scatter_(1, choice[:, None], 0.0)


def old_sampler(model, prompts, samples, new_tokens, device, chunk=16):
    config = transformers.GenerationConfig(
        do_sample=False, max_new_tokens=new_tokens, min_new_tokens=new_tokens, pad_token_id=0
    )
    made = 0
    for p, prompt in enumerate(prompts):
        ids = torch.tensor([prompt], device=device)
        for start in range(0, samples, chunk):
            group = range(start, min(samples, start + chunk))
            processor = PerSampleGumbel([p * 100_003 + i for i in group], 1.0, device)
            batch = ids.expand(len(group), -1)
            with torch.no_grad():
                out = model.generate(
                    input_ids=batch,
                    attention_mask=torch.ones_like(batch),
                    generation_config=config,
                    logits_processor=transformers.LogitsProcessorList([processor]),
                )
            made += (out.shape[1] - ids.shape[1]) * len(group)
    return made


def plain_generate(model, prompts, samples, new_tokens, device):
    made = 0
    for prompt in prompts:
        batch = torch.tensor([prompt], device=device).expand(samples, -1)
        with torch.no_grad():
            out = model.generate(
                input_ids=batch,
                attention_mask=torch.ones_like(batch),
                do_sample=True,
                top_k=0,
                top_p=1.0,
                temperature=1.0,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                pad_token_id=0,
            )
        made += (out.shape[1] - batch.shape[1]) * samples
    return made


def new_sampler(model, prompts, samples, new_tokens, device, batch_size=None):
    rows = [prompt for prompt in prompts for _ in range(samples)]
    keys = [sample_key(0, str(p), i) for p in range(len(prompts)) for i in range(samples)]
    results = engine.run_requests(
        model,
        rows,
        keys,
        batch_size=batch_size,
        progress=False,
        temperature=1.0,
        max_new_tokens=new_tokens,
        eos_ids=[],
        pad_id=0,
        device=device,
    )
    failed = [v for v in results.values() if isinstance(v, str)]
    if failed:
        raise RuntimeError(failed[0])
    return sum(len(v) for v in results.values())


def build(kind: str, device: str, vocab: int | None = None):
    hidden, layers, heads, intermediate, default_vocab = MODELS[kind]
    vocab = vocab or default_vocab
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=None,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = transformers.LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    model.generation_config.eos_token_id = None
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=16)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--model", choices=sorted(MODELS), default=None, help="default: gpu on CUDA, else cpu")
    parser.add_argument("--batch-size", type=int, default=None, help="the new sampler's batch (default: memory)")
    parser.add_argument("--skip-old", action="store_true", help="leave out the replaced sampler (slow)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default: 3 on CPU, 1 on CUDA)")
    parser.add_argument("--vocab", type=int, default=None, help="vocabulary size (default: the model's)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    args.repeats = args.repeats or (1 if device == "cuda" else 3)
    kind = args.model or ("gpu" if device == "cuda" else "cpu")
    model = build(kind, device, args.vocab)
    params = sum(p.numel() for p in model.parameters())
    gen = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    prompts = [
        torch.randint(2, vocab, (int(torch.randint(16, 49, (1,), generator=gen)),), generator=gen).tolist()
        for _ in range(args.problems)
    ]
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} torch threads"
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    dtype = next(model.parameters()).dtype
    print(f"device: {name}; model: random Llama '{kind}', {params / 1e6:.1f} M parameters, {dtype}")
    print(f"work: {args.problems} problems x {args.samples} samples x {args.new_tokens} new tokens; load {load}")
    if device == "cuda":  # the streams are integer arithmetic: the same bits on the GPU as on the CPU
        from benchcast.collect.streams import uniforms

        keys = torch.tensor([sample_key(0, "check", i) for i in range(4096)])
        same = torch.equal(uniforms(torch, keys.cuda(), 7).cpu(), uniforms(torch, keys, 7))
        print(f"streams on {name} bit-identical to the CPU's: {same}")
    auto = engine.auto_batch_size(model, device, max(map(len, prompts)), args.new_tokens)
    work = (model, prompts, args.samples, args.new_tokens, device)
    methods = {
        "new (batched across problems)": lambda: new_sampler(*work, args.batch_size),
        "new, one problem per batch": lambda: new_sampler(*work, args.samples),
        "generate(do_sample), one problem per call": lambda: plain_generate(*work),
    }
    if not args.skip_old:
        methods["old (7981c2e: chunks of 16, torch.rand per sample)"] = lambda: old_sampler(*work)
    new_sampler(model, prompts[:1], 2, 2, device)  # warm up kernels and allocator
    plain_generate(model, prompts[:1], 2, 2, device)
    rates: dict[str, list[float]] = {label: [] for label in methods}
    for repeat in range(args.repeats):  # interleaved, so that a change in the machine's load hits every method
        for label, method in methods.items():
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            tokens = method()
            if device == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - start
            rates[label].append(tokens / seconds)
            print(f"  [{repeat + 1}] {label:52s} {tokens:8d} tokens {seconds:8.2f} s {tokens / seconds:10.1f} tokens/s")
    print(f"best of {args.repeats} (tokens/s):")
    for label, values in rates.items():
        print(f"  {label:56s} {max(values):10.1f}")
    rates = {label: max(values) for label, values in rates.items()}
    new = rates["new (batched across problems)"]
    print(f"new sampler batch size: {args.batch_size or auto} ({'given' if args.batch_size else 'memory estimate'})")
    for label, rate in rates.items():
        if not label.startswith("new (batched"):
            print(f"  new / {label}: {new / rate:.2f}x")


if __name__ == "__main__":
    main()
