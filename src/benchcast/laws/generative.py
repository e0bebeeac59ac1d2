"""pass@k laws of Schaeffer, Levi, Miranda, Koyejo 2025 (S1-S3), fitted one k at a time.

All three are fitted on log(-log pass@k) (least squares), so that a factor-of-two error on a
small -log pass@k counts as much as on a large one; the target is log of a sum of non-negative
terms, evaluated with logaddexp so a zero irreducible term is exact.
"""

from __future__ import annotations

import itertools

import numpy as np

from benchcast.errors import BenchcastError
from benchcast.laws.base import Law, Parameter
from benchcast.laws.envelope import Envelope
from benchcast.laws.linalg import nnls_rows, stack_jacobian
from benchcast.laws.registry import register
from benchcast.laws.transforms import safe_log

REF = "Schaeffer, Levi, Miranda, Koyejo 2025"


class _PassKLaw(Law):
    target = "loglog"
    loss = "lsq"
    uses_margin = False
    default_metric = "pass@k"
    # (exponent grid for each power term) used to seed the non-negative linear solve
    exponent_grid: tuple[float, ...] = tuple(np.geomspace(0.02, 2.0, 12))

    def power_terms(self, X) -> list[np.ndarray]:
        """log of each covariate whose power forms a term (exponent applied with its sign)."""
        raise NotImplementedError

    def initial_guesses(self, X, y):
        # For each exponent combination, -log Q is linear and non-negative in the
        # (floor, scales): solve those exactly to get a good start.
        neglog = np.exp(y)
        logs = self.power_terms(X)
        starts = []
        for exponents in itertools.product(self.exponent_grid, repeat=len(logs)):
            shifted = [e * (lg - lg.mean()) for e, lg in zip(exponents, logs, strict=True)]
            columns = np.column_stack([np.ones_like(y)] + [np.exp(s) for s in shifted])
            coef = nnls_rows(columns, neglog)
            row = [coef[0]]
            for e, lg, c in zip(exponents, logs, coef[1:], strict=True):
                row += [max(c, 1e-30) * np.exp(-e * lg.mean()), e]
            starts.append(row)
        return np.array(starts)

    def limit(self, theta, q_rand, k=None):
        if np.all(theta[2::2] > 0):  # every exponent positive: only the floor E0 remains
            return float(np.exp(-theta[0])), "exp(-E0): the irreducible error at this k"
        return float("nan"), "an exponent is 0: the reducible term does not vanish"


@register
class ComputeLaw(_PassKLaw):
    name = "compute"
    formula = "-log pass@k = E0 + C0 * C^(-alpha)"
    reference = f"{REF} (S1)"
    description = "pass@k in training compute, per k."
    example_params = {"E0": 0.05, "C0": 2e5, "alpha": 0.26}
    example_covariates = {"flops": (1e18, 1e22)}
    example_k = 4
    parameters = (
        Parameter("E0", 0.0, 50.0, 0.1, description="irreducible -log pass@k", constraints=("lower",)),
        Parameter("C0", 1e-30, 1e80, 1e5, log=True, description="compute scale"),
        Parameter("alpha", 0.0, 5.0, 0.3, description="compute exponent", constraints=("lower",)),
    )

    def power_terms(self, X):
        return [-np.log(X["flops"])]

    def forward(self, theta, X):
        log_c = np.log(X["flops"])
        return np.logaddexp(safe_log(theta[..., 0:1]), np.log(theta[..., 1:2]) - theta[..., 2:3] * log_c)

    def jacobian(self, theta, X):
        # f = log S, S = E0 + C0 C^-alpha: each derivative is d S / S
        log_c = np.log(X["flops"])
        value = self.forward(theta, X)
        per_scale = np.exp(-theta[..., 2:3] * log_c - value)
        return stack_jacobian(value, np.exp(-value), per_scale, -log_c * theta[..., 1:2] * per_scale)


