"""The one fitting engine behind every law.

Strategy, for a law and data in the law's target space:

1. closed form where the law has one (OLS laws);
2. otherwise parameters the law pre-solves are held fixed, and candidate starts come from the
   law's own grid plus, for multimodal laws, a low-discrepancy screen of the non-linear
   parameters; for the screened points the linear parameters are solved exactly within their
   bounds (variable projection) and, for a Huber loss, reweighted towards its optimum;
3. the best candidates are refined with L-BFGS-B in an internal space (log for scale
   parameters), with the law's analytic Jacobian where it declares one (``Law.jacobian``), else a
   vectorised central-difference gradient; where more than ``N_REFINE`` starts are polished (nd's
   grid of 81), one batched Levenberg-Marquardt first settles them all and only the best
   ``N_REFINE`` go on to L-BFGS-B;
4. the best refined point (three for a multimodal law) is finished with a trust-region
   least-squares solve of the same objective (``least_squares`` with ``loss='huber',
   f_scale=delta`` is exactly the Huber loss), which converges where L-BFGS-B stalls on Huber's
   kink; the law's own refinement starts around the best point (``Law.refinement_starts``:
   BNSL's break sharpened in each gap of at least 5 % between runs) are settled and the lowest
   finished; a multimodal law's best point that runs out of budget (a flat valley) is continued by
   short solves alternating with extrapolation along the valley until a solve converges and a
   fresh one confirms it (at most 2,400 evaluations); the lowest loss wins;
5. a law with ``n_settle`` (BNSL) also settles its best ``n_settle`` screened starts to convergence
   with the batched solve, a second local search that can end in other basins than L-BFGS-B's; its
   best point is finished and continued on its own path, and the lower of the two paths' ends
   is the fit (so it never ends a fit higher than the first path alone).

Bootstrap replicates (:func:`refit_weighted`) are the same data reweighted: one batched
Levenberg-Marquardt over every replicate and its starts, then each replicate's best point is
finished by the same trust-region solve, whose convergence is recorded. A multimodal law's
replicates all start from one pool, the full data's best screened candidates and the law's
refinement starts, settled to convergence (its screen is what makes a cold fit slow; ranked
once, it serves every replicate).

BLAS runs single-threaded inside a fit: its matrices are tiny, and threads only spin.
Everything is deterministic given ``seed``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares, minimize

from benchcast.laws.base import Law

PENALTY = 1e10  # objective for parameter vectors whose prediction is not finite
SCREEN_SPAN = 60.0  # internal half-width where a bound is infinite (screening only)
N_FINISH = 1  # refined points finished by the trust-region solve
SETTLE_ITERATIONS = 60  # batched Levenberg-Marquardt steps before each replicate is finished alone
WINDOW = 10  # iterations over which batched Levenberg-Marquardt judges its progress
N_REFINE = 8  # starts refined one by one (more are first settled by a batched Levenberg-Marquardt)
FINISH_EVALUATIONS = 300  # trust-region budget of a fit's finish
ROBUST_STEPS = 6  # reweighted steps of the linear parameters towards the Huber optimum (screening)
N_FINISH_MULTIMODAL = 3  # a multimodal law's best refined points each get the trust-region finish
N_POOL = 32  # a multimodal law's replicates: screened candidates of the full data each replicate starts from
POOL_ITERATIONS = 300  # batched Levenberg-Marquardt steps for a multimodal law's replicates (to convergence)
SEGMENT_EVALUATIONS = 30  # trust-region budget between two extrapolations along a flat valley
VALLEY_EVALUATIONS = 2400  # trust-region budget of a flat valley's continuation
VALLEY_STRIDES = 2.0 ** np.arange(-2, 14)  # multiples of the last displacement tried along a valley
VALLEY_DESCENT = 1e-10  # relative descent an extrapolation needs (above the solve's ftol, 1e-12)
WELL_CONDITIONED = 1e-6  # Hadamard ratio above which box least squares trusts a feasible free solution
NUDGE_SLACK = 1e-7  # relative: how far above a start on a bound its finish may end and still vouch for it


def huber(residual: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(residual)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(a <= delta, 0.5 * residual**2, delta * (a - 0.5 * delta))


def loss_values(residual: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """Mean loss over the last axis (the sum over the count, as ``mean`` computes it, without its
    overhead: this runs once per evaluation of a fit)."""
    per_point = huber(residual, delta) if loss == "huber" else residual**2
    mean = np.add.reduce(per_point, axis=-1) / per_point.shape[-1]
    return mean if loss == "huber" else 0.5 * mean


def loss_rows(residual: np.ndarray, loss: str, delta: float) -> np.ndarray:
    """Per-point loss."""
    return huber(residual, delta) if loss == "huber" else 0.5 * residual**2


def loss_derivative(residual: np.ndarray, loss: str, delta: float) -> np.ndarray:
    return np.clip(residual, -delta, delta) if loss == "huber" else residual


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


class Problem:
    """A law, its data and loss, with the map between natural and internal parameters."""

    def __init__(
        self,
        law: Law,
        X: dict[str, np.ndarray],
        y: np.ndarray,
        loss: str,
        huber_delta: float,
        fixed: dict[str, float] | None = None,
    ):
        self.law, self.X, self.y = law, X, np.asarray(y, float)
        self.loss, self.delta = loss, huber_delta
        self.fixed = dict(fixed or {})
        self.params = law.parameters
        self.free = [i for i, p in enumerate(self.params) if p.name not in self.fixed]
        is_log = np.array([self.params[i].log for i in self.free], bool)
        self.is_log = is_log
        # the free parameters optimised in log space, as positions among the free ones and in theta
        self.log_free = _as_slice(np.flatnonzero(is_log))
        self.log_theta = _as_slice(np.asarray(self.free, int)[np.flatnonzero(is_log)])
        self.all_free = len(self.free) == len(self.params)
        lower = np.array([self.params[i].lower for i in self.free], float)
        upper = np.array([self.params[i].upper for i in self.free], float)
        with np.errstate(divide="ignore"):
            self.lower = np.where(is_log, np.log(np.maximum(lower, 1e-300)), lower)
            self.upper = np.where(is_log, np.log(upper), upper)
        self.template = np.array([self.fixed.get(p.name, p.init) for p in self.params], float)
        self.n_evaluations = 0

    # natural <-> internal
    def natural(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, float)
        if self.all_free:
            theta = u.copy()
        else:
            theta = np.broadcast_to(self.template, u.shape[:-1] + self.template.shape).copy()
            theta[..., self.free] = u
        theta[..., self.log_theta] = np.exp(u[..., self.log_free])
        return theta

    def internal(self, theta: np.ndarray) -> np.ndarray:
        free = np.asarray(theta, float)[..., self.free]
        with np.errstate(divide="ignore"):
            return np.where(self.is_log, np.log(np.maximum(free, 1e-300)), free)

    def predict(self, u: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self.law.forward(self.natural(u), self.X)

    def objective(self, u: np.ndarray) -> np.ndarray:
        """Loss of a batch of internal vectors, shape (..., n_free) -> (...)."""
        self.n_evaluations += math.prod(np.shape(u)[:-1])
        residual = self.predict(u) - self.y
        values = loss_values(residual, self.loss, self.delta)
        return np.where(np.isfinite(values), values, PENALTY)

    def jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prediction at u and its Jacobian (n_free, n_points) in internal units: the law's own
        where it declares one, else central differences."""
        theta = self.natural(u)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            exact = self.law.jacobian(theta, self.X)
        if exact is not None:
            self.n_evaluations += 1
            pred, jac = exact
            # the law's array is this call's own (Law.jacobian returns a new one): scaled in place below
            jac = np.asarray(jac, float) if self.all_free else np.asarray(jac, float)[..., self.free, :]
            if not jac.flags.writeable:
                jac = jac.copy()
            # d/d(log p) = p d/dp for parameters optimised in log space
            jac[..., self.log_free, :] *= theta[..., self.log_theta, None]
            return pred, jac
        return self.difference_jacobian(u)

    def difference_jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prediction at u (..., n_free) and its central-difference Jacobian (..., n_free, n_points)."""
        u = np.asarray(u, float)
        m = u.shape[-1]
        self.n_evaluations += (2 * m + 1) * int(np.prod(u.shape[:-1], dtype=int))
        step = 1e-6 * (1.0 + np.abs(u))
        plus = np.minimum(u + step, self.upper)
        minus = np.maximum(u - step, self.lower)
        eye = np.eye(m)
        batch = np.concatenate(
            [
                u[..., None, :],
                u[..., None, :] + eye * (plus - u)[..., None, :],
                u[..., None, :] - eye * (u - minus)[..., None, :],
            ],
            axis=-2,
        )
        preds = self.predict(batch)
        width = (plus - minus)[..., :, None]
        jac = (preds[..., 1 : m + 1, :] - preds[..., m + 1 :, :]) / np.where(width > 0, width, 1.0)
        return preds[..., 0, :], jac

    def batched_lm(
        self,
        u: np.ndarray,
        weights: np.ndarray | None = None,
        *,
        max_iterations: int = 200,
        ftol: float = 1e-10,
        xtol: float = 1e-10,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Levenberg-Marquardt from many starts at once, each row its own problem.

        ``u`` (S, n_free) internal starts; ``weights`` (S, n_points) per-row point weights (a
        bootstrap replicate is the data reweighted by how often each run was drawn; None: all 1).
        The Huber loss is handled by iteratively reweighted Gauss-Newton (weight delta/|r| on
        the linear part); bounds by an active set (a parameter on a bound whose gradient points
        out of the box is held there). Returns (u, loss, converged) per row; a row converges when
        an accepted step changes its loss by less than ``ftol`` (relative), a step moves it by less
        than ``xtol`` (relative), or no step can lower it.
        """
        u = np.clip(np.array(u, float, ndmin=2), self.lower, self.upper)
        S, m = u.shape
        w = np.ones((S, len(self.y))) if weights is None else np.asarray(weights, float)
        w = w / w.sum(axis=1, keepdims=True)
        damping = np.full(S, 1e-3)
        converged = np.zeros(S, bool)
        active = np.arange(S)

        def weighted_loss(pred, rows):
            residual = pred - self.y
            if self.loss == "huber":
                per = huber(residual, self.delta)
            else:
                per = 0.5 * residual**2
            value = np.sum(w[rows] * per, axis=-1)
            return np.where(np.isfinite(value), value, PENALTY)

        # each row's gradient and Gauss-Newton matrix, kept while its point does not move: a
        # rejected step leaves them as they were, so only rows that moved are evaluated again
        grad_of, hess_of = np.zeros((S, m)), np.zeros((S, m, m))
        moved = np.ones(S, bool)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            value = weighted_loss(self.predict(u), active)
            history = np.repeat(value[:, None], WINDOW, axis=1)
            for iteration in range(max_iterations):
                if not active.size:
                    break
                ua = u[active]
                rows = active[moved[active]]
                if rows.size:
                    pred, jac = self.jacobian(u[rows])  # (R, n), (R, m, n)
                    residual = pred - self.y
                    wr = w[rows]
                    psi = loss_derivative(residual, self.loss, self.delta)
                    if self.loss == "huber":
                        # iteratively reweighted: delta/|r| on the linear part majorises the loss (a
                        # plain Gauss-Newton weight of 0 there stalls where few points are quadratic)
                        curvature = wr * np.minimum(1.0, self.delta / np.maximum(np.abs(residual), 1e-300))
                    else:
                        curvature = wr
                    jac = _finite(jac)
                    grad_of[rows] = np.einsum("amn,an->am", jac, wr * _finite(psi))
                    hess_of[rows] = np.einsum("amn,akn->amk", jac * curvature[:, None, :], jac)
                    moved[rows] = False
                grad, hess = grad_of[active], hess_of[active]
                # active set: on a bound with the gradient pointing outwards
                held = ((ua <= self.lower) & (grad > 0)) | ((ua >= self.upper) & (grad < 0))
                diag = np.einsum("amm->am", hess)
                ridge = (damping[active, None] * np.maximum(diag, 1e-12) + 1e-300)[:, :, None]
                if held.any():
                    grad = np.where(held, 0.0, grad)
                    mask = ~held[:, :, None] & ~held[:, None, :]
                    lhs = np.where(mask, hess, 0.0) + np.eye(m) * (ridge + held[:, :, None])
                else:  # the same sum without its no-op terms (most iterations hold nothing)
                    lhs = hess + np.eye(m) * ridge
                step = -_solve_rows(lhs, grad)
                step = _finite(step)
                trial = np.clip(ua + step, self.lower, self.upper)
                trial_value = weighted_loss(self.predict(trial), active)
                self.n_evaluations += len(active)
                better = trial_value < value[active]
                u[active[better]] = trial[better]
                moved[active[better]] = True
                value[active[better]] = trial_value[better]
                damping[active] = np.where(better, np.maximum(damping[active] / 3.0, 1e-12), damping[active] * 4.0)
                # progress over the last WINDOW iterations: reweighting converges linearly, so a
                # single small step is no proof; a whole window of them is
                history[active, iteration % WINDOW] = value[active]
                window = (history[active].max(axis=1) - value[active]) / np.maximum(np.abs(value[active]), 1e-300)
                settled = (iteration >= WINDOW) & (window < ftol * WINDOW)
                small_step = np.all(np.abs(trial - ua) <= xtol * (1.0 + np.abs(ua)), axis=1)
                stuck = damping[active] > 1e10
                done = settled | small_step | stuck | ~np.isfinite(value[active])
                converged[active[done]] = np.isfinite(value[active[done]]) & (value[active[done]] < PENALTY)
                active = active[~done]
        return u, value, converged

    def value_and_grad(self, u: np.ndarray) -> tuple[float, np.ndarray]:
        pred, jac = self.jacobian(u)
        residual = pred - self.y
        value = float(loss_values(residual, self.loss, self.delta))
        grad = jac @ loss_derivative(residual, self.loss, self.delta) / len(self.y)
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            return PENALTY, np.zeros_like(u)
        return value, grad

    def finish(self, u: np.ndarray, max_evaluations: int = FINISH_EVALUATIONS) -> tuple[float, np.ndarray, bool, str]:
        """Trust-region least squares on the same objective, from u (bounded, analytic-free)."""

        # the solve asks for the Jacobian at most points whose residuals it evaluates (9 in 10 on the
        # BNSL replicates): where the law declares one, it comes with the prediction (every law's
        # Jacobian returns its forward's values, bit for bit today) and is kept for that point
        eager = type(self.law).jacobian is not Law.jacobian
        kept: list = []

        def residual(v):
            if eager:
                pred, jac = self.jacobian(v)  # counted there
                kept[:] = [v.copy(), jac]
            else:
                self.n_evaluations += 1
                pred = self.predict(v)
            out = pred - self.y
            return out if np.isfinite(out).all() else np.where(np.isfinite(out), out, 1e6)

        def jacobian(v):
            if kept and np.array_equal(kept[0], v):
                jac = kept[1].T
            else:
                jac = self.jacobian(v)[1].T
            kept.clear()
            return _finite(jac)

        lower = np.where(np.isfinite(self.lower), self.lower, -np.inf)
        upper = np.where(np.isfinite(self.upper), self.upper, np.inf)
        start = np.clip(u, lower, upper)
        inside = (start > lower) & (start < upper)
        # least_squares needs a strictly feasible start
        start = np.where(
            inside,
            start,
            np.clip(start + np.sign(0.5 * (lower + upper) - start) * 1e-9 * (1 + np.abs(start)), lower, upper),
        )
        res = least_squares(
            residual,
            start,
            jac=jacobian,
            bounds=(lower, upper),
            method="trf",
            loss="huber" if self.loss == "huber" else "linear",
            f_scale=self.delta,
            x_scale="jac",
            ftol=1e-12,
            xtol=1e-12,
            gtol=1e-12,
            max_nfev=max_evaluations,
        )
        v = np.clip(res.x, self.lower, self.upper)
        return float(self.objective(v)), v, bool(res.status > 0), f"trust-region finish: {res.message}"

    def project_linear(self, u: np.ndarray, robust_steps: int = 0) -> np.ndarray:
        """Solve the law's linear parameters exactly for a batch of vectors: least squares within
        their bounds (every active set of the box is tried; the best feasible one is the optimum of
        the convex problem), so that a screened point never leaves the law's constraints.

        With a Huber loss, ``robust_steps`` iteratively reweighted steps (weights min(1, delta/|r|))
        move the solution towards the Huber optimum of the linear parameters."""
        linear = [j for j, i in enumerate(self.free) if self.params[i].linear]
        if not linear:
            return u
        u = u.copy()
        # Affine in the linear parameters: basis = f(e_j) - f(0), evaluated in one batch.
        zero = u.copy()
        for j in linear:
            zero[:, j] = -np.inf if self.is_log[j] else 0.0
        offset = self.predict(zero)
        basis = []
        for j in linear:
            unit = zero.copy()
            unit[:, j] = 0.0 if self.is_log[j] else 1.0
            basis.append(self.predict(unit) - offset)
        basis = np.nan_to_num(np.stack(basis, axis=1), nan=0.0, posinf=0.0, neginf=0.0)  # (S, L, n)
        target = np.nan_to_num(self.y - offset, nan=0.0, posinf=0.0, neginf=0.0)  # (S, n)
        params = [self.params[self.free[j]] for j in linear]
        lower = np.array(
            [max(p.lower, 1e-300) if self.is_log[j] else p.lower for p, j in zip(params, linear, strict=True)]
        )
        upper = np.array([p.upper for p in params])
        init = np.array([p.init for p in params])
        coef = _box_least_squares(basis, target, lower, upper, init)
        for _ in range(robust_steps if self.loss == "huber" else 0):
            residual = np.abs(np.einsum("sl,sln->sn", coef, basis) - target)
            root_weight = np.sqrt(self.delta / np.maximum(residual, self.delta))
            coef = _box_least_squares(basis * root_weight[:, None, :], target * root_weight, lower, upper, init)
        for col, j in enumerate(linear):
            u[:, j] = np.log(coef[:, col]) if self.is_log[j] else coef[:, col]
        return u

    def screen(self, n_points: int, seed: int, extra: np.ndarray | None = None) -> np.ndarray:
        """Low-discrepancy points over the free box (plus ``extra`` internal points, e.g. the law's
        own grid), linear parameters projected: by least squares, then, for a Huber loss, by
        reweighted steps towards the Huber optimum, so the ranking is by the loss being fitted."""
        lo = np.where(np.isfinite(self.lower), self.lower, -SCREEN_SPAN)
        hi = np.where(np.isfinite(self.upper), self.upper, SCREEN_SPAN)
        points = lo + (hi - lo) * _low_discrepancy(n_points, len(self.free), seed)
        if extra is not None:
            points = np.vstack([extra, points])
        return self.project_linear(points, robust_steps=ROBUST_STEPS)

    def at_bound(self, u: np.ndarray) -> list[str]:
        span = np.where(np.isfinite(self.upper - self.lower), self.upper - self.lower, 1.0)
        tol = 1e-6 * np.maximum(span, 1.0)
        hits = (np.isfinite(self.lower) & (u <= self.lower + tol)) | (np.isfinite(self.upper) & (u >= self.upper - tol))
        return [self.params[self.free[j]].name for j in np.flatnonzero(hits)]

    def stderr(self, u: np.ndarray) -> np.ndarray:
        """Gauss-Newton standard errors in natural units (nan where not identifiable)."""
        out = np.full(len(self.params), np.nan)
        n, p = len(self.y), len(u)
        if n <= p:
            return out
        pred, jac = self.jacobian(u)
        sigma2 = float(np.sum((pred - self.y) ** 2) / (n - p))
        try:
            cov = np.linalg.pinv(jac @ jac.T) * sigma2
        except np.linalg.LinAlgError:
            return out
        se_internal = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        natural = self.natural(u)[self.free]
        out[self.free] = np.where(self.is_log, natural * se_internal, se_internal)
        return out


