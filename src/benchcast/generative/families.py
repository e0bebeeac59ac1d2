"""Families of distributions of the per-problem success probability p (:mod:`benchcast.generative.success`
fits them): each declares its parameters on an unconstrained scale and their box, and gives in closed form the
likelihood of c successes in n samples per problem and log E[(1 - p)^k] for any real k >= 0.

* ``beta``: Beta(a, b), the beta-binomial; density ~ p^(a-1) near 0.
* ``zi_beta``: a point mass ``pi`` at p = 0 (problems never solved at any k) plus a Beta(a, b).
* ``beta_mix``: two betas, weight ``w`` on the first: a hard component with a tail of its own.
"""

from __future__ import annotations

import numpy as np

from benchcast.errors import DataError

LOG_SHAPE = (-9.0, 9.0)  # a, b in [1.2e-4, 8.1e3]: beyond, a shape is on its bound and the fit says so
LOGIT = (-12.0, 12.0)


def _betaln(a, b):
    from scipy.special import betaln

    return betaln(a, b)


def _log_bb(n, c, a, b):
    """log of the beta-binomial probability of c of n, per problem."""
    from scipy.special import gammaln

    return gammaln(n + 1) - gammaln(c + 1) - gammaln(n - c + 1) + _betaln(c + a, n - c + b) - _betaln(a, b)


def _log_beta_miss(k, a, b):
    """log E[(1 - p)^k] under Beta(a, b) = log B(a, b + k) - log B(a, b)."""
    return _betaln(a, b + k) - _betaln(a, b)


def _expit_log(z):
    """(log s, log(1 - s)) of s = expit(z), without cancellation."""
    return -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)


class _SuccessFamily:
    """A family of distributions of p: its parameters on an unconstrained scale, their box, and two closed forms."""

    name: str = ""
    parameters: tuple[str, ...] = ()
    box: tuple[tuple[float, float], ...] = ()

    def starts(self, mean: float) -> list[np.ndarray]:
        """Starting points of the likelihood's search."""
        raise NotImplementedError

    def log_marginal(self, n, c, z) -> np.ndarray:
        """log P(c of n | z) per problem, the family's p integrated out."""
        raise NotImplementedError

    def log_miss(self, k, z) -> np.ndarray:
        """log E[(1 - p)^k], so that pass@k = -expm1(log_miss)."""
        raise NotImplementedError

    def natural(self, z) -> dict[str, float]:
        """The parameters in their own units."""
        raise NotImplementedError


class Beta(_SuccessFamily):
    name, parameters, box = "beta", ("log_a", "log_b"), (LOG_SHAPE, LOG_SHAPE)

    def starts(self, mean):
        return [np.log([mean * s, (1 - mean) * s]) for s in (0.1, 1.0, 10.0)]

    def log_marginal(self, n, c, z):
        return _log_bb(n, c, np.exp(z[0]), np.exp(z[1]))

    def log_miss(self, k, z):
        return _log_beta_miss(np.asarray(k, float), np.exp(z[0]), np.exp(z[1]))

    def natural(self, z):
        return {"a": float(np.exp(z[0])), "b": float(np.exp(z[1]))}


class _ZeroInflatedBeta(_SuccessFamily):
    name, parameters, box = "zi_beta", ("logit_pi", "log_a", "log_b"), (LOGIT, LOG_SHAPE, LOG_SHAPE)

    def starts(self, mean):
        return [
            np.array([np.log(p / (1 - p)), *np.log([mean * s, (1 - mean) * s])]) for p in (0.1, 0.4) for s in (0.3, 3.0)
        ]

    def log_marginal(self, n, c, z):
        log_pi, log_rest = _expit_log(z[0])
        never = np.where(np.asarray(c) == 0, log_pi, -np.inf)
        return np.logaddexp(never, log_rest + _log_bb(n, c, np.exp(z[1]), np.exp(z[2])))

    def log_miss(self, k, z):
        log_pi, log_rest = _expit_log(z[0])
        return np.logaddexp(log_pi, log_rest + _log_beta_miss(np.asarray(k, float), np.exp(z[1]), np.exp(z[2])))

    def natural(self, z):
        return {"pi": float(np.exp(_expit_log(z[0])[0])), "a": float(np.exp(z[1])), "b": float(np.exp(z[2]))}


class _BetaMixture(_SuccessFamily):
    name = "beta_mix"
    parameters = ("logit_w", "log_a1", "log_b1", "log_a2", "log_b2")
    box = (LOGIT, LOG_SHAPE, LOG_SHAPE, LOG_SHAPE, LOG_SHAPE)

    def starts(self, mean):
        hard, easy = mean / 10, min(0.5 + mean / 2, 0.95)
        return [
            np.array([np.log(w / (1 - w)), *np.log([hard * s, (1 - hard) * s, easy * 2, (1 - easy) * 2])])
            for w in (0.3, 0.7)
            for s in (0.2, 2.0)
        ]

    def log_marginal(self, n, c, z):
        log_w, log_v = _expit_log(z[0])
        a1, b1, a2, b2 = np.exp(z[1:])
        return np.logaddexp(log_w + _log_bb(n, c, a1, b1), log_v + _log_bb(n, c, a2, b2))

    def log_miss(self, k, z):
        log_w, log_v = _expit_log(z[0])
        a1, b1, a2, b2 = np.exp(z[1:])
        k = np.asarray(k, float)
        return np.logaddexp(log_w + _log_beta_miss(k, a1, b1), log_v + _log_beta_miss(k, a2, b2))

    def natural(self, z):
        a1, b1, a2, b2 = (float(v) for v in np.exp(z[1:]))
        return {"w": float(np.exp(_expit_log(z[0])[0])), "a1": a1, "b1": b1, "a2": a2, "b2": b2}


FAMILIES: dict[str, _SuccessFamily] = {f.name: f for f in (Beta(), _ZeroInflatedBeta(), _BetaMixture())}


def get_family(name: str) -> _SuccessFamily:
    """The family called ``name``."""
    if name not in FAMILIES:
        raise DataError(f"unknown family {name!r}: expected one of {', '.join(FAMILIES)} (or 'auto').")
    return FAMILIES[name]
