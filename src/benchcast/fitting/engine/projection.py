"""Variable projection: a law's linear parameters solved exactly, within their bounds, for a batch
of values of the others."""

from __future__ import annotations

import itertools

import numpy as np

from benchcast.fitting.engine.problem import Problem

ROBUST_STEPS = 6  # reweighted steps of the linear parameters towards the Huber optimum
WELL_CONDITIONED = 1e-6  # Hadamard ratio above which box least squares trusts a feasible free solution


def project_linear(problem: Problem, u: np.ndarray) -> np.ndarray:
    """Solve the law's linear parameters exactly for a batch of internal vectors: least squares within their bounds
    (the optimum of the convex problem), so that a projected point never leaves the law's constraints; with a Huber
    loss, ``ROBUST_STEPS`` iteratively reweighted steps then move the solution towards the Huber optimum."""
    linear = [j for j, i in enumerate(problem.free) if problem.params[i].linear]
    if not linear:
        return u
    is_log = problem.is_log
    u = u.copy()
    # Affine in the linear parameters: basis = f(e_j) - f(0), evaluated in one batch.
    zero = u.copy()
    for j in linear:
        zero[:, j] = -np.inf if is_log[j] else 0.0
    offset = problem.predict(zero)
    basis = []
    for j in linear:
        unit = zero.copy()
        unit[:, j] = 0.0 if is_log[j] else 1.0
        basis.append(problem.predict(unit) - offset)
    basis = np.nan_to_num(np.stack(basis, axis=1), nan=0.0, posinf=0.0, neginf=0.0)  # (S, L, n)
    target = np.nan_to_num(problem.y - offset, nan=0.0, posinf=0.0, neginf=0.0)  # (S, n)
    params = [problem.params[problem.free[j]] for j in linear]
    lower = np.array([max(p.lower, 1e-300) if is_log[j] else p.lower for p, j in zip(params, linear, strict=True)])
    upper = np.array([p.upper for p in params])
    init = np.array([p.init for p in params])
    coef = box_least_squares(basis, target, lower, upper, init)
    for _ in range(ROBUST_STEPS if problem.loss.robust else 0):
        residual = np.einsum("sl,sln->sn", coef, basis) - target
        root_weight = np.sqrt(problem.loss.reweighting(residual))
        coef = box_least_squares(basis * root_weight[:, None, :], target * root_weight, lower, upper, init)
    for col, j in enumerate(linear):
        u[:, j] = np.log(coef[:, col]) if is_log[j] else coef[:, col]
    return u


def box_least_squares(basis: np.ndarray, target: np.ndarray, lower, upper, init) -> np.ndarray:
    """argmin_x ||x @ basis - target||^2 subject to lower <= x <= upper, for a batch."""
    n_batch, n_lin, _ = basis.shape
    gram = basis @ np.swapaxes(basis, 1, 2)  # (S, L, L)
    rhs = (basis @ target[..., None])[..., 0]  # (S, L)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # Hadamard's ratio det(G) / prod(diag G) in [0, 1]: near 0 for nearly collinear basis rows
        conditioned = np.linalg.det(gram) / np.prod(np.einsum("sll->sl", gram), axis=1) > WELL_CONDITIONED
    best = np.broadcast_to(np.clip(init, lower, upper), (n_batch, n_lin)).astype(float).copy()
    best_sse = np.full(n_batch, np.inf)
    rows = np.arange(n_batch)  # the rows whose optimum is not known yet
    for pattern in itertools.product(("free", "lower", "upper"), repeat=n_lin):  # ('free', ..., 'free') first
        fixed = np.array([c != "free" for c in pattern])
        if not rows.size:
            break
        if any(
            (c == "lower" and not np.isfinite(lower[j])) or (c == "upper" and not np.isfinite(upper[j]))
            for j, c in enumerate(pattern)
        ):
            continue
        x = np.zeros((rows.size, n_lin))
        for j, c in enumerate(pattern):
            if c != "free":
                x[:, j] = lower[j] if c == "lower" else upper[j]
        part = basis if rows.size == n_batch else basis[rows]
        free = np.flatnonzero(~fixed)
        if free.size:
            sub_gram = gram[rows][:, free[:, None], free[None, :]] + 1e-12 * np.eye(free.size)
            sub_rhs = rhs[rows][:, free] - np.einsum("sij,sj->si", gram[rows][:, free][:, :, fixed], x[:, fixed])
            with np.errstate(invalid="ignore", over="ignore"):
                try:
                    x[:, free] = np.linalg.solve(sub_gram, sub_rhs[..., None])[..., 0]
                except np.linalg.LinAlgError:
                    continue
        feasible = np.all(np.isfinite(x) & (x >= lower - 1e-12) & (x <= upper + 1e-12), axis=1)
        with np.errstate(invalid="ignore", over="ignore"):
            residual = np.einsum("sl,sln->sn", x, part) - target[rows]
            sse = np.where(feasible, np.sum(residual**2, axis=1), np.inf)
        better = sse < best_sse[rows]
        best[rows[better]], best_sse[rows[better]] = np.clip(x[better], lower, upper), sse[better]
        if free.size == n_lin:  # the all-free set: its feasible, well-conditioned rows are solved
            rows = rows[~(feasible & conditioned)]
    return best
