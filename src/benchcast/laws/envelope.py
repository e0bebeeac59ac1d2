"""The compute-optimal envelope of the parameters+tokens law S2 (SPEC §3.3, §6): the optimal
N/D split of a budget, the misallocation penalty and effective compute.

A fitted S2 law builds it: ``result.fitted.envelope()`` (or ``law.envelope(theta)``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchcast.errors import BenchcastError


@dataclass(frozen=True)
class Envelope:
    """S2 with C = 6 N D minimised over the N/D split: an S1 law E0 + C0_eff C^-alpha_eff."""

    E0: float
    N0: float
    beta: float
    D0: float
    gamma: float

    @property
    def G(self) -> float:
        """The scale of N*(C) = G (C/6)^(gamma/(beta+gamma))."""
        return (self.beta * self.N0 / (self.gamma * self.D0)) ** (1.0 / (self.beta + self.gamma))

    @property
    def alpha_eff(self) -> float:
        """The exponent of compute on the envelope, beta gamma / (beta + gamma)."""
        return self.beta * self.gamma / (self.beta + self.gamma)

    @property
    def C0_eff(self) -> float:
        """The scale of the reducible term on the envelope, C0_eff C^-alpha_eff."""
        return self.N0 * (1.0 + self.beta / self.gamma) * self.G ** (-self.beta) * 6.0**self.alpha_eff

    def optimal_params(self, flops) -> np.ndarray:
        """N*(C) = G (C/6)^(gamma/(beta+gamma)), computed in log space."""
        log_c6 = np.log(np.asarray(flops, float) / 6.0)
        return np.exp(np.log(self.G) + self.gamma / (self.beta + self.gamma) * log_c6)

    def optimal_tokens(self, flops) -> np.ndarray:
        """D*(C) = C / (6 N*(C))."""
        return np.asarray(flops, float) / 6.0 / self.optimal_params(flops)

    def reducible(self, params, tokens) -> np.ndarray:
        """N0 N^-beta + D0 D^-gamma."""
        params, tokens = np.asarray(params, float), np.asarray(tokens, float)
        return self.N0 * params ** (-self.beta) + self.D0 * tokens ** (-self.gamma)

    def envelope_reducible(self, flops) -> np.ndarray:
        """C0_eff C^-alpha_eff: the reducible term of a compute-optimal run."""
        return self.C0_eff * np.asarray(flops, float) ** (-self.alpha_eff)

    def penalty(self, x) -> np.ndarray:
        """P(x) = (gamma x^-beta + beta x^gamma) / (beta + gamma) >= 1 for N = x N*(C)."""
        x = np.asarray(x, float)
        return (self.gamma * x ** (-self.beta) + self.beta * x**self.gamma) / (self.beta + self.gamma)

    def effective_flops(self, flops, params) -> np.ndarray:
        """C_eff = C P(x)^(-1/alpha_eff): the compute of the optimal run that scores the same."""
        x = np.asarray(params, float) / self.optimal_params(flops)
        return np.asarray(flops, float) * self.penalty(x) ** (-1.0 / self.alpha_eff)

    def plan(self, flops: float, params: float | None = None) -> dict:
        """Everything a planner wants at one budget (and, optionally, one planned model size)."""
        for name, value in (("flops", flops), ("params", params)):
            if value is not None and not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
                raise BenchcastError(f"{name} must be a positive finite number, got {value!r}.")
        if params is not None and params >= flops / 6.0:
            raise BenchcastError(
                f"a model of {params:.3g} parameters cannot train on C = {flops:.3g} FLOPs: C = 6 N D needs "
                f"D = C / (6 N) >= 1 token (N < {flops / 6.0:.3g})."
            )
        out = {
            "flops": flops,
            "optimal_params": float(self.optimal_params(flops)),
            "optimal_tokens": float(self.optimal_tokens(flops)),
            "optimal_tokens_per_param": float(self.optimal_tokens(flops) / self.optimal_params(flops)),
            "alpha_eff": self.alpha_eff,
            "C0_eff": self.C0_eff,
            "E0": self.E0,
            "optimal_neg_log_passk": float(self.E0 + self.envelope_reducible(flops)),
        }
        if params is not None:
            x = params / out["optimal_params"]
            tokens = flops / 6.0 / params
            out |= {"params": params, "tokens": tokens, "x": x, "penalty": float(self.penalty(x))}
            out["effective_flops"] = float(self.effective_flops(flops, params))
            out["neg_log_passk"] = float(self.E0 + self.reducible(params, tokens))
        return out
