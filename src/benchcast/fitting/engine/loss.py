"""The fitting losses, one class each: the only place a residual's loss and its derivatives are
written. :func:`make_loss` is the one dispatch on the loss's name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class _Loss:
    """What every loss provides; the mean over points is written once, here."""

    kind: str
    delta: float
    robust: bool  # whether residuals past ``delta`` count linearly (the linear parameters are reweighted)

    def per_point(self, residual: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def mean(self, residual: np.ndarray) -> np.ndarray:
        """Mean loss over the last axis."""
        per_point = self.per_point(residual)
        return np.add.reduce(per_point, axis=-1) / per_point.shape[-1]


@dataclass(frozen=True)
class SquaredLoss(_Loss):
    """Half the squared residual (least squares)."""

    delta: float = np.inf
    kind = "lsq"
    robust = False

    def per_point(self, residual: np.ndarray) -> np.ndarray:
        """Half the square of each residual."""
        return 0.5 * residual**2

    def derivative(self, residual: np.ndarray) -> np.ndarray:
        """The residual itself."""
        return residual

    def reweighting(self, residual: np.ndarray) -> np.ndarray:
        """1 everywhere: least squares is its own quadratic majorant."""
        return np.ones_like(residual)


@dataclass(frozen=True)
class HuberLoss(_Loss):
    """Huber's loss: quadratic within ``delta`` of zero, linear beyond."""

    delta: float
    kind = "huber"
    robust = True

    def per_point(self, residual: np.ndarray) -> np.ndarray:
        """The Huber loss of each residual."""
        a = np.abs(residual)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(a <= self.delta, 0.5 * residual**2, self.delta * (a - 0.5 * self.delta))

    def derivative(self, residual: np.ndarray) -> np.ndarray:
        """The residual clipped to [-delta, delta]."""
        return np.clip(residual, -self.delta, self.delta)

    def reweighting(self, residual: np.ndarray) -> np.ndarray:
        """Iteratively reweighted least squares' weight, min(1, delta/|r|): a quadratic majorant."""
        return np.minimum(1.0, self.delta / np.maximum(np.abs(residual), 1e-300))


LOSSES = {"lsq": SquaredLoss, "huber": HuberLoss}


def make_loss(kind: str, delta: float) -> SquaredLoss | HuberLoss:
    """The loss named ``kind``."""
    if kind not in LOSSES:
        raise ValueError(f"loss must be 'lsq' or 'huber', got {kind!r}")
    return LOSSES[kind](float(delta))
