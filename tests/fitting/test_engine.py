"""The engine: analytic Jacobians agree with differences, and fits reach the optimum they should."""

from __future__ import annotations

import numpy as np
import pytest

from benchcast.fitting.engine.replicates import refit_weighted
from benchcast.fitting.engine.search import minimize_law
from benchcast.laws import available_laws, get_law

RNG = np.random.default_rng(7)
N = 24
COVARIATES = {
    "flops": np.geomspace(1e18, 1e22, N),
    "params": np.geomspace(1e8, 3e9, N),
    "tokens": np.geomspace(2e9, 6e10, N)[RNG.permutation(N)],
    "k": np.tile([1.0, 2.0, 4.0, 8.0], N // 4),
    "gold": np.geomspace(0.2, 3.0, N),
    "proxy": np.geomspace(4.0, 2.5, N),
}


def _inside(law, rng) -> np.ndarray:
    """A parameter vector well inside the law's range (values where every term matters)."""
    theta = []
    for p in law.parameters:
        init = p.init
        if p.log:
            theta.append(init * np.exp(rng.uniform(-0.3, 0.3)))
        else:
            lo = p.lower if np.isfinite(p.lower) else init - 1.0
            hi = p.upper if np.isfinite(p.upper) else init + 1.0
            theta.append(np.clip(init + rng.uniform(-0.05, 0.05) * (hi - lo), lo + 1e-3, hi - 1e-3))
    return np.array(theta)


LAWS_WITH_JACOBIANS = [
    name for name in available_laws() if get_law(name).jacobian(_inside(get_law(name), RNG), COVARIATES) is not None
]


def test_every_core_law_declares_a_jacobian():
    for name in (
        "power",
        "power_floor",
        "nd",
        "nd_floor",
        "passk_compute",
        "two_stage_linear",
        "two_stage_logistic",
        "compute",
        "params_tokens",
        "gold",
        "bnsl",
        "bnsl_monotone",
    ):
        assert name in LAWS_WITH_JACOBIANS


@pytest.mark.parametrize("name", LAWS_WITH_JACOBIANS)
def test_analytic_jacobian_matches_central_differences(name):
    law = get_law(name)
    rng = np.random.default_rng(3)
    for _ in range(3):
        theta = _inside(law, rng)
        value, jac = law.jacobian(theta, COVARIATES)
        np.testing.assert_allclose(value, law.forward(theta, COVARIATES), rtol=1e-12, atol=1e-12)
        assert jac.shape == (law.n_params, N)
        for j in range(law.n_params):
            step = 1e-6 * max(abs(theta[j]), 1e-3)
            up, down = theta.copy(), theta.copy()
            up[j] += step
            down[j] -= step
            numeric = (law.forward(up, COVARIATES) - law.forward(down, COVARIATES)) / (2 * step)
            scale = max(np.abs(numeric).max(), 1e-6)
            # differences carry rounding noise of about eps |f| / step: the tolerance allows it
            np.testing.assert_allclose(
                jac[j], numeric, rtol=1e-4, atol=1e-5 * scale + 1e-8, err_msg=f"{name}: d/d{law.param_names[j]}"
            )


@pytest.mark.parametrize("name", LAWS_WITH_JACOBIANS)
def test_jacobian_is_vectorised_over_parameter_batches(name):
    law = get_law(name)
    rng = np.random.default_rng(5)
    batch = np.stack([_inside(law, rng) for _ in range(4)])
    value, jac = law.jacobian(batch, COVARIATES)
    assert value.shape == (4, N) and jac.shape == (4, law.n_params, N)
    one_value, one_jac = law.jacobian(batch[2], COVARIATES)
    np.testing.assert_allclose(jac[2], one_jac, rtol=1e-13)
    np.testing.assert_allclose(value[2], one_value, rtol=1e-13)


def test_analytic_and_numerical_jacobians_find_the_same_optimum(monkeypatch):
    """nd on synthetic data: the fast path (analytic Jacobian) reaches the differences' optimum."""
    law = get_law("nd")
    truth = np.array([np.exp(9.0), 0.45, np.exp(11.0), 0.5])
    X = {"params": COVARIATES["params"], "tokens": COVARIATES["tokens"]}
    y = law.forward(truth, X) + np.random.default_rng(1).normal(0, 0.01, N)
    fast = minimize_law(law, X, y)
    monkeypatch.setattr(type(law), "jacobian", lambda self, theta, X: None)
    slow = minimize_law(law, X, y)
    assert fast.converged
    assert fast.loss <= slow.loss * (1 + 1e-6)


@pytest.mark.parametrize("name", ["power", "passk_compute", "two_stage_linear"])
def test_weighted_closed_form_equals_closed_form_of_each_resample(name):
    law = get_law(name)
    rng = np.random.default_rng(11)
    X = {c: COVARIATES[c] for c in set(law.covariates) | set(law.fit_covariates)}
    y = law.forward(_inside(law, rng), X) + rng.normal(0, 0.05, N)
    counts = rng.multinomial(N, np.full(N, 1 / N), size=5).astype(float)
    batch = law.closed_form_weighted(X, y, counts)
    for weights, theta in zip(counts, batch, strict=True):
        index = np.repeat(np.arange(N), weights.astype(int))
        one = law.closed_form({c: v[index] for c, v in X.items()}, y[index])
        np.testing.assert_allclose(theta, one, rtol=1e-9)


def test_sharpened_break_refinement_reaches_the_kink_minimum(apple, monkeypatch):
    """BNSL's refinement starts (its break as sharp as its box allows in each wide gap between runs)
    reach a minimum on DCLM piqa that the solve from the screened starts stops short of: without
    them the fit ends over 1 % higher."""
    import benchcast as bc
    from benchcast.laws.bnsl import _BNSL

    def fit():
        return bc.fit(apple, "bnsl_monotone", "piqa", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)

    refined = fit()
    monkeypatch.setattr(_BNSL, "refinement_starts", lambda self, theta, X: None)
    plain = fit()
    assert refined.diagnostics.loss < plain.diagnostics.loss * (1 - 0.01)
    sharpest = _BNSL.search_box(refined.law_object, {"flops": refined.points["flops"].to_numpy()})["f1"][0]
    assert refined.params["f1"] == pytest.approx(sharpest, rel=1e-6)  # as sharp as the runs show
    assert refined.bounds.flags["f1"] == "constraint active"
    assert refined.diagnostics.message.startswith("Levenberg-Marquardt from the law's refinement starts")


def test_a_singular_row_of_a_batched_solve_does_not_change_the_others():
    """Batched Levenberg-Marquardt solves each row's damped system; a row whose system is singular
    takes the diagonal step alone, and every other row keeps its exact solution (a bootstrap's
    replicates must not depend on which others share their batch)."""
    from benchcast.fitting.engine.solver import solve_rows

    rng = np.random.default_rng(0)
    lhs = rng.normal(size=(4, 3, 3)) + 3 * np.eye(3)
    lhs[2] = [[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 5.0]]  # singular (rank 2)
    rhs = rng.normal(size=(4, 3))
    out = solve_rows(lhs, rhs)
    for row in (0, 1, 3):
        assert np.array_equal(out[row], np.linalg.solve(lhs[row], rhs[row]))
    assert np.array_equal(out[2], rhs[2] / np.array([1.0, 4.0, 5.0]))


def test_bnsl_replicates_do_not_depend_on_their_batch(arc_easy_bnsl):
    """The bootstrap splits replicates into chunks as it likes (four in one process, sixteen over
    workers): a replicate refitted in one batch of nine or in a batch of three ends bit-identically."""
    from benchcast.forecasting.bootstrap import _Data, resample_counts

    result = arc_easy_bnsl
    counts = resample_counts(result, 3, range(9))
    data = _Data.of(result)
    whole = refit_weighted(data.law, data.X, data.y, counts, result.theta)
    parts = [refit_weighted(data.law, data.X, data.y, counts[i : i + 3], result.theta) for i in (0, 3, 6)]
    for together, apart in zip(whole, (np.concatenate(p) for p in zip(*parts, strict=True)), strict=True):
        assert np.array_equal(together, apart)


def test_box_least_squares_keeps_the_exhaustive_optimum_on_nearly_collinear_rows():
    """The screen's projection skips the bounded active sets of a row whose unconstrained solution is
    feasible; on a nearly singular row (a basis vector equal to another to 1e-9) the solve's ridge leaves
    that solution above a bounded one, so such rows still try every set: each row's sum of squares is the
    lowest of all nine active sets (each solved here by lstsq)."""
    import itertools

    from benchcast.fitting.engine.projection import box_least_squares

    rng = np.random.default_rng(0)
    n_rows, n = 400, 5
    basis = np.stack([np.ones((n_rows, n)), 1 + 1e-9 * rng.normal(size=(n_rows, n))], axis=1)
    target = rng.uniform(0.2, 0.8, size=(n_rows, n))
    lower, upper = np.array([-10.0, -10.0]), np.array([10.0, 10.0])
    found = box_least_squares(basis, target, lower, upper, np.array([0.8, -0.5]))

    def sse(x, row):
        return float(np.sum((x @ basis[row] - target[row]) ** 2))

    for row in range(n_rows):
        best = np.inf
        for pattern in itertools.product((None, "lower", "upper"), repeat=2):
            x = np.array(
                [0.0 if p is None else (lower[j] if p == "lower" else upper[j]) for j, p in enumerate(pattern)]
            )
            free = [j for j, p in enumerate(pattern) if p is None]
            if free:
                rest = target[row] - x @ basis[row]
                x[free] = np.linalg.lstsq(basis[row][free].T, rest, rcond=None)[0]
            if np.all((x >= lower) & (x <= upper)):
                best = min(best, sse(x, row))
        assert sse(found[row], row) <= best * (1 + 1e-13), row


@pytest.mark.parametrize("name", ["power", "power_floor", "bnsl"])
def test_a_solve_with_no_more_points_than_free_parameters_is_refused(name):
    """No more points than free parameters (a closed-form law on an empty subset came back 'converged', theta [1, 0],
    loss 1e10): every law, alone or in a batch, refuses, naming the law and the count; one point more is fitted."""
    from benchcast.errors import InsufficientDataError
    from benchcast.fitting.engine.batch import minimize_subsets

    law = get_law(name)
    free = law.n_params - law.n_presolved
    X = {"flops": COVARIATES["flops"][:free]}
    y = 0.3 + 0.01 * np.log(X["flops"] / 1e18)
    with pytest.raises(InsufficientDataError, match=rf"{name}: {free} point\(s\) cannot determine {free}"):
        minimize_law(law, X, y)
    more = {"flops": COVARIATES["flops"][: free + 1]}
    assert np.all(np.isfinite(minimize_law(law, more, 0.3 + 0.01 * np.log(more["flops"] / 1e18)).theta))
    full = {"flops": COVARIATES["flops"]}
    ok, short = minimize_subsets(
        law, [full, X], [0.3 + 0.01 * np.log(full["flops"] / 1e18), y], [np.arange(N), np.arange(free)]
    )
    assert np.all(np.isfinite(ok.theta)) and isinstance(short, InsufficientDataError)
