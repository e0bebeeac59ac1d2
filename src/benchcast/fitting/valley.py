"""Continuation of a point that ran out of trust-region budget along a flat valley of a multimodal
law (a break sharpening, or a and b_ref trading off towards a range limit)."""

from __future__ import annotations

import numpy as np

from benchcast.fitting.problem import Candidate, Problem, lowest
from benchcast.fitting.projection import project_linear
from benchcast.fitting.solvers import FINISH_EVALUATIONS, trust_region_finish

SEGMENT_EVALUATIONS = 30  # trust-region budget between two extrapolations along a flat valley
VALLEY_EVALUATIONS = 2400  # trust-region budget of a flat valley's continuation
VALLEY_STRIDES = 2.0 ** np.arange(-2, 14)  # multiples of the last displacement tried along a valley
VALLEY_DESCENT = 1e-10  # relative descent an extrapolation needs (above the solve's ftol, 1e-12)


def continue_valley(problem: Problem, best: Candidate) -> Candidate:
    """Continue ``best`` where its trust-region solve did not converge.

    A trust-region solve creeps along a flat valley (thousands of evaluations for a small move, still
    descending), so solves alternate with extrapolation: the
    displacement between the ends of the last two solves is tried at ``VALLEY_STRIDES`` times its
    length, as it is and with the linear parameters re-projected onto the valley floor, and the
    lowest trial is kept if it descends. A solve is short (``SEGMENT_EVALUATIONS``) after a
    successful extrapolation and twice as long after each one that fails (a curved valley, where
    a long solve keeps its trust region). It ends when a solve converges, a fresh solve of a
    finish's budget from there converges too, and no trial descends (the solves' own convergence
    test decides), or after ``VALLEY_EVALUATIONS`` evaluations (a confirming solve may pass it by up
    to a finish's budget).

    Parameters
    ----------
    problem : Problem
        The law, data and loss.
    best : Candidate
        The end of a trust-region finish.

    Returns
    -------
    Candidate
        The lowest point reached (``best`` itself where it converged).
    """
    if best.converged:
        return best
    point = previous_end = best.u
    segment_budget, spent, confirmed = SEGMENT_EVALUATIONS, 0, False
    while spent < VALLEY_EVALUATIONS:
        # never less than a finish's budget: a confirming solve is a full one, even at the end
        budget = min(segment_budget, max(VALLEY_EVALUATIONS - spent, FINISH_EVALUATIONS))
        segment = trust_region_finish(problem, point, budget)
        spent += budget
        best = lowest([best, segment])
        trials = np.clip(segment.u + VALLEY_STRIDES[:, None] * (segment.u - previous_end), problem.lower, problem.upper)
        # the projection is approximate (a few reweighted steps): where the valley's slope is
        # below its error, the raw extrapolation is the better trial
        projected = project_linear(problem, trials)
        if projected is not trials:  # a law with linear parameters
            trials = np.vstack([trials, projected])
        values = problem.objective(trials)
        best_trial = int(np.argmin(values))
        previous_end = segment.u
        if values[best_trial] < segment.loss * (1 - VALLEY_DESCENT):
            point, segment_budget, confirmed = trials[best_trial], SEGMENT_EVALUATIONS, False
            best = lowest([best, Candidate(float(values[best_trial]), point, False, "valley extrapolation")])
        elif segment.converged:
            if confirmed:
                break
            # converged after a short solve: a fresh solve of a finish's budget confirms it (a trust
            # region shrunk along the valley can meet the loss test while still creeping)
            confirmed, point, segment_budget = True, segment.u, FINISH_EVALUATIONS
        else:
            point, segment_budget = segment.u, 2 * segment_budget
    return best
