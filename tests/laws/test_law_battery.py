"""One battery over every registered law, run from the example each law declares (``example_params``,
``example_covariates`` and the settings beside them on :class:`benchcast.laws.Law`, as scipy.stats'
``distcont`` list): recovery through the public fit, the exact Jacobian against central
differences, the artifact round-trip, and planning as the inverse of the forecast. A new law that
declares no example fails here, by name."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from conftest import law_table

import benchcast as bc
from benchcast import Uncertainty
from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult
from benchcast.forecasting.planning import plan
from benchcast.laws import available_laws, get_law

LAWS = available_laws()
N_ALONE = 24  # runs of an example with one covariate
N_CROSSED = 8  # values of each covariate of an example that crosses several
N_K = 7  # values of k across its range (log-spaced integers)
BEYOND = 10**0.5  # predictions are checked half a decade past each end of the example's ranges
# noiseless examples are fitted back to ~1e-13: the margins leave room for other optimisers' stops
PARAM_RTOL = 1e-6  # identified parameters (those not in example_unidentified)
SCORE_ATOL = 1e-6  # predictions within and beyond the data (all that is checked of unidentified ones)
RMSE_MAX = 1e-6  # of the fit to the example's own scores
JACOBIAN_RTOL = 1e-6  # of each parameter's row, against central differences (which agree to ~1e-9)
PLAN_RTOL = 1e-6
PLAN_TPR = 20.0  # the tokens-per-parameter ratio a law in N and D is planned at
PROXY = "proxy:loss"  # the benchmark:metric holding a two-stage law's proxy loss


@dataclass(frozen=True)
class Example:
    """A law's declared example, laid out as arrays."""

    theta: np.ndarray
    X: dict[str, np.ndarray]  # the example's runs: every covariate the law predicts from
    beyond: dict[str, np.ndarray]  # the same grid widened past the data
    k: int | None  # the k planning uses (a law across k), or the fitted k (a per-k law)


def _axis(name: str, low: float, high: float, count: int, widen: float = 1.0) -> np.ndarray:
    if name == "k":  # the number of attempts is an integer and is not extrapolated here
        return np.unique(np.round(np.geomspace(low, high, N_K)))
    return np.geomspace(low / widen, high * widen, count)


def _grid(ranges: dict[str, tuple[float, float]], widen: float = 1.0) -> dict[str, np.ndarray]:
    count = N_ALONE if len(ranges) == 1 else N_CROSSED
    axes = [_axis(name, low, high, count, widen) for name, (low, high) in ranges.items()]
    mesh = np.meshgrid(*axes, indexing="ij")
    return {name: values.ravel() for name, values in zip(ranges, mesh, strict=True)}


def example(name: str) -> Example:
    """The example ``name`` declares, checked for completeness."""
    law = get_law(name)
    if law.example_params is None or law.example_covariates is None:
        pytest.fail(
            f"law {name!r} declares no example: set example_params (every parameter) and example_covariates "
            "((low, high) of each covariate) on its class, as the other laws in benchcast/laws do."
        )
    assert sorted(law.example_params) == sorted(law.param_names), (
        f"law {name!r}: example_params must name exactly its parameters {law.param_names}"
    )
    assert set(law.example_covariates) == set(law.covariates), (
        f"law {name!r}: example_covariates must give a range for each of its covariates {law.covariates}"
    )
    assert all(0 < low < high for low, high in law.example_covariates.values()), name
    assert set(law.example_unidentified) <= set(law.param_names), name
    assert (law.example_k is not None) == (law.per_k and law.default_metric == "pass@k"), (
        f"law {name!r}: a per-k pass@k law declares the k it is fitted at (example_k), no other law does"
    )
    theta = np.array([law.example_params[p] for p in law.param_names], float)
    assert not law.check_params(theta), law.check_params(theta)
    X = _grid(law.example_covariates)
    beyond = _grid(law.example_covariates, BEYOND)
    k = law.example_k if "k" not in X else int(np.median(np.unique(X["k"])))
    return Example(theta, X, beyond, k)


def fit_covariates(name: str, ex: Example) -> dict[str, np.ndarray]:
    """The example's covariates as a fit sees them: a proxy loss is the law's own stage 1."""
    law = get_law(name)
    X = dict(ex.X)
    if "proxy" in law.fit_covariates:
        assert hasattr(law, "proxy_loss"), f"law {name!r} is fitted on a proxy: it must say how (proxy_loss)"
        X["proxy"] = np.asarray(law.proxy_loss(ex.theta, ex.X), float)
    return X


def example_table(name: str, ex: Example) -> pd.DataFrame:
    """The example's noiseless scores as a tidy table (plus a proxy benchmark where the law needs one)."""
    law = get_law(name)
    covariates = dict(ex.X)
    n = len(next(iter(covariates.values())))
    if law.example_k is not None:
        covariates["k"] = np.full(n, law.example_k)
    if not {"flops", "params", "tokens"} & set(covariates):  # a law of G alone: runs still have a compute
        covariates["flops"] = np.geomspace(1e18, 1e21, n)
    table = law_table(name, ex.theta, covariates, q_rand=law.example_q_rand, metric=law.default_metric or "acc")
    if "proxy" in law.fit_covariates:
        runs = table[table["benchmark"] == "synthetic"]
        proxy = law.proxy_loss(ex.theta, {c: runs[c].to_numpy(float) for c in law.covariates})
        benchmark, metric = PROXY.split(":")
        rows = runs.assign(benchmark=benchmark, metric=metric, value=proxy)
        table = bc.validate(pd.concat([table, rows], ignore_index=True), "synthetic")
    return table


