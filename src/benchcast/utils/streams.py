"""Random streams keyed by what they are for, so that a result does not depend on what else was
computed in the same call."""

from __future__ import annotations

import numpy as np


def point_rng(seed: int, purpose: int, values) -> np.random.Generator:
    """A generator for one queried point: seeded by ``seed``, a ``purpose`` tag and the point's own
    float values (their bit patterns). A point's draws are then the same whether it is asked for
    alone or with others, while different points get independent draws (so that coverage averaged
    over points does not share one Monte-Carlo error)."""
    words = np.ascontiguousarray(np.asarray(values, np.float64).ravel() + 0.0).view(np.uint32)  # + 0.0: -0.0 is 0.0
    return np.random.default_rng([seed, purpose, *words.tolist()])
