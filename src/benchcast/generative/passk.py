"""pass@k from per-problem sample outcomes (SPEC §2).

* :func:`pass_at_k`: the unbiased estimator 1 - C(n-c, k)/C(n, k), computed as
  -expm1(sum_j log1p(-c/(n-j))) over j < k: a product of ratios in log space, exact to rounding
  for n, k up to 1e4 and beyond, vectorised over problems and k.
* :func:`bootstrap_pass_at_k`: confidence intervals by resampling problems.
* :class:`BetaPassK`: a beta distribution of per-problem success rates fitted by beta-binomial
  maximum likelihood; pass@k = 1 - B(a, b + k)/B(a, b) in closed form for any k, beyond n.
* :func:`independence_bounds`: k q e^(-kq) <= 1 - e^(-kq) <= 1 - (1-q)^k <= min(kq, 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable
from benchcast.validation import check_replicates


def _check_counts(n: np.ndarray, c: np.ndarray) -> None:
    if np.any(n < 1) or np.any(c < 0) or np.any(c > n):
        raise DataError("per-problem counts need n >= 1 and 0 <= c <= n.")


def pass_at_k_per_problem(n, c, ks) -> np.ndarray:
    """Unbiased pass@k for each problem (rows) and each k (columns).

    Parameters
    ----------
    n, c : array_like of int
        Samples drawn and samples correct, per problem.
    ks : array_like of int
        The k values (each in [1, min n]).

    Returns
    -------
    ndarray
        pass@k in [0, 1], shape (problems, len(ks)).
    """
    n = np.atleast_1d(np.asarray(n, dtype=np.int64))
    c = np.atleast_1d(np.asarray(c, dtype=np.int64))
    ks = np.atleast_1d(np.asarray(ks, dtype=np.int64))
    _check_counts(n, c)
    if np.any(ks < 1) or np.any(ks > n.min()):
        raise DataError(f"every k must lie in [1, n] (n = {int(n.min())} samples for some problem); got {ks.tolist()}.")
    kmax = int(ks.max())
    out = np.empty((n.size, ks.size))
    # Problems sharing (n, c) share one cumulative sum of log1p(-c / (n - j)), j = 0 .. kmax-1.
    pairs, inverse = np.unique(np.column_stack([n, c]), axis=0, return_inverse=True)
    j = np.arange(kmax, dtype=np.float64)
    for index, (n_i, c_i) in enumerate(pairs):
        rows = inverse.ravel() == index
        if c_i == 0:
            out[rows] = 0.0
            continue
        failures = n_i - c_i
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.log1p(-c_i / (n_i - j))
        log_ratio = np.concatenate([[0.0], np.cumsum(terms)])  # log C(n-c, k)/C(n, k) at k = 0..kmax
        values = np.where(ks > failures, 1.0, -np.expm1(log_ratio[np.minimum(ks, kmax)]))
        out[rows] = values
    return out


def pass_at_k(n, c, ks) -> np.ndarray:
    """Benchmark-level pass@k: the mean over problems of the unbiased estimator, one value per k.

    Parameters
    ----------
    n, c : array_like of int
        Samples drawn and samples correct, per problem.
    ks : array_like of int
        The k values (each in [1, min n]).

    Returns
    -------
    ndarray
        pass@k in [0, 1], one per k.
    """
    return pass_at_k_per_problem(n, c, ks).mean(axis=0)


def bootstrap_pass_at_k(n, c, ks, *, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """pass@k with a percentile bootstrap interval over problems (and its standard error);
    ``n_boot=0`` gives the estimate alone (interval columns are NaN).

    Parameters
    ----------
    n, c : array_like of int
        Samples drawn and samples correct, per problem.
    ks : array_like of int
        The k values (each in [1, min n]).
    n_boot : int
        Bootstrap replicates over problems (0: none).
    level : float
        Interval level, in (0, 1).
    seed : int
        Seed of the resampling.

    Returns
    -------
    DataFrame
        One row per k: ``k``, ``pass_at_k``, ``stderr``, ``lower``, ``upper`` (in [0, 1]).
    """
    check_replicates(n_boot, allow_zero=True)
    per_problem = pass_at_k_per_problem(n, c, ks)
    if n_boot == 0:
        nan = np.full(per_problem.shape[1], np.nan)
        return pd.DataFrame(
            {
                "k": np.atleast_1d(ks).astype(int),
                "pass_at_k": per_problem.mean(axis=0),
                "stderr": nan,
                "lower": nan,
                "upper": nan,
            }
        )
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, per_problem.shape[0], size=(n_boot, per_problem.shape[0]))
    means = per_problem[draws].mean(axis=1)  # (n_boot, K)
    alpha = (1 - level) / 2
    return pd.DataFrame(
        {
            "k": np.atleast_1d(ks).astype(int),
            "pass_at_k": per_problem.mean(axis=0),
            "stderr": means.std(axis=0, ddof=1),
            "lower": np.quantile(means, alpha, axis=0),
            "upper": np.quantile(means, 1 - alpha, axis=0),
        }
    )


def independence_bounds(q, k) -> dict[str, np.ndarray]:
    """Bounds on pass@k for a single-attempt success probability q, assuming independence.

    Parameters
    ----------
    q : array_like
        Single-attempt success probability, in [0, 1].
    k : array_like
        Attempts.

    Returns
    -------
    dict
        ``lower_kq_exp`` (kq e^-kq), ``lower_exp`` (1 - e^-kq), ``independent`` (1 - (1 - q)^k) and
        ``upper`` (min(kq, 1)), each an array broadcast over ``q`` and ``k``.
    """
    q, k = np.asarray(q, float), np.asarray(k, float)
    kq = k * q
    return {
        "lower_kq_exp": kq * np.exp(-kq),
        "lower_exp": -np.expm1(-kq),
        "independent": -np.expm1(k * np.log1p(-np.minimum(q, 1.0))) if np.all(q < 1) else 1 - (1 - q) ** k,
        "upper": np.minimum(kq, 1.0),
    }


@dataclass
class BetaPassK(ResultView):
    """Per-problem success rates ~ Beta(a, b), fitted to (n, c) by beta-binomial likelihood.

    Parameters
    ----------
    a, b : float
        The beta distribution's shape parameters (NaN before :meth:`fit`).
    converged : bool
        Whether the likelihood's optimiser reported convergence.
    n_problems : int
        Problems fitted.
    on_bound : tuple of str
        Parameters left on their search bound (the counts did not place them).
    """

    a: float = np.nan
    b: float = np.nan
    converged: bool = False
    n_problems: int = 0
    on_bound: tuple = ()

    def to_dict(self) -> dict:
        """a, b, the mean success rate a / (a + b), convergence and the number of problems."""
        return jsonable(
            {
                "a": self.a,
                "b": self.b,
                "mean": self.a / (self.a + self.b),
                "converged": self.converged,
                "on_bound": list(self.on_bound),
                "n_problems": self.n_problems,
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """pass@k in closed form at k = 1, 10, 100 and 1000."""
        ks = np.array([1, 10, 100, 1000])
        return pd.DataFrame({"k": ks, "pass_at_k": self.pass_at_k(ks)})

    @property
    def title(self) -> str:
        return f"Beta(a={self.a:.4g}, b={self.b:.4g}) model of per-problem success rates"

    @property
    def notes(self) -> list[str]:
        """The closed form, the data and whether the fit converged."""
        notes = [f"pass@k = 1 - B(a, b + k) / B(a, b); fitted on {self.n_problems} problems"]
        if not self.converged:
            notes.append("the likelihood's optimiser did not report convergence")
        if self.on_bound:
            notes.append(f"{', '.join(self.on_bound)} on its search bound: the counts do not place it")
        return notes

    def fit(self, n, c) -> BetaPassK:
        """Fit a and b to the samples drawn (``n``) and correct (``c``) per problem.

        Parameters
        ----------
        n, c : array_like of int
            Per problem: samples drawn and samples correct.

        Returns
        -------
        BetaPassK
            This model, fitted.
        """
        from benchcast.generative.success import fit_family  # the one likelihood fit of every family

        n, c = np.asarray(n, float), np.asarray(c, float)
        _check_counts(n, c)
        if np.all(c == 0):
            raise DataError("no problem was ever solved: a beta model of success rates is not identifiable.")
        fitted = fit_family("beta", n, c)
        params = fitted.to_dict()
        self.a, self.b = params["a"], params["b"]
        self.converged, self.on_bound = fitted.converged, tuple(fitted.on_bound)
        self.n_problems = int(n.size)
        return self

    def pass_at_k(self, ks) -> np.ndarray:
        """E[1 - (1 - p)^k] = 1 - B(a, b + k) / B(a, b), for any k >= 1.

        Parameters
        ----------
        ks : array_like
            Attempts (need not be integers or sampled).

        Returns
        -------
        ndarray
            pass@k in [0, 1], one per k.
        """
        from scipy.special import betaln

        ks = np.asarray(ks, float)
        return -np.expm1(betaln(self.a, self.b + ks) - betaln(self.a, self.b))

    def log_likelihood(self, n, c) -> float:
        """Beta-binomial log-likelihood of the per-problem counts under the fitted (a, b).

        Parameters
        ----------
        n, c : array_like of int
            Samples drawn and samples correct, per problem.

        Returns
        -------
        float
            The summed log-likelihood (nats).
        """
        from scipy.special import betaln, gammaln

        n, c = np.asarray(n, float), np.asarray(c, float)
        log_binom = gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1)
        return float(np.sum(log_binom + betaln(c + self.a, n - c + self.b) - betaln(self.a, self.b)))


def passk_table(
    counts: pd.DataFrame,
    ks,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    extrapolate_to: int | None = None,
    family: str = "auto",
) -> pd.DataFrame:
    """pass@k per (run, benchmark) with bootstrap intervals; beyond the sampled n (up to
    ``extrapolate_to``) a model of the per-problem success rates (:mod:`benchcast.generative.success`),
    marked ``source=<family>`` with its interval by refitting on resampled problems (at most
    ``MODEL_REPLICATES`` replicates: each refits the model).

    Parameters
    ----------
    counts : DataFrame
        Per-problem counts (``run``, ``benchmark``, ``n``, ``c``; see
        :func:`benchcast.generative.samples.read_counts`).
    ks : array_like of int
        The k values.
    n_boot : int
        Bootstrap replicates over problems (0: no interval).
    level : float
        Interval level, in (0, 1).
    seed : int
        Seed of the resampling.
    extrapolate_to : int, optional
        Largest k the model extrapolates to (adds a geometric grid of k up to it).
    family : str
        ``'auto'`` (the family of least AIC) or one of :data:`benchcast.generative.success.FAMILIES`.

    Returns
    -------
    DataFrame
        One row per (run, benchmark, k): pass@k in [0, 1] with its interval, ``source`` and ``problems``.
    """
    if extrapolate_to is not None and (int(extrapolate_to) != extrapolate_to or extrapolate_to < 1):
        raise DataError(f"extrapolate_to must be a number of attempts k >= 1, got {extrapolate_to!r}.")
    ks = np.unique(np.asarray(ks, int))
    frames = []
    for (run, bench), group in counts.groupby(["run", "benchmark"], sort=False):
        n, c = group["n"].to_numpy(), group["c"].to_numpy()
        # samples drawn in rounds: the estimator reads the first round (later rounds' n depend on its outcome)
        n_est, c_est = (group["n_first"].to_numpy(), group["c_first"].to_numpy()) if "n_first" in group else (n, c)
        sampled = ks[ks <= n_est.min()]
        if sampled.size:
            frame = bootstrap_pass_at_k(n_est, c_est, sampled, n_boot=n_boot, level=level, seed=seed)
            frames.append(frame.assign(run=run, benchmark=bench, source="estimator", problems=len(group)))
        beyond = ks[ks > n_est.min()]
        if extrapolate_to:
            grid = np.geomspace(max(n_est.min(), 1), extrapolate_to, 8).round()
            beyond = np.unique(np.concatenate([beyond, grid]))
            beyond = beyond[(beyond > n_est.min()) & (beyond <= extrapolate_to)].astype(int)
        if beyond.size and c.sum() > 0:
            frames.append(_modelled(n, c, beyond, family, n_boot, level, seed).assign(run=run, benchmark=bench))
    if not frames:
        raise DataError("no (run, benchmark) group has enough samples for the requested k.")
    columns = ["run", "benchmark", "k", "pass_at_k", "stderr", "lower", "upper", "source", "problems"]
    out = pd.concat(frames, ignore_index=True)
    extra = ["extrapolation", "model_replicates", "model_note", "beta_a", "beta_b"]
    return out[[c for c in columns + extra if c in out.columns]]


MODEL_REPLICATES = 200


def _modelled(n, c, ks, family: str, n_boot: int, level: float, seed: int) -> pd.DataFrame:
    """pass@k past the sampled n from the success-rate model, with its bootstrap interval."""
    from benchcast.generative.success import SuccessModel

    model = SuccessModel("auto" if family == "auto" else (family,)).fit(n, c)
    out = pd.DataFrame({"k": ks, "pass_at_k": model.pass_at_k(ks), "source": model.chosen_.family})
    out["problems"], out["extrapolation"] = len(n), model.extrapolation_factor(ks)
    if n_boot:
        replicates = min(n_boot, MODEL_REPLICATES)
        out["lower"], out["upper"] = model.interval(ks, n_boot=replicates, level=level, seed=seed)
        out["model_replicates"] = replicates
    # a chosen fit that did not converge or sits on a bound says so on its rows (the model itself is not kept)
    chosen = model.chosen_
    doubts = ([] if chosen.converged else ["did not converge"]) + [f"{p} on its bound" for p in chosen.on_bound]
    out["model_note"] = f"{chosen.family}: {', '.join(doubts)}" if doubts else ""
    if model.chosen_.family == "beta":
        params = model.chosen_.to_dict()
        out["beta_a"], out["beta_b"] = params["a"], params["b"]
    return out
