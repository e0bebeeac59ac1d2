"""Local solvers of a :class:`~benchcast.fitting.problem.Problem`: batched Levenberg-Marquardt (many
starts, or many bootstrap reweightings, at once) and the trust-region finish of one point."""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from benchcast.fitting.problem import PENALTY, Candidate, Problem, finite
from benchcast.laws.base import Law

WINDOW = 10  # iterations over which batched Levenberg-Marquardt judges its progress
FINISH_EVALUATIONS = 300  # trust-region budget of a fit's finish
CONVERGED_ITERATIONS = 300  # batched Levenberg-Marquardt steps at most where a search settles to convergence


def batched_levenberg_marquardt(
    problem: Problem,
    u: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    max_iterations: int = 200,
    tolerance: float = 1e-10,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Levenberg-Marquardt from many starts at once, each row its own problem.

    The Huber loss is handled by iteratively reweighted Gauss-Newton (weight delta/|r| on the
    linear part); bounds by an active set (a parameter on a bound whose gradient points out of the
    box is held there).

    Parameters
    ----------
    problem : Problem
        The law, data and loss.
    u : ndarray
        Internal starts, shape (S, n_free).
    weights : ndarray, optional
        Per-row point weights (S, n_points): a bootstrap replicate is the data reweighted by how
        often each run was drawn (None: all 1).
    max_iterations : int
        Iterations at most.
    tolerance : float
        A row converges when its loss moved by less than this (relative) over the last ``WINDOW``
        iterations, per iteration, or a step moved it by less than this (relative), or no step can
        lower it.

    Returns
    -------
    tuple of ndarray
        (u (S, n_free), loss (S,), converged (S,)), the loss weighted by ``weights``.
    """
    lower, upper, y, loss = problem.lower, problem.upper, problem.y, problem.loss
    u = np.clip(np.array(u, float, ndmin=2), lower, upper)
    S, m = u.shape
    w = np.ones((S, len(y))) if weights is None else np.asarray(weights, float)
    w = w / w.sum(axis=1, keepdims=True)
    damping = np.full(S, 1e-3)
    converged = np.zeros(S, bool)
    active = np.arange(S)

    def weighted_loss(pred, rows):
        value = np.sum(w[rows] * loss.per_point(pred - y), axis=-1)
        return np.where(np.isfinite(value), value, PENALTY)

    # each row's gradient and Gauss-Newton matrix, kept while its point does not move: a
    # rejected step leaves them as they were, so only rows that moved are evaluated again
    grad_of, hess_of = np.zeros((S, m)), np.zeros((S, m, m))
    moved = np.ones(S, bool)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        value = weighted_loss(problem.predict(u), active)
        history = np.repeat(value[:, None], WINDOW, axis=1)
        for iteration in range(max_iterations):
            if not active.size:
                break
            ua = u[active]
            rows = active[moved[active]]
            if rows.size:
                pred, jac = problem.jacobian(u[rows])  # (R, n), (R, m, n)
                residual = pred - y
                wr = w[rows]
                # iteratively reweighted: delta/|r| on Huber's linear part majorises the loss (a
                # plain Gauss-Newton weight of 0 there stalls where few points are quadratic)
                curvature = wr * loss.reweighting(residual) if loss.huber else wr
                jac = finite(jac)
                grad_of[rows] = np.einsum("amn,an->am", jac, wr * finite(loss.derivative(residual)))
                hess_of[rows] = np.einsum("amn,akn->amk", jac * curvature[:, None, :], jac)
                moved[rows] = False
            grad, hess = grad_of[active], hess_of[active]
            # active set: on a bound with the gradient pointing outwards
            held = ((ua <= lower) & (grad > 0)) | ((ua >= upper) & (grad < 0))
            diag = np.einsum("amm->am", hess)
            ridge = (damping[active, None] * np.maximum(diag, 1e-12) + 1e-300)[:, :, None]
            if held.any():
                grad = np.where(held, 0.0, grad)
                mask = ~held[:, :, None] & ~held[:, None, :]
                lhs = np.where(mask, hess, 0.0) + np.eye(m) * (ridge + held[:, :, None])
            else:  # the same sum without its no-op terms (most iterations hold nothing)
                lhs = hess + np.eye(m) * ridge
            step = finite(-solve_rows(lhs, grad))
            trial = np.clip(ua + step, lower, upper)
            trial_value = weighted_loss(problem.predict(trial), active)
            problem.n_evaluations += len(active)
            better = trial_value < value[active]
            u[active[better]] = trial[better]
            moved[active[better]] = True
            value[active[better]] = trial_value[better]
            damping[active] = np.where(better, np.maximum(damping[active] / 3.0, 1e-12), damping[active] * 4.0)
            # progress over the last WINDOW iterations: reweighting converges linearly, so a
            # single small step is no proof; a whole window of them is
            history[active, iteration % WINDOW] = value[active]
            window = (history[active].max(axis=1) - value[active]) / np.maximum(np.abs(value[active]), 1e-300)
            settled = (iteration >= WINDOW) & (window < tolerance * WINDOW)
            small_step = np.all(np.abs(trial - ua) <= tolerance * (1.0 + np.abs(ua)), axis=1)
            stuck = damping[active] > 1e10
            done = settled | small_step | stuck | ~np.isfinite(value[active])
            converged[active[done]] = np.isfinite(value[active[done]]) & (value[active[done]] < PENALTY)
            active = active[~done]
    return u, value, converged


def settle_to_convergence(
    problem: Problem, u: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`batched_levenberg_marquardt` run to convergence (tolerance 1e-12, at most
    ``CONVERGED_ITERATIONS`` steps): a second search's starts, a law's refinement starts, a
    multimodal law's bootstrap replicates.

    Parameters
    ----------
    problem : Problem
        The law, data and loss.
    u : ndarray
        Internal starts, shape (S, n_free).
    weights : ndarray, optional
        Per-row point weights (S, n_points) (None: all 1).

    Returns
    -------
    tuple of ndarray
        (u (S, n_free), loss (S,), converged (S,)).
    """
    return batched_levenberg_marquardt(problem, u, weights, max_iterations=CONVERGED_ITERATIONS, tolerance=1e-12)


def solve_rows(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``solve(lhs[a], rhs[a])`` for each row a; a singular row alone takes the diagonal step
    ``rhs / diag(lhs)``, so that every row's path is independent of the others in its batch (a
    bootstrap's replicates give the same results however they are split into batches).

    Parameters
    ----------
    lhs : ndarray
        Matrices, shape (S, m, m).
    rhs : ndarray
        Right-hand sides, shape (S, m).

    Returns
    -------
    ndarray
        The solutions, shape (S, m).
    """
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


def trust_region_finish(problem: Problem, u: np.ndarray, max_evaluations: int = FINISH_EVALUATIONS) -> Candidate:
    """Trust-region least squares on the problem's own objective from one point (``least_squares``
    with ``loss='huber', f_scale=delta`` is exactly the Huber loss): it converges where L-BFGS-B
    stalls on Huber's kink.

    Parameters
    ----------
    problem : Problem
        The law, data and loss.
    u : ndarray
        The internal start, shape (n_free,).
    max_evaluations : int
        The solve's budget of residual evaluations.

    Returns
    -------
    Candidate
        Its end, converged where the solve's own test (ftol, xtol, gtol of 1e-12) was met.
    """
    # the solve asks for the Jacobian at most points whose residuals it evaluates (9 in 10 on the
    # BNSL replicates): where the law declares one, it comes with the prediction (every law's
    # Jacobian returns its forward's values, bit for bit today) and is kept for that point
    eager = type(problem.law).jacobian is not Law.jacobian
    kept: list = []

    def residual(v):
        if eager:
            pred, jac = problem.jacobian(v)  # counted there
            kept[:] = [v.copy(), jac]
        else:
            problem.n_evaluations += 1
            pred = problem.predict(v)
        out = pred - problem.y
        return out if np.isfinite(out).all() else np.where(np.isfinite(out), out, 1e6)

    def jacobian(v):
        jac = kept[1].T if kept and np.array_equal(kept[0], v) else problem.jacobian(v)[1].T
        kept.clear()
        return finite(jac)

    lower = np.where(np.isfinite(problem.lower), problem.lower, -np.inf)
    upper = np.where(np.isfinite(problem.upper), problem.upper, np.inf)
    start = np.clip(u, lower, upper)
    inside = (start > lower) & (start < upper)
    # least_squares needs a strictly feasible start
    nudged = np.clip(start + np.sign(0.5 * (lower + upper) - start) * 1e-9 * (1 + np.abs(start)), lower, upper)
    res = least_squares(
        residual,
        np.where(inside, start, nudged),
        jac=jacobian,
        bounds=(lower, upper),
        method="trf",
        loss="huber" if problem.loss.huber else "linear",
        f_scale=problem.loss.delta,
        x_scale="jac",
        ftol=1e-12,
        xtol=1e-12,
        gtol=1e-12,
        max_nfev=max_evaluations,
    )
    v = np.clip(res.x, problem.lower, problem.upper)
    return Candidate(float(problem.objective(v)), v, bool(res.status > 0), f"trust-region finish: {res.message}")
