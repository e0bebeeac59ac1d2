"""The one fitting engine behind every law: :func:`minimize_law`, a fit as named stages.

1. closed form where the law has one (least-squares laws);
2. otherwise the parameters the law presolves are held fixed, and starts are ranked: the law's own
   grid plus, with ``law.search.n_screen``, a quasi-random screen, linear parameters projected
   (:mod:`~benchcast.fitting.starts`, :mod:`~benchcast.fitting.projection`);
3. the best ``n_polish`` are refined with L-BFGS-B (where there are more than ``N_REFINE``, a
   batched Levenberg-Marquardt settles them first and only the best ``N_REFINE`` go on);
4. the best refined points (three for a multimodal law) get a trust-region finish
   (:mod:`~benchcast.fitting.solvers`), whose end is tried from the law's refinement starts too;
   a multimodal law's best point that ran out of budget is continued along its flat valley
   (:mod:`~benchcast.fitting.valley`);
5. with ``n_settle``, the best screened starts are also settled to convergence by the batched
   solve, a second search that can end in other basins; its best point is finished and continued on
   its own path, and the lower of the two ends is the fit.

Bootstrap replicates are refitted by :mod:`~benchcast.fitting.replicates`; the problem, its loss
and candidate points are :mod:`~benchcast.fitting.problem`. BLAS runs single-threaded inside a
fit. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from benchcast.fitting.loss import Loss
from benchcast.fitting.problem import PENALTY, Candidate, Problem, lowest
from benchcast.fitting.solvers import batched_levenberg_marquardt, settle_to_convergence, trust_region_finish
from benchcast.fitting.starts import ranked_starts, refinement_starts
from benchcast.fitting.valley import continue_valley
from benchcast.laws.base import Law

N_REFINE = 8  # starts refined one by one (more are first settled by a batched Levenberg-Marquardt)
N_FINISH = 1  # refined points finished by the trust-region solve
N_FINISH_MULTIMODAL = 3  # a multimodal law's best refined points each get the trust-region finish


@dataclass
class Optimum:
    """What the engine found, in natural parameter units.

    Attributes
    ----------
    theta : ndarray
        The fitted parameters.
    loss : float
        The mean loss there.
    converged : bool
        Whether the last solve's convergence test was met.
    message : str
        The last solve's message.
    n_starts : int
        Starts refined (and settled, by a second search).
    n_evaluations : int
        Evaluations of the law (a Jacobian counts as one where the law declares it).
    at_bound : list of str
        Parameters on (or, in closed form, outside) a bound of their range.
    stderr : ndarray or None
        Gauss-Newton standard errors (None where not asked for).
    """

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
    """A context in which BLAS runs on one thread.

    The engine's matrices are tiny (a few parameters by a few hundred points): a threaded BLAS
    only spins its threads for each call."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


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
    """Fit ``law`` to targets ``y`` (already in the law's target space).

    Parameters
    ----------
    law : Law
        The law; its ``search`` settings shape the search.
    X : dict of str to ndarray
        Covariates, one value per point.
    y : ndarray
        Targets in the law's target space.
    loss : str, optional
        ``'huber'`` or ``'lsq'`` (default: the law's).
    huber_delta : float, optional
        The Huber threshold (default: the law's).
    seed : int
        The screen's random shift.
    with_stderr : bool
        Whether to compute standard errors.

    Returns
    -------
    Optimum
        The fit.
    """
    loss = Loss(loss or law.loss, law.huber_delta if huber_delta is None else huber_delta)
    y = np.asarray(y, float)
    with single_threaded_blas():
        exact = _closed_form(law, X, y, loss, with_stderr) if loss.kind == "lsq" else None
        if exact is not None:
            return exact
        problem = Problem(law, X, y, loss.kind, loss.delta, fixed=law.presolve(X, y))
        search = law.search
        ranked = ranked_starts(problem, search.n_screen, seed)
        chosen = _settled_if_many(problem, ranked if search.n_polish is None else ranked[: search.n_polish])
        refined = _lbfgsb(problem, chosen)
        best = _finish_best(problem, refined, N_FINISH_MULTIMODAL if search.multimodal else N_FINISH)
        best = _from_refinement_starts(problem, best)
        if search.multimodal:
            best = continue_valley(problem, best)
        if search.n_settle:
            best = _settled_search(problem, ranked[: search.n_settle], best)
        n_starts = len(chosen) + min(search.n_settle, len(ranked))
        return Optimum(
            problem.natural(best.u),
            best.loss,
            best.converged and best.loss < PENALTY,
            best.message,
            n_starts,
            problem.n_evaluations,  # read before the standard errors' Jacobian: the fit's own count
            problem.at_bound(best.u),
            problem.stderr(best.u) if with_stderr else None,
        )


