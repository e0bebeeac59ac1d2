"""Random streams keyed by what they are for, so that a result does not depend on what else was
computed in the same call."""

from __future__ import annotations

import numpy as np

# purpose tags, one per kind of draw (in one place, so that no two kinds share a stream)
EPS_STREAM = 7  # the extrapolation error drawn at each queried point (forecasting.extrapolation.widen)
RESIDUAL_STREAM = 2**31 - 1  # bootstrap: residuals added to each queried point


def common_rng(seed: int, purpose: int) -> np.random.Generator:
    """The generator every queried point of a forecast shares, seeded by ``seed`` and ``purpose`` alone."""
    return np.random.default_rng([seed, purpose, 1])
