"""The declarative law object shared by every scaling law, its target transforms and registry.

A law is a small object in the manner of ``scipy.stats`` distributions: its parameters (with
bounds, scale and whether they enter the fitted target linearly), the covariates it needs, the
target transform it is fitted on, its loss, and a vectorised ``forward`` in target space.
All numerical work (multi-start, global search, variable projection) lives in
:mod:`benchcast.fitting`, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import nnls

from benchcast.data.chance import filter_margin
from benchcast.errors import BenchcastError, did_you_mean
from benchcast.laws.transforms import normalise, safe_log, to_score, to_target  # noqa: F401 (part of this module's API)

if TYPE_CHECKING:
    from benchcast.laws.fitted import FittedLaw

# Covariates a law may need, by the names used everywhere (API, CLI, tables).
COVARIATES = ("flops", "params", "tokens", "k", "gold", "proxy")
TARGETS = ("score", "neglog", "loglog")


@dataclass(frozen=True)
class SearchSettings:
    """How the fitting engine searches a law's parameters (:mod:`benchcast.fitting.engine`).

    Parameters
    ----------
    multimodal : bool
        The loss surface has several basins and flat valleys: the best three refined points are
        finished, a point that runs out of budget is continued along its valley, and bootstrap
        replicates share one pool of screened starts.
    n_screen : int
        Quasi-random screening points for the global search (0: the law's own starts alone).
    n_polish : int or None
        Starts refined with L-BFGS-B (None: all).
    n_settle : int
        Best screened starts also settled to convergence by the batched Levenberg-Marquardt, a
        second search whose best point is finished on its own path (where the two searches' basins
        differ); 0: none.
    """

    multimodal: bool = False
    n_screen: int = 0
    n_polish: int | None = 8
    n_settle: int = 0


@dataclass(frozen=True)
class Parameter:
    """One fitted parameter: bounds in natural units, and how the optimiser should see it."""

    name: str
    lower: float
    upper: float
    init: float
    log: bool = False  # optimise log(value): for scales spanning many decades
    linear: bool = False  # the fitted target is affine in it (variable projection applies)
    description: str = ""


def stack_jacobian(value: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(value, jac)`` with each derivative broadcast to the prediction's shape, stacked on axis -2
    (into one new array: ``np.stack`` of broadcast views costs more than the law's arithmetic)."""
    shape = np.broadcast_shapes(np.shape(value), *(np.shape(column) for column in columns))
    jac = np.empty(shape[:-1] + (len(columns),) + shape[-1:])
    for row, column in enumerate(columns):
        jac[..., row, :] = column
    return value, jac


def weighted_ols(design: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Least squares of ``y`` (n,) on ``design`` (n, p) under each row of ``weights`` (B, n) at
    once, by a batched QR of the weighted design (no normal equations: log-compute columns are
    badly conditioned); returns (B, p)."""
    root = np.sqrt(np.asarray(weights, float))[:, :, None]
    q, r = np.linalg.qr(root * design)
    rhs = np.einsum("bnp,bn->bp", q, root[:, :, 0] * y)
    return np.linalg.solve(r, rhs[..., None])[..., 0]


def nnls_rows(columns: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares with column scaling; columns has shape (n, L)."""
    scale = np.maximum(np.abs(columns).max(axis=0), 1e-300)
    coef, _ = nnls(columns / scale, target)
    return coef / scale


class Law:
    """Base class. Subclasses set the class attributes and implement :meth:`forward`."""

    name: str = ""
    formula: str = ""
    reference: str = ""
    description: str = ""
    covariates: tuple[str, ...] = ("flops",)  # needed to predict
    fit_covariates: tuple[str, ...] = ()  # needed only to fit (e.g. a proxy loss)
    target: str = "loglog"  # the fitted space: 'score', 'neglog' = -log Q', 'loglog' = log(-log Q')
    loss: str = "huber"  # 'huber' or 'lsq' (closed-form laws solve least squares exactly)
    huber_delta: float = 1e-3
    uses_margin: bool = True  # drop points with Q <= Q_rand + margin before fitting
    default_margin: float | None = None  # None: benchcast.chance.filter_margin
    per_k: bool = True  # pass@k metrics are fitted one k at a time
    default_metric: str | None = None
    selectable: bool = True  # offered by law selection (recommend, bench)
    clip_scores: bool = False  # forecasts can leave [0, 1]: clip them and say so
    search: SearchSettings = SearchSettings()
    n_presolved: int = 0  # parameters fixed by presolve() from other data (not by the scores)
    parameters: tuple[Parameter, ...] = ()
    # Modelling constraints the law imposes beyond its formula, in words (shown by describe() and
    # `benchcast laws`); each must hold for every fitted parameter vector, e.g. by reparameterisation.
    constraints: tuple[str, ...] = ()
    # An example every registered law declares, as scipy.stats' ``distcont`` list does for its
    # distributions: tests/test_law_battery.py fits it back and checks the Jacobian, the artifact
    # round-trip and planning from it, so a law without one fails the battery.
    example_params: dict[str, float] | None = None  # every parameter, natural units
    # (low, high) of each covariate the example's runs span: log-spaced, crossed with each other;
    # a proxy loss (fit_covariates) is not listed: it is the law's own stage 1 at these runs
    example_covariates: dict[str, tuple[float, float]] | None = None
    example_q_rand: float = 0.0  # the chance level of the example benchmark
    example_k: int | None = None  # the k a per-k pass@k law is fitted at
    # parameters the example's runs do not pin down (a flat direction of the fit): the battery
    # checks the law's predictions for them, not their values
    example_unidentified: tuple[str, ...] = ()

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.parameters]

    @property
    def n_params(self) -> int:
        return len(self.parameters)

    def forward(self, theta: np.ndarray, X: dict[str, np.ndarray]) -> np.ndarray:
        """Prediction in target space; ``theta`` has shape (..., n_params), broadcast over points."""
        raise NotImplementedError

    def jacobian(self, theta: np.ndarray, X: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
        """Prediction and its exact Jacobian in natural parameters, or None where the law declares
        none (the engine then takes central differences).

        ``theta`` has shape (..., n_params); returns ``(forward, jac)`` with shapes (..., n) and
        (..., n_params, n), ``jac`` a new array of the call's own (the engine scales it in place; a
        read-only one is copied first). A law that declares one makes every fit, refit and
        bootstrap cheaper."""
        return None

    def closed_form_weighted(self, X: dict[str, np.ndarray], y: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
        """The closed-form solution for many weightings of the same points at once (bootstrap
        replicates: ``weights`` (B, n) counts how often each point was drawn), shape (B, n_params);
        None where the law has none. Must equal :meth:`closed_form` on each resample."""
        return None

    def replicate_strategy(self, loss: str) -> str:
        """How bootstrap replicates of this law are refitted: 'closed' (the exact least-squares
        solution of each resample), 'cold' (the full engine per replicate, presolved stages
        re-solved) or 'batched' (one vectorised Levenberg-Marquardt over all replicates from the
        full-data optimum and the starting points a cold fit of each resample would use - for a
        multimodal law, the full data's best screened candidates; each replicate then finished
        by the engine's trust-region solve)."""
        if type(self).closed_form is not Law.closed_form and loss == "lsq":
            return "closed"
        # a presolved stage is re-solved per resample; a multimodal law's replicates share a pool of
        # screened starts (see fitting.replicates.refit_weighted)
        return "cold" if self.n_presolved else "batched"

    def closed_form(self, X: dict[str, np.ndarray], y: np.ndarray) -> np.ndarray | None:
        """Exact solution of the fitting problem where one exists (else None)."""
        return None

    def refinement_starts(self, theta: np.ndarray, X: dict[str, np.ndarray]) -> np.ndarray | None:
        """Starts near a fitted optimum ``theta`` that a local search from it cannot reach (shape
        (S, n_params); None where the law has none). The engine settles them and keeps the best if
        it is lower: a fit can only improve."""
        return None

    def presolve(self, X: dict[str, np.ndarray], y: np.ndarray) -> dict[str, float]:
        """Parameters determined in closed form before the numerical search (held fixed)."""
        return {}

    def initial_guesses(self, X: dict[str, np.ndarray], y: np.ndarray) -> np.ndarray:
        """Starting points, shape (S, n_params); the default is each parameter's ``init``."""
        return np.array([[p.init for p in self.parameters]])

    def point_filter(self, score: np.ndarray, q_rand: float, margin: float) -> np.ndarray:
        """Why each point cannot be used ('' where it can)."""
        score = np.asarray(score, float)
        reasons = np.full(score.shape, "", dtype=object)
        normed = normalise(score, q_rand)
        if self.target in ("neglog", "loglog"):
            reasons[normed <= 0] = f"at or below chance ({q_rand:g}): log undefined"
        if self.target == "loglog":
            reasons[normed >= 1] = "score 1: log(-log Q) undefined"
        if self.uses_margin:
            near = (score <= q_rand + margin) & (reasons == "")
            reasons[near] = f"score <= chance {q_rand:g} + {margin:g}"
        return reasons

    def margin_for(self, benchmark: str, override: float | None = None) -> float:
        """The near-chance filter margin this law uses on ``benchmark`` (``override`` wins)."""
        if override is None and self.default_margin is not None:
            return float(self.default_margin)
        return filter_margin(benchmark, override)

    def predict_score(self, theta: np.ndarray, X: dict[str, np.ndarray], q_rand: float) -> np.ndarray:
        score = to_score(self.target, self.forward(np.asarray(theta, float), X), q_rand)
        return np.clip(score, 0.0, 1.0) if self.clip_scores else score

    def freeze(self, theta, q_rand: float = 0.0, **fixed) -> FittedLaw:
        """This law with its parameters fixed: an object that predicts and answers questions."""
        from benchcast.laws.fitted import FittedLaw

        return FittedLaw(self, tuple(float(v) for v in np.asarray(theta, float)), float(q_rand), dict(fixed))

    # -- questions a law answers about itself (used by planning, plots, selection, artifacts) ---------
    def covariates_at(self, theta: np.ndarray, flops: np.ndarray, *, tpr: float | None = None) -> dict:
        """Covariates of a run of compute ``flops`` (k, when the law has it, is added by the caller).

        Compute laws take C itself; laws in N and D split C = 6 N D at a tokens-per-parameter
        ratio, which the caller must give (a law of N and D cannot choose it)."""
        flops = np.asarray(flops, float)
        given = set(self.covariates) - {"k"}
        if given == {"flops"}:
            return {"flops": flops}
        if given == {"params", "tokens"}:
            if tpr is None or not np.isfinite(tpr) or tpr <= 0:
                raise BenchcastError(
                    f"law {self.name!r} is a function of parameters and tokens: a run of compute C needs a "
                    f"tokens-per-parameter ratio (tpr > 0) to split C = 6 N D; got {tpr!r}."
                )
            params = np.sqrt(flops / (6.0 * tpr))
            return {"params": params, "tokens": flops / (6.0 * params)}
        raise BenchcastError(
            f"law {self.name!r} is a function of {', '.join(self.covariates)}, not of training compute."
        )

    def limit(self, theta: np.ndarray, q_rand: float, k: float | None = None) -> tuple[float, str]:
        """The score the law approaches as training compute grows without bound, and what that
        limit is (each law states its own; there is no numerical stand-in)."""
        raise BenchcastError(f"law {self.name!r} states no limit in training compute.")

    def limit_in_k(self, theta: np.ndarray, q_rand: float, flops: float) -> tuple[float, str]:
        """The score approached as the number of attempts k grows without bound, at ``flops``."""
        raise BenchcastError(f"law {self.name!r} is not a function of the number of attempts k.")

    def envelope(self, theta: np.ndarray):
        """The compute-optimal envelope of a law in parameters and tokens (SPEC §3.3)."""
        raise BenchcastError(
            f"law {self.name!r} has no compute-optimal N/D split: that needs a law in parameters and tokens "
            "with a floor, such as params_tokens (S2)."
        )

    def check_params(self, theta: np.ndarray, allow_outside=()) -> list[str]:
        """Problems with a parameter vector (wrong length, not finite, outside its bounds).

        ``allow_outside`` names parameters a closed-form fit legitimately put outside their range
        (reported by the fit as 'at bound'); anything else outside is an error."""
        theta = np.asarray(theta, float)
        if theta.shape != (self.n_params,):
            return [f"expected {self.n_params} parameters ({', '.join(self.param_names)}), got {theta.size}"]
        problems = []
        for p, value in zip(self.parameters, theta, strict=True):
            if not np.isfinite(value):
                problems.append(f"{p.name} = {value!r} is not finite")
            elif not p.lower <= value <= p.upper and p.name not in allow_outside:
                problems.append(f"{p.name} = {value!r} lies outside its range [{p.lower:g}, {p.upper:g}]")
        return problems

    def applicable(self, rows, *, proxy: str | None = None, has_gold: bool = False) -> str:
        """Why this law cannot be fitted to these design rows ('' when it can): used by law
        selection, so that no module outside the laws needs to know which law needs what."""
        if not self.selectable:
            return f"{self.name} is not a per-benchmark forecasting law"
        is_passk = str(rows["metric"].iloc[0]) == "pass@k"
        if self.default_metric == "pass@k" and not is_passk:
            return f"{self.name} models pass@k metrics"
        if {"params", "tokens"} <= set(self.covariates) and rows["tpr"].round(6).nunique() < 2:
            return f"{self.name} separates parameters from tokens: it needs runs at several tokens-per-parameter ratios"
        if "proxy" in self.fit_covariates and not proxy:
            return f"{self.name} needs a proxy loss (proxy='benchmark:metric')"
        if "gold" in self.covariates and not has_gold:
            return f"{self.name} needs gold-reference log-likelihoods"
        return ""

    def describe(self) -> dict:
        return {
            "name": self.name,
            "formula": self.formula,
            "reference": self.reference,
            "description": self.description,
            "covariates": list(self.covariates),
            "fit_covariates": list(self.fit_covariates),
            "target": self.target,
            "loss": self.loss,
            "constraints": list(self.constraints),
            "parameters": [
                {"name": p.name, "lower": p.lower, "upper": p.upper, "description": p.description}
                for p in self.parameters
            ],
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.formula}>"


_REGISTRY: dict[str, Callable[[], Law]] = {}


def register(factory: Callable[[], Law], name: str | None = None) -> Callable[[], Law]:
    """Add a law (class or zero-argument factory) to the registry under its name."""
    _REGISTRY[name or factory().name] = factory
    return factory


def get_law(name: str | Law) -> Law:
    """A fresh law object by registry name (a Law passes through)."""
    if isinstance(name, Law):
        return name
    if name not in _REGISTRY:
        raise BenchcastError(f"unknown law {name!r}." + did_you_mean(name, _REGISTRY))
    return _REGISTRY[name]()


def available_laws() -> list[str]:
    return list(_REGISTRY)
