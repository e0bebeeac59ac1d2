"""A shape shared by several recipes measured on few sizes: z = log(-log Q') linear in x = log10 C on the
chance-normalised score Q' (the Krajewski et al. floor law's form), by least squares over every recipe's runs.

Three shapes, chosen by the squared log-ratio error forecasting each recipe's largest size from the rest
(:func:`choose_shape`):
``shared`` (one exponent, an offset per recipe fitted on all its sizes), ``anchored`` (one exponent, each recipe's
level at its own largest size, its slope spread as the recipes' own slopes spread) and ``separate`` (a line per
recipe). Draws (:func:`shape_draws`) are normal in the coefficients, plus a new run's residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchcast.fitting.metrics import squared_log_ratio

KINDS = ("shared", "anchored", "separate")


@dataclass(frozen=True)
class Shape:
    """A fitted shape: kind, coefficients, covariance, residual variance, recipes' tops and slopes' spread."""

    kind: str
    recipes: tuple
    coef: np.ndarray
    cov: np.ndarray
    var: float
    tops: dict
    spread: float

    def predict(self, recipe: int, x: np.ndarray) -> np.ndarray:
        """z at ``x`` for ``recipe``."""
        if self.kind == "anchored":
            top, level, _ = self.tops[recipe]
            return level - self.coef[-1] * (x - top)
        return _design(np.full(len(x), recipe), x, self.recipes, self.kind) @ self.coef


def _design(recipe: np.ndarray, x: np.ndarray, recipes, kind: str) -> np.ndarray:
    """A column per recipe's offset, then -x (one exponent) or -x per recipe (separate)."""
    onehot = (np.asarray(recipe)[:, None] == np.asarray(recipes)[None, :]).astype(float)
    return np.hstack([onehot, -x[:, None] * (onehot if kind == "separate" else 1.0)])


def fit_shape(pts: np.ndarray, kind: str) -> Shape | None:
    """The shape of ``kind`` fitted to ``pts`` (rows: recipe index, x, z); None without a residual degree of freedom."""
    recipes = tuple(sorted({int(i) for i in pts[:, 0]}))
    X, y = _design(pts[:, 0], pts[:, 1], recipes, "separate" if kind == "separate" else "shared"), pts[:, 2]
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    dof = len(y) - np.linalg.matrix_rank(X)
    if dof < 1:
        return None
    var = float(np.sum((y - X @ coef) ** 2) / dof)
    tops, slopes = {}, []
    for i in recipes:
        own = pts[pts[:, 0] == i]
        top = own[:, 1] == own[:, 1].max()
        tops[i] = (float(own[top, 1][0]), float(own[top, 2].mean()), int(top.sum()))
        if len(np.unique(own[:, 1])) > 1:
            slopes.append(-np.polyfit(own[:, 1], own[:, 2], 1)[0])
    spread = float(np.var(slopes, ddof=1)) if len(slopes) > 1 else 0.0
    return Shape(kind, recipes, coef, var * np.linalg.pinv(X.T @ X), var, tops, spread)


def shape_draws(shape: Shape, recipe: int, x: np.ndarray, common: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """The law's z draws (replicates, points) for ``recipe`` along ``x`` and a new run's residual (replicates, 1)."""
    n = len(common)
    residual = rng.normal(0.0, np.sqrt(shape.var), (n, 1))
    if shape.kind != "anchored":
        return common @ _design(np.full(len(x), recipe), x, shape.recipes, shape.kind).T, residual
    top, level, runs = shape.tops[recipe]
    slope = common[:, -1:] + rng.normal(0.0, np.sqrt(shape.spread), (n, 1))
    level = level + rng.normal(0.0, np.sqrt(shape.var / runs), (n, 1))
    return level - slope * (x[None, :] - top), residual


def common_draws(shape: Shape, n: int, rng) -> np.ndarray:
    """The coefficients' draws, shared by every recipe (replicates, coefficients)."""
    return rng.multivariate_normal(shape.coef, shape.cov, size=n)


def choose_shape(pts: np.ndarray, chance: dict | None = None) -> tuple[str, str]:
    """The shape with the least held-out squared log-ratio error on each recipe's largest size (3+ sizes)."""
    errors = {kind: [] for kind in KINDS}
    for i in sorted({int(i) for i in pts[:, 0]}):
        own = pts[:, 0] == i
        if len(np.unique(pts[own, 1])) < 3:
            continue
        held = own & (pts[:, 1] == pts[own, 1].max())
        fits = {kind: fit_shape(pts[~held], kind) for kind in KINDS}
        if all(fit is not None for fit in fits.values()):
            q = (chance or {}).get(i, 0.0)
            truth = q + (1 - q) * np.exp(-np.exp(pts[held, 2]))
            for kind, fit in fits.items():
                predicted = q + (1 - q) * np.exp(-np.exp(fit.predict(i, pts[held, 1])))
                errors[kind].append(np.mean(squared_log_ratio(truth, predicted)))
    if not errors["shared"]:
        return "anchored", (
            "shared exponent, each recipe's level at its largest size (no recipe has 3 sizes to choose the shape by "
            "forecasting its largest)"
        )
    means = {kind: float(np.mean(v)) for kind, v in errors.items()}
    kind = min(means, key=means.get)
    words = ", ".join(f"{k} {v:.3g}" for k, v in means.items())
    return kind, (
        f"{kind} shape (mean squared log-ratio error forecasting each recipe's largest size from the rest: {words})"
    )
