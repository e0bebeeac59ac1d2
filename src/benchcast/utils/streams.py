"""Random streams keyed by what they are for, so that a result does not depend on what else was
computed in the same call."""

from __future__ import annotations

import numpy as np

# purpose tags, one per kind of draw (in one place, so that no two kinds share a stream)
EPS_STREAM = 7  # the extrapolation error drawn at each queried point (forecasting.extrapolation.widen)
PLAN_STREAM = 11  # plan: extrapolation errors of the replicates' solutions
RESIDUAL_STREAM = 2**31 - 1  # bootstrap: residuals added to each queried point


def point_rng(seed: int, purpose: int, values) -> np.random.Generator:
    """A generator for one queried point: seeded by ``seed``, a ``purpose`` tag and the point's own float values (their
    little-endian bit patterns). A point's draws are then the same whether it is asked for alone or with others, and
    the points of one call get independent draws (so that a coverage averaged over them does not share one Monte-
    Carlo error)."""
    values = np.asarray(values, np.float64).ravel() + 0.0  # + 0.0: -0.0 is 0.0
    words = np.ascontiguousarray(values.astype("<f8")).view("<u4")
    return np.random.default_rng([seed, purpose, len(words), *words.tolist(), 1])
