"""Starting points of a search: the law's own grid, a quasi-random screen of the free box, and the
law's refinement starts around an optimum, each with its linear parameters projected."""

from __future__ import annotations

import numpy as np

from benchcast.fitting.engine.problem import Problem
from benchcast.fitting.engine.projection import project_linear

SCREEN_SPAN = 60.0  # internal half-width where a bound is infinite (screening only)


def ranked_starts(problem: Problem, n_screen: int, seed: int) -> np.ndarray:
    """The law's own starting points plus, with ``n_screen``, a screen of the free box, best (by the problem's loss)
    first."""
    starts = problem.inside(problem.law.initial_guesses(problem.X, problem.y))
    if n_screen:
        starts = screen(problem, n_screen, seed, extra=starts)
    return starts[np.argsort(problem.objective(starts), kind="stable")]


def screen(problem: Problem, n_points: int, seed: int, extra: np.ndarray | None = None) -> np.ndarray:
    """Low-discrepancy points over the free box, linear parameters projected, so the ranking is by the loss being
    fitted."""
    lo = np.where(np.isfinite(problem.lower), problem.lower, -SCREEN_SPAN)
    hi = np.where(np.isfinite(problem.upper), problem.upper, SCREEN_SPAN)
    points = lo + (hi - lo) * _low_discrepancy(n_points, len(problem.free), seed)
    if extra is not None:
        points = np.vstack([extra, points])
    return project_linear(problem, points)


def refinement_starts(problem: Problem, u: np.ndarray) -> np.ndarray | None:
    """The law's refinement starts around internal point ``u`` (``Law.refinement_starts``: minima a local search from
    it cannot reach), in internal units with the linear parameters projected."""
    extra = problem.law.refinement_starts(problem.natural(u), problem.X)
    if extra is None or not len(extra):
        return None
    return project_linear(problem, problem.inside(extra))


def _low_discrepancy(n_points: int, dim: int, seed: int) -> np.ndarray:
    """A randomly shifted R_d (Kronecker) sequence in [0, 1)^dim (Roberts 2018): low discrepancy in any dimension,
    deterministic given ``seed``, and numpy only (scipy.stats.qmc takes seconds to import)."""
    phi = 2.0
    for _ in range(60):  # phi_d solves x^(d+1) = x + 1
        phi = (1.0 + phi) ** (1.0 / (dim + 1))
    alpha = phi ** -np.arange(1, dim + 1, dtype=float)
    shift = np.random.default_rng(seed).random(dim)
    return (shift + np.arange(1, n_points + 1)[:, None] * alpha) % 1.0
