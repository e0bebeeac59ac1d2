"""The batched sampler: counter-based streams, inverse-CDF draws, batches across problems.

Bit-identity claims here (exact equality on purpose): the tensor hash equals the integer reference
bit for bit; a sample's uniforms do not depend on the batch; on CPU in fp32 a sample's tokens do
not depend on the batch it ran in (padding, neighbours, batch size) or on an out-of-memory split.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
torch.set_num_threads(1)

from scipy import stats  # noqa: E402

from benchcast.collect import engine  # noqa: E402
from benchcast.collect.streams import MASK64, draw, mix, sample_key, splitmix64, uniforms  # noqa: E402


def test_tensor_hash_is_splitmix64_bit_for_bit():
    rng = np.random.default_rng(0)
    values = [0, 1, 2**63 - 1, -(2**63), -1, 12345] + rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64).tolist()
    mixed = mix(torch, torch.tensor(values, dtype=torch.int64)).tolist()
    assert [m & MASK64 for m in mixed] == [splitmix64(v & MASK64) for v in values]
    assert splitmix64(0) == 0  # the finaliser's fixed point; keys and counters never sit there
    assert splitmix64(1) == 0x5692161D100B05E5  # pinned: streams must not change between releases silently


def test_keys_and_uniforms_depend_on_seed_problem_index_and_step_only():
    keys = [sample_key(s, p, i) for s in (0, 1) for p in ("a", "b", "007") for i in range(50)]
    assert len(set(keys)) == len(keys)
    assert sample_key(0, "a", 3) == sample_key(0, "a", 3)
    assert sample_key(0, "7", 3) != sample_key(0, "007", 3)  # ids are text
    key_tensor = torch.tensor(keys, dtype=torch.int64)
    u = uniforms(torch, key_tensor, 5)
    perm = torch.randperm(len(keys), generator=torch.Generator().manual_seed(1))
    assert torch.equal(uniforms(torch, key_tensor[perm], 5), u[perm])  # bit-identical whatever the batch
    assert torch.equal(uniforms(torch, key_tensor[:3], 5), u[:3])
    assert not torch.equal(uniforms(torch, key_tensor, 6), u)
    many = uniforms(torch, torch.tensor([sample_key(0, "p", i) for i in range(20_000)]), torch.arange(20_000) % 7)
    assert 0 <= float(many.min()) and float(many.max()) < 1
    assert stats.kstest(many.numpy(), "uniform").pvalue > 1e-3


def test_inverse_cdf_draws_follow_the_softmax():
    logits = torch.tensor([[2.0, 0.5, -1.0, float("-inf"), 1.0]]).repeat(40_000, 1)
    u = uniforms(torch, torch.tensor([sample_key(3, "x", i) for i in range(40_000)]), 0)
    for temperature in (1.0, 0.5):
        tokens = draw(torch, logits, u, temperature).numpy()
        want = torch.softmax(logits[0].double() / temperature, -1).numpy()
        counts = np.bincount(tokens, minlength=5)
        assert counts[3] == 0  # a token of probability zero is never drawn
        keep = want > 0
        assert stats.chisquare(counts[keep], want[keep] / want[keep].sum() * counts.sum()).pvalue > 1e-3
    assert (draw(torch, logits[:3], u[:3], 0.0) == 0).all()  # temperature 0: greedy
    edge = draw(torch, logits[:2], torch.tensor([0.0, 1.0 - 2**-53], dtype=torch.float64), 1.0).tolist()
    assert edge == [0, 4]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from test_collect import build_tiny, build_tokenizer  # the tiny Llama of the collect tests

    path = build_tiny(tmp_path_factory.mktemp("tiny-streams"), build_tokenizer(), initializer_range=0.3)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    return model, tokenizer


OPTIONS = {"temperature": 1.0, "max_new_tokens": 12, "eos_ids": [2], "pad_id": 3, "device": "cpu"}


def test_first_token_distribution_is_the_models_softmax(tiny):
    model, tokenizer = tiny
    prompt = tokenizer("Question: what is 2 plus 3?")["input_ids"]
    with torch.no_grad():
        want = torch.softmax(model(torch.tensor([prompt])).logits[0, -1].double() / 0.7, -1).numpy()
    keys = [sample_key(0, "p", i) for i in range(3000)]
    options = {**OPTIONS, "max_new_tokens": 1, "temperature": 0.7}
    first = [t[0] for t in engine.generate(model, [prompt] * 3000, keys, **options)]
    counts = np.bincount(first, minlength=want.size)
    top = np.argsort(want)[::-1][:8]  # the likely tokens, and the rest pooled
    observed = np.append(counts[top], counts.sum() - counts[top].sum())
    expected = np.append(want[top], 1 - want[top].sum()) * counts.sum()
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_tokens_do_not_depend_on_the_batch(tiny):
    model, tokenizer = tiny
    prompts = [tokenizer(t)["input_ids"] for t in ("Hi", "Question: what is 2 plus 3? Think. Think. Think.", "x = 1")]
    keys = [sample_key(9, str(p), i) for p in range(3) for i in range(4)]
    rows = [prompts[p] for p in range(3) for _ in range(4)]
    alone = [engine.generate(model, [r], [k], **OPTIONS)[0] for r, k in zip(rows, keys, strict=True)]
    together = engine.generate(model, rows, keys, **OPTIONS)
    assert together == alone  # bit-identical tokens: left padding, neighbours and batch size do not matter
    assert len({tuple(t) for t in alone}) > 6  # really sampled
    results = engine.run_requests(model, rows, keys, batch_size=5, progress=False, **OPTIONS)
    assert [results[i] for i in range(12)] == alone


def test_rows_that_end_leave_the_batch_without_changing_the_others(tiny):
    model, tokenizer = tiny
    prompts = [tokenizer(t)["input_ids"] for t in ("Hi", "Question: what is 2 plus 3? Think.", "x = 1")]
    rows = [prompts[i % 3] for i in range(24)]
    keys = [sample_key(4, "e", i) for i in range(24)]
    options = {**OPTIONS, "max_new_tokens": 30, "eos_ids": list(range(0, 300, 9))}  # ends often
    alone = [engine.generate(model, [r], [k], **options)[0] for r, k in zip(rows, keys, strict=True)]
    lengths = [len(t) for t in alone]
    assert sum(n <= 8 for n in lengths) >= 6 and max(lengths) > 16  # a quarter end by step 8: the batch shrinks
    assert engine.generate(model, rows, keys, **options) == alone  # bit-identical tokens (CPU, fp32)


def test_out_of_memory_batches_are_split_and_give_the_same_tokens(tiny, monkeypatch):
    model, tokenizer = tiny
    rows = [tokenizer("Question: what is 2 plus 3?")["input_ids"]] * 6
    keys = [sample_key(1, "q", i) for i in range(6)]
    want = engine.run_requests(model, rows, keys, batch_size=6, progress=False, **OPTIONS)
    real = engine.generate
    sizes = []

    def small_memory(model, prompts, keys, **options):
        sizes.append(len(prompts))
        if len(prompts) > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(model, prompts, keys, **options)

    monkeypatch.setattr(engine, "generate", small_memory)
    got = engine.run_requests(model, rows, keys, batch_size=6, progress=False, **OPTIONS)
    assert got == want and sizes[0] == 6 and max(sizes[1:]) <= 3


def test_batch_size_from_memory():
    shape = {"layers": 24, "kv_heads": 16, "head_dim": 128, "hidden": 2048, "vocab": 50_304}
    # per sample: KV 2*24*16*128*(64+64)*2 B = 25.2 MB, prefill 6*64*2048*2 = 1.6 MB, sampling 1.4 MB
    size = engine.batch_size_for(**shape, prompt_length=64, max_new_tokens=64, dtype_bytes=2, free_bytes=70e9)
    per_sample = 2 * 24 * 16 * 128 * 128 * 2 + 6 * 64 * 2048 * 2 + 50_304 * 28
    assert size == int(0.6 * 70e9 // per_sample) == 1492
    longer = engine.batch_size_for(**shape, prompt_length=800, max_new_tokens=300, dtype_bytes=2, free_bytes=70e9)
    assert 100 < longer < size
    assert engine.batch_size_for(**shape, prompt_length=64, max_new_tokens=64, dtype_bytes=2, free_bytes=1e12) == 4096
    assert engine.batch_size_for(**shape, prompt_length=64, max_new_tokens=64, dtype_bytes=2, free_bytes=1.0) == 1


def test_batches_group_prompts_of_similar_length():
    lengths = [5, 50, 7, 49, 6, 51]
    assert engine.plan_batches(lengths, lambda length: 2) == [[5, 1], [3, 2], [4, 0]]
    assert engine.plan_batches(lengths, lambda length: 4 if length > 40 else 1) == [[5, 1, 3, 2], [4], [0]]