@functools.cache
def fitted(name: str) -> FitResult:
    """The example fitted back through the public fit (once per law and test session)."""
    law = get_law(name)
    ex = example(name)
    return bc.fit(
        example_table(name, ex),
        name,
        "synthetic",
        law.default_metric or "acc",
        law.example_k,
        q_rand=law.example_q_rand,
        proxy=PROXY if "proxy" in law.fit_covariates else None,
    )


@pytest.mark.parametrize("name", LAWS)
def test_recovers_example(name):
    law, ex, result = get_law(name), example(name), fitted(name)
    assert result.diagnostics.rmse < RMSE_MAX, result.report()
    for p, true in zip(law.param_names, ex.theta, strict=True):
        if p not in law.example_unidentified:
            assert result.params[p] == pytest.approx(true, rel=PARAM_RTOL), result.report()
    for X in (ex.X, ex.beyond):
        truth = law.predict_score(ex.theta, X, law.example_q_rand)
        assert np.max(np.abs(result.predict(**X) - truth)) < SCORE_ATOL, result.report()


def central_differences(law, theta: np.ndarray, X: dict) -> np.ndarray:
    """d forward / d theta by central differences, shape (n_params, n)."""
    rows = []
    for i, value in enumerate(theta):
        step = 1e-6 * max(abs(value), 1e-6)
        up, down = theta.copy(), theta.copy()
        up[i], down[i] = value + step, value - step
        rows.append((law.forward(up, X) - law.forward(down, X)) / (up[i] - down[i]))
    return np.array(rows)


@pytest.mark.parametrize("name", LAWS)
def test_jacobian_matches_central_differences(name):
    law, ex = get_law(name), example(name)
    if law.jacobian(ex.theta, ex.X) is None:
        pytest.skip(f"{name} declares no Jacobian (the engine takes central differences)")
    # prediction covariates, and those of a fit (a two-stage fit reads the observed proxy)
    for X in (ex.X, fit_covariates(name, ex)):
        value, jac = law.jacobian(ex.theta, X)
        np.testing.assert_allclose(value, law.forward(ex.theta, X), rtol=1e-12, atol=1e-12)
        numeric = central_differences(law, ex.theta, X)
        assert jac.shape == numeric.shape
        for p, exact_row, numeric_row in zip(law.param_names, jac, numeric, strict=True):
            scale = np.max(np.abs(numeric_row))
            error = np.max(np.abs(exact_row - numeric_row))
            assert error <= JACOBIAN_RTOL * scale + 1e-12, f"{name}: d/d{p} off by {error:.3g} (scale {scale:.3g})"
        # a batch of parameter vectors (the engine's replicates) gives each vector's own Jacobian
        batch = np.stack([ex.theta, ex.theta * 1.01])
        values, jacs = law.jacobian(batch, X)
        for row in range(2):
            single_value, single_jac = law.jacobian(batch[row], X)
            np.testing.assert_allclose(values[row], single_value, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(jacs[row], single_jac, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", LAWS)
def test_artifact_round_trip(name, tmp_path):
    ex, result = example(name), fitted(name)
    loaded = FitResult.load(result.save(tmp_path / "fit.json"))
    assert loaded.params == result.params
    assert loaded.spec == result.spec
    for X in (ex.X, ex.beyond):
        # bit for bit: the artifact stores every parameter exactly (JSON's shortest repr round-trips a float)
        assert np.array_equal(loaded.predict(**X), result.predict(**X))


def planning_tpr(result: FitResult, flops: float, k: int | None) -> float | None | str:
    """The tpr a run of compute ``flops`` needs (None: the law places it itself), or 'none' where
    the law is not a function of compute."""
    for tpr in (None, PLAN_TPR):
        try:
            result.fitted.covariates_at(flops, tpr=tpr, k=k)
            return tpr
        except BenchcastError:
            continue
    return "none"


@pytest.mark.parametrize("name", LAWS)
def test_plan_inverts_forecast(name):
    law, ex, result = get_law(name), example(name), fitted(name)
    flops = BEYOND * result.diagnostics.flops_max  # a forecast past the data
    k = ex.k if "k" in law.covariates else None
    tpr = planning_tpr(result, flops, k)
    if tpr == "none":  # a law of G alone: planning compute is refused in words
        with pytest.raises(BenchcastError):
            plan(result, 0.5, uncertainty=Uncertainty(n_boot=0, levels=0.9))
        return
    target = float(result.predict(**result.fitted.covariates_at(flops, tpr=tpr, k=k))[0])
    out = plan(result, target, k=k, forecast_tpr=tpr, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert out.reachable and out.solves_for == "flops"
    assert out.needed == pytest.approx(flops, rel=PLAN_RTOL)
    if k is not None:  # a law across k also plans the k that reaches a score at a given compute
        out = plan(result, target, flops=flops, uncertainty=Uncertainty(n_boot=0, levels=0.9))
        assert out.solves_for == "k" and out.needed == k
