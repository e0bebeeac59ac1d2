"""Cold fits of one law to several subsets of one set of points (rolling origins), their solver
stages solved as rows of one batch: :func:`minimize_subsets`.

Each subset is searched as :func:`~benchcast.fitting.engine.search.minimize_law` searches it alone,
on its own :class:`~benchcast.fitting.engine.problem.Problem` (its box, screen, ranked starts,
refinement starts), and never from another subset's optimum. Only the Levenberg-Marquardt stages are
shared: a :class:`Stack` holds the union of the subsets' points, and a row solving subset g weighs
g's points 1 and the others 0, with g's box, target scale, loss floor and probe points. A row's
path then differs from the lone fit's only by the rounding of sums over the extra zero-weighted
points. One batch pays the solver's per-iteration overhead once instead of once per subset.
"""

from __future__ import annotations

import numpy as np

from benchcast.fitting.engine.findings import parameters_on_bounds, standard_errors
from benchcast.fitting.engine.loss import make_loss
from benchcast.fitting.engine.problem import PENALTY, Problem
from benchcast.fitting.engine.search import (
    Optimum,
    _best,
    _closed_form,
    check_enough_points,
    lowest,
    minimize_law,
    single_threaded_blas,
)
from benchcast.fitting.engine.solver import solve
from benchcast.fitting.engine.starts import ranked_starts, refinement_starts
from benchcast.laws.base import Law
from benchcast.utils.memo import law_key, memoized

# subsets per stack: every row predicts every member's probe points, so a row's work grows with the
# members (rows are independent: a subset's fit does not depend on how the subsets are chunked)
MAX_STACK = 16


class Stack(Problem):
    """Problems of one law on subsets of one set of points, as one problem whose solver rows each solve one member (the
    solver's ``groups``): the union's points, each member's box, target scale, loss floor, probe points and weights."""

    def __init__(self, problems: list[Problem], X: dict[str, np.ndarray], y: np.ndarray, members: list[np.ndarray]):
        first = problems[0]
        super().__init__(first.law, X, y, first.loss.kind, first.loss.delta)
        self.lower = np.stack([p.lower for p in problems])
        self.upper = np.stack([p.upper for p in problems])
        self.target_scale = np.array([[p.target_scale] for p in problems])
        self.loss_floor = np.array([p.loss_floor for p in problems])
        n = len(self.y)
        # each member's probe points (its largest run scaled up), after the union's points
        probes = [{c: x[len(p.y) :] for c, x in p.X_probed.items()} for p in problems]
        sizes = [len(next(iter(pr.values()), ())) for pr in probes]
        self.X_probed = {c: np.concatenate([X[c], *(pr[c] for pr in probes)]) for c in X}
        self.weights = np.zeros((len(problems), n))
        self.probe_mask = np.zeros((len(problems), n + sum(sizes)), bool)
        start = n
        for g, (positions, size) in enumerate(zip(members, sizes, strict=True)):
            self.weights[g, positions] = 1.0
            self.probe_mask[g, positions] = True
            self.probe_mask[g, start : start + size] = True
            start += size
        self.evaluations = np.zeros(len(problems), int)

    def count(self, groups: np.ndarray) -> None:
        """Count one evaluation for each entry of ``groups`` (members, repeated as often as evaluated)."""
        np.add.at(self.evaluations, groups, 1)

    def solve(self, starts: list[np.ndarray | None], stage: str) -> list:
        """Each member's starts solved as rows of one batch; the lowest end of each, as a candidate."""
        groups = np.concatenate([np.full(len(s), g) for g, s in enumerate(starts) if s is not None])
        solution = solve(self, np.vstack([s for s in starts if s is not None]), self.weights[groups], groups=groups)
        return [
            None if s is None else _best(solution.take(np.flatnonzero(groups == g)), stage)
            for g, s in enumerate(starts)
        ]


@memoized(
    lambda law, Xs, ys, members, **settings: law_key(
        law, list(Xs), [np.asarray(y, float) for y in ys], list(members), settings
    ),
    keep=lambda out: not any(isinstance(item, Exception) for item in out),  # an error is not an answer to keep
)
def minimize_subsets(
    law: Law,
    Xs: list[dict[str, np.ndarray]],
    ys: list[np.ndarray],
    members: list[np.ndarray],
    *,
    loss: str | None = None,
    huber_delta: float | None = None,
    seed: int = 0,
    with_stderr: bool = False,
) -> list[Optimum | Exception]:
    """Fit ``law`` cold to each of several subsets of one set of points, solver stages batched."""
    kind = make_loss(loss or law.loss, law.huber_delta if huber_delta is None else huber_delta)
    out: list = [None] * len(Xs)
    problems = {}
    with single_threaded_blas():
        for i, (X, y) in enumerate(zip(Xs, ys, strict=True)):
            try:
                check_enough_points(law, X, np.asarray(y))
                exact = _closed_form(law, X, y, kind, with_stderr) if kind.kind == "lsq" else None
                if exact is not None:
                    out[i] = exact
                    continue
                problem = Problem(law, X, y, kind.kind, kind.delta, fixed=law.presolve(X, y))
                if problem.fixed or type(law).jacobian is Law.jacobian:
                    # presolved values or a differenced Jacobian are per problem: these fit alone
                    out[i] = minimize_law(
                        law, X, y, loss=loss, huber_delta=huber_delta, seed=seed, with_stderr=with_stderr
                    )
                else:
                    problems[i] = (problem, ranked_starts(problem, law.search.n_screen, seed)[: law.search.n_starts])
            except Exception as error:  # noqa: BLE001 - the caller decides which errors a subset may have
                out[i] = error
        chunks = list(problems)
        for begin in range(0, len(chunks), MAX_STACK):
            part = {i: problems[i] for i in chunks[begin : begin + MAX_STACK]}
            _batched(law, part, Xs, ys, members, out, with_stderr)
    return out


def _batched(law, problems: dict, Xs, ys, members, out: list, with_stderr: bool) -> None:
    """The search's solver stages for ``problems`` (subset index -> (problem, ranked starts)) as one stack; each
    subset's optimum is written to ``out``."""
    index = list(problems)
    union = np.unique(np.concatenate([members[i] for i in index]))
    local = [np.searchsorted(union, members[i]) for i in index]
    X = {c: np.empty(len(union)) for c in Xs[index[0]]}
    y = np.empty(len(union))
    for i, positions in zip(index, local, strict=True):
        y[positions] = ys[i]
        for c in X:
            X[c][positions] = Xs[i][c]
    stack = Stack([problems[i][0] for i in index], X, y, local)
    bests = stack.solve([problems[i][1] for i in index], "Levenberg-Marquardt from the best-ranked starts")
    extra = [refinement_starts(problems[i][0], best.u) for i, best in zip(index, bests, strict=True)]
    if any(e is not None for e in extra):
        refined = stack.solve(extra, "Levenberg-Marquardt from the law's refinement starts")
        bests = [best if r is None else lowest([best, r]) for best, r in zip(bests, refined, strict=True)]
    for g, (i, best) in enumerate(zip(index, bests, strict=True)):
        problem, starts = problems[i]
        out[i] = Optimum(
            problem.natural(best.u),
            best.loss,
            best.converged and best.loss < PENALTY,
            best.message,
            len(starts),
            problem.n_evaluations + int(stack.evaluations[g]),
            parameters_on_bounds(problem, best.u),
            standard_errors(problem, best.u) if with_stderr else None,
        )
