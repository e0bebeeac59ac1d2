"""The one fitting engine behind every law: :func:`minimize_law`, a fit as named stages.

1. closed form where the law has one (least-squares laws);
2. otherwise the parameters the law presolves are held fixed, and starts are ranked: the law's own
   grid plus, with ``law.search.n_screen``, a quasi-random screen, linear parameters projected
   (:mod:`~benchcast.fitting.engine.starts`, :mod:`~benchcast.fitting.engine.projection`);
3. the best ``law.search.n_starts`` are solved together by the batched Levenberg-Marquardt
   (:mod:`~benchcast.fitting.engine.solver`);
4. the law's refinement starts around the best end (minima a local solve cannot reach from it)
   are solved the same way, and the lower end is the fit.

Bootstrap replicates are refitted by :mod:`~benchcast.fitting.engine.replicates`; the problem, its loss
and candidate points are :mod:`~benchcast.fitting.engine.problem`. BLAS runs single-threaded inside a
fit. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from benchcast.errors import InsufficientDataError
from benchcast.fitting.engine.findings import parameters_on_bounds, standard_errors
from benchcast.fitting.engine.loss import SquaredLoss, make_loss
from benchcast.fitting.engine.problem import PENALTY, Problem
from benchcast.fitting.engine.solver import Solution, solve
from benchcast.fitting.engine.starts import ranked_starts, refinement_starts
from benchcast.laws.base import Law
from benchcast.laws.linalg import distinct_points
from benchcast.utils.memo import law_key, memoized


@dataclass(frozen=True)
class Candidate:
    """A point a search stage ended at."""

    loss: float
    u: np.ndarray
    converged: bool
    message: str


def lowest(candidates) -> Candidate:
    """The lowest-loss candidate; a converged one on a tie (the first of equals otherwise)."""
    return min(candidates, key=lambda c: (c.loss, not c.converged))


@dataclass
class Optimum:
    """What the engine found, in natural parameter units."""

    theta: np.ndarray
    loss: float
    converged: bool
    message: str
    n_starts: int
    n_evaluations: int
    at_bound: list[str] = field(default_factory=list)
    stderr: np.ndarray | None = None


_BLAS = None


def single_threaded_blas():
    """A context in which BLAS runs on one thread."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


@memoized(lambda law, X, y, **settings: law_key(law, X, np.asarray(y, float), settings))
def minimize_law(
    law: Law,
    X: dict[str, np.ndarray],
    y: np.ndarray,
    *,
    loss: str | None = None,
    huber_delta: float | None = None,
    seed: int = 0,
    with_stderr: bool = True,
) -> Optimum:
    """Fit ``law`` to targets ``y`` (already in the law's target space)."""
    loss = make_loss(loss or law.loss, law.huber_delta if huber_delta is None else huber_delta)
    y = np.asarray(y, float)
    check_enough_points(law, X, y)
    with single_threaded_blas():
        exact = _closed_form(law, X, y, loss, with_stderr) if loss.kind == "lsq" else None
        if exact is not None:
            return exact
        problem = Problem(law, X, y, loss.kind, loss.delta, fixed=law.presolve(X, y))
        starts = ranked_starts(problem, law.search.n_screen, seed)[: law.search.n_starts]
        best = _best(solve(problem, starts, group_size=len(starts)), "Levenberg-Marquardt from the best-ranked starts")
        best = _from_refinement_starts(problem, best)
        return Optimum(
            problem.natural(best.u),
            best.loss,
            best.converged and best.loss < PENALTY,
            best.message,
            len(starts),
            problem.n_evaluations,  # read before the standard errors' Jacobian: the fit's own count
            parameters_on_bounds(problem, best.u),
            standard_errors(problem, best.u) if with_stderr else None,
        )


def check_enough_points(law: Law, X: dict[str, np.ndarray], y: np.ndarray) -> None:
    """Refuse a solve with no more distinct covariate points than the law has free parameters (its optimum would be
    any curve through them, or through the means of replicate runs, reported as converged)."""
    distinct = distinct_points(X) if X else len(y)
    if distinct <= law.n_free:
        at = "" if distinct == len(y) else f" at {distinct} distinct covariate value(s)"
        raise InsufficientDataError(
            f"{law.name}: {len(y)} point(s){at} cannot determine {law.n_free} free parameters; more than "
            f"{law.n_free} distinct points are needed."
        )


def _closed_form(
    law: Law, X: dict[str, np.ndarray], y: np.ndarray, loss: SquaredLoss, with_stderr: bool
) -> Optimum | None:
    """The law's exact least-squares solution (None where it has none)."""
    exact = law.closed_form(X, y)
    if exact is None:
        return None
    problem = Problem(law, X, y, loss.kind, loss.delta)
    u = problem.internal(exact)
    value = float(problem.objective(u))
    outside = [p.name for p, v in zip(law.parameters, exact, strict=True) if not p.lower <= v <= p.upper]
    stderr = standard_errors(problem, u) if with_stderr else None
    return Optimum(np.asarray(exact, float), value, True, "closed form (least squares)", 0, 1, outside, stderr)


def _best(solution: Solution, stage: str) -> Candidate:
    """The lowest end of a solve (a converged one on a tie), as a candidate."""
    row = solution.best_of_groups(1)
    reason, iterations = row.reason[0], int(row.iterations[0])
    return Candidate(
        float(row.loss[0]), row.u[0], bool(row.converged[0]), f"{stage}: {reason} ({iterations} iterations)"
    )


def _from_refinement_starts(problem: Problem, best: Candidate) -> Candidate:
    """The law's own refinement starts around the best point, solved together; their lowest end is kept only if it is
    lower than ``best`` (a fit can only improve)."""
    starts = refinement_starts(problem, best.u)
    if starts is None:
        return best
    return lowest(
        [
            best,
            _best(
                solve(problem, starts, group_size=len(starts)), "Levenberg-Marquardt from the law's refinement starts"
            ),
        ]
    )
