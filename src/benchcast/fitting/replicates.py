"""Bootstrap replicates refitted together: one batched Levenberg-Marquardt over every replicate and
its starts, then each replicate's best point finished by the trust-region solve on its resample."""

from __future__ import annotations

import numpy as np

from benchcast.fitting.engine import N_REFINE
from benchcast.fitting.problem import PENALTY, Candidate, Problem
from benchcast.fitting.solvers import batched_levenberg_marquardt, settle_to_convergence, trust_region_finish
from benchcast.fitting.starts import ranked_starts, refinement_starts, screen
from benchcast.fitting.valley import continue_valley
from benchcast.laws.base import Law

SETTLE_ITERATIONS = 60  # batched Levenberg-Marquardt steps before each replicate is finished alone
N_POOL = 32  # a multimodal law's replicates: screened candidates of the full data each replicate starts from
NUDGE_SLACK = 1e-7  # relative: how far above a start on a bound its finish may end and still vouch for it
BATCH = 100  # replicates settled in one batched solve


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
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Refit ``law`` to many reweightings of one data set at once (bootstrap replicates).

    Each replicate starts from ``warm`` (the full-data optimum) and from the best, by the
    replicate's loss, of the starting points a cold fit of its resample would rank (the law's own
    and, with ``law.search.n_screen``, its screen); all are settled by one batched
    Levenberg-Marquardt, and each replicate's best point is finished by the trust-region solve on
    the resample itself, whose convergence test is the replicate's.

    A multimodal law's screen (thousands of candidates) costs as much as the rest of a cold fit,
    so its replicates start instead from one pool: the full data's ``N_POOL`` best candidates (its
    own grid and screen, ranked on the full data), the law's refinement starts around ``warm``, and
    ``warm``, all settled by the batched solve to convergence before each replicate's best is
    finished and, in a flat valley, continued as a cold fit is. How it compares with cold refits
    of the same resamples is measured by ``benchmarks/bnsl_replicates.py``; neither search is
    global, so neither wins on every replicate.

    Parameters
    ----------
    law : Law
        The law.
    X : dict of str to ndarray
        The full data's covariates.
    y : ndarray
        The full data's targets, in the law's target space.
    counts : ndarray
        How often each point is drawn, shape (B, n_points).
    warm : ndarray
        The full-data optimum, natural units.
    loss : str, optional
        ``'huber'`` or ``'lsq'`` (default: the law's).
    huber_delta : float, optional
        The Huber threshold (default: the law's).
    seed : int
        The screen's random shift.

    Returns
    -------
    tuple of ndarray
        (thetas (B, n_params), losses (B,), converged (B,)); losses are the mean loss on the
        resample, as a cold fit of it reports.
    """
    loss = loss or law.loss
    delta = law.huber_delta if huber_delta is None else huber_delta
    problem = Problem(law, X, y, loss, delta)
    counts = np.asarray(counts, float)
    n_keep = min(N_REFINE, law.search.n_polish or N_REFINE)
    thetas, losses, converged = [], [], []
    warm_u = problem.inside(warm)[0]
    pool = _shared_pool(problem, seed, warm_u) if law.search.multimodal else None

    for begin in range(0, len(counts), BATCH):
        part = counts[begin : begin + BATCH]
        starts, replicates = [], []
        for drawn in part:
            index = np.repeat(np.arange(len(y)), drawn.astype(int))
            replicate = Problem(law, {c: x[index] for c, x in X.items()}, y[index], loss, delta)
            replicates.append(replicate)
            if pool is not None:
                starts.append(np.vstack([warm_u, pool]))
            else:
                starts.append(np.vstack([warm_u, _cold_starts(replicate, n_keep, seed)]))
        per = max(len(s) for s in starts)
        block = np.stack([np.vstack([s, np.repeat(s[:1], per - len(s), axis=0)]) for s in starts])  # (b, per, m)
        block, weights = block.reshape(-1, block.shape[-1]), np.repeat(part, per, axis=0)
        if pool is None:
            u, value, _ = batched_levenberg_marquardt(problem, block, weights, max_iterations=SETTLE_ITERATIONS)
        else:
            u, value, _ = settle_to_convergence(problem, block, weights)
        best = u.reshape(len(part), per, -1)[np.arange(len(part)), np.argmin(value.reshape(len(part), per), axis=1)]
        for replicate, v in zip(replicates, best, strict=True):
            end = _finish(replicate, v, continued=pool is not None)
            thetas.append(problem.natural(end.u))
            losses.append(end.loss)
            converged.append(end.converged and end.loss < PENALTY)
    return np.reshape(thetas, (len(counts), len(law.parameters))), np.array(losses, float), np.array(converged, bool)


def _cold_starts(replicate: Problem, n_keep: int, seed: int) -> np.ndarray:
    """The best ``n_keep``, by the replicate's loss, of the candidates a cold fit of its resample
    would rank: the law's own starting points and its screen, computed on the resample."""
    law = replicate.law
    candidates = replicate.inside(law.initial_guesses(replicate.X, replicate.y))
    if law.search.n_screen:
        candidates = np.vstack([candidates, screen(replicate, law.search.n_screen, seed)])
    value = replicate.objective(candidates)
    return candidates[np.argsort(value, kind="stable")[:n_keep]]


def _finish(replicate: Problem, start: np.ndarray, continued: bool) -> Candidate:
    """A replicate's best batched point finished exactly as a cold fit ends: the trust-region
    solve on the resample itself, whose own convergence test decides (``continued``: along a flat
    valley too), and the start kept where the finish ends above it."""
    end = trust_region_finish(replicate, start)
    if continued:
        end = continue_valley(replicate, end._replace(message=""))
    return kept_start(Candidate(float(replicate.objective(start)), start, False, ""), end)


def kept_start(start: Candidate, end: Candidate) -> Candidate:
    """The lower of a replicate's batched start and the end of its finish.

    The finish starts strictly inside the box: from a start on a bound it can converge a hair above
    it, and its
    test then holds for the start; one that ends further above (more than ``NUDGE_SLACK``) did not
    reach the start's point, and the start is kept unconverged.

    Parameters
    ----------
    start : Candidate
        The batched start and its loss on the resample (its own convergence is not used).
    end : Candidate
        The finish's end.

    Returns
    -------
    Candidate
        ``end``, or ``start`` converged where ``end`` converged within ``NUDGE_SLACK`` of it.
    """
    if not start.loss < end.loss:
        return end
    vouched = end.converged and end.loss - start.loss <= NUDGE_SLACK * abs(start.loss)
    return Candidate(start.loss, start.u, vouched, end.message)


def _shared_pool(problem: Problem, seed: int, warm_u: np.ndarray) -> np.ndarray:
    """A multimodal law's ``N_POOL`` best starting candidates on the full data (its own grid and
    screen, linear parameters projected) and its refinement starts around the full-data optimum
    ``warm_u``: the starts every bootstrap replicate shares."""
    pool = ranked_starts(problem, problem.law.search.n_screen, seed)[:N_POOL]
    # the law's refinement starts around the full-data optimum, as a cold fit tries around its own
    extra = refinement_starts(problem, warm_u)
    return pool if extra is None else np.vstack([pool, extra])
