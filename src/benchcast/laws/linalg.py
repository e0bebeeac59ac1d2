"""Small batched linear algebra shared by the laws' Jacobians and closed-form fits, and the count of distinct
covariate points every fit and stage is checked against."""

from __future__ import annotations

import numpy as np


def stack_jacobian(value: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(value, jac)``, each derivative broadcast to the prediction's shape, stacked on axis -2 in one array."""
    shape = np.broadcast_shapes(np.shape(value), *(np.shape(column) for column in columns))
    jac = np.empty(shape[:-1] + (len(columns),) + shape[-1:])
    for row, column in enumerate(columns):
        jac[..., row, :] = column
    return value, jac


def weighted_ols(design: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Least squares of ``y`` on ``design`` under many weightings at once, by a batched QR."""
    root = np.sqrt(np.asarray(weights, float))[:, :, None]
    q, r = np.linalg.qr(root * design)
    rhs = np.einsum("bnp,bn->bp", q, root[:, :, 0] * y)
    return np.linalg.solve(r, rhs[..., None])[..., 0]


def nnls_rows(columns: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares with column scaling."""
    scale = np.maximum(np.abs(columns).max(axis=0), 1e-300)
    return nnls(columns / scale, target) / scale


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``argmin ||a x - b||`` over ``x >= 0`` by Lawson and Hanson's active set (no scipy import)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("nnls: the design and the response must be finite.")
    n, L = a.shape
    x, passive = np.zeros(L), np.zeros(L, bool)
    tol = 10 * np.finfo(float).eps * np.abs(a).sum(axis=0).max(initial=0.0) * max(n, L)
    gradient = a.T @ b
    for _ in range(10 * L + 10):  # Lawson-Hanson ends in finitely many steps; a cap against cycling on degenerate input
        if passive.all() or not (gradient[~passive] > tol).any():
            break
        passive[np.argmax(np.where(passive, -np.inf, gradient))] = True
        while True:
            trial = np.zeros(L)
            trial[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (trial[passive] > 0).all():
                break
            # step from x toward trial until the first passive coefficient reaches 0, and drop it
            going = passive & (trial <= 0)
            step = np.min(x[going] / (x[going] - trial[going]))
            x = x + step * (trial - x)
            passive &= x > tol
            x[~passive] = 0.0
            if not passive.any():
                trial = x
                break
        x = trial
        gradient = a.T @ (b - a @ x)
    return x


def point_groups(X: dict[str, np.ndarray]) -> np.ndarray:
    """Each point's index among the distinct covariate points: replicate runs of one N and D are one point."""
    columns = np.column_stack([np.asarray(X[c], float) for c in sorted(X)])
    return np.unique(columns, axis=0, return_inverse=True)[1].reshape(-1)


def distinct_points(X: dict[str, np.ndarray]) -> int:
    """How many distinct covariate points ``X`` holds (0 for none)."""
    return int(point_groups(X).max(initial=-1)) + 1


def distinct_drawn(X: dict[str, np.ndarray], weights: np.ndarray) -> np.ndarray:
    """How many distinct covariate points each reweighting (a row of ``weights``, shape (R, n)) draws at all."""
    groups = point_groups(X)
    drawn = np.zeros((len(weights), groups.max(initial=-1) + 1), bool)  # (reweighting, distinct point)
    row, point = np.nonzero(np.asarray(weights) > 0)
    drawn[row, groups[point]] = True
    return drawn.sum(axis=1)