@register
class ParamsTokensLaw(_PassKLaw):
    name = "params_tokens"
    formula = "-log pass@k = E0 + N0 * N^(-beta) + D0 * D^(-gamma)"
    reference = f"{REF} (S2)"
    description = "pass@k in parameters and tokens, per k; its compute-optimal envelope is S1."
    covariates = ("params", "tokens")
    exponent_grid = tuple(np.geomspace(0.05, 1.5, 7))
    example_params = {"E0": 0.1, "N0": 300.0, "beta": 0.3, "D0": 900.0, "gamma": 0.28}
    example_covariates = {"params": (5e7, 3e9), "tokens": (1e9, 5e11)}
    example_k = 1
    parameters = (
        Parameter("E0", 0.0, 50.0, 0.1, description="irreducible -log pass@k", constraints=("lower",)),
        Parameter("N0", 1e-30, 1e80, 1e3, log=True, description="parameter scale"),
        Parameter("beta", 0.0, 5.0, 0.3, description="parameter exponent", constraints=("lower",)),
        Parameter("D0", 1e-30, 1e80, 1e3, log=True, description="token scale"),
        Parameter("gamma", 0.0, 5.0, 0.3, description="token exponent", constraints=("lower",)),
    )

    def power_terms(self, X):
        return [-np.log(X["params"]), -np.log(X["tokens"])]

    def envelope(self, theta) -> Envelope:
        """The compute-optimal envelope of this law at ``theta``."""
        E0, N0, beta, D0, gamma = map(float, theta)
        if min(beta, gamma) <= 0:
            raise BenchcastError(
                f"this params_tokens fit has a zero exponent (beta = {beta:g}, gamma = {gamma:g}): "
                "no finite compute-optimal split exists."
            )
        return Envelope(E0, N0, beta, D0, gamma)

    def covariates_at(self, theta, flops, *, tpr=None):
        """A run of compute C on the compute-optimal envelope (a given tpr overrides the split)."""
        if tpr is not None:
            return super().covariates_at(theta, flops, tpr=tpr)
        params = self.envelope(theta).optimal_params(flops)
        return {"params": params, "tokens": np.asarray(flops, float) / (6.0 * params)}

    def forward(self, theta, X):
        log_n, log_d = np.log(X["params"]), np.log(X["tokens"])
        terms = np.broadcast_arrays(
            safe_log(theta[..., 0:1]) + 0.0 * log_n,
            np.log(theta[..., 1:2]) - theta[..., 2:3] * log_n,
            np.log(theta[..., 3:4]) - theta[..., 4:5] * log_d,
        )
        return np.logaddexp.reduce(terms, axis=0)

    def jacobian(self, theta, X):
        log_n, log_d = np.log(X["params"]), np.log(X["tokens"])
        value = self.forward(theta, X)
        per_n = np.exp(-theta[..., 2:3] * log_n - value)
        per_d = np.exp(-theta[..., 4:5] * log_d - value)
        d_n, d_d = -log_n * theta[..., 1:2] * per_n, -log_d * theta[..., 3:4] * per_d
        return stack_jacobian(value, np.exp(-value), per_n, d_n, per_d, d_d)


@register
class GoldLaw(_PassKLaw):
    name = "gold"
    formula = "-log pass@k = xi0 + K0 * G^kappa,  G = -log GoldProb"
    reference = f"{REF} (S3)"
    description = "pass@k in the negative log-likelihood of gold reference solutions, per k."
    covariates = ("gold",)
    exponent_grid = tuple(np.geomspace(0.05, 10.0, 16))
    example_params = {"xi0": 0.05, "K0": 0.02, "kappa": 2.5}
    example_covariates = {"gold": (0.6, 3.0)}
    example_k = 1
    parameters = (
        Parameter("xi0", 0.0, 50.0, 0.1, description="irreducible -log pass@k", constraints=("lower",)),
        Parameter("K0", 1e-30, 1e30, 1.0, log=True, description="scale"),
        Parameter("kappa", 0.0, 30.0, 1.0, description="exponent of the gold NLL", constraints=("lower",)),
    )

    def power_terms(self, X):
        return [np.log(X["gold"])]

    def limit(self, theta, q_rand, k=None):
        return float(np.exp(-theta[0])), "exp(-xi0): as the gold NLL G falls to 0"

    def forward(self, theta, X):
        log_g = np.log(X["gold"])
        return np.logaddexp(safe_log(theta[..., 0:1]), np.log(theta[..., 1:2]) + theta[..., 2:3] * log_g)

    def jacobian(self, theta, X):
        log_g = np.log(X["gold"])
        value = self.forward(theta, X)
        per_scale = np.exp(theta[..., 2:3] * log_g - value)
        return stack_jacobian(value, np.exp(-value), per_scale, log_g * theta[..., 1:2] * per_scale)
