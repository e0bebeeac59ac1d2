"""The batched Levenberg-Marquardt solve: what 'converged' means, and its ends against scipy's
trust-region solve (the reference, kept here only) on the same problems."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import least_squares

from benchcast.fitting.engine.problem import Problem
from benchcast.fitting.engine.replicates import refit_weighted
from benchcast.fitting.engine.solver import (
    DIAGONAL_FLOOR,
    FORECAST_TOLERANCE,
    GRADIENT_TOLERANCE,
    WINDOW,
    _derivatives,
    solve,
)
from benchcast.laws import get_law


def _bnsl_problem(fit):
    """The engine's problem of a bnsl_monotone fit (the session's ``arc_easy_bnsl_monotone``)."""
    X = {"flops": fit.points["flops"].to_numpy(float)}
    y = fit.points["value"].to_numpy(float)
    return fit, Problem(fit.law_object, X, y, "huber", fit.spec.huber_delta)


def _reference(problem: Problem, u: np.ndarray, weights: np.ndarray) -> float:
    """scipy's trust-region solve of one replicate (its points repeated by their weights) from ``u``."""
    index = np.repeat(np.arange(len(problem.y)), weights.astype(int))
    one = Problem(
        problem.law, {c: x[index] for c, x in problem.X.items()}, problem.y[index], "huber", problem.loss.delta
    )
    res = least_squares(
        lambda v: one.predict(v) - one.y,
        np.clip(u, one.lower + 1e-9, one.upper - 1e-9),
        bounds=(one.lower, one.upper),
        loss="huber",
        f_scale=one.loss.delta,
        x_scale="jac",
        ftol=1e-12,
        xtol=1e-12,
        gtol=1e-12,
        max_nfev=3000,
    )
    return float(one.objective(res.x))


def test_converged_rows_have_a_small_projected_gradient_and_a_still_forecast(arc_easy_bnsl_monotone):
    """A row reported converged meets both tests at its end: the Gauss-Newton decrement of its
    projected gradient below GRADIENT_TOLERANCE times its loss, and its probe predictions moving by
    under FORECAST_TOLERANCE over a further WINDOW iterations run on from there (fresh damping); a
    row stopped after 3 WINDOWs from a far start has not converged."""
    fit, problem = _bnsl_problem(arc_easy_bnsl_monotone)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(len(problem.y), np.full(len(problem.y), 1 / len(problem.y)), size=40).astype(float)
    warm = np.repeat(problem.inside(fit.theta), 40, axis=0)
    ended = solve(problem, warm, counts)
    done = ended.converged
    assert done.mean() >= 0.9
    assert set(ended.reason[done]) == {"converged"}
    weights = counts[done] / counts[done].sum(axis=1, keepdims=True)
    grad, gauss_newton = _derivatives(problem, ended.u[done], weights)
    u = ended.u[done]
    held = ((u <= problem.lower + 1e-6) & (grad > 0)) | ((u >= problem.upper - 1e-6) & (grad < 0))
    diag = np.einsum("amm->am", gauss_newton)
    diag = np.maximum(diag, DIAGONAL_FLOOR * diag.max(axis=1, keepdims=True))
    decrement = np.sum(np.where(held, 0.0, grad) ** 2 / diag, axis=1)
    assert np.all(decrement <= GRADIENT_TOLERANCE * (ended.loss[done] + problem.loss_floor))
    again = solve(problem, u, counts[done], max_iterations=WINDOW)
    moved = np.abs(problem.predict_probed(again.u) - problem.predict_probed(u))
    scale = np.maximum(np.abs(problem.predict_probed(u)), problem.target_scale)
    assert np.max(moved / scale) <= FORECAST_TOLERANCE
    far = problem.inside(fit.theta * np.array([0.9, 1.2, 1.5, 0.7, 3.0, 2.0]))
    early = solve(problem, far, counts[:1], max_iterations=3 * WINDOW)
    assert not early.converged[0] and early.reason[0] == "iteration limit" and early.iterations[0] == 3 * WINDOW


def test_a_row_ends_the_same_whatever_else_is_in_its_batch(arc_easy_bnsl_monotone):
    """Twelve replicate rows solved together, in two groups of six starts, and each alone: the
    same end to the bit (pruning acts only within a group: alone, a row has no group to lose to,
    so the rows compared are those no group member pruned)."""
    fit, problem = _bnsl_problem(arc_easy_bnsl_monotone)
    rng = np.random.default_rng(2)
    counts = rng.multinomial(len(problem.y), np.full(len(problem.y), 1 / len(problem.y)), size=12).astype(float)
    starts = problem.inside(fit.theta * rng.uniform(0.8, 1.25, size=(12, 6)))
    together = solve(problem, starts, counts, group_size=6)
    for row in np.flatnonzero(together.reason != "above a converged start"):
        alone = solve(problem, starts[row : row + 1], counts[row : row + 1])
        assert np.array_equal(alone.u[0], together.u[row]) and alone.loss[0] == together.loss[row]
        assert alone.reason[0] == together.reason[row] and alone.iterations[0] == together.iterations[row]


def test_replicate_ends_are_no_higher_than_scipys_trust_region_solve(arc_easy_bnsl_monotone):
    """Twenty DCLM arc_easy replicates of bnsl_monotone: the batched refit (warm start and the best
    pool start) ends where scipy's trust-region solve from the full-data optimum does on each
    resample (to 1e-6 relative) on 18, 0.5 % below on one and 1e-4 above on one; asserted: at least
    18 at or below, none above by 1e-3 (the losses, not the solver's convergence flags)."""
    fit, problem = _bnsl_problem(arc_easy_bnsl_monotone)
    rng = np.random.default_rng(1)
    counts = rng.multinomial(len(problem.y), np.full(len(problem.y), 1 / len(problem.y)), size=20).astype(float)
    _, losses, _ = refit_weighted(fit.law_object, problem.X, problem.y, counts, fit.theta)
    warm = problem.inside(fit.theta)[0]
    reference = np.array([_reference(problem, warm, row) for row in counts])
    excess = (losses - reference) / reference
    assert np.sum(excess <= 1e-6) >= 18 and excess.max() <= 1e-3, np.sort(excess)


@pytest.mark.parametrize("name", ["bnsl", "bnsl_monotone"])
def test_bnsl_break_is_bounded_by_the_runs(name):
    """The break is searched within two decades of the fitted compute and with a width between
    a quarter of the runs' median log-spacing and their log-range (doubling ladder: spacing log 2)."""
    law = get_law(name)
    flops = 1e18 * 2.0 ** np.arange(11)
    box = law.search_box({"flops": flops})
    assert box["d1"] == pytest.approx((1e16, flops[-1] * 100))
    assert box["f1"] == pytest.approx((np.log(2) / 4, 10 * np.log(2)))
