"""Fitting a family of distributions of the per-problem success probability p (:mod:`benchcast.generative.families`):
:func:`fit_family` by maximum likelihood on per-problem counts (each problem with its own n), :func:`fit_curve` by
least squares on an aggregate pass@1..pass@m curve (1 - pass@k = E[(1 - p)^k] is a moment of 1 - p)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from benchcast.errors import DataError
from benchcast.generative.families import get_family

BOUND_TOL = 1e-4


def _check_counts(n: np.ndarray, c: np.ndarray) -> None:
    if n.shape != c.shape or n.ndim != 1 or not n.size:
        raise DataError("per-problem counts need two arrays n and c of one length, one entry per problem.")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(c))):
        raise DataError("per-problem counts n and c must be finite (a NaN count is no count).")
    if np.any(n < 1) or np.any(c < 0) or np.any(c > n) or np.any(n != np.round(n)) or np.any(c != np.round(c)):
        raise DataError("per-problem counts need whole numbers with n >= 1 and 0 <= c <= n.")


def _fit(fam, objective, starts, scale: float) -> FittedFamily:
    """The least of ``objective`` (1e300 where not finite) from each start, log-likelihood ``-scale`` times it."""
    from scipy.optimize import minimize  # here: scipy.optimize costs 0.3 s to import

    def finite(z):
        value = objective(z)
        return value if np.isfinite(value) else 1e300

    lo, hi = np.array(fam.box).T
    runs = [minimize(finite, np.clip(x0, lo, hi), method="L-BFGS-B", bounds=fam.box) for x0 in starts]
    best = min(runs, key=lambda r: r.fun if np.isfinite(r.fun) else np.inf)
    bound = [fam.parameters[i] for i in np.flatnonzero((best.x - lo < BOUND_TOL) | (hi - best.x < BOUND_TOL))]
    return FittedFamily(fam.name, np.asarray(best.x, float), -scale * float(best.fun), bool(best.success), bound)


@dataclass
class FittedFamily:
    """One family fitted to per-problem counts (or to a curve): its parameters and what they say."""

    family: str
    z: np.ndarray
    log_likelihood: float
    converged: bool
    on_bound: list[str] = field(default_factory=list)

    @property
    def n_parameters(self) -> int:
        """Free parameters."""
        return len(self.z)

    @property
    def aic(self) -> float:
        """2 k - 2 log L."""
        return 2.0 * self.n_parameters - 2.0 * self.log_likelihood

    def pass_at_k(self, ks) -> np.ndarray:
        """1 - E[(1 - p)^k] under the fitted distribution, for any real k >= 0."""
        return -np.expm1(get_family(self.family).log_miss(np.asarray(ks, float), self.z))

    def to_dict(self) -> dict:
        """Family, parameters, log-likelihood, AIC, convergence and parameters on a bound."""
        params = get_family(self.family).natural(self.z)
        out = {"family": self.family, **params, "log_likelihood": self.log_likelihood, "aic": self.aic}
        return {**out, "converged": self.converged, "on_bound": list(self.on_bound)}


def fit_family(family: str, n, c, *, starts=None) -> FittedFamily:
    """Maximum-likelihood fit of one family to per-problem counts (each problem with its own n)."""
    fam = get_family(family)
    n, c = np.asarray(n, float), np.asarray(c, float)
    _check_counts(n, c)
    if not c.any():
        raise DataError(
            "no problem was ever solved: the counts say only that p is below about 1/n on every problem, not how "
            "far below, so no distribution of p (and no pass@k past n) is identified; draw more samples, or fit "
            "the benchmark's runs together (benchcast.generative.ladder)."
        )
    pairs, weight = np.unique(np.column_stack([n, c]), axis=0, return_counts=True)
    un, uc = pairs[:, 0], pairs[:, 1]

    mean = float(np.clip(np.sum(c) / np.sum(n), 1e-4, 1 - 1e-4))
    starts = starts if starts is not None else fam.starts(mean)
    return _fit(fam, lambda z: -float(np.sum(weight * fam.log_marginal(un, uc, z))), starts, 1.0)


def fit_curve(ks, pass_at_k, family: str = "beta") -> FittedFamily:
    """Fit a family to an aggregate curve pass@k_1..pass@k_m (no per-problem counts), by least squares on
    log(1 - pass@k) = log E[(1 - p)^k]; its ``log_likelihood`` is minus half the sum of squares.

    Parameters
    ----------
    ks : array_like
        The k of each point (at least as many as the family's parameters, plus one).
    pass_at_k : array_like
        pass@k at each k, in [0, 1).
    family : str
        A name in :data:`FAMILIES`.

    Returns
    -------
    FittedFamily
    """
    fam = get_family(family)
    ks, values = np.asarray(ks, float), np.asarray(pass_at_k, float)
    if ks.shape != values.shape or ks.size < len(fam.parameters) + 1:
        raise DataError(
            f"a {family} curve fit needs pass@k at {len(fam.parameters) + 1} or more k (one per parameter and one "
            f"to spare), got {ks.size}."
        )
    if not (np.all(np.isfinite(values)) and np.all((values >= 0) & (values < 1)) and np.all(ks >= 1)):
        raise DataError("a pass@k curve needs finite values in [0, 1) at k >= 1 (pass@k = 1 leaves no miss to fit).")
    if not values.any():
        raise DataError("the pass@k curve is 0 at every k: nothing was solved, so no distribution is identified.")
    target = np.log1p(-values)

    mean = float(np.clip(values[np.argmin(ks)] / np.min(ks), 1e-4, 1 - 1e-4))
    return _fit(fam, lambda z: float(np.sum((fam.log_miss(ks, z) - target) ** 2)), fam.starts(mean), 0.5)
