"""The two-step law in N and D (OLMo's ladder method, Bhagia et al. 2024): a task's loss (bits per byte of the
gold answer, or its negative log-likelihood) as a Chinchilla-form function of parameters and tokens, then a
sigmoid from that loss to accuracy.

Stage 1 is presolved on the proxy loss (held fixed while stage 2 is fitted on the observed loss), so a bootstrap
replicate, a rolling origin or a cross-validation fold refits both stages on its own runs. Its exponents are
profiled: for each (alpha, beta) on a grid the scales (E, A, B) are least squares; finer grids refine the best cell.
"""

from __future__ import annotations

import numpy as np

from benchcast.errors import InsufficientDataError
from benchcast.laws.base import Parameter, SearchSettings
from benchcast.laws.downstream import TwoStageLogistic
from benchcast.laws.linalg import distinct_drawn, distinct_points, stack_jacobian
from benchcast.laws.registry import register

GRID = np.linspace(0.05, 1.5, 30)  # exponents of N and D profiled over this grid, then over finer ones about the best
REFINEMENTS, ZOOM = 3, 5  # each finer grid spans two cells of the last at a fifth of its spacing: 4e-4 at the end


def _as_loss(proxy) -> np.ndarray:
    """The proxy as a loss (a log-likelihood, every value <= 0, negated); one of both signs is refused."""
    proxy = np.asarray(proxy, float)
    if np.all(proxy <= 0):
        return -proxy
    if np.any(proxy <= 0):
        raise InsufficientDataError("two_stage_nd: the proxy loss has values of both signs; name a loss (--proxy).")
    return proxy


def fit_stage1(params, tokens, loss, weights=None) -> np.ndarray:
    """(E, A, alpha, B, beta) of L = E + A / N^alpha + B / D^beta fitted to the losses, least squares: the exponents
    on a grid, then finer grids about the best cell, each cell's scales from its normal equations (weighted sums over
    the points). With ``weights`` (R, n), every reweighting (bootstrap replicate) at once: (R, 5), nan where none fits.
    """
    x, z, loss = np.log(params), np.log(tokens), np.asarray(loss, float)
    sizes = {"params": params, "tokens": tokens}  # replicate runs of one N and D are one point
    if (distinct := distinct_points(sizes)) < 6:
        raise InsufficientDataError(
            f"two_stage_nd: stage 1 fits 5 parameters and has {len(loss)} runs at {distinct} distinct N and D; "
            "it needs 6."
        )
    w = np.ones((1, len(loss))) if weights is None else np.asarray(weights, float)
    # a reweighting of fewer points has no stage 1
    total, ok = w.sum(axis=1), distinct_drawn(sizes, w) >= 6
    x, z = x - (w @ x / total)[:, None], z - (w @ z / total)[:, None]  # about each row's geometric means
    axes, step = (np.broadcast_to(GRID, (len(w), GRID.size)),) * 2, GRID[1] - GRID[0]
    for _ in range(1 + REFINEMENTS):  # vectorised, deterministic
        with np.errstate(over="ignore", invalid="ignore"):
            e_n, e_d = np.exp(-axes[0][..., None] * x[:, None]), np.exp(-axes[1][..., None] * z[:, None])  # (R, G, n)
            wn, wd = e_n * w[:, None], e_d * w[:, None]
            a, b = (slice(None), slice(None), None), (slice(None), None, slice(None))  # an alpha, a beta axis
            sums = [total[:, None, None], wn.sum(-1)[a], wd.sum(-1)[b], (wn * e_n).sum(-1)[a], wn @ e_d.swapaxes(1, 2)]
            sums += [(wd * e_d).sum(-1)[b], (w @ loss)[:, None, None], (wn @ loss)[a], (wd @ loss)[b]]
            one, sn, sd, snn, snd, sdd, r1, rn, rd = np.broadcast_arrays(*sums)
            gram = np.stack([one, sn, sd, sn, snn, snd, sd, snd, sdd], -1).reshape(one.shape + (3, 3))
            rhs = np.stack([r1, rn, rd], -1)
            coef = np.linalg.solve(gram + 1e-12 * np.eye(3), rhs[..., None])[..., 0]
            sse = (
                (w * loss**2).sum(1)[:, None, None]
                - 2 * np.sum(coef * rhs, -1)
                + np.einsum("...i,...ij,...j", coef, gram, coef)
            )
        grid = np.broadcast_arrays(axes[0][..., None], axes[1][:, None])
        fits = np.all(coef >= 0, axis=-1) & (grid[0] > 0) & (grid[1] > 0)
        sse = np.where(fits, sse, np.inf).reshape(len(w), -1)
        i, ok = np.argmin(sse, axis=1), ok & np.isfinite(sse).any(axis=1)
        rows = np.arange(len(w))
        best = np.column_stack([g.reshape(len(w), -1)[rows, i] for g in grid])
        scales = coef.reshape(len(w), -1, 3)[rows, i]
        axes = tuple(best[:, j : j + 1] + np.linspace(-step, step, 2 * ZOOM + 1) for j in (0, 1))
        step /= ZOOM
    means = np.column_stack([w @ np.log(params), w @ np.log(tokens)]) / total[:, None]
    out = np.column_stack(
        [
            scales[:, 0],
            scales[:, 1] * np.exp(best[:, 0] * means[:, 0]),
            best[:, 0],
            scales[:, 2] * np.exp(best[:, 1] * means[:, 1]),
            best[:, 1],
        ]
    )
    out[~ok] = np.nan
    if weights is None and not ok[0]:
        raise InsufficientDataError("two_stage_nd: no Chinchilla form with non-negative scales fits the proxy.")
    return out if weights is not None else out[0]


