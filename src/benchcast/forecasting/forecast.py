"""Forecasts with intervals, and their inverse: the compute (or k) needed for a target score."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult
from benchcast.forecasting.intervals import DEFAULT_REPLICATES, Bootstrap, bootstrap
from benchcast.generative.envelope import Envelope
from benchcast.laws import get_law

LOG_FLOPS_RANGE = (np.log(1e10), np.log(1e40))  # where compute is searched
MAX_K = 1_000_000


def forecast(
    result: FitResult,
    *,
    level: float = 0.9,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
    boot: Bootstrap | None = None,
    **covariates,
) -> dict:
    """Point forecast with a prediction interval (a new run) and a confidence interval (the law)."""
    point = result.predict(**covariates)
    boot = boot or bootstrap(result, n_boot, seed=seed, n_jobs=n_jobs)
    lower, upper = boot.interval(level, "prediction", **covariates)
    lower_mean, upper_mean = boot.interval(level, "confidence", **covariates)
    return {
        "law": result.law,
        "level": level,
        "n_boot": int(len(boot.thetas)),
        "failed_refits": boot.n_failed,
        "query": {k: v for k, v in covariates.items() if v is not None},
        "prediction": np.atleast_1d(point),
        "lower": np.atleast_1d(lower),
        "upper": np.atleast_1d(upper),
        "lower_mean": np.atleast_1d(lower_mean),
        "upper_mean": np.atleast_1d(upper_mean),
    }


def _covariates_at(result: FitResult, theta: np.ndarray, log_flops: float, tpr: float) -> dict:
    """Covariates of a run of compute C: flops laws take C; params/tokens laws split C along
    the compute-optimal envelope (params_tokens) or at a fixed tokens-per-parameter ratio (nd)."""
    law = get_law(result.law)
    flops = float(np.exp(log_flops))
    if "flops" in law.covariates:  # k, if the law has it, is added by the caller
        return {"flops": np.array([flops])}
    if set(law.covariates) == {"params", "tokens"}:
        if law.name == "params_tokens":
            env = Envelope(*theta)
            params = float(env.optimal_params(flops))
        else:
            params = float(np.sqrt(flops / (6.0 * tpr)))
        return {"params": np.array([params]), "tokens": np.array([flops / (6.0 * params)])}
    raise BenchcastError(f"law {result.law!r} is not a function of compute: plan needs a compute law.")


def _score(result: FitResult, theta: np.ndarray, log_flops: float, tpr: float, k: int | None) -> float:
    law = get_law(result.law)
    X = _covariates_at(result, theta, log_flops, tpr)
    if "k" in law.covariates:
        X["k"] = np.array([float(k)])
    with np.errstate(over="ignore", under="ignore"):
        return float(law.predict_score(theta, X, result.settings["q_rand"])[0])


def compute_for(
    result: FitResult, theta: np.ndarray, target: float, *, tpr: float = 20.0, k: int | None = None
) -> float:
    """FLOPs at which the law with parameters ``theta`` reaches ``target`` (inf if never)."""
    lo, hi = LOG_FLOPS_RANGE
    f_lo = _score(result, theta, lo, tpr, k) - target
    f_hi = _score(result, theta, hi, tpr, k) - target
    if f_hi < 0:
        return float("inf")
    if f_lo >= 0:
        return float(np.exp(lo))
    return float(np.exp(brentq(lambda x: _score(result, theta, x, tpr, k) - target, lo, hi, xtol=1e-12, rtol=1e-14)))


def k_for(result: FitResult, theta: np.ndarray, target: float, flops: float) -> float:
    """Smallest k at which passk_compute reaches ``target`` at ``flops`` (inf if none up to 1e6)."""
    log_c = np.log(flops)
    ks = np.unique(np.round(np.geomspace(1, MAX_K, 400)))
    scores = np.array([_score(result, theta, log_c, 20.0, k) for k in ks])
    hits = np.flatnonzero(scores >= target)
    if not hits.size:
        return float("inf")
    start = int(ks[hits[0] - 1]) if hits[0] > 0 else 1
    for k in range(start, int(ks[hits[0]]) + 1):
        if _score(result, theta, log_c, 20.0, k) >= target:
            return float(k)
    return float(ks[hits[0]])


def plan(
    result: FitResult,
    target: float,
    *,
    k: int | None = None,
    flops: float | None = None,
    tpr: float = 20.0,
    level: float = 0.9,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
    boot: Bootstrap | None = None,
) -> dict:
    """Compute needed to reach ``target`` (or, for passk_compute with ``flops``, the k needed),
    with a bootstrap interval, or a statement that the target lies above the law's ceiling."""
    if not 0 < target < 1:
        raise BenchcastError(f"target score must lie in (0, 1), got {target!r}.")
    law = get_law(result.law)
    if "k" in law.covariates and k is None and flops is None:
        raise BenchcastError("passk_compute plans need --k (to get compute) or --flops (to get k).")
    solve_k = "k" in law.covariates and flops is not None and k is None
    if solve_k:

        def solve(theta):
            return k_for(result, theta, target, flops)
    else:

        def solve(theta):
            return compute_for(result, theta, target, tpr=tpr, k=k)

    ceiling = (
        _score(result, result.theta, LOG_FLOPS_RANGE[1], tpr, k or MAX_K)
        if not solve_k
        else _score(result, result.theta, np.log(flops), tpr, MAX_K)
    )
    needed = solve(result.theta)
    out = {
        "law": result.law,
        "target": target,
        "solves_for": "k" if solve_k else "flops",
        "ceiling": ceiling,
        "reachable": bool(np.isfinite(needed)),
        "needed": needed,
        "level": level,
        "k": k,
        "flops": flops,
        "tpr": tpr if {"params", "tokens"} <= set(law.covariates) else None,
    }
    if "E" in result.params:  # power_floor: the best achievable score
        out["q_max"] = result.settings["q_rand"] + (1 - result.settings["q_rand"]) * float(np.exp(-result.params["E"]))
    if not out["reachable"]:
        out["message"] = (
            f"target {target:g} lies above what the fitted {result.law} law ever reaches "
            f"({ceiling:.4g}): unreachable by scaling {'k' if solve_k else 'compute'} alone."
        )
    boot = boot or (bootstrap(result, n_boot, seed=seed, n_jobs=n_jobs) if n_boot else None)
    if boot is not None:
        thetas = boot.thetas[~np.isnan(boot.thetas).any(axis=1)]
        draws = np.array([solve(theta) for theta in thetas])
        tail = (1 - level) / 2
        finite = np.isfinite(draws)
        out["fraction_reachable"] = float(finite.mean())
        # unreachable replicates count as +inf (no interpolation, so a bound may be inf)
        out["lower"] = float(np.quantile(draws, tail, method="inverted_cdf"))
        out["upper"] = float(np.quantile(draws, 1 - tail, method="inverted_cdf"))
    return out