_BLAS = None


def single_threaded_blas():
    """A context in which BLAS runs on one thread.

    The engine's matrices are tiny (a few parameters by a few hundred points): a threaded BLAS
    only spins its threads for each call, which under load made L-BFGS-B alone cost 5 ms per
    iteration (the largest single cost of every fit, measured with cProfile)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def minimize_law(*args, **kwargs) -> Optimum:
    """Fit ``law`` to targets ``y`` (already in the law's target space); see :func:`_minimize_law`."""
    with single_threaded_blas():
        return _minimize_law(*args, **kwargs)


def _minimize_law(
    law: Law,
    X: dict[str, np.ndarray],
    y: np.ndarray,
    *,
    loss: str | None = None,
    huber_delta: float | None = None,
    seed: int = 0,
    n_screen: int | None = None,
    n_polish: int | None = -1,
    fixed: dict[str, float] | None = None,
    with_stderr: bool = True,
) -> Optimum:
    """Fit ``law`` to targets ``y`` (already in the law's target space)."""
    loss = loss or law.loss
    delta = law.huber_delta if huber_delta is None else huber_delta
    if loss not in ("lsq", "huber"):
        raise ValueError(f"loss must be 'lsq' or 'huber', got {loss!r}")
    y = np.asarray(y, float)
    if loss == "lsq" and not fixed:
        exact = law.closed_form(X, y)
        if exact is not None:
            problem = Problem(law, X, y, loss, delta)
            u = problem.internal(exact)
            value = float(problem.objective(u))
            outside = [p.name for p, v in zip(law.parameters, exact, strict=True) if not p.lower <= v <= p.upper]
            return Optimum(
                np.asarray(exact, float),
                value,
                True,
                "closed form (least squares)",
                0,
                1,
                outside,
                problem.stderr(u) if with_stderr else None,
            )
    presolved = law.presolve(X, y)
    problem = Problem(law, X, y, loss, delta, fixed={**presolved, **(fixed or {})})
    starts = np.clip(problem.internal(np.atleast_2d(law.initial_guesses(X, y))), problem.lower, problem.upper)
    ranked = _ranked(problem, starts, law.n_screen if n_screen is None else n_screen, seed)
    n_polish = law.n_polish if n_polish == -1 else n_polish
    chosen = ranked if n_polish is None else ranked[:n_polish]
    bounds = [
        (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
        for lo, hi in zip(problem.lower, problem.upper, strict=True)
    ]
    if len(chosen) > N_REFINE:
        # many starts (a grid polished in full, as nd's): one batched Levenberg-Marquardt brings
        # each to the floor of its basin, and only the best few are refined one by one
        settled, settled_loss, _ = problem.batched_lm(chosen)
        chosen = settled[np.argsort(settled_loss, kind="stable")[:N_REFINE]]
    refined, settled_best = [], None
    if law.n_settle:
        # a second local search from the best screened starts: it can end in other basins than
        # L-BFGS-B's (lower on some data, higher on others); its best point gets its own path below
        points, values, _ = problem.batched_lm(
            ranked[: law.n_settle], max_iterations=POOL_ITERATIONS, ftol=1e-12, xtol=1e-12
        )
        settled_best, settled_value = points[int(np.argmin(values))], float(np.min(values))
    for initial in chosen:
        res = minimize(
            problem.value_and_grad,
            initial,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 3000, "ftol": 1e-13, "gtol": 1e-10},
        )
        refined.append(
            (
                float(res.fun),
                np.clip(res.x, problem.lower, problem.upper),
                bool(res.success),
                f"L-BFGS-B: {res.message}",
            )
        )
    refined.sort(key=lambda item: item[0])
    n_finish = N_FINISH_MULTIMODAL if law.multimodal else N_FINISH
    finished = [problem.finish(u) for _, u, _, _ in refined[:n_finish]]
    best = min(refined + finished, key=_lowest)
    best = _refine_further(problem, best)
    if law.multimodal:
        best = _continue(problem, best)
    if settled_best is not None and settled_value < best[0]:
        # the settled search's best point, finished and continued on its own path: it competes
        # only with the end of the path above, which it can therefore never make worse. A settled
        # point above that end has converged in a basin the first path already beat (on 161 DCLM
        # bnsl fits such a point won 5 times, by at most 4e-6), so its path is not taken
        value, u, success, message = _continue(problem, problem.finish(settled_best))
        best = min([best, (value, u, success, f"settled search, {message}")], key=_lowest)
    value, u, success, message = best
    converged = success and value < PENALTY
    return Optimum(
        problem.natural(u),
        value,
        converged,
        message,
        len(chosen) + (min(law.n_settle, len(ranked)) if settled_best is not None else 0),
        problem.n_evaluations,
        problem.at_bound(u),
        problem.stderr(u) if with_stderr else None,
    )


def _refine_further(problem: Problem, best: tuple) -> tuple:
    """The law's own refinement starts around the best point (``Law.refinement_starts``), linear
    parameters projected, settled together by the batched solve; the lowest is finished and kept
    only if it ends below ``best``."""
    starts = _refinement(problem, best[1])
    if starts is None:
        return best
    settled, value, _ = problem.batched_lm(starts, max_iterations=POOL_ITERATIONS, ftol=1e-12, xtol=1e-12)
    finished = problem.finish(settled[int(np.argmin(value))])
    return min([best, finished], key=_lowest)


def _ranked(problem: Problem, starts: np.ndarray, n_screen: int, seed: int) -> np.ndarray:
    """Internal starts plus, with ``n_screen``, the screen's points, best (by loss) first."""
    if n_screen:
        starts = problem.screen(n_screen, seed, extra=starts)
    return starts[np.argsort(problem.objective(starts), kind="stable")]


def _refinement(problem: Problem, u: np.ndarray) -> np.ndarray | None:
    """The law's refinement starts around internal point ``u``, in internal units with the linear
    parameters projected (None where the law has none)."""
    extra = problem.law.refinement_starts(problem.natural(u), problem.X)
    if extra is None or not len(extra):
        return None
    inside = np.clip(problem.internal(np.atleast_2d(extra)), problem.lower, problem.upper)
    return problem.project_linear(inside, robust_steps=ROBUST_STEPS)


def _lowest(item: tuple) -> tuple:
    """Order (loss, u, converged, message) candidates: lowest loss, a converged one on a tie."""
    return item[0], not item[2]


def _continue(problem: Problem, best: tuple) -> tuple:
    """Continue a point that ran out of trust-region budget, typically along a flat valley of a
    multimodal law (a break sharpening, or a and b_ref trading off towards a range limit).

    A trust-region solve creeps along such a valley (on DCLM webqs, 2,400 evaluations moved BNSL's
    c0 by 0.005 and it was still descending), so solves alternate with extrapolation: the
    displacement between the ends of the last two solves is tried at ``VALLEY_STRIDES`` times its
    length, as it is and with the linear parameters re-projected onto the valley floor, and the
    lowest trial is kept if it descends. A solve is short (``SEGMENT_EVALUATIONS``) after a
    successful extrapolation and twice as long after each one that fails (a curved valley, where
    a long solve keeps its trust region). It ends when a solve converges, a fresh solve of a
    finish's budget from there converges too, and no trial descends (the solves' own convergence
    test decides), or after ``VALLEY_EVALUATIONS`` evaluations (a confirming solve may pass it by up
    to a finish's budget)."""
    if best[2]:
        return best
    point = previous_end = best[1]
    segment_budget, spent, confirmed = SEGMENT_EVALUATIONS, 0, False
    while spent < VALLEY_EVALUATIONS:
        # never less than a finish's budget: a confirming solve is a full one, even at the end
        budget = min(segment_budget, max(VALLEY_EVALUATIONS - spent, FINISH_EVALUATIONS))
        segment = problem.finish(point, budget)
        spent += budget
        best = min([best, segment], key=_lowest)
        trials = np.clip(
            segment[1] + VALLEY_STRIDES[:, None] * (segment[1] - previous_end), problem.lower, problem.upper
        )
        # the projection is approximate (a few reweighted steps): where the valley's slope is
        # below its error, the raw extrapolation is the better trial
        projected = problem.project_linear(trials, robust_steps=ROBUST_STEPS)
        if projected is not trials:  # a law with linear parameters
            trials = np.vstack([trials, projected])
        values = problem.objective(trials)
        lowest = int(np.argmin(values))
        previous_end = segment[1]
        if values[lowest] < segment[0] * (1 - VALLEY_DESCENT):
            point, segment_budget, confirmed = trials[lowest], SEGMENT_EVALUATIONS, False
            best = min([best, (float(values[lowest]), point, False, "valley extrapolation")], key=_lowest)
        elif segment[2]:
            if confirmed:
                break
            # converged after a short solve: a fresh solve of a finish's budget confirms it (a trust
            # region shrunk along the valley can meet the loss test while still creeping)
            confirmed, point, segment_budget = True, segment[1], FINISH_EVALUATIONS
        else:
            point, segment_budget = segment[1], 2 * segment_budget
    return best


def _solve_rows(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``solve(lhs[a], rhs[a])`` for each row a; a singular row alone takes the diagonal step
    ``rhs / diag(lhs)``, so that every row's path is independent of the others in its batch (a
    bootstrap's replicates give the same results however they are split into batches)."""
    try:
        return np.linalg.solve(lhs, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(rhs)
        for row in range(len(rhs)):
            try:
                out[row] = np.linalg.solve(lhs[row], rhs[row])
            except np.linalg.LinAlgError:
                out[row] = rhs[row] / np.maximum(np.diagonal(lhs[row]), 1e-300)
        return out


def _finite(values: np.ndarray) -> np.ndarray:
    """``values`` with nan and infinities replaced by 0 (itself where all are finite, the common case)."""
    return values if np.isfinite(values).all() else np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """``index`` as a slice where its positions are consecutive: indexing by a slice is a view,
    several times cheaper than a copy at the sizes of a law's parameter vector."""
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index


def _box_least_squares(basis: np.ndarray, target: np.ndarray, lower, upper, init) -> np.ndarray:
    """argmin_x ||x @ basis - target||^2 subject to lower <= x <= upper, for a batch.

    ``basis`` has shape (S, L, n), ``target`` (S, n); L is small (a law's linear parameters), so
    every active set (each coefficient free, at its lower or at its upper bound) is solved and
    the best feasible solution kept; a batch row with no finite solution gets ``init`` (clipped).
    The all-free set comes first: where its solution is feasible and the system well conditioned,
    it is the optimum of the convex problem, and that row's other active sets are not tried (the
    screen's rows mostly). In a nearly singular system the small ridge of the solve leaves the
    free solution a hair above the optimum, where a bounded set can be lower: those rows try all."""
    n_batch, n_lin, _ = basis.shape
    gram = basis @ np.swapaxes(basis, 1, 2)  # (S, L, L)
    rhs = (basis @ target[..., None])[..., 0]  # (S, L)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # Hadamard's ratio det(G) / prod(diag G) in [0, 1]: near 0 for nearly collinear basis rows
        conditioned = np.linalg.det(gram) / np.prod(np.einsum("sll->sl", gram), axis=1) > WELL_CONDITIONED
    best = np.broadcast_to(np.clip(init, lower, upper), (n_batch, n_lin)).astype(float).copy()
    best_sse = np.full(n_batch, np.inf)
    rows = np.arange(n_batch)  # the rows whose optimum is not known yet
    choices = [("free", "lower", "upper")] * n_lin
    for pattern in itertools.product(*choices):  # ('free', ..., 'free') first
        fixed = np.array([c != "free" for c in pattern])
        if not rows.size:
            break
        if any(
            (c == "lower" and not np.isfinite(lower[j])) or (c == "upper" and not np.isfinite(upper[j]))
            for j, c in enumerate(pattern)
        ):
            continue
        x = np.zeros((rows.size, n_lin))
        for j, c in enumerate(pattern):
            if c != "free":
                x[:, j] = lower[j] if c == "lower" else upper[j]
        part = basis if rows.size == n_batch else basis[rows]
        free = np.flatnonzero(~fixed)
        if free.size:
            sub_gram = gram[rows][:, free[:, None], free[None, :]] + 1e-12 * np.eye(free.size)
            sub_rhs = rhs[rows][:, free] - np.einsum("sij,sj->si", gram[rows][:, free][:, :, fixed], x[:, fixed])
            with np.errstate(invalid="ignore", over="ignore"):
                try:
                    x[:, free] = np.linalg.solve(sub_gram, sub_rhs[..., None])[..., 0]
                except np.linalg.LinAlgError:
                    continue
        feasible = np.all(np.isfinite(x) & (x >= lower - 1e-12) & (x <= upper + 1e-12), axis=1)
        with np.errstate(invalid="ignore", over="ignore"):
            residual = np.einsum("sl,sln->sn", x, part) - target[rows]
            sse = np.where(feasible, np.sum(residual**2, axis=1), np.inf)
        better = sse < best_sse[rows]
        best[rows[better]], best_sse[rows[better]] = np.clip(x[better], lower, upper), sse[better]
        if free.size == n_lin:  # the all-free set: its feasible, well-conditioned rows are solved
            rows = rows[~(feasible & conditioned)]
    return best


def _low_discrepancy(n_points: int, dim: int, seed: int) -> np.ndarray:
    """A randomly shifted R_d (Kronecker) sequence in [0, 1)^dim (Roberts 2018): low discrepancy
    in any dimension, deterministic given ``seed``, and numpy only (scipy.stats.qmc takes
    seconds to import)."""
    phi = 2.0
    for _ in range(60):  # phi_d solves x^(d+1) = x + 1
        phi = (1.0 + phi) ** (1.0 / (dim + 1))
    alpha = phi ** -np.arange(1, dim + 1, dtype=float)
    shift = np.random.default_rng(seed).random(dim)
    return (shift + np.arange(1, n_points + 1)[:, None] * alpha) % 1.0


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
    chunk: int = 100,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Refit ``law`` to many reweightings of one data set at once (bootstrap replicates).

    ``counts`` (B, n_points): how often each point is drawn. Each replicate starts from ``warm``
    (the full-data optimum) and from the best, by the replicate's loss, of the starting points a
    cold fit of its resample would rank (the law's own and, with ``law.n_screen``, its screen);
    all are settled by one batched Levenberg-Marquardt, and each replicate's best point is finished
    by the trust-region solve on the resample itself, whose convergence test is the replicate's.
    Returns (thetas (B, n_params), losses (B,), converged (B,)); losses are the mean loss on
    the resample, as a cold fit of it reports.

    A multimodal law's screen (thousands of candidates) costs as much as the rest of a cold fit,
    so its replicates start instead from one pool: the full data's ``N_POOL`` best candidates (its
    own grid and screen, ranked on the full data), the law's refinement starts around ``warm``, and
    ``warm``, all settled by the batched solve to convergence before each replicate's best is
    finished and, in a flat valley, continued as a cold fit is. How it compares with cold refits
    of the same resamples is measured by ``benchmarks/bnsl_replicates.py``; neither search is
    global, so neither wins on every replicate.
    """
    loss = loss or law.loss
    delta = law.huber_delta if huber_delta is None else huber_delta
    problem = Problem(law, X, y, loss, delta)
    counts = np.asarray(counts, float)
    n_keep = min(N_REFINE, law.n_polish or N_REFINE)
    thetas, losses, converged = [], [], []
    warm_u = np.clip(problem.internal(np.asarray(warm, float)), problem.lower, problem.upper)
    pool = _shared_pool(problem, seed, warm_u) if law.multimodal else None

    for begin in range(0, len(counts), chunk):
        part = counts[begin : begin + chunk]
        starts, replicates = [], []
        for weights in part:
            index = np.repeat(np.arange(len(y)), weights.astype(int))
            replicate = Problem(law, {c: x[index] for c, x in X.items()}, y[index], loss, delta)
            replicates.append(replicate)
            if pool is not None:
                starts.append(np.vstack([warm_u, pool]))
                continue
            # the candidates a cold fit of this resample would rank: the law's own starting points
            # and its screen, computed on the resample
            guesses = law.initial_guesses(replicate.X, replicate.y)
            candidates = np.clip(replicate.internal(np.atleast_2d(guesses)), problem.lower, problem.upper)
            if law.n_screen:
                candidates = np.vstack([candidates, replicate.screen(law.n_screen, seed)])
            value = replicate.objective(candidates)
            starts.append(np.vstack([warm_u, candidates[np.argsort(value, kind="stable")[:n_keep]]]))
        per = max(len(s) for s in starts)
        block = np.stack([np.vstack([s, np.repeat(s[:1], per - len(s), axis=0)]) for s in starts])  # (b, per, m)
        u, value, _ = problem.batched_lm(
            block.reshape(-1, block.shape[-1]),
            np.repeat(part, per, axis=0),
            max_iterations=SETTLE_ITERATIONS if pool is None else POOL_ITERATIONS,
            **({} if pool is None else {"ftol": 1e-12, "xtol": 1e-12}),
        )
        best = u.reshape(len(part), per, -1)[np.arange(len(part)), np.argmin(value.reshape(len(part), per), axis=1)]
        # each replicate's best point is finished exactly as a cold fit ends: the trust-region
        # solve on the resample itself, whose own convergence test decides
        for replicate, v in zip(replicates, best, strict=True):
            final, w, ok, _ = replicate.finish(v)
            if pool is not None:  # a flat valley: continued as a cold fit continues its best
                final, w, ok, _ = _continue(replicate, (final, w, ok, ""))
            start_value = float(replicate.objective(v))
            if start_value < final:
                # the finish starts strictly inside the box: from a start on a bound it can converge a
                # hair above it (150 of 702 DCLM replicates, both forms, all at bounds, at most 5.9e-9
                # relative), and its test then holds for the start; one that ends further above did
                # not reach the start's point
                ok = ok and final - start_value <= NUDGE_SLACK * abs(start_value)
                final, w = start_value, v
            thetas.append(problem.natural(w))
            losses.append(final)
            converged.append(ok and final < PENALTY)
    return np.reshape(thetas, (len(counts), len(law.parameters))), np.array(losses, float), np.array(converged, bool)


def _shared_pool(problem: Problem, seed: int, warm_u: np.ndarray) -> np.ndarray:
    """A multimodal law's ``N_POOL`` best starting candidates on the full data (its own grid and
    screen, linear parameters projected) and its refinement starts around the full-data optimum
    ``warm_u``: the starts every bootstrap replicate shares."""
    law = problem.law
    guesses = np.clip(
        problem.internal(np.atleast_2d(law.initial_guesses(problem.X, problem.y))), problem.lower, problem.upper
    )
    pool = _ranked(problem, guesses, law.n_screen, seed)[:N_POOL]
    # the law's refinement starts around the full-data optimum, as a cold fit tries around its own
    extra = _refinement(problem, warm_u)
    return pool if extra is None else np.vstack([pool, extra])
