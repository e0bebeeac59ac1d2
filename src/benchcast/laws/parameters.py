"""What a law declares about its parameters: each one's bounds and scale, and how the engine searches them."""

from __future__ import annotations

from dataclasses import dataclass

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
