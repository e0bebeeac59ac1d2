"""The fitting loss: the one place the Huber and least-squares losses are evaluated."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Loss:
    """The fitting loss of a residual: Huber with threshold ``delta``, or least squares.

    Parameters
    ----------
    kind : str
        ``'huber'`` or ``'lsq'`` (half the squared residual).
    delta : float
        The Huber threshold (also the trust-region solve's ``f_scale``).
    """

    kind: str
    delta: float

    def __post_init__(self):
        if self.kind not in ("lsq", "huber"):
            raise ValueError(f"loss must be 'lsq' or 'huber', got {self.kind!r}")

    @property
    def huber(self) -> bool:
        """Whether this is the Huber loss."""
        return self.kind == "huber"

    def per_point(self, residual: np.ndarray) -> np.ndarray:
        """The loss of each residual.

        Parameters
        ----------
        residual : ndarray
            Residuals (prediction - target) in the law's target space.

        Returns
        -------
        ndarray
            The loss of each, same shape.
        """
        if not self.huber:
            return 0.5 * residual**2
        a = np.abs(residual)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(a <= self.delta, 0.5 * residual**2, self.delta * (a - 0.5 * self.delta))

    def mean(self, residual: np.ndarray) -> np.ndarray:
        """Mean loss over the last axis (the sum over the count, as ``mean`` computes it, without its
        overhead: this runs once per evaluation of a fit).

        Parameters
        ----------
        residual : ndarray
            Residuals (prediction - target) in the law's target space, shape (..., n).

        Returns
        -------
        ndarray
            The mean loss, shape (...).
        """
        per_point = self.per_point(residual) if self.huber else residual**2
        mean = np.add.reduce(per_point, axis=-1) / per_point.shape[-1]
        return mean if self.huber else 0.5 * mean

    def derivative(self, residual: np.ndarray) -> np.ndarray:
        """The loss's derivative with respect to each residual.

        Parameters
        ----------
        residual : ndarray
            Residuals (prediction - target) in the law's target space.

        Returns
        -------
        ndarray
            The derivative at each, same shape.
        """
        return np.clip(residual, -self.delta, self.delta) if self.huber else residual

    def reweighting(self, residual: np.ndarray) -> np.ndarray:
        """Iteratively reweighted least squares' weight of each residual, min(1, delta/|r|): a
        quadratic majorant of the Huber loss (1 for least squares).

        Parameters
        ----------
        residual : ndarray
            Residuals (prediction - target) in the law's target space.

        Returns
        -------
        ndarray
            The weight of each, in (0, 1], same shape.
        """
        if not self.huber:
            return np.ones_like(residual)
        return np.minimum(1.0, self.delta / np.maximum(np.abs(residual), 1e-300))
