"""Bootstrap replicates refitted together: every replicate and its starts are rows of one batched
Levenberg-Marquardt solve (:mod:`~benchcast.fitting.engine.solver`) on the full data
reweighted by how often each run was drawn. A law's presolved stage (fitted to the proxy, which the
second stage reads as observed while fitting) is held at ``fixed`` in the solve; the caller gives each
replicate its own."""

from __future__ import annotations

import numpy as np

from benchcast.fitting.engine.problem import PENALTY, Problem
from benchcast.fitting.engine.solver import solve
from benchcast.fitting.engine.starts import ranked_starts, refinement_starts
from benchcast.laws.base import Law

N_POOL = 32  # the full data's best-ranked candidates each replicate chooses its starts from
BATCH = 1000  # replicates per solve: bounds memory (rows x parameters x points), not the result


def refit_weighted(
    law: Law,
    X: dict[str, np.ndarray],
    y: np.ndarray,
    counts: np.ndarray,
    warm: np.ndarray,
    *,
    loss: str | None = None,
    huber_delta: float | None = None,
    seed: int = 0,
    fixed: dict[str, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Refit ``law`` to many reweightings of one data set at once (bootstrap replicates)."""
    problem = Problem(law, X, y, loss or law.loss, law.huber_delta if huber_delta is None else huber_delta, fixed)
    counts = np.asarray(counts, float)
    warm_u = problem.inside(warm)[0]
    pool = _shared_pool(problem, seed, warm_u)
    n_starts = 1 + min(law.search.n_replicate_starts, len(pool))
    thetas, losses, converged = [], [], []
    for begin in range(0, len(counts), BATCH):
        part = counts[begin : begin + BATCH]
        starts = np.concatenate(
            [np.repeat(warm_u[None, None], len(part), axis=0), _chosen(problem, pool, part, n_starts - 1)], axis=1
        )
        rows = solve(
            problem, starts.reshape(-1, starts.shape[-1]), np.repeat(part, n_starts, axis=0), group_size=n_starts
        )
        best = rows.best_of_groups(len(part))
        thetas.append(problem.natural(best.u))
        losses.append(best.loss)
        converged.append(best.converged & (best.loss < PENALTY))
    return np.concatenate(thetas), np.concatenate(losses), np.concatenate(converged)


def _shared_pool(problem: Problem, seed: int, warm_u: np.ndarray) -> np.ndarray:
    """The full data's ``N_POOL`` best-ranked candidates and the law's refinement starts around the full-data optimum
    ``warm_u``: the starts every replicate chooses from."""
    pool = ranked_starts(problem, problem.law.search.n_screen, seed)[:N_POOL]
    extra = refinement_starts(problem, warm_u)
    return pool if extra is None else np.vstack([pool, extra])


def _chosen(problem: Problem, pool: np.ndarray, counts: np.ndarray, n_chosen: int) -> np.ndarray:
    """Each replicate's ``n_chosen`` best pool candidates by its own weighted loss, shape (B, n_chosen, m)."""
    if n_chosen <= 0:
        return np.empty((len(counts), 0, pool.shape[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        per_point = problem.loss.per_point(problem.predict(pool) - problem.y)  # (P, n)
        value = counts @ np.where(np.isfinite(per_point), per_point, PENALTY).T  # (B, P)
    order = np.argsort(value, axis=1, kind="stable")[:, :n_chosen]
    return pool[order]
