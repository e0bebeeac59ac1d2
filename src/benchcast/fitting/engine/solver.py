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
from benchcast.fitting.engine.rows import finite, solve_rows
from benchcast.fitting.engine.solution import Solution

MAX_ITERATIONS = 1000
WINDOW = 5  # iterations over which the forecast must have stopped moving
GRADIENT_TOLERANCE = 1e-9
FORECAST_TOLERANCE = 1e-4  # relative movement of the probe predictions over the window
SNAP = 1e-7  # relative to a parameter's range: how close to a bound counts as on it
MAX_DAMPING = 1e12  # a row whose damping passes this has no descent step left
DIAGONAL_FLOOR = 1e-10  # relative to a row's largest curvature: the least a parameter is scaled by
INITIAL_DAMPING = 1e-3
PRUNE_MARGIN = 0.1  # relative loss above a converged row of its group at which a row stops


def solve(
    problem: Problem,
    u: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    group_size: int = 1,
    groups: np.ndarray | None = None,
    max_iterations: int = MAX_ITERATIONS,
) -> Solution:
    """Levenberg-Marquardt from every row of ``u`` at once."""
    y, loss, u = problem.y, problem.loss, np.array(u, float, ndmin=2)
    S, m = u.shape
    group = np.arange(S) // group_size if groups is None else np.asarray(groups, int)
    # each row's box, target scale, loss floor and probe columns (None: all): its problem's
    lower, upper, target_scale, loss_floor, probe_mask = _per_row(problem, group, m)
    u = np.clip(u, lower, upper)
    w = np.ones((S, len(y))) if weights is None else np.asarray(weights, float)
    reach = SNAP * np.where(np.isfinite(upper - lower), upper - lower, 1.0)
    eye = np.eye(m)
    out_loss, reason, iterations = np.full(S, PENALTY), np.full(S, "iteration limit", dtype=object), np.zeros(S, int)
    best_converged = np.full(int(group.max(initial=0)) + 1, np.inf)
    count = getattr(problem, "count", None)  # a stack counts evaluations per problem
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        probe = problem.predict_probed(u)
        # the active rows' state, compacted as rows finish (indexing every array by the active
        # rows at each iteration cost more than the arithmetic where few rows are left)
        row = np.arange(S)
        state = {
            "w": w / w.sum(axis=1, keepdims=True),
            "probe": probe,
            "scale": np.maximum(np.abs(probe), target_scale),
            "damping": np.full(S, INITIAL_DAMPING),
            "movement": np.zeros((S, WINDOW)),  # relative probe movement of each of the last WINDOW iterations
            "restarted": np.full(S, np.inf),  # the iteration each row restarted its damping (never)
            "grad": np.zeros((S, m)),
            "gauss_newton": np.zeros((S, m, m)),
            "moved": np.ones(S, bool),  # rows whose derivatives must be evaluated again
            **{"lower": lower, "upper": upper, "reach": reach, "target_scale": target_scale, "loss_floor": loss_floor},
            **({} if probe_mask is None else {"probe_mask": probe_mask}),
        }
        value = _weighted_loss(loss, probe[:, : len(y)], y, state["w"])
        for iteration in range(max_iterations):
            if not row.size:
                break
            moved = state["moved"]
            if moved.any():
                state["grad"][moved], state["gauss_newton"][moved] = _derivatives(
                    problem, u[row[moved]], state["w"][moved]
                )
                if count:  # a Jacobian counts once for each problem whose rows it served
                    count(np.unique(group[row[moved]]))
                moved[:] = False
            lower, upper, reach, loss_floor = state["lower"], state["upper"], state["reach"], state["loss_floor"]
            ua, grad, gauss_newton, damping = u[row], state["grad"], state["gauss_newton"], state["damping"]
            # a parameter within a hair of a bound, pushed out, is put on it and held: clipped steps
            # towards a bound would otherwise creep there, each cut short
            at_lower, at_upper = (ua <= lower + reach) & (grad > 0), (ua >= upper - reach) & (grad < 0)
            held = at_lower | at_upper
            ua = np.where(at_lower, lower, np.where(at_upper, upper, ua))
            free_grad = np.where(held, 0.0, grad)
            # a parameter the loss barely sees (a break's place far beyond the runs) is scaled as if it
            # had a sliver of the row's largest curvature: an unscaled step there crosses the box
            diag = np.einsum("amm->am", gauss_newton)
            diag = np.maximum(diag, np.maximum(DIAGONAL_FLOOR * diag.max(axis=1, keepdims=True), 1e-300))
            flat = np.sum(free_grad**2 / diag, axis=1) <= GRADIENT_TOLERANCE * (value + loss_floor)
            still = (iteration >= WINDOW) & (state["movement"].sum(axis=1) <= FORECAST_TOLERANCE)
            # still along a path is no proof (damping adapted to a valley's floor can creep): a row
            # that first looks converged restarts from the initial damping, and must stay still a window
            restarted = state["restarted"]
            untried = flat & still & np.isinf(restarted)
            damping[untried], restarted[untried] = INITIAL_DAMPING, iteration
            converged = flat & still & (iteration - restarted >= WINDOW)
            done = converged | ~(value < PENALTY)
            if converged.any():
                np.minimum.at(best_converged, group[row[converged]], value[converged])
            beaten = ~done & (value > best_converged[group[row]] * (1 + PRUNE_MARGIN))
            if done.any() or beaten.any():
                stop = done | beaten
                ended = row[stop]
                reason[ended] = np.where(
                    converged[stop], "converged", np.where(beaten[stop], "above a converged start", "not finite")
                )
                out_loss[ended], iterations[ended] = value[stop], iteration
                keep = ~stop
                row, value, ua, held, free_grad, diag = (x[keep] for x in (row, value, ua, held, free_grad, diag))
                state = {name: x[keep] for name, x in state.items()}
                if not row.size:
                    break
                gauss_newton, damping, lower, upper = (state[k] for k in ("gauss_newton", "damping", "lower", "upper"))
            lhs = np.where(~held[:, :, None] & ~held[:, None, :], gauss_newton, 0.0)
            lhs += eye * ((damping[:, None] * diag)[:, :, None] + held[:, :, None])
            trial = np.clip(ua + finite(-solve_rows(lhs, free_grad)), lower, upper)
            # a law's own Jacobian comes with the trial's prediction: an accepted trial's derivatives need no second
            # evaluation of the law
            fused = problem.probed_with_jacobian(trial)
            trial_probe, trial_jac = (problem.predict_probed(trial), None) if fused is None else fused
            trial_value = _weighted_loss(loss, trial_probe[:, : len(y)], y, state["w"])
            count(group[row]) if count else setattr(problem, "n_evaluations", problem.n_evaluations + len(row))
            better = trial_value < value
            step_movement = np.zeros(len(row))
            accepted = trial_probe[better]
            moves = np.abs(accepted - state["probe"][better]) / state["scale"][better]
            if probe_mask is not None:  # a row's own points and probes (another problem's need not be finite)
                moves = np.where(state["probe_mask"][better], moves, 0.0)
            step_movement[better] = np.max(moves, axis=1)
            step_movement[~np.isfinite(step_movement)] = np.inf  # a probe not finite is no sign of rest
            state["movement"][:, iteration % WINDOW] = step_movement
            u[row[better]], value[better], state["probe"][better] = trial[better], trial_value[better], accepted
            state["scale"][better] = np.maximum(np.abs(accepted), state["target_scale"][better])
            if trial_jac is None:
                state["moved"] |= better
            elif better.any() and iteration + 1 < max_iterations:  # (the last iteration's would not be used)
                state["grad"][better], state["gauss_newton"][better] = _gradient_and_hessian(
                    problem, accepted[:, : len(y)], trial_jac[better], state["w"][better]
                )
                problem.n_evaluations += 1  # one Jacobian, as ``problem.jacobian`` counts it
                if count:
                    count(np.unique(group[row[better]]))
            state["damping"] = np.where(better, np.maximum(damping / 10.0, 1e-12), damping * 4.0)
            stuck = state["damping"] > MAX_DAMPING
            if stuck.any():
                reason[row[stuck]], out_loss[row[stuck]], iterations[row[stuck]] = (
                    "no descent step",
                    value[stuck],
                    iteration + 1,
                )
                keep = ~stuck
                row, value = row[keep], value[keep]
                state = {name: x[keep] for name, x in state.items()}
        out_loss[row], iterations[row] = value, max_iterations
    return Solution(u, out_loss, reason == "converged", iterations, reason)


