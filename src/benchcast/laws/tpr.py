"""A saturating law in parameters and tokens for ladders that span several tokens-per-parameter ratios.

``power_floor_tpr`` is K2's power law with a floor in compute C = 6 N D, its scale shifted by how far
the run's tokens per parameter T = D / N sit from Chinchilla's 20: with L = log(T / 20),
``-log Q' = A C^-alpha exp(gamma L + delta L^2) + E``. At one T it is ``power_floor``; across several it
is a power law in an effective compute C exp(-(gamma L + delta L^2) / alpha): a run trained far from
the compute-optimal ratio, either way, reaches the score of a smaller budget. ``delta >= 0`` makes
that penalty convex in log T, as over-training is (K4's ``nd_floor``, ``A/N^alpha + B/D^beta + E``,
is convex in log T at fixed C too); with ``delta`` = 0, a shift linear in log T, the law forecast the
DCLM file's TPR-160 runs 8 % too high (chosen on that file's protocol 2, README "Several TPRs").
"""

from __future__ import annotations

import numpy as np

from benchcast.laws.base import Law, Parameter
from benchcast.laws.downstream import HUGE
from benchcast.laws.linalg import nnls_rows
from benchcast.laws.registry import register

TPR_REF = 20.0  # T is measured from Chinchilla's 20 tokens per parameter, so A is C's scale there


def _log_compute_tpr(X) -> tuple[np.ndarray, np.ndarray]:
    params, tokens = np.asarray(X["params"], float), np.asarray(X["tokens"], float)
    return np.log(6.0 * params * tokens), np.log(tokens / params / TPR_REF)


@register
class PowerFloorTPRLaw(Law):
    name = "power_floor_tpr"
    formula = (
        "-log Q' = A * C^(-alpha) * exp(gamma L + delta L^2) + E,  C = 6 N D, L = log(D / (20 N)),  Q_max = exp(-E)"
    )
    reference = "benchcast: K2 in an effective compute that penalises tokens per parameter far from 20"
    description = "Power law with a floor in compute, its scale shifted by tokens per parameter; Huber loss."
    covariates = ("params", "tokens")
    target = "neglog"
    loss = "huber"
    example_params = {"A": 3000.0, "alpha": 0.2, "gamma": 0.05, "delta": 0.02, "E": 0.2}
    example_covariates = {"params": (5e7, 3e9), "tokens": (1e9, 5e11)}
    example_q_rand = 0.25
    parameters = (
        Parameter("A", 1e-300, HUGE, 1.0, log=True, linear=True, description="scale at T = 20"),
        Parameter("alpha", 0.0, 5.0, 0.1, description="compute exponent", constraints=("lower",)),
        Parameter("gamma", -3.0, 3.0, 0.0, description="slope in log T at T = 20"),
        Parameter("delta", 0.0, 3.0, 0.0, description="curvature in log T (convex)", constraints=("lower",)),
        Parameter("E", 0.0, 20.0, 0.1, linear=True, description="floor; Q_max = exp(-E)", constraints=("lower",)),
    )

    @staticmethod
    def _exponent(theta, log_c, log_t):
        exponent = -theta[..., 1:2] * log_c
        exponent += theta[..., 2:3] * log_t
        exponent += theta[..., 3:4] * log_t**2
        return exponent

    def forward(self, theta, X):
        log_c, log_t = _log_compute_tpr(X)
        power = np.exp(self._exponent(theta, log_c, log_t))
        power *= theta[..., 0:1]
        power += theta[..., 4:5]
        return power

    def jacobian(self, theta, X):
        log_c, log_t = _log_compute_tpr(X)
        power = np.exp(self._exponent(theta, log_c, log_t))
        jac = np.empty(power.shape[:-1] + theta.shape[-1:] + power.shape[-1:])
        jac[..., 0, :] = power
        term = np.multiply(theta[..., 0:1], power, out=power)
        np.multiply(-log_c, term, out=jac[..., 1, :])
        np.multiply(log_t, term, out=jac[..., 2, :])
        np.multiply(log_t**2, term, out=jac[..., 3, :])
        jac[..., 4, :] = 1.0
        return term + theta[..., 4:5], jac

    def initial_guesses(self, X, y):
        # the scale and the floor are linear given the exponents: solve them on a grid of the others
        log_c, log_t = _log_compute_tpr(X)
        starts = []
        for alpha in np.geomspace(0.01, 2.0, 12):
            for gamma in (-0.5, -0.1, 0.0, 0.1, 0.5):
                for delta in (0.0, 0.1, 0.5):
                    exponent = -alpha * (log_c - log_c.max()) + gamma * log_t + delta * log_t**2
                    scale, floor = nnls_rows(np.column_stack([np.exp(exponent), np.ones_like(y)]), y)
                    starts.append([max(scale, 1e-300) * np.exp(alpha * log_c.max()), alpha, gamma, delta, floor])
        return np.array(starts)

    def limit(self, theta, q_rand, k=None):
        if theta[1] > 0:
            return float(q_rand + (1 - q_rand) * np.exp(-theta[4])), "Q_rand + (1 - Q_rand) exp(-E) at any T"
        return float("nan"), "alpha = 0: the score does not change with compute, only with T"
