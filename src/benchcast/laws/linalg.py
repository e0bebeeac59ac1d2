"""Small batched linear algebra shared by the laws' Jacobians and closed-form fits."""

from __future__ import annotations

import numpy as np


def stack_jacobian(value: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(value, jac)`` with each derivative broadcast to the prediction's shape, stacked on axis -2
    (into one new array: ``np.stack`` of broadcast views costs more than the law's arithmetic).

    Parameters
    ----------
    value : ndarray
        The prediction in target space, shape (..., n).
    *columns : ndarray
        The derivative of ``value`` in each parameter, in parameter order; each broadcastable to
        ``value``'s shape.

    Returns
    -------
    value : ndarray
        ``value`` itself.
    jac : ndarray
        The derivatives, shape (..., len(columns), n).
    """
    shape = np.broadcast_shapes(np.shape(value), *(np.shape(column) for column in columns))
    jac = np.empty(shape[:-1] + (len(columns),) + shape[-1:])
    for row, column in enumerate(columns):
        jac[..., row, :] = column
    return value, jac


def weighted_ols(design: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Least squares of ``y`` on ``design`` under many weightings at once, by a batched QR of the
    weighted design (no normal equations: log-compute columns are badly conditioned).

    Parameters
    ----------
    design : ndarray
        The design matrix, shape (n, p).
    y : ndarray
        The response, shape (n,).
    weights : ndarray
        Non-negative weights of the points, one weighting per row, shape (B, n).

    Returns
    -------
    ndarray
        The coefficients under each weighting, shape (B, p).
    """
    root = np.sqrt(np.asarray(weights, float))[:, :, None]
    q, r = np.linalg.qr(root * design)
    rhs = np.einsum("bnp,bn->bp", q, root[:, :, 0] * y)
    return np.linalg.solve(r, rhs[..., None])[..., 0]


def nnls_rows(columns: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares with column scaling.

    Parameters
    ----------
    columns : ndarray
        The design, shape (n, L).
    target : ndarray
        The response, shape (n,).

    Returns
    -------
    ndarray
        The non-negative coefficients, shape (L,).
    """
    scale = np.maximum(np.abs(columns).max(axis=0), 1e-300)
    from scipy.optimize import nnls  # here: scipy.optimize costs 0.3 s to import

    coef, _ = nnls(columns / scale, target)
    return coef / scale