def _per_row(problem: Problem, group: np.ndarray, m: int) -> tuple:
    """Each row's lower and upper bounds (S, m), target scale (S, 1), loss floor (S,) and probe columns (S, n_probed;
    None where every row sees all): a stack's per problem, a plain problem's for all."""
    if hasattr(problem, "probe_mask"):
        return tuple(
            x[group]
            for x in (problem.lower, problem.upper, problem.target_scale, problem.loss_floor, problem.probe_mask)
        )
    S = len(group)
    bounds = (np.broadcast_to(problem.lower, (S, m)), np.broadcast_to(problem.upper, (S, m)))
    return (*bounds, np.full((S, 1), problem.target_scale), np.full(S, problem.loss_floor), None)


def _weighted_loss(loss, pred: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each row's weighted mean loss (``PENALTY`` where not finite); a point of weight 0 is not in the row's problem (a
    stack's other points, a point a replicate did not draw) and need not be finite."""
    per_point = loss.per_point(pred - y)
    value = np.sum(w * per_point, axis=-1)
    if not (bad := ~np.isfinite(value)).any():
        return value
    value[bad] = np.sum(np.where(w[bad] > 0, w[bad] * per_point[bad], 0.0), axis=-1)  # 0 * inf is nan
    return np.where(np.isfinite(value), value, PENALTY)


def _derivatives(problem: Problem, u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of the weighted loss and the Gauss-Newton matrix of its reweighted majorant, for a batch of rows."""
    pred, jac = problem.jacobian(u)  # (R, n), (R, m, n)
    return _gradient_and_hessian(problem, pred, jac, w)


def _gradient_and_hessian(problem: Problem, pred: np.ndarray, jac: np.ndarray, w: np.ndarray) -> tuple:
    """``_derivatives`` from the prediction (R, n) and Jacobian (R, m, n) at the rows' parameters."""
    residual = pred - problem.y
    jac = finite(jac)
    grad = (jac @ (w * finite(problem.loss.derivative(residual)))[:, :, None])[:, :, 0]
    # a point of weight 0 need not have a finite residual
    gauss_newton = (jac * finite(w * problem.loss.reweighting(residual))[:, None, :]) @ jac.transpose(0, 2, 1)
    return grad, gauss_newton