@register
class TwoStageND(TwoStageLogistic):
    name = "two_stage_nd"
    formula = "L = E + A/N^alpha + B/D^beta;  Q = a / (1 + exp(-k*(L - L0))) + b"
    reference = "Bhagia et al. 2024 (OLMo ladder): task loss in N and D, then a sigmoid to accuracy"
    description = (
        "Parameters and tokens -> the task's loss (proxy: bits per byte, or the negative gold log-likelihood) -> "
        "score (logistic); both stages refitted per bootstrap replicate and rolling origin."
    )
    covariates = ("params", "tokens")
    # bits per byte where a training log has it, else the gold log-likelihood (the data's first that exists)
    default_proxy = ("{benchmark}:bpb", "{benchmark}:{gold_metric}")
    n_presolved = 5
    # stage 2 has two nonlinear parameters (k, L0) and four starts of its own: fewer screened starts than
    # two_stage_logistic's 1024 (benchmarks/two_stage_nd.md was written with 128)
    search = SearchSettings(n_screen=128)
    example_params = {
        **{"E": 0.5, "A": 40.0, "alpha": 0.3, "B": 150.0, "beta": 0.3},
        **{"a": 0.7, "k": -8.0, "L0": 0.9, "b": 0.25},
    }
    example_covariates = {"params": (1e8, 3e9), "tokens": (2e9, 6e11)}
    parameters = (
        Parameter("E", 0.0, 1e6, 0.5, description="stage 1: irreducible loss", constraints=("lower",)),
        Parameter("A", 1e-12, 1e12, 100.0, log=True, description="stage 1: parameter scale"),
        Parameter("alpha", 0.0, 3.0, 0.3, description="stage 1: parameter exponent", constraints=("lower",)),
        Parameter("B", 1e-12, 1e12, 100.0, log=True, description="stage 1: token scale"),
        Parameter("beta", 0.0, 3.0, 0.3, description="stage 1: token exponent", constraints=("lower",)),
        # a >= 0: the sigmoid's mirror image (-a, -k, a + b) is the same curve, so its sign is fixed here
        Parameter("a", 0.0, 2.0, 0.5, linear=True, description="stage 2 amplitude", constraints=("lower",)),
        Parameter("k", -200.0, 200.0, -5.0, description="stage 2 steepness"),
        # on a log scale: a proxy's midpoint is ~1 in bits per byte and ~70 as a summed negative log-likelihood
        Parameter("L0", 1e-3, 1e4, 3.0, log=True, description="stage 2 midpoint loss"),
        Parameter("b", -2.0, 2.0, 0.25, linear=True, description="stage 2 offset"),
    )

    def proxy_loss(self, theta, X):
        """Stage 2 reads the observed loss while fitting; predictions chain stage 1 at N and D."""
        if "proxy" in X:
            return _as_loss(X["proxy"])
        return self.proxy_jacobian(theta, X)[0]

    def proxy_jacobian(self, theta, X):
        """(L, dL/dE, dL/dA, dL/dalpha, dL/dB, dL/dbeta); the derivatives are 0 where the observed loss is read."""
        if "proxy" in X:
            loss = _as_loss(X["proxy"])
            zero = np.zeros(np.broadcast_shapes(np.shape(loss), np.shape(theta)[:-1] + (1,)))
            return (loss, *([zero] * 5))
        log_n, log_d = np.log(X["params"]), np.log(X["tokens"])
        per_n = np.exp(-theta[..., 2:3] * log_n)
        per_d = np.exp(-theta[..., 4:5] * log_d)
        term_n, term_d = theta[..., 1:2] * per_n, theta[..., 3:4] * per_d
        loss = theta[..., 0:1] + term_n + term_d
        return loss, np.ones_like(loss), per_n, -log_n * term_n, per_d, -log_d * term_d

    def forward(self, theta, X):
        loss = self.proxy_loss(theta, X)
        return theta[..., 5:6] / (1.0 + np.exp(-theta[..., 6:7] * (loss - theta[..., 7:8]))) + theta[..., 8:9]

    def jacobian(self, theta, X):
        loss, *stage1 = self.proxy_jacobian(theta, X)
        amplitude, steep, mid = theta[..., 5:6], theta[..., 6:7], theta[..., 7:8]
        gap = loss - mid
        sigmoid = 0.5 * (1.0 + np.tanh(0.5 * steep * gap))  # = 1 / (1 + exp(-k (L - L0))), overflow-free
        slope = amplitude * sigmoid * (1.0 - sigmoid)
        return stack_jacobian(
            self.forward(theta, X), *(slope * steep * d for d in stage1), sigmoid, slope * gap, -slope * steep, 1.0
        )

    def presolve(self, X, y):
        e, a, alpha, b, beta = fit_stage1(X["params"], X["tokens"], _as_loss(X["proxy"]))
        return {"E": e, "A": a, "alpha": alpha, "B": b, "beta": beta}

    def presolve_weighted(self, X, y, weights):
        return fit_stage1(X["params"], X["tokens"], _as_loss(X["proxy"]), weights)

    def limit(self, theta, q_rand, k=None):
        loss = theta[0]  # N and D grow: the loss falls to E
        value = theta[5] / (1.0 + np.exp(-theta[6] * (loss - theta[7]))) + theta[8]
        return float(np.clip(value, 0, 1)), "stage 2 at the irreducible loss E (clipped to [0, 1])"

    def initial_guesses(self, X, y):
        loss = _as_loss(X["proxy"])
        spread = max(float(np.ptp(loss)), 1e-6)
        first = [*(self.parameters[i].init for i in range(5)), float(np.ptp(y)) or 0.5]
        return np.array([[*first, -s / spread, float(np.median(loss)), float(y.min())] for s in (2.0, 5.0, 10.0, 20.0)])
