"""Distributions of the per-problem success probability p, for pass@k far past the samples drawn.

pass@k of a benchmark is 1 - E[(1 - p)^k] over its problems. n samples of a problem place its p to about
1/n; past that, pass@k depends on how much mass the distribution of p has near 0, which is what the
families of :mod:`benchcast.generative.families` differ in (the "Large Language Monkeys" power laws come
from that tail).

Each family gives, in closed form, the likelihood of (n, c) per problem (each problem with its own n) and
log E[(1 - p)^k] for any real k >= 0. :class:`SuccessModel` fits every family by maximum likelihood, keeps
the one of least AIC, and bootstraps over problems for an interval; :func:`fit_curve` fits a family to an
aggregate pass@1..pass@m curve instead (1 - pass@k = E[(1 - p)^k] is a moment of 1 - p).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.families import FAMILIES, get_family
from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable
from benchcast.validation import check_level, check_replicates

BOUND_TOL = 1e-4


def _check_counts(n: np.ndarray, c: np.ndarray) -> None:
    if n.shape != c.shape or n.ndim != 1 or not n.size:
        raise DataError("per-problem counts need two arrays n and c of one length, one entry per problem.")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(c))):
        raise DataError("per-problem counts n and c must be finite (a NaN count is no count).")
    if np.any(n < 1) or np.any(c < 0) or np.any(c > n) or np.any(n != np.round(n)) or np.any(c != np.round(c)):
        raise DataError("per-problem counts need whole numbers with n >= 1 and 0 <= c <= n.")


def _minimize(objective, starts, box):
    from scipy.optimize import minimize  # here: scipy.optimize costs 0.3 s to import

    runs = [minimize(objective, np.clip(x0, *np.array(box).T), method="L-BFGS-B", bounds=box) for x0 in starts]
    return min(runs, key=lambda r: r.fun if np.isfinite(r.fun) else np.inf)


def _on_bound(z, box) -> list[int]:
    return [i for i, (v, (lo, hi)) in enumerate(zip(z, box, strict=True)) if v - lo < BOUND_TOL or hi - v < BOUND_TOL]


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
        """1 - E[(1 - p)^k] under the fitted distribution, for any real k >= 0.

        Parameters
        ----------
        ks : array_like
            Attempts.

        Returns
        -------
        ndarray
        """
        return -np.expm1(get_family(self.family).log_miss(np.asarray(ks, float), self.z))

    def to_dict(self) -> dict:
        """Family, parameters, log-likelihood, AIC, convergence and parameters on a bound.

        Returns
        -------
        dict
        """
        params = get_family(self.family).natural(self.z)
        out = {"family": self.family, **params, "log_likelihood": self.log_likelihood, "aic": self.aic}
        return {**out, "converged": self.converged, "on_bound": list(self.on_bound)}


def fit_family(family: str, n, c, *, starts=None) -> FittedFamily:
    """Maximum-likelihood fit of one family to per-problem counts (each problem with its own n).

    Parameters
    ----------
    family : str
        A name in :data:`FAMILIES`.
    n, c : array_like of int
        Per problem: samples drawn and samples correct.
    starts : list of ndarray, optional
        Unconstrained starting points (default: the family's own).

    Returns
    -------
    FittedFamily
    """
    fam = get_family(family)
    n, c = np.asarray(n, float), np.asarray(c, float)
    _check_counts(n, c)
    if not c.any():
        raise DataError(
            "no problem was ever solved: the counts say only that p is below about 1/n on every problem, not how "
            "far below, so no distribution of p (and no pass@k past n) is identified; draw more samples, or borrow "
            "from the benchmark's other runs (benchcast.generative.borrowing)."
        )
    pairs, weight = np.unique(np.column_stack([n, c]), axis=0, return_counts=True)
    un, uc = pairs[:, 0], pairs[:, 1]

    def nll(z):
        value = -float(np.sum(weight * fam.log_marginal(un, uc, z)))
        return value if np.isfinite(value) else 1e300

    mean = float(np.clip(np.sum(c) / np.sum(n), 1e-4, 1 - 1e-4))
    best = _minimize(nll, starts if starts is not None else fam.starts(mean), fam.box)
    bound = [fam.parameters[i] for i in _on_bound(best.x, fam.box)]
    return FittedFamily(fam.name, np.asarray(best.x, float), -float(best.fun), bool(best.success), bound)


@dataclass
class SuccessModel(ResultView):
    """The distribution of per-problem success probability that best explains the counts, by AIC.

    Parameters
    ----------
    families : sequence of str or 'auto'
        Families to compare ('auto': all of :data:`FAMILIES`).

    Attributes
    ----------
    fits_ : dict of str to FittedFamily
        Every family fitted.
    chosen_ : FittedFamily
        The one of least AIC.
    n_max_ : int
        The most samples drawn of one problem.
    """

    families: tuple[str, ...] | str = "auto"
    fits_: dict = field(default_factory=dict)
    chosen_: FittedFamily | None = None
    n_problems_: int = 0
    n_max_: int = 0
    _n: np.ndarray | None = None
    _c: np.ndarray | None = None

    def fit(self, n, c) -> SuccessModel:
        """Fit every family to the samples drawn (``n``) and correct (``c``) per problem.

        Parameters
        ----------
        n, c : array_like of int
            Per problem (n may differ between problems).

        Returns
        -------
        SuccessModel
            This model, fitted.
        """
        names = tuple(FAMILIES) if self.families == "auto" else tuple(self.families)
        self._n, self._c = np.asarray(n, float), np.asarray(c, float)
        self.fits_ = {name: fit_family(name, self._n, self._c) for name in names}
        self.chosen_ = min(self.fits_.values(), key=lambda f: f.aic)
        self.n_problems_, self.n_max_ = int(self._n.size), int(self._n.max())
        return self

    def pass_at_k(self, ks) -> np.ndarray:
        """pass@k of the chosen family, for any k.

        Parameters
        ----------
        ks : array_like
            Attempts.

        Returns
        -------
        ndarray
        """
        if self.chosen_ is None:
            raise DataError("the model is not fitted: call fit(n, c) first.")
        return self.chosen_.pass_at_k(ks)

    def interval(self, ks, *, n_boot: int = 200, level: float = 0.9, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """An equal-tailed interval of pass@k by resampling problems and refitting the chosen family.

        Parameters
        ----------
        ks : array_like
            Attempts.
        n_boot : int
            Replicates.
        level : float
            Interval level, in (0, 1).
        seed : int
            Seed of the resampling.

        Returns
        -------
        (lower, upper) : ndarray
            Per k; a replicate whose resample solved nothing counts as pass@k = 0.
        """
        check_replicates(n_boot, allow_zero=False)
        check_level(level)
        chosen = self.pass_at_k(ks)  # raises if unfitted
        rng = np.random.default_rng(seed)
        draws = np.empty((n_boot, np.size(chosen)))
        for i in range(n_boot):
            pick = rng.integers(0, self.n_problems_, self.n_problems_)
            n, c = self._n[pick], self._c[pick]
            if not c.any():
                draws[i] = 0.0
                continue
            draws[i] = fit_family(self.chosen_.family, n, c, starts=[self.chosen_.z]).pass_at_k(ks)
        tail = (1 - level) / 2
        return np.quantile(draws, tail, axis=0), np.quantile(draws, 1 - tail, axis=0)

    def extrapolation_factor(self, ks) -> np.ndarray:
        """How far past the samples each k is: k over the most samples drawn of one problem.

        Parameters
        ----------
        ks : array_like
            Attempts.

        Returns
        -------
        ndarray
        """
        return np.asarray(ks, float) / max(self.n_max_, 1)

    def to_dict(self) -> dict:
        """The chosen family and every family's fit."""
        chosen = None if self.chosen_ is None else self.chosen_.family
        fits = {name: fit.to_dict() for name, fit in self.fits_.items()}
        return jsonable({"chosen": chosen, "n_problems": self.n_problems_, "n_max": self.n_max_, "fits": fits})

    def to_frame(self) -> pd.DataFrame:
        """One row per family: log-likelihood, AIC, convergence, chosen."""
        rows = [
            {**{k: v for k, v in f.to_dict().items() if k in ("family", "log_likelihood", "aic", "converged")},
             "chosen": self.chosen_ is f}
            for f in self.fits_.values()
        ]  # fmt: skip
        return pd.DataFrame(rows)

    @property
    def title(self) -> str:
        chosen = "unfitted" if self.chosen_ is None else self.chosen_.family
        return f"Per-problem success distribution: {chosen} (least AIC of {len(self.fits_)})"

    @property
    def notes(self) -> list[str]:
        """Fits that did not converge or sit on a bound."""
        notes = [f"fitted on {self.n_problems_} problems, at most {self.n_max_} samples each"]
        for f in self.fits_.values():
            if not f.converged:
                notes.append(f"{f.family}: the likelihood's optimiser did not report convergence")
            if f.on_bound:
                notes.append(f"{f.family}: {', '.join(f.on_bound)} on its bound (the counts do not place it)")
        return notes


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

    def sse(z):
        value = float(np.sum((fam.log_miss(ks, z) - target) ** 2))
        return value if np.isfinite(value) else 1e300

    mean = float(np.clip(values[np.argmin(ks)] / np.min(ks), 1e-4, 1 - 1e-4))
    best = _minimize(sse, fam.starts(mean), fam.box)
    bound = [fam.parameters[i] for i in _on_bound(best.x, fam.box)]
    return FittedFamily(fam.name, np.asarray(best.x, float), -0.5 * float(best.fun), bool(best.success), bound)
