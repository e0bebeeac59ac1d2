"""The engine's one solver: box-constrained Levenberg-Marquardt over a batch of problems at once.

Every row of a batch is its own problem: a start of a search, a bootstrap replicate (the data
reweighted by how often each run was drawn) or both. Rows never interact: a row's path is the
same whatever else is in its batch.

The step solves ``(H + damping * D) step = -gradient`` on the free parameters, where H is the
Gauss-Newton matrix of the loss's iteratively reweighted quadratic majorant (a Huber point in its
linear part weighs ``delta/|r|``) and D its diagonal. (The loss's own Gauss-Newton matrix, which
gives a linear-part point no weight, took 25-40 % more time on the twelve DCLM BNSL fits and left
more bootstrap replicates unconverged.) Bounds are an active set: a parameter on a bound whose
gradient points out of the box is held there.

A row has converged when both hold: its projected gradient is small (the Gauss-Newton decrement
``sum g_j^2 / D_j`` over the free parameters is below ``GRADIENT_TOLERANCE`` times the loss) and
its predictions at the probe points (the fitted runs and the runs a forecast extrapolates to) moved
by less than ``FORECAST_TOLERANCE`` (relative) over the last ``WINDOW`` iterations, since a restart
from the initial damping (damping adapted along a valley's floor can keep a row still while a
fresh step still descends).
"""

from __future__ import annotations

import numpy as np

from benchcast.fitting.engine.problem import PENALTY, Problem
from benchcast.fitting.engine.solution import Solution

MAX_ITERATIONS = 1000
WINDOW = 5  # iterations over which the forecast must have stopped moving
GRADIENT_TOLERANCE = 1e-9
FORECAST_TOLERANCE = 1e-4  # relative movement of the probe predictions over the window
SNAP = 1e-7  # relative to a parameter's range: how close to a bound counts as on it
MAX_DAMPING = 1e12  # a row whose damping passes this has no descent step left
INITIAL_DAMPING = 1e-3
PRUNE_MARGIN = 0.1  # relative loss above a converged row of its group at which a row stops


