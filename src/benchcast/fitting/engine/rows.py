"""The row-wise numerics of a batched solve: each row's step solved alone, non-finite values zeroed."""

from __future__ import annotations

import numpy as np


def solve_rows(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``solve(lhs[a], rhs[a])`` for each row a; a singular row alone takes the diagonal step ``rhs / diag(lhs)``, so
    that each row's path is independent of the others in its batch."""
    try:
        return np.linalg.solve(lhs, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(rhs)
        for row in range(len(rhs)):
            try:
                out[row] = np.linalg.solve(lhs[row], rhs[row])
            except np.linalg.LinAlgError:
                out[row] = rhs[row] / np.maximum(np.diagonal(lhs[row]), 1e-300)
        return out


def finite(values: np.ndarray) -> np.ndarray:
    """``values`` with nan and infinities replaced by 0 (itself where all are finite, the common case: a finite sum
    says so without a mask; one that overflows only costs the copy)."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.sum(values)
    return values if np.isfinite(total) else np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
