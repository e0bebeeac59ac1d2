"""A law with its parameters fixed (``law.freeze(theta, q_rand, k=8)``, as ``scipy.stats.norm(0, 1)`` freezes a
distribution): predicts, knows its limit, inverts itself for planning; what depends on the law is asked of it."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from benchcast.errors import BenchcastError, FitWarning
from benchcast.laws.transforms import to_score

if TYPE_CHECKING:
    from benchcast.laws.base import Law

LOG_FLOPS_RANGE = (np.log(1e10), np.log(1e40))  # where compute needed for a target is searched
MAX_K = 10**9  # largest number of attempts searched when solving for k


@dataclass(frozen=True)
class FittedLaw:
    """A law, its parameters (natural units, in the law's order) and chance level."""

    law: Law
    theta: tuple[float, ...]
    q_rand: float = 0.0
    fixed: dict = field(default_factory=dict)  # settings a prediction needs, e.g. the fitted k

    def __post_init__(self):
        # a fit may put a closed-form parameter outside its range (it says so in its diagnostics);
        # a parameter vector must still be complete and finite
        problems = self.law.check_params(np.asarray(self.theta, float), allow_outside=self.law.param_names)
        if problems:
            raise BenchcastError(f"invalid parameters for law {self.law.name!r}: " + "; ".join(problems) + ".")
        if not 0.0 <= self.q_rand < 1.0:
            raise BenchcastError(f"chance level q_rand must lie in [0, 1), got {self.q_rand!r}.")

    @property
    def params(self) -> dict[str, float]:
        return dict(zip(self.law.param_names, self.theta, strict=True))

    @property
    def vector(self) -> np.ndarray:
        return np.asarray(self.theta, float)

    def score(self, X: dict[str, np.ndarray], theta: np.ndarray | None = None) -> np.ndarray:
        """Scores at prepared covariates (``theta`` overrides the parameters, e.g. a bootstrap draw).

        Parameters
        ----------
        X : dict of str to ndarray
            Prepared covariates by name (from :meth:`covariates_at`), each shape (n,).
        theta : ndarray, optional
            Parameters in natural units, shape (n_params,); by default the fitted ones.

        Returns
        -------
        ndarray
            Forecast scores, shape (n,); in [0, 1] unless the law's forecasts are unbounded.
        """
        theta = self.vector if theta is None else np.asarray(theta, float)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            unclipped = to_score(self.law.target, self.law.forward(theta, X), self.q_rand)
        if not self.law.clip_scores:
            return unclipped
        outside = np.asarray(unclipped)[(unclipped < 0) | (unclipped > 1)]
        if outside.size:
            warnings.warn(
                f"{self.law.name} forecasts {outside.size} score(s) outside [0, 1] (e.g. {outside[0]:.4g}); "
                "clipped to [0, 1]: the law's second stage is not bounded, so treat these as saturated.",
                FitWarning,
                stacklevel=3,
            )
        return np.clip(unclipped, 0.0, 1.0)

    def draw_scores(self, thetas: np.ndarray, X: dict[str, np.ndarray], target_noise=None) -> np.ndarray:
        """Scores of many parameter vectors at once (bootstrap replicates), by :meth:`score`'s path, clipped quietly.

        Parameters
        ----------
        thetas : array (replicates, n_params)
        X : dict of str to array (points,)
            Prepared covariates.
        target_noise : array (replicates, points), optional
            Added in the law's target space before the transform (a new run's residual).

        Returns
        -------
        array (replicates, points)
        """
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            target = self.law.forward(np.asarray(thetas, float), X)
            if target_noise is not None:
                target = target + target_noise
            score = to_score(self.law.target, target, self.q_rand)
        return np.clip(score, 0.0, 1.0) if self.law.clip_scores else score

    # -- questions answered by the law -------------------------------------------------------------
    def covariates_at(self, flops, *, tpr: float | None = None, k: float | None = None) -> dict:
        """Covariates of runs of compute ``flops``, with the law's ``k`` where it has one.

        Parameters
        ----------
        flops : float or array_like
            Training compute of each run, in FLOPs.
        tpr : float, optional
            Tokens per parameter (D / N); required by laws in parameters and tokens.
        k : float, optional
            The number of attempts; by default the fitted ``k``.

        Returns
        -------
        dict of str to ndarray
            The covariates the law predicts from, by name.
        """
        X = self.law.covariates_at(self.vector, np.atleast_1d(np.asarray(flops, float)), tpr=tpr)
        if "k" in self.law.covariates:
            k = self.fixed.get("k") if k is None else k
            if k is None:
                raise BenchcastError(f"law {self.law.name!r} needs the number of attempts k.")
            X["k"] = np.full(np.shape(X[next(iter(X))]), float(k))
        return X

    def limit(self) -> tuple[float, str]:
        """(score as training compute grows without bound, what that limit means).

        Returns
        -------
        score : float
            The limiting score.
        meaning : str
            What the limit is, in words.
        """
        return self.law.limit(self.vector, self.q_rand)

    def envelope(self):
        """The compute-optimal envelope of this fitted law (S2, params_tokens).

        Returns
        -------
        benchcast.laws.envelope.Envelope
            The optimal N/D split of a budget, its penalty and effective compute.

        Raises
        ------
        BenchcastError
            If the law has no compute-optimal envelope.
        """
        return self.law.envelope(self.vector)

    # -- inversion ---------------------------------------------------------------------------------
    def score_at(self, flops: float, *, tpr: float | None = None, k: float | None = None) -> float:
        """The forecast score of one run.

        Parameters
        ----------
        flops : float
            Training compute, in FLOPs.
        tpr : float, optional
            Tokens per parameter (D / N); required by laws in parameters and tokens.
        k : float, optional
            The number of attempts; by default the fitted ``k``.

        Returns
        -------
        float
            The forecast score.
        """
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            X = self.covariates_at(np.array([flops]), tpr=tpr, k=k)
            return float(self.law.predict_score(self.vector, X, self.q_rand)[0])

    def compute_for(self, target: float, *, tpr: float | None = None, k: float | None = None) -> float:
        """FLOPs at which the law reaches ``target`` (inf if it never does in 1e10..1e40 FLOPs).

        Raises when the target is already met at the bottom of the range: the answer is then
        'any compute', not a number.

        Parameters
        ----------
        target : float
            The score to reach, in [0, 1].
        tpr : float, optional
            Tokens per parameter (D / N); required by laws in parameters and tokens.
        k : float, optional
            The number of attempts; by default the fitted ``k``.

        Returns
        -------
        float
            Training compute in FLOPs, or inf.
        """
        lo, hi = LOG_FLOPS_RANGE

        def gap(log_flops):
            return self.score_at(float(np.exp(log_flops)), tpr=tpr, k=k) - target

        if gap(hi) < 0:
            return float("inf")
        if gap(lo) >= 0:
            raise BenchcastError(
                f"target {target:g} is already reached at {np.exp(lo):.0e} FLOPs by the fitted {self.law.name} law "
                "(at or below its score for tiny models): there is no compute to plan."
            )
        from scipy.optimize import brentq  # here: scipy.optimize costs 0.3 s to import, and --help none

        return float(np.exp(brentq(gap, lo, hi, xtol=1e-12, rtol=1e-14)))

    def k_for(self, target: float, flops: float) -> float:
        """Smallest integer k at which the law reaches ``target`` at ``flops`` (inf if none up to 1e9).

        Parameters
        ----------
        target : float
            The score to reach, in [0, 1].
        flops : float
            Training compute of the run, in FLOPs.

        Returns
        -------
        float
            The number of attempts k (a whole number), or inf.
        """
        if "k" not in self.law.covariates:
            raise BenchcastError(f"law {self.law.name!r} has no number of attempts k to solve for.")

        def reaches(k):
            return self.score_at(flops, k=float(k)) >= target

        if reaches(1):  # first: a law (or replicate) falling in k may reach it at one attempt and not at MAX_K
            return 1.0
        if not reaches(MAX_K):
            return float("inf")
        low, high = 1, MAX_K  # reaches(high) and not reaches(low): bisect on integers
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if reaches(middle) else (middle, high)
        return float(high)