def solve(
    problem: Problem,
    u: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    group_size: int = 1,
    max_iterations: int = MAX_ITERATIONS,
) -> Solution:
    """Levenberg-Marquardt from every row of ``u`` at once.

    Parameters
    ----------
    problem : Problem
        The law, data and loss.
    u : ndarray
        Internal starts, shape (S, n_free).
    weights : ndarray, optional
        Per-row point weights (S, n_points) (None: all 1); the loss is the weighted mean.
    group_size : int
        Rows form consecutive groups of this size, the starts of one problem (1: each row its own).
        A row more than ``PRUNE_MARGIN`` above a converged row of its group stops: a local solve
        that far above another start's optimum is in a basin the search has already beaten.
    max_iterations : int
        Iterations at most.

    Returns
    -------
    Solution
        Each row's end.
    """
    lower, upper, y, loss = problem.lower, problem.upper, problem.y, problem.loss
    u = np.clip(np.array(u, float, ndmin=2), lower, upper)
    S, m = u.shape
    w = np.ones((S, len(y))) if weights is None else np.asarray(weights, float)
    w = w / w.sum(axis=1, keepdims=True)
    damping = np.full(S, INITIAL_DAMPING)
    reason = np.full(S, "iteration limit", dtype=object)
    iterations = np.zeros(S, int)
    active = np.arange(S)
    reach = SNAP * np.where(np.isfinite(upper - lower), upper - lower, 1.0)
    grad_of, gn_of, diag_of = np.zeros((S, m)), np.zeros((S, m, m)), np.zeros((S, m))
    probe = problem.predict_probed(u)
    scale = np.maximum(np.abs(probe), problem.target_scale)
    movement = np.zeros((S, WINDOW))  # relative probe movement of each of the last WINDOW iterations
    restarted = np.full(S, np.inf)  # the iteration each row last restarted its damping (never)
    moved = np.ones(S, bool)  # rows whose derivatives must be evaluated again
    group = np.arange(S) // group_size
    best_converged = np.full(S // group_size + 1, np.inf)

    def weighted_loss(pred, rows):
        value = np.sum(w[rows] * loss.per_point(pred - y), axis=-1)
        return np.where(np.isfinite(value), value, PENALTY)

    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        value = weighted_loss(probe[:, : len(y)], active)
        for iteration in range(max_iterations):
            if not active.size:
                break
            rows = active[moved[active]]
            if rows.size:
                grad_of[rows], gn_of[rows], diag_of[rows] = _derivatives(problem, u[rows], w[rows])
                moved[rows] = False
            ua, grad = u[active], grad_of[active]
            # a parameter within a hair of a bound, pushed out, is put on it and held: clipped steps
            # towards a bound would otherwise creep there, each cut short
            at_lower, at_upper = (ua <= lower + reach) & (grad > 0), (ua >= upper - reach) & (grad < 0)
            held = at_lower | at_upper
            ua = np.where(at_lower, lower, np.where(at_upper, upper, ua))
            free_grad = np.where(held, 0.0, grad)
            diag = np.maximum(diag_of[active], 1e-300)
            decrement = np.sum(free_grad**2 / diag, axis=1)
            flat = decrement <= GRADIENT_TOLERANCE * (value[active] + problem.loss_floor)
            still = (iteration >= WINDOW) & (movement[active].sum(axis=1) <= FORECAST_TOLERANCE)
            # still along a path is no proof (damping adapted to a valley's floor can creep): a row
            # that first looks converged restarts from the initial damping, and must stay still a window
            tried = iteration - restarted[active] >= WINDOW
            untried = flat & still & np.isinf(restarted[active])
            damping[active[untried]], restarted[active[untried]] = INITIAL_DAMPING, iteration
            done = (flat & still & tried) | ~np.isfinite(value[active]) | (value[active] >= PENALTY)
            reason[active[done]] = np.where(flat[done] & still[done], "converged", "not finite")
            ended = active[done & flat & still]
            np.minimum.at(best_converged, group[ended], value[ended])
            beaten = value[active] > best_converged[group[active]] * (1 + PRUNE_MARGIN)
            reason[active[beaten & ~done]] = "above a converged start"
            done |= beaten
            iterations[active] = iteration
            active, ua, held, free_grad, diag = (x[~done] for x in (active, ua, held, free_grad, diag))
            if not active.size:
                break
            mask = ~held[:, :, None] & ~held[:, None, :]
            lhs = np.where(mask, gn_of[active], 0.0)
            lhs += np.eye(m) * ((damping[active, None] * diag)[:, :, None] + held[:, :, None])
            trial = np.clip(ua + finite(-solve_rows(lhs, free_grad)), lower, upper)
            trial_probe = problem.predict_probed(trial)
            trial_value = weighted_loss(trial_probe[:, : len(y)], active)
            problem.n_evaluations += len(active)
            better = trial_value < value[active]
            gone = active[better]
            new_probe = trial_probe[better]
            step_movement = np.zeros(len(active))
            step_movement[better] = np.max(np.abs(new_probe - probe[gone]) / scale[gone], axis=1)
            movement[active, iteration % WINDOW] = step_movement
            u[gone], value[gone], probe[gone], moved[gone] = trial[better], trial_value[better], new_probe, True
            damping[active] = np.where(better, np.maximum(damping[active] / 10.0, 1e-12), damping[active] * 4.0)
            stuck = damping[active] > MAX_DAMPING
            reason[active[stuck]] = "no descent step"
            active = active[~stuck]
    return Solution(u, value, reason == "converged", iterations, reason)


def _derivatives(problem: Problem, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gradient of the weighted loss, the Gauss-Newton matrix of its reweighted majorant and
    that matrix's diagonal, for a batch of rows."""
    pred, jac = problem.jacobian(u)  # (R, n), (R, m, n)
    residual = pred - problem.y
    jac = finite(jac)
    grad = (jac @ (w * finite(problem.loss.derivative(residual)))[:, :, None])[:, :, 0]
    gauss_newton = (jac * (w * problem.loss.reweighting(residual))[:, None, :]) @ jac.transpose(0, 2, 1)
    return grad, gauss_newton, np.einsum("amm->am", gauss_newton)


def solve_rows(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``solve(lhs[a], rhs[a])`` for each row a; a singular row alone takes the diagonal step
    ``rhs / diag(lhs)``, so that each row's path is independent of the others in its batch.

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


def finite(values: np.ndarray) -> np.ndarray:
    """``values`` with nan and infinities replaced by 0 (itself where all are finite, the common case).

    Parameters
    ----------
    values : ndarray
        Any array.

    Returns
    -------
    ndarray
        ``values`` or a finite copy.
    """
    return values if np.isfinite(values).all() else np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
