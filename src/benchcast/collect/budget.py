"""Spending a total sampling budget across problems in rounds (pure numpy, no model).

A first round gives every problem the same share; later rounds go to the problems with fewer than ``target``
successes (Kazdan et al. 2025's dynamic sampling; docs/guide/collect.md). Every function is deterministic in its
arguments, so a resumed run replays the same schedule.
"""

from __future__ import annotations

import numpy as np

from benchcast.errors import BenchcastError


def default_first_round(budget: int, problems: int) -> int:
    """The first round's samples per problem: a quarter of an even share, at least one."""
    return max(1, budget // (4 * max(problems, 1)))


def round_sizes(budget: int, problems: int, first_round: int, round_size: int | None = None) -> list[int]:
    """Total samples of each round: the first round (``problems * first_round``), then adaptive rounds."""
    if problems < 1:
        raise BenchcastError("a sampling budget needs at least one problem.")
    if first_round < 1:
        raise BenchcastError(f"the first round must give every problem at least one sample, got {first_round}.")
    first = problems * first_round
    if budget < first:
        raise BenchcastError(
            f"a budget of {budget} samples cannot give {problems} problems {first_round} samples each in the "
            f"first round ({first} samples): raise --budget or lower --first-round."
        )
    rest = budget - first
    if round_size is None:
        round_size = max(1, -(-rest // 4))
    if round_size < 1:
        raise BenchcastError(f"the round size must be at least one sample, got {round_size}.")
    return [first] + [min(round_size, rest - start) for start in range(0, rest, round_size)]


def allocate(n, c, extra: int, *, target: int = 1) -> np.ndarray:
    """Samples each problem gets in one adaptive round."""
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if n.shape != c.shape or n.ndim != 1 or n.size == 0:
        raise BenchcastError("allocate needs one n and one c per problem (equal-length, non-empty).")
    if np.any(c < 0) or np.any(c > n):
        raise BenchcastError("per-problem counts need 0 <= c <= n.")
    if extra < 0 or target < 1:
        raise BenchcastError(f"allocate needs extra >= 0 and target >= 1, got extra={extra}, target={target}.")
    eligible = np.flatnonzero(c < target)
    if eligible.size == 0:
        eligible = np.flatnonzero(c == c.min())
    out = np.zeros(n.size, dtype=np.int64)
    out[eligible] = extra // eligible.size
    remainder = extra % eligible.size
    if remainder:
        order = eligible[np.argsort(n[eligible], kind="stable")]  # fewest samples first, then problem order
        out[order[:remainder]] += 1
    return out


def simulate(p, budget: int, *, first_round: int, round_size: int | None = None, target: int = 1, rng=None):
    """Counts (n, c) that adaptive sampling would give problems of known success rates ``p``."""
    p = np.asarray(p, dtype=float)
    rng = rng if rng is not None else np.random.default_rng(0)
    sizes = round_sizes(budget, p.size, first_round, round_size)
    n = np.full(p.size, first_round, dtype=np.int64)
    c = rng.binomial(n, p)
    for extra in sizes[1:]:
        more = allocate(n, c, extra, target=target)
        c = c + rng.binomial(more, p)
        n = n + more
    return n, c
