"""What a law declares about its parameters: each one's bounds and scale, and how the engine searches them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Covariates a law may need, by the names used everywhere (API, CLI, tables).
COVARIATES = ("flops", "params", "tokens", "k", "gold", "proxy")


@dataclass(frozen=True)
class SearchSettings:
    """How the fitting engine searches a law's parameters (:mod:`benchcast.fitting.engine`)."""

    n_screen: int = 0
    n_starts: int | None = 8
    n_replicate_starts: int = 3


BOUND_SIDES = ("lower", "upper")
BOUND_TOLERANCE = 1e-6  # relative to the range, in the optimiser's space: the engine's test for a bound


@dataclass(frozen=True)
class Parameter:
    """One fitted parameter: bounds in natural units, and how the optimiser should see it.

    A finite bound is either a *constraint* of the law itself (named in ``constraints``: an
    asymptotic score at most 1, an exponent at least 0 for a score that rises with compute), which a
    fit may rightly reach, or a *search limit*: a box set wide enough not to bind on data that
    determine the parameter, so that a fit reaching it did not find the parameter.
    """

    name: str
    lower: float
    upper: float
    init: float
    log: bool = False  # optimise log(value): for scales spanning many decades
    linear: bool = False  # the fitted target is affine in it (variable projection applies)
    description: str = ""
    constraints: tuple[str, ...] = ()  # which of BOUND_SIDES the law defines; the other bounds are search limits

    def __post_init__(self) -> None:
        unknown = set(self.constraints) - set(BOUND_SIDES)
        if unknown:
            raise ValueError(f"parameter {self.name}: constraints must name {BOUND_SIDES}, got {sorted(unknown)}")

    def bound(self, side: str) -> float:
        """The bound on one side, in natural units.

        Parameters
        ----------
        side : {'lower', 'upper'}

        Returns
        -------
        float
        """
        return self.lower if side == "lower" else self.upper

    def is_constraint(self, side: str) -> bool:
        """Whether the bound on one side is the law's own constraint (else a search limit).

        Parameters
        ----------
        side : {'lower', 'upper'}

        Returns
        -------
        bool
        """
        return side in self.constraints

    def constraint_text(self, side: str) -> str:
        """The bound on one side as an inequality: ``a ≤ 1``, ``c0 ≥ 0``.

        Parameters
        ----------
        side : {'lower', 'upper'}

        Returns
        -------
        str
        """
        return f"{self.name} {'≥' if side == 'lower' else '≤'} {self.bound(side):g}"

    def at_bounds(self, values) -> tuple[np.ndarray, np.ndarray]:
        """Which values sit on (or beyond) the lower and the upper bound, with the engine's tolerance
        in the space the optimiser sees (log for scale parameters).

        Parameters
        ----------
        values : array-like
            Values of this parameter, in natural units.

        Returns
        -------
        (lower, upper) : boolean arrays in the shape of ``values``
        """
        values = np.asarray(values, float)
        to_internal = np.log if self.log else (lambda v: v)
        with np.errstate(divide="ignore", invalid="ignore"):
            u, lo, hi = to_internal(values), to_internal(self.lower), to_internal(self.upper)
        span = hi - lo if np.isfinite(hi - lo) else 1.0
        tol = BOUND_TOLERANCE * max(span, 1.0)
        return np.isfinite(lo) & (u <= lo + tol), np.isfinite(hi) & (u >= hi - tol)
