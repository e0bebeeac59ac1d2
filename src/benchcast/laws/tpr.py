"""A saturating law in parameters and tokens for ladders that span several tokens-per-parameter ratios.

``power_floor_tpr`` is K2's power law with a floor in compute C = 6 N D, its scale shifted by the
tokens-per-parameter ratio T = D / N: ``-log Q' = A C^-alpha (T / 20)^gamma + E``. At one T it is
``power_floor``; across several it is a power law in an effective compute C T^(-gamma/alpha), so runs
trained past Chinchilla (gamma > 0: a smaller model on more tokens is worse at equal compute) are
not read as noise around one curve in C. In N and D it is the product form
``A' N^-(alpha+gamma) D^-(alpha-gamma) + E``, beside K4's sum ``A/N^alpha + B/D^beta + E``
(``nd_floor``): two ways for N and D to trade off, with the same ceiling exp(-E).
"""

from __future__ import annotations

import numpy as np

from benchcast.laws.base import Law, Parameter, nnls_rows, stack_jacobian
from benchcast.laws.downstream import HUGE
from benchcast.laws.registry import register

TPR_REF = 20.0  # T is measured from Chinchilla's 20 tokens per parameter, so A is C's scale there


def _log_compute_tpr(X) -> tuple[np.ndarray, np.ndarray]:
    params, tokens = np.asarray(X["params"], float), np.asarray(X["tokens"], float)
    return np.log(6.0 * params * tokens), np.log(tokens / params / TPR_REF)


@register
class PowerFloorTPRLaw(Law):
    name = "power_floor_tpr"
    formula = "-log Q' = A * C^(-alpha) * (T/20)^gamma + E,  C = 6 N D, T = D / N,  Q_max = exp(-E)"
    reference = "benchcast (K2 in an effective compute C T^(-gamma/alpha))"
    description = "Power law with a floor in compute, its scale shifted by tokens per parameter; Huber loss."
    covariates = ("params", "tokens")
    target = "neglog"
    loss = "huber"
    example_params = {"A": 3000.0, "alpha": 0.2, "gamma": 0.05, "E": 0.2}
    example_covariates = {"params": (5e7, 3e9), "tokens": (1e9, 5e11)}
    example_q_rand = 0.25
    parameters = (
        Parameter("A", 1e-300, HUGE, 1.0, log=True, linear=True, description="scale at T = 20"),
        Parameter("alpha", 0.0, 5.0, 0.1, description="compute exponent", constraints=("lower",)),
        Parameter("gamma", -3.0, 3.0, 0.0, description="tokens-per-parameter exponent"),
        Parameter("E", 0.0, 20.0, 0.1, linear=True, description="floor; Q_max = exp(-E)", constraints=("lower",)),
    )

    def forward(self, theta, X):
        log_c, log_t = _log_compute_tpr(X)
        return theta[..., 0:1] * np.exp(-theta[..., 1:2] * log_c + theta[..., 2:3] * log_t) + theta[..., 3:4]

    def jacobian(self, theta, X):
        log_c, log_t = _log_compute_tpr(X)
        power = np.exp(-theta[..., 1:2] * log_c + theta[..., 2:3] * log_t)
        term = theta[..., 0:1] * power
        return stack_jacobian(term + theta[..., 3:4], power, -log_c * term, log_t * term, 1.0)

    def initial_guesses(self, X, y):
        # the scale and the floor are linear given (alpha, gamma): solve them for a grid of both
        log_c, log_t = _log_compute_tpr(X)
        starts = []
        for alpha in np.geomspace(0.01, 2.0, 12):
            for gamma in (-1.0, -0.3, -0.1, 0.0, 0.1, 0.3, 1.0):
                exponent = -alpha * (log_c - log_c.max()) + gamma * log_t  # scaled to avoid underflow
                scale, floor = nnls_rows(np.column_stack([np.exp(exponent), np.ones_like(y)]), y)
                starts.append([max(scale, 1e-300) * np.exp(alpha * log_c.max()), alpha, gamma, floor])
        return np.array(starts)

    def limit(self, theta, q_rand, k=None):
        scale, alpha, _, floor = theta
        if alpha > 0:
            return float(q_rand + (1 - q_rand) * np.exp(-floor)), "Q_max = Q_rand + (1 - Q_rand) exp(-E) at any T"
        return float("nan"), "alpha = 0: the score does not change with compute, only with T"
