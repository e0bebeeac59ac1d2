"""Counter-based random streams for sampling: one uniform per (seed, problem, sample, step), on the device.

A sample's key is a 64-bit hash of (seed, problem id, sample index); its uniform at step t is the splitmix64
finaliser of (key + (t + 1) * golden gamma), top 53 bits over 2^53, in int64 tensor operations over the batch. The
token is drawn by inverse CDF (float32 probabilities summed in float64).
"""

from __future__ import annotations

import hashlib

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment (the golden ratio in 64 bits)
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def _signed(value: int) -> int:
    """An unsigned 64-bit constant as the int64 with the same bits (torch has no uint64 arithmetic)."""
    value &= MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def splitmix64(value: int) -> int:
    """The splitmix64 finaliser of one unsigned 64-bit integer (the reference the tensor code matches)."""
    z = value & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def sample_key(seed: int, problem_id: str, index: int) -> int:
    """The 64-bit key of one sample's stream, from (seed, problem id, sample index) only."""
    digest = hashlib.sha256(f"benchcast-stream/{seed}/{problem_id}".encode()).digest()
    problem = int.from_bytes(digest[:8], "little")
    return _signed(splitmix64(problem + (index + 1) * GOLDEN))


def _shift_right(torch, x, bits: int):
    # torch's >> on int64 is arithmetic; masking the sign-extended bits makes it logical
    return torch.bitwise_and(torch.bitwise_right_shift(x, bits), (1 << (64 - bits)) - 1)


def mix(torch, x):
    """splitmix64's finaliser applied elementwise to an int64 tensor (same bits as :func:`splitmix64`)."""
    x = torch.bitwise_xor(x, _shift_right(torch, x, 30)) * _signed(MIX1)
    x = torch.bitwise_xor(x, _shift_right(torch, x, 27)) * _signed(MIX2)
    return torch.bitwise_xor(x, _shift_right(torch, x, 31))


def uniforms(torch, keys, steps):
    """One uniform in [0, 1) per sample for its decoding step: a function of (key, step) alone."""
    counter = keys + (torch.as_tensor(steps, dtype=torch.int64, device=keys.device) + 1) * _signed(GOLDEN)
    bits = _shift_right(torch, mix(torch, counter), 11)  # the top 53 bits
    return bits.to(torch.float64) * (1.0 / (1 << 53))


def draw(torch, logits, u, temperature: float):
    """Tokens drawn from softmax(logits / temperature) by inverse CDF with the given uniforms."""
    if temperature <= 0:
        return logits.argmax(dim=-1)
    # probabilities in float32 (one fused softmax), accumulated in float64 (no drift over 10^5 tokens)
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    cdf = torch.cumsum(probs, dim=-1, dtype=torch.float64)
    # the first token whose cumulative mass exceeds u * total; a zero-probability token never is
    target = (u.to(cdf.device) * cdf[:, -1])[:, None]
    index = torch.searchsorted(cdf, target, right=True)[:, 0]
    return index.clamp_(max=logits.shape[-1] - 1)