def _closed_form(law: Law, X: dict[str, np.ndarray], y: np.ndarray, loss: Loss, with_stderr: bool) -> Optimum | None:
    """The law's exact least-squares solution (None where it has none)."""
    exact = law.closed_form(X, y)
    if exact is None:
        return None
    problem = Problem(law, X, y, loss.kind, loss.delta)
    u = problem.internal(exact)
    value = float(problem.objective(u))
    outside = [p.name for p, v in zip(law.parameters, exact, strict=True) if not p.lower <= v <= p.upper]
    stderr = problem.stderr(u) if with_stderr else None
    return Optimum(np.asarray(exact, float), value, True, "closed form (least squares)", 0, 1, outside, stderr)


def _settled_if_many(problem: Problem, starts: np.ndarray) -> np.ndarray:
    """``starts`` where there are at most ``N_REFINE``; else (a grid polished in full, as nd's) one
    batched Levenberg-Marquardt brings each to the floor of its basin and the best ``N_REFINE`` go on."""
    if len(starts) <= N_REFINE:
        return starts
    settled, settled_loss, _ = batched_levenberg_marquardt(problem, starts)
    return settled[np.argsort(settled_loss, kind="stable")[:N_REFINE]]


def _lbfgsb(problem: Problem, starts: np.ndarray) -> list[Candidate]:
    """Each start refined by L-BFGS-B in internal units, lowest loss first."""
    bounds = [
        (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
        for lo, hi in zip(problem.lower, problem.upper, strict=True)
    ]
    refined = []
    for start in starts:
        res = minimize(
            problem.value_and_grad,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 3000, "ftol": 1e-13, "gtol": 1e-10},
        )
        u = np.clip(res.x, problem.lower, problem.upper)
        refined.append(Candidate(float(res.fun), u, bool(res.success), f"L-BFGS-B: {res.message}"))
    return sorted(refined, key=lambda c: c.loss)


def _finish_best(problem: Problem, refined: list[Candidate], n_finish: int) -> Candidate:
    """The lowest of the refined points and the trust-region finishes of the best ``n_finish``
    (the finish converges where L-BFGS-B stalls on Huber's kink)."""
    return lowest(refined + [trust_region_finish(problem, c.u) for c in refined[:n_finish]])


def _from_refinement_starts(problem: Problem, best: Candidate) -> Candidate:
    """The law's own refinement starts around the best point, settled together by the batched
    solve; the lowest is finished and kept only if it ends below ``best``."""
    starts = refinement_starts(problem, best.u)
    if starts is None:
        return best
    settled, value, _ = settle_to_convergence(problem, starts)
    return lowest([best, trust_region_finish(problem, settled[int(np.argmin(value))])])


def _settled_search(problem: Problem, starts: np.ndarray, best: Candidate) -> Candidate:
    """A second local search: ``starts`` settled to convergence by the batched solve, which can end
    in other basins than L-BFGS-B's (lower on some data, higher on others). Its best point is
    finished and continued on its own path and competes only with ``best``, the end of the first
    path, which it can therefore never make worse. A settled point above that end has converged in
    a basin the first path already beat, so its path is not taken."""
    points, values, _ = settle_to_convergence(problem, starts)
    if not float(np.min(values)) < best.loss:
        return best
    end = continue_valley(problem, trust_region_finish(problem, points[int(np.argmin(values))]))
    return lowest([best, end._replace(message=f"settled search, {end.message}")])
