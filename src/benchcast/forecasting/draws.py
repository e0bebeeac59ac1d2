"""Draws per forecast point, and every interval read from them.

A forecast's uncertainty is a set of draws per point: ``values`` of shape (replicates, points),
the points' covariates (their distances live on the targets: :func:`benchcast.forecasting.targets.distances`).
The bootstrap builds score draws through the fitted law (:meth:`FittedLaw.draw_scores`, the path of
the point forecast); a combination of laws mixes them (:meth:`ScoreDraws.blend`); the extrapolation error
widens them (:func:`benchcast.forecasting.extrapolation.widen`); and every interval, quantile and
coverage is read from them here, one way.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from benchcast.errors import BenchcastError
from benchcast.validation import check_level

DRAWS = 4000  # score draws per point of a widened (extrapolation-aware) forecast
NORMAL_84 = 0.8413447460685429  # Phi(1): the percentile one sd above a normal's median


def quantile(draws: np.ndarray, q: float) -> np.ndarray:
    """``np.nanquantile(draws, q, axis=0)``, vectorised where there is no nan (nanquantile loops over columns)."""
    draws = np.asarray(draws, float)
    if not np.isnan(draws).any():
        return np.quantile(draws, q, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan column is nan, as it should be
        return np.nanquantile(draws, q, axis=0)


def net_sd(boot_draws: np.ndarray, total: np.ndarray) -> np.ndarray:
    """sqrt(max(total^2 - b^2, 0)), b each point's robust sd of the log draws (half the 68 % spread)."""
    logs = np.log(np.clip(boot_draws, 1e-12, None))
    b = (quantile(logs, NORMAL_84) - quantile(logs, 1 - NORMAL_84)) / 2
    return np.sqrt(np.maximum(np.asarray(total, float) ** 2 - np.nan_to_num(b) ** 2, 0.0))


@dataclass(frozen=True, eq=False)
class Draws:
    """Draws of a quantity at each of several points, and the intervals they imply."""

    values: np.ndarray
    points: dict = field(default_factory=dict)
    shape: tuple | None = None
    method: str = "linear"

    def __post_init__(self):
        values = np.asarray(self.values, float)
        if values.ndim != 2:
            raise BenchcastError(f"draws must be a (replicates, points) array, got shape {values.shape}.")
        object.__setattr__(self, "values", values)
        if self.shape is None:
            object.__setattr__(self, "shape", (values.shape[1],))

    @property
    def n_replicates(self) -> int:
        """Number of draws per point."""
        return int(self.values.shape[0])

    @property
    def n_points(self) -> int:
        """Number of points."""
        return int(self.values.shape[1])

    def quantile(self, q: float) -> np.ndarray:
        """The ``q`` quantile of each point's draws.

        Parameters
        ----------
        q : float
            Quantile in [0, 1].

        Returns
        -------
        array of :attr:`shape`
        """
        linear = self.method == "linear"
        out = quantile(self.values, q) if linear else np.quantile(self.values, q, axis=0, method=self.method)
        return np.asarray(out).reshape(self.shape)

    def interval(self, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """The equal-tailed interval holding ``level`` of each point's draws.

        Parameters
        ----------
        level : float
            In (0, 1), e.g. 0.9.

        Returns
        -------
        (lower, upper) : arrays of :attr:`shape`
        """
        tail = (1 - check_level(level)) / 2
        return self.quantile(tail), self.quantile(1 - tail)

    def coverage(self, true, level: float = 0.9) -> float:
        """Share of the points whose ``true`` value lies inside their ``level`` interval.

        Parameters
        ----------
        true : array
            One observed value per point (in :attr:`shape`).
        level : float
            In (0, 1).

        Returns
        -------
        float
            nan when there is no point.
        """
        true = np.asarray(true, float)
        if not true.size:
            return float("nan")
        lower, upper = self.interval(level)
        return float(np.mean((true.reshape(self.shape) >= lower) & (true.reshape(self.shape) <= upper)))


@dataclass(frozen=True, eq=False)
class ScoreDraws(Draws):
    """Score draws at each forecast point (see :class:`Draws`), as the fitted law forecasts them.

    Parameters
    ----------
    values, points, shape, method
        As :class:`Draws`.
    """

    def take(self, columns) -> ScoreDraws:
        """The draws at some of the points (a boolean mask or indices over the points), flat.

        Parameters
        ----------
        columns : array of bool or int

        Returns
        -------
        ScoreDraws
        """
        points = {name: np.asarray(v)[columns] for name, v in self.points.items()}
        return ScoreDraws(self.values[:, columns], points, None, self.method)

    @classmethod
    def blend(cls, parts: Mapping[str, ScoreDraws], weights: Mapping[str, float]) -> ScoreDraws:
        """The weighted mixture of several laws' draws: replicate b of the mixture is the weighted
        sum of replicate b of each law with a positive weight (as many replicates as the fewest).

        Parameters
        ----------
        parts : mapping of law name to ScoreDraws
            Draws of each law at the same points.
        weights : mapping of law name to float
            Weights (laws with weight <= 0 are left out).

        Returns
        -------
        ScoreDraws
            The points of the first law used.
        """
        used = {name: float(w) for name, w in weights.items() if w > 0}
        if not used:
            raise BenchcastError("a blend of laws needs at least one law with a positive weight.")
        first = parts[next(iter(used))]
        n = min(parts[name].n_replicates for name in used)
        values = sum(w * parts[name].values[:n] for name, w in used.items())
        return cls(values, first.points, first.shape, first.method)


def score_interval(draws, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The draws' equal-tailed interval clipped to [0, 1] (a score cannot leave it; its coverage does not change)."""
    lower, upper = draws.interval(level)
    return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
