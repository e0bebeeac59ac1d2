"""What a fit's optimum says about its parameters: which sit on a bound of the search, and their
Gauss-Newton standard errors."""

from __future__ import annotations

import numpy as np

from benchcast.fitting.engine.problem import Problem
from benchcast.laws.parameters import BOUND_TOLERANCE


def parameters_on_bounds(problem: Problem, u: np.ndarray) -> list[str]:
    """Names of the free parameters of u on a finite bound of the search (within the tolerance
    :meth:`benchcast.laws.parameters.Parameter.at_bounds` uses, relative to the range)."""
    span = np.where(np.isfinite(problem.upper - problem.lower), problem.upper - problem.lower, 1.0)
    tol = BOUND_TOLERANCE * np.maximum(span, 1.0)
    hits = (np.isfinite(problem.lower) & (u <= problem.lower + tol)) | (
        np.isfinite(problem.upper) & (u >= problem.upper - tol)
    )
    return [problem.params[problem.free[j]].name for j in np.flatnonzero(hits)]


def standard_errors(problem: Problem, u: np.ndarray) -> np.ndarray:
    """Gauss-Newton standard errors in natural units (nan where not identifiable)."""
    out = np.full(len(problem.params), np.nan)
    n, p = len(problem.y), len(u)
    if n <= p:
        return out
    pred, jac = problem.jacobian(u)
    sigma2 = float(np.sum((pred - problem.y) ** 2) / (n - p))
    try:
        cov = np.linalg.pinv(jac @ jac.T) * sigma2
    except np.linalg.LinAlgError:
        return out
    se_internal = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    natural = problem.natural(u)[problem.free]
    out[problem.free] = np.where(problem.is_log, natural * se_internal, se_internal)
    return out
