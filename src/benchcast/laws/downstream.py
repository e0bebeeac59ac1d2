"""Direct downstream laws of Krajewski et al. 2025 (K1, K2, K4, K5) and the two-stage baselines (K6);
the broken neural scaling law (K3) lives in :mod:`benchcast.laws.bnsl`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import InsufficientDataError
from benchcast.laws.base import Law, Parameter, SearchSettings
from benchcast.laws.linalg import distinct_drawn, nnls_rows, stack_jacobian, weighted_ols
from benchcast.laws.registry import register
from benchcast.laws.transforms import safe_log

REF = "Krajewski et al. 2025"
HUGE = 1e300
STAGE1_COMPUTES = 3  # distinct computes stage 1 needs: its two parameters through two computes check nothing


def _ols(design: np.ndarray, y: np.ndarray) -> np.ndarray:
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return coef


@register
class PowerLaw(Law):
    name = "power"
    formula = "-log Q' = A * C^(-alpha)"
    reference = f"{REF}, Eq. 2 (K1)"
    description = "Power law in compute on the chance-normalised score; OLS in log-log space."
    target = "loglog"
    loss = "lsq"
    example_params = {"A": 5000.0, "alpha": 0.19}
    example_covariates = {"flops": (1e18, 1e22)}
    example_q_rand = 0.25
    parameters = (
        Parameter("A", 1e-300, HUGE, 1.0, log=True, description="scale of -log Q'"),
        Parameter("alpha", 0.0, 10.0, 0.1, description="compute exponent", constraints=("lower",)),
    )

    def forward(self, theta, X):
        return np.log(theta[..., 0:1]) - theta[..., 1:2] * np.log(X["flops"])

    def jacobian(self, theta, X):
        log_c = np.log(X["flops"])
        return stack_jacobian(self.forward(theta, X), 1.0 / theta[..., 0:1], -log_c)

    def closed_form(self, X, y):
        intercept, slope = _ols(np.column_stack([np.ones_like(y), np.log(X["flops"])]), y)
        with np.errstate(over="ignore"):  # an overflowing scale is reported by the fit, not warned twice
            return np.array([np.exp(intercept), -slope])

    def closed_form_weighted(self, X, y, weights):
        coef = weighted_ols(np.column_stack([np.ones_like(y), np.log(X["flops"])]), y, weights)
        with np.errstate(over="ignore"):
            return np.column_stack([np.exp(coef[:, 0]), -coef[:, 1]])

    def limit(self, theta, q_rand, k=None):
        scale, alpha = theta[0], theta[1]
        if alpha > 0:
            return 1.0, "1: -log Q' = A C^-alpha vanishes as C grows"
        return float(q_rand + (1 - q_rand) * np.exp(-scale)), "alpha = 0: the score does not change with compute"


BUDGET_DECADES = 0.1  # runs within a tenth of a decade of compute of a budget's cheapest are one budget (IsoFLOP)


def budgets(flops) -> np.ndarray:
    """Each run's compute budget: a new one where a run lies ``BUDGET_DECADES`` above the budget's cheapest."""
    logs = np.log10(np.asarray(flops, float))
    out, start, label = np.zeros(len(logs), int), -np.inf, -1
    for i in np.argsort(logs, kind="stable"):
        if logs[i] > start + BUDGET_DECADES:
            start, label = logs[i], label + 1
        out[i] = label
    return out


@register
class PowerEnvelopeLaw(PowerLaw):
    name = "power_envelope"
    formula = "-log Q' = A * C^(-alpha), on each compute budget's best run"
    description = (
        "The compute-alone power law fitted to the compute-optimal envelope: per budget (runs within 0.1 decade of "
        "compute), the run that scores best. The simplest alternative on an IsoFLOP sweep."
    )
    selectable = False  # the alternative a forecast is shown beside, not a candidate of the default

    def row_filter(self, rows) -> np.ndarray:
        value = rows["value"].to_numpy(float)
        reasons = np.full(len(rows), "not the best run of its compute budget (the envelope)", dtype=object)
        ok = np.isfinite(value) & np.isfinite(rows["flops"].to_numpy(float))
        if not ok.any():
            return np.full(len(rows), "", dtype=object)
        k = rows["k"].to_numpy(float) if "k" in rows else np.ones(len(rows))
        frame = pd.DataFrame({"budget": -1, "k": k, "value": np.where(ok, value, -np.inf)})
        frame.loc[ok, "budget"] = budgets(rows["flops"].to_numpy(float)[ok])
        best = frame[ok].groupby(["budget", "k"])["value"].idxmax().to_numpy()
        reasons[best] = ""
        reasons[~ok] = ""  # a row without a score or compute is dropped for that reason
        return reasons

    def across_tprs(self, rows) -> str:
        return ""  # each budget's best run, whatever its TPR: the envelope is one curve in compute


@register
class PowerFloorLaw(Law):
    name = "power_floor"
    formula = "-log Q' = A * C^(-alpha) + E,  Q_max = exp(-E)"
    reference = f"{REF}, Eq. 10, App. L (K2)"
    description = "Power law with an irreducible floor E; Huber loss, grid of starts."
    target = "neglog"
    loss = "huber"
    example_params = {"A": 3000.0, "alpha": 0.2, "E": 0.2}
    example_covariates = {"flops": (1e18, 1e22)}
    example_q_rand = 0.25
    parameters = (
        Parameter("A", 1e-300, HUGE, 1.0, log=True, linear=True, description="scale"),
        Parameter("alpha", 0.0, 5.0, 0.1, description="compute exponent", constraints=("lower",)),
        Parameter("E", 0.0, 20.0, 0.1, linear=True, description="floor; Q_max = exp(-E)", constraints=("lower",)),
    )

    def forward(self, theta, X):
        log_c = np.log(X["flops"])
        return theta[..., 0:1] * np.exp(-theta[..., 1:2] * log_c) + theta[..., 2:3]

    def jacobian(self, theta, X):
        log_c = np.log(X["flops"])
        power = np.exp(-theta[..., 1:2] * log_c)
        term = theta[..., 0:1] * power
        return stack_jacobian(term + theta[..., 2:3], power, -log_c * term, 1.0)

    def initial_guesses(self, X, y):
        starts = []
        log_c = np.log(X["flops"])
        for alpha in np.geomspace(0.01, 2.0, 16):
            basis = np.exp(-alpha * (log_c - log_c.max()))  # scaled to avoid underflow
            scale, floor = nnls_rows(np.column_stack([basis, np.ones_like(y)]), y)
            starts.append([max(scale, 1e-300) * np.exp(alpha * log_c.max()), alpha, floor])
        return np.array(starts)

    def limit(self, theta, q_rand, k=None):
        scale, alpha, floor = theta
        if alpha > 0:
            return float(q_rand + (1 - q_rand) * np.exp(-floor)), "Q_max = Q_rand + (1 - Q_rand) exp(-E)"
        return float(
            q_rand + (1 - q_rand) * np.exp(-floor - scale)
        ), "alpha = 0: the score does not change with compute"


class _NDLaw(Law):
    formula = "-log Q' = A / N^alpha + B / D^beta"
    reference = f"{REF}, Eq. 4 (K4)"
    description = "Parameters and tokens (several TPRs); Huber loss in log(-log Q') space."
    covariates = ("params", "tokens")
    target = "loglog"
    loss = "huber"
    search = SearchSettings(n_starts=None)  # solve every grid start, as the paper polishes each
    floor = False

    @property
    def parameters(self):
        params = (
            Parameter("A", 1e-30, 1e40, np.exp(10), log=True, description="parameter scale"),
            Parameter("alpha", 0.0, 3.0, 1.0, description="parameter exponent", constraints=("lower",)),
            Parameter("B", 1e-30, 1e40, np.exp(10), log=True, description="token scale"),
            Parameter("beta", 0.0, 3.0, 1.0, description="token exponent", constraints=("lower",)),
        )
        if self.floor:
            params += (Parameter("E", 0.0, 20.0, 0.05, description="floor", constraints=("lower",)),)
        return params

    def forward(self, theta, X):
        log_n, log_d = np.log(X["params"]), np.log(X["tokens"])
        # logaddexp pairwise, in the order a reduce over the stacked terms takes (the same floats, without the
        # broadcast copies and the ufunc reduce)
        value = np.logaddexp(
            np.log(theta[..., 0:1]) - theta[..., 1:2] * log_n, np.log(theta[..., 2:3]) - theta[..., 3:4] * log_d
        )
        return np.logaddexp(value, safe_log(theta[..., 4:5])) if self.floor else value

    def jacobian(self, theta, X):
        # f = log S with S = A N^-alpha + B D^-beta (+ E): each derivative is d S / S
        log_n, log_d = np.log(X["params"]), np.log(X["tokens"])
        value = self.forward(theta, X)
        per_a = np.exp(-theta[..., 1:2] * log_n - value)  # N^-alpha / S
        per_b = np.exp(-theta[..., 3:4] * log_d - value)
        columns = [per_a, -log_n * theta[..., 0:1] * per_a, per_b, -log_d * theta[..., 2:3] * per_b]
        if self.floor:
            columns.append(np.exp(-value))
        return stack_jacobian(value, *columns)

    def limit(self, theta, q_rand, k=None):
        floor = theta[4] if self.floor else 0.0
        if theta[1] > 0 and theta[3] > 0:
            return float(q_rand + (1 - q_rand) * np.exp(-floor)), (
                "Q_rand + (1 - Q_rand) exp(-E)" if self.floor else "1: both terms vanish as N and D grow"
            )
        return float("nan"), "an exponent is 0: the limit depends on how compute is split between N and D"

    def initial_guesses(self, X, y):
        grid = [
            [np.exp(a), alpha, np.exp(b), beta] + ([0.05] if self.floor else [])
            for alpha in (0.5, 1.0, 1.5)
            for beta in (0.5, 1.0, 1.5)
            for a in (5.0, 10.0, 15.0)
            for b in (5.0, 10.0, 15.0)
        ]
        return np.array(grid)


@register
class NDLaw(_NDLaw):
    name = "nd"
    example_params = {"A": 1800.0, "alpha": 0.38, "B": 3300.0, "beta": 0.39}
    example_covariates = {"params": (5e7, 3e9), "tokens": (1e9, 5e11)}
    example_q_rand = 0.25


@register
class NDFloorLaw(_NDLaw):
    name = "nd_floor"
    formula = "-log Q' = A / N^alpha + B / D^beta + E"
    floor = True
    example_params = {"A": 900.0, "alpha": 0.35, "B": 2000.0, "beta": 0.37, "E": 0.15}
    example_covariates = {"params": (5e7, 3e9), "tokens": (1e9, 5e11)}


@register
class PassKComputeLaw(Law):
    name = "passk_compute"
    formula = "log(-log Q) = a + alpha*log C + beta*log k + delta*log C*log k"
    reference = f"{REF}, Eq. 5 (K5)"
    description = "One law across compute and number of attempts k; OLS on all (C, k) points."
    covariates = ("flops", "k")
    target = "loglog"
    loss = "lsq"
    uses_margin = False
    per_k = False
    selectable = False  # one law across every k: not a candidate for a per-(benchmark, k) choice
    default_metric = "pass@k"
    example_params = {"a": 9.0, "alpha": -0.19, "beta": -0.3, "delta": -0.002}
    example_covariates = {"flops": (1e18, 3e22), "k": (1, 64)}
    parameters = (
        Parameter("a", -np.inf, np.inf, 0.0, description="intercept"),
        Parameter("alpha", -np.inf, np.inf, -0.1, description="log C slope"),
        Parameter("beta", -np.inf, np.inf, -0.1, description="log k slope"),
        Parameter("delta", -np.inf, np.inf, 0.0, description="log C x log k interaction"),
    )

    def forward(self, theta, X):
        log_c, log_k = np.log(X["flops"]), np.log(X["k"])
        a, alpha, beta, delta = (theta[..., i : i + 1] for i in range(4))
        return a + alpha * log_c + beta * log_k + delta * log_c * log_k

    def jacobian(self, theta, X):
        log_c, log_k = np.log(X["flops"]), np.log(X["k"])
        return stack_jacobian(self.forward(theta, X), 1.0, log_c, log_k, log_c * log_k)

    def closed_form(self, X, y):
        log_c, log_k = np.log(X["flops"]), np.log(X["k"])
        return _ols(np.column_stack([np.ones_like(y), log_c, log_k, log_c * log_k]), y)

    def closed_form_weighted(self, X, y, weights):
        log_c, log_k = np.log(X["flops"]), np.log(X["k"])
        return weighted_ols(np.column_stack([np.ones_like(y), log_c, log_k, log_c * log_k]), y, weights)

    def limit(self, theta, q_rand, k=None):
        if k is None:
            raise InsufficientDataError("passk_compute: the limit in compute depends on k; give k.")
        a, alpha, beta, delta = theta
        return _loglog_limit(alpha + delta * np.log(k), a + beta * np.log(k), f"as C grows at k = {k:g}")

    def k_slope(self, theta, X):
        """d log(-log Q) / d log k at each point, beta + delta log C: above 0, pass@k falls as k grows."""
        return theta[..., 2:3] + theta[..., 3:4] * np.log(X["flops"])

    def limit_in_k(self, theta, q_rand, flops):
        slope = float(np.ravel(self.k_slope(np.asarray(theta, float), {"flops": flops}))[0])
        return _loglog_limit(slope, theta[0] + theta[1] * np.log(flops), f"as k grows at C = {flops:.3g}")


def _loglog_limit(slope: float, intercept: float, where: str) -> tuple[float, str]:
    """Limit of Q = exp(-exp(intercept + slope * x)) as x -> inf."""
    if slope < 0:
        return 1.0, f"1 {where} (log(-log Q) falls without bound)"
    if slope > 0:
        return 0.0, f"0 {where} (log(-log Q) rises without bound)"
    return float(np.exp(-np.exp(intercept))), f"constant {where} (zero slope)"


class _TwoStage(Law):
    reference = f"{REF}, two-stage baselines (K6)"
    fit_covariates = ("proxy",)
    # the task's own log-likelihood, as model-ladder papers chain loss -> accuracy (K6)
    default_proxy = "{benchmark}:{gold_metric}"
    clip_scores = True  # stage 2 is unbounded: forecasts are clipped to [0, 1] with a warning
    target = "score"
    loss = "lsq"
    uses_margin = False
    n_presolved = 2  # stage 1 is fitted on the proxy, not on the scores
    stage1 = (
        Parameter("C_L", 1e-300, HUGE, 1e10, log=True, description="stage 1: loss scale (FLOPs)"),
        Parameter("alpha_L", -10.0, 10.0, -0.05, description="stage 1: loss exponent"),
    )

    def proxy_loss(self, theta, X):
        """Stage 2 reads the observed proxy while fitting; predictions chain stage 1."""
        if "proxy" in X:
            return np.asarray(X["proxy"], float)
        return np.exp(theta[..., 1:2] * (np.log(X["flops"]) - np.log(theta[..., 0:1])))

    def proxy_jacobian(self, theta, X):
        """(L, dL/dC_L, dL/dalpha_L): zero while fitting, where the observed proxy is read."""
        loss = self.proxy_loss(theta, X)
        if "proxy" in X:
            zero = np.zeros(np.broadcast_shapes(np.shape(loss), np.shape(theta)[:-1] + (1,)))
            return loss, zero, zero
        log_ratio = np.log(X["flops"]) - np.log(theta[..., 0:1])
        return loss, -loss * theta[..., 1:2] / theta[..., 0:1], loss * log_ratio

    def presolve(self, X, y):
        log_c, log_l = np.log(X["flops"]), np.log(X["proxy"])
        if (distinct := len(np.unique(log_c))) < STAGE1_COMPUTES:
            raise InsufficientDataError(
                f"{self.name}: stage 1 fits 2 parameters to the proxy and has {distinct} distinct compute value(s); "
                f"it needs {STAGE1_COMPUTES}."
            )
        intercept, slope = _ols(np.column_stack([np.ones_like(log_c), log_c]), log_l)
        if abs(slope) < 1e-12:
            raise InsufficientDataError("two-stage fit: the proxy does not change with compute.")
        return {"C_L": float(np.exp(-intercept / slope)), "alpha_L": float(slope)}


@register
class TwoStageLinear(_TwoStage):
    name = "two_stage_linear"
    formula = "L = (C/C_L)^alpha_L;  Q = a + b*L"
    description = (
        "Compute -> proxy loss (power law) -> score (linear); proxy: the task's own log-likelihood unless named."
    )
    example_params = {"C_L": 1.3e32, "alpha_L": -0.045, "a": 1.4, "b": -0.3}
    example_covariates = {"flops": (1e18, 1e22)}
    parameters = _TwoStage.stage1 + (
        Parameter("a", -np.inf, np.inf, 1.0, linear=True, description="stage 2 intercept"),
        Parameter("b", -np.inf, np.inf, -0.1, linear=True, description="stage 2 slope"),
    )

    def forward(self, theta, X):
        return theta[..., 2:3] + theta[..., 3:4] * self.proxy_loss(theta, X)

    def jacobian(self, theta, X):
        loss, d_scale, d_exponent = self.proxy_jacobian(theta, X)
        slope = theta[..., 3:4]
        return stack_jacobian(theta[..., 2:3] + slope * loss, slope * d_scale, slope * d_exponent, 1.0, loss)

    def limit(self, theta, q_rand, k=None):
        alpha_l, a, b = theta[1], theta[2], theta[3]
        if alpha_l < 0:  # the proxy loss falls to 0
            return float(np.clip(a, 0, 1)), "stage 2 at proxy loss 0 (clipped to [0, 1])"
        return float(np.clip(np.sign(b) * np.inf if alpha_l > 0 and b else a + b, 0, 1)), "the proxy loss does not fall"

    def closed_form(self, X, y):
        stage1 = self.presolve(X, y)
        a, b = _ols(np.column_stack([np.ones_like(y), X["proxy"]]), y)
        return np.array([stage1["C_L"], stage1["alpha_L"], a, b])

    def closed_form_weighted(self, X, y, weights):
        log_c, log_l = np.log(X["flops"]), np.log(X["proxy"])
        # a reweighting drawing fewer than three computes has no stage 1 (as presolve refuses): nan, a failed refit;
        # it is solved on the full data's weights so that its singular line does not stop the batch
        short = distinct_drawn({"flops": X["flops"]}, weights) < STAGE1_COMPUTES
        weights = np.where(short[:, None], 1.0, weights)
        intercept, slope = weighted_ols(np.column_stack([np.ones_like(log_c), log_c]), log_l, weights).T
        if np.any(np.abs(slope[~short]) < 1e-12):
            return None  # some resample has a flat proxy: the per-replicate path says which
        stage2 = weighted_ols(np.column_stack([np.ones_like(y), X["proxy"]]), y, weights)
        with np.errstate(over="ignore"):
            out = np.column_stack([np.exp(-intercept / slope), slope, stage2])
        out[short] = np.nan
        return out


@register
class TwoStageLogistic(_TwoStage):
    name = "two_stage_logistic"
    formula = "L = (C/C_L)^alpha_L;  Q = a / (1 + exp(-k*(L - L0))) + b"
    description = (
        "Compute -> proxy loss (power law) -> score (logistic, least squares); proxy: the task's own "
        "log-likelihood unless named."
    )
    search = SearchSettings(n_screen=1024)
    example_params = {"C_L": 1.3e32, "alpha_L": -0.045, "a": 0.6, "k": -4.0, "L0": 3.2, "b": 0.25}
    example_covariates = {"flops": (1e18, 1e22)}
    parameters = _TwoStage.stage1 + (
        Parameter("a", -2.0, 2.0, 0.5, linear=True, description="stage 2 amplitude"),
        Parameter("k", -200.0, 200.0, -5.0, description="stage 2 steepness"),
        Parameter("L0", 0.0, 100.0, 3.0, description="stage 2 midpoint loss", constraints=("lower",)),
        Parameter("b", -2.0, 2.0, 0.25, linear=True, description="stage 2 offset"),
    )

    def forward(self, theta, X):
        loss = self.proxy_loss(theta, X)
        return theta[..., 2:3] / (1.0 + np.exp(-theta[..., 3:4] * (loss - theta[..., 4:5]))) + theta[..., 5:6]

    def jacobian(self, theta, X):
        loss, d_scale, d_exponent = self.proxy_jacobian(theta, X)
        amplitude, steep, mid = theta[..., 2:3], theta[..., 3:4], theta[..., 4:5]
        gap = loss - mid
        sigmoid = 0.5 * (1.0 + np.tanh(0.5 * steep * gap))  # = 1 / (1 + exp(-k (L - L0))), overflow-free
        slope = amplitude * sigmoid * (1.0 - sigmoid)  # d/d(k (L - L0)) of the amplitude term
        steep_slope = slope * steep
        return stack_jacobian(
            self.forward(theta, X),
            steep_slope * d_scale,
            steep_slope * d_exponent,
            sigmoid,
            slope * gap,
            -steep_slope,
            1.0,
        )

    def limit(self, theta, q_rand, k=None):
        alpha_l, a, k_steep, l0, b = theta[1:]
        if alpha_l < 0:  # the proxy loss falls to 0
            value = a / (1.0 + np.exp(k_steep * l0)) + b
            return float(np.clip(value, 0, 1)), "stage 2 at proxy loss 0 (clipped to [0, 1])"
        value = b + (a if k_steep > 0 else 0.0) if alpha_l > 0 else a / (1.0 + np.exp(k_steep * l0)) + b
        return float(np.clip(value, 0, 1)), "the proxy loss does not fall with compute"

    def initial_guesses(self, X, y):
        proxy = np.asarray(X["proxy"], float)
        spread = max(float(np.ptp(proxy)), 1e-6)
        first = [1.0, -0.05, float(np.ptp(y)) or 0.5]
        return np.array(
            [[*first, -s / spread, float(np.median(proxy)), float(y.min())] for s in (2.0, 5.0, 10.0, 20.0)]
        )
