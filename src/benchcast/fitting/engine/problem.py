"""A fitting problem: a law, its data and loss, and the map between natural and internal parameters.

Internal parameters are the free ones (a presolved parameter is held fixed), scale parameters in log
space, each within the law's box for these data (declared bounds narrowed by ``Law.search_box``). The
probe points, where a solve checks that its forecast stopped moving, are the fitted runs and the
largest run one and two decades up in every scale covariate."""

from __future__ import annotations

import math

import numpy as np

from benchcast.fitting.engine.loss import make_loss
from benchcast.laws.base import Law

PENALTY = 1e10  # objective for parameter vectors whose prediction is not finite
SCALE_COVARIATES, PROBE_FACTORS = ("flops", "params", "tokens"), (10.0, 100.0)  # the extrapolation probes


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
        self.loss = make_loss(loss, huber_delta)
        self.fixed = dict(fixed or {})
        self.params = law.parameters
        self.free = [i for i, p in enumerate(self.params) if p.name not in self.fixed]
        self.is_log = is_log = np.array([self.params[i].log for i in self.free], bool)
        # the free parameters optimised in log space, as positions among the free ones and in theta
        self.log_free = _as_slice(np.flatnonzero(is_log))
        self.log_theta = _as_slice(np.asarray(self.free, int)[np.flatnonzero(is_log)])
        self.log_pairs = [(int(j), self.free[j]) for j in np.flatnonzero(is_log)]  # (position, index in theta)
        self.all_free = len(self.free) == len(self.params)
        box = law.search_box(X)
        # the law's box narrows its declared bounds, never widens them
        bounds = [(p.lower, p.upper, *box.get(p.name, (p.lower, p.upper))) for p in (self.params[i] for i in self.free)]
        lower, upper = np.array([(max(a, c), min(b, d)) for a, b, c, d in bounds], float).reshape(-1, 2).T
        with np.errstate(divide="ignore"):
            self.lower = np.where(is_log, np.log(np.maximum(lower, 1e-300)), lower)
            self.upper = np.where(is_log, np.log(upper), upper)
        self.template = np.array([self.fixed.get(p.name, p.init) for p in self.params], float)
        self.n_evaluations = 0
        self.X_probed = _with_probes(X)
        spread = float(np.std(self.y)) if self.y.size else 1.0
        self.target_scale = max(spread, 1e-3 * float(np.max(np.abs(self.y), initial=1.0)), 1e-12)
        self.loss_floor = (1e-6 * self.target_scale) ** 2  # a loss this small is an exact fit

    def natural(self, u: np.ndarray) -> np.ndarray:
        """Natural parameter vectors (..., n_params) of internal ones (..., n_free)."""
        u = np.asarray(u, float)
        if self.all_free:
            theta = u.copy()
        else:
            theta = np.broadcast_to(self.template, u.shape[:-1] + self.template.shape).copy()
            theta[..., self.free] = u
        theta[..., self.log_theta] = np.exp(u[..., self.log_free])
        return theta

    def internal(self, theta: np.ndarray) -> np.ndarray:
        """Internal vectors (..., n_free) of natural ones (..., n_params)."""
        free = np.asarray(theta, float)[..., self.free]
        with np.errstate(divide="ignore"):
            return np.where(self.is_log, np.log(np.maximum(free, 1e-300)), free)

    def inside(self, theta: np.ndarray) -> np.ndarray:
        """Internal vectors of natural ones, clipped to the box (a batch: shape (S, n_free))."""
        return np.clip(self.internal(np.atleast_2d(theta)), self.lower, self.upper)

    def predict(self, u: np.ndarray) -> np.ndarray:
        """The law's prediction at internal vectors u (..., n_free), shape (..., n_points)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self.law.forward(self.natural(u), self.X)

    def predict_probed(self, u: np.ndarray) -> np.ndarray:
        """The prediction at the fitted points followed by the probe points, shape (..., n_points + n_probes)."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self.law.forward(self.natural(u), self.X_probed)

    def objective(self, u: np.ndarray) -> np.ndarray:
        """Loss of a batch of internal vectors, shape (..., n_free) -> (...)."""
        self.n_evaluations += math.prod(np.shape(u)[:-1])
        values = self.loss.mean(self.predict(u) - self.y)
        return np.where(np.isfinite(values), values, PENALTY)

    def jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prediction at u and its Jacobian (n_free, n_points) in internal units: the law's own where it declares one,
        else central differences."""
        exact = self._exact_jacobian(u)
        return self._difference_jacobian(u) if exact is None else exact

    def probed_with_jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The prediction at the fitted and probe points (``predict_probed``) and the law's own Jacobian at the fitted
        ones (``jacobian``), from one evaluation, not counted (the solver counts the Jacobians it uses); None where the
        law declares no Jacobian."""
        exact = self._exact_jacobian(u, counted=False)
        if exact is None:
            return None
        pred, jac = exact
        probes = {c: x[len(self.y) :] for c, x in self.X_probed.items()}
        if not len(next(iter(probes.values()), ())):
            return pred, jac
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            probed = self.law.forward(self.natural(u), probes)
        return np.concatenate([pred, probed], axis=-1), jac

    def _exact_jacobian(self, u: np.ndarray, counted: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
        """The law's own prediction and Jacobian at the fitted points in internal units, or None where it has none."""
        theta = self.natural(u)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            exact = self.law.jacobian(theta, self.X)
        if exact is None:
            return None
        self.n_evaluations += counted
        pred, jac = exact
        # the law's array is this call's own (Law.jacobian returns a new one): scaled in place below
        jac = np.asarray(jac, float) if self.all_free else np.asarray(jac, float)[..., self.free, :]
        if not jac.flags.writeable:
            jac = jac.copy()
        # d/d(log p) = p d/dp for parameters optimised in log space (one row at a time: a view each, no copy)
        for position, index in self.log_pairs:
            jac[..., position, :] *= theta[..., index, None]
        return pred, jac

    def _difference_jacobian(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _with_probes(X: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The covariates followed by the probe points: the largest run (by its first scale covariate) with every scale
    covariate multiplied by ``PROBE_FACTORS``, its other covariates kept."""
    scales = [c for c in SCALE_COVARIATES if c in X]
    if not scales or not len(X[scales[0]]):
        return X
    largest = int(np.argmax(X[scales[0]]))
    factors = np.array(PROBE_FACTORS)
    return {
        c: np.concatenate([x, x[largest] * factors if c in scales else np.repeat(x[largest], len(factors))])
        for c, x in X.items()
    }


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """``index`` as a slice where its positions are consecutive: indexing by a slice is a view, several times cheaper
    than a copy at the sizes of a law's parameter vector."""
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index
