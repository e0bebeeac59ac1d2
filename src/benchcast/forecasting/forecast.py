"""Forecasts with intervals, and their inverse: the compute (or k) needed for a target score.

Everything law-specific (how a budget maps to covariates, the law's limit, solving for k) is
asked of the fitted law (:class:`benchcast.laws.fitted.FittedLaw`); this module validates the
question, runs the bootstrap and assembles the answer.
"""

from __future__ import annotations

import numpy as np

from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult
from benchcast.forecasting.calibration import CalibratedBootstrap, Spread, calibrate
from benchcast.forecasting.convention import placed_query
from benchcast.forecasting.distance import placements
from benchcast.forecasting.draws import Draws, score_interval
from benchcast.forecasting.extent import below_data, beyond_k, fitted_k_max, outside_decades
from benchcast.forecasting.flags import distance_flags, fit_flags, flagged, forecast_flags, withhold
from benchcast.forecasting.intervals import DEFAULT_REPLICATES, Bootstrap, bootstrap, check_replicates
from benchcast.forecasting.results import Forecast, PlanResult
from benchcast.forecasting.targets import query_notes
from benchcast.laws.fitted import LOG_FLOPS_RANGE
from benchcast.utils.streams import PLAN_STREAM, point_rng
from benchcast.validation import check_count, check_interval, check_level, check_score
from benchcast.validation import check_positive as _positive


def forecast(
    result: FitResult,
    *,
    level: float = 0.9,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
    boot: Bootstrap | None = None,
    interval: str = "extrapolation",
    pooled: Spread | None = None,
    ray_address: str | None = None,
    flops_per_6nd: float | None = None,
    **covariates,
) -> Forecast:
    """Point forecast with a prediction interval (a new run) and a confidence interval (the law).

    ``interval='extrapolation'`` (default) widens the bootstrap by the extrapolation error
    measured by rolling origins inside the fit's runs (``pooled``: a spread from other benchmarks to
    shrink towards); ``'bootstrap'`` is the bootstrap over runs alone.

    Parameters
    ----------
    result : FitResult
        The fit to forecast with.
    level : float
        The intervals' level, in (0, 1).
    n_boot : int
        Bootstrap replicates (ignored when ``boot`` is given).
    seed : int
        Seed of the resampling and of the per-point streams.
    n_jobs : int or None
        Worker processes for the bootstrap.
    boot : Bootstrap or CalibratedBootstrap, optional
        Replicates already made.
    interval : {'extrapolation', 'bootstrap'}
    pooled : Spread, optional
        A spread from other benchmarks to shrink this fit's own towards.
    ray_address : str, optional
        Run the bootstrap's batches as Ray tasks.
    flops_per_6nd : float, optional
        r placing planned runs (params= and tokens=) at C = r 6 N D; default: the convention of the fit's own runs
        (:func:`~benchcast.forecasting.convention.placed_query`), which the forecast names.
    **covariates
        The points: flops=, or params= and tokens=, k=, gold=.

    Returns
    -------
    Forecast
    """
    check_level(level)
    check_interval(interval)
    placed, ratio, convention = placed_query(result, covariates, flops_per_6nd)
    point = result.predict(**placed)
    if boot is None:
        check_replicates(n_boot, allow_zero=False)
        boot = bootstrap(result, n_boot, seed=seed, n_jobs=n_jobs, ray_address=ray_address)
    if interval == "extrapolation" and not isinstance(boot, CalibratedBootstrap):
        boot = calibrate(boot, pooled=pooled)
    lower, upper = score_interval(boot.draws("prediction", **placed), level)
    lower_mean, upper_mean = score_interval(boot.draws("confidence", **placed), level)
    shape = np.shape(np.atleast_1d(point))
    sized = ratio is not None  # a planned run: its TPR places it among the fitted runs too
    tpr = np.broadcast_to(np.asarray(covariates["tokens"], float) / covariates["params"], shape) if sized else None
    params = np.broadcast_to(np.asarray(covariates["params"], float), shape) if sized else None
    flags = forecast_flags(result, np.atleast_1d(point), _query_flops(covariates, shape, ratio or 1.0), tpr, params)
    if covariates.get("k") is not None:  # a law of k asked beyond the k it was fitted at
        ks = np.broadcast_to(np.asarray(covariates["k"], float), np.shape(np.atleast_1d(point))).ravel()
        flags = [(*f, *flagged(beyond_k(k, fitted_k_max(result)))) for f, k in zip(flags, ks, strict=True)]
    lower, upper, lower_mean, upper_mean = (withhold(v, flags) for v in (lower, upper, lower_mean, upper_mean))
    return Forecast(
        law=result.law,
        benchmark=str(result.spec.benchmark),
        level=level,
        interval=interval,
        extrapolation=boot.spread.to_dict() if isinstance(boot, CalibratedBootstrap) else None,
        n_boot=int(len(boot.thetas)),
        failed_refits=boot.n_failed,
        dropped_refits=boot.n_dropped,
        query={k: v for k, v in covariates.items() if v is not None} | ({"flops_per_6nd": ratio} if ratio else {}),
        prediction=withhold(point, flags),
        lower=lower,
        upper=upper,
        lower_mean=lower_mean,
        upper_mean=upper_mean,
        run_notes=([f"planned runs placed at {convention}"] if convention else [])
        + query_notes(result, covariates, (ratio, convention) if ratio else None),
        flags=flags,
    )


def _query_flops(covariates: dict, shape: tuple, ratio: float = 1.0) -> np.ndarray | None:
    """The queried points' compute (C, or r 6 N D), for the distance flag; None where the query has neither."""
    if covariates.get("flops") is not None:
        return np.broadcast_to(np.asarray(covariates["flops"], float), shape).ravel()
    if covariates.get("params") is not None and covariates.get("tokens") is not None:
        both = ratio * 6.0 * np.asarray(covariates["params"], float) * np.asarray(covariates["tokens"], float)
        return np.broadcast_to(both, shape).ravel()
    return None


def _plan_flags(result: FitResult, flops: float, k, solved: bool = False) -> tuple:
    """A plan's flags: the fit's, and how far its compute (solved for, or given) and its k lie outside the data;
    a compute ``solved`` for among the fitted runs is an interpolation (or a fitted run), as ``plan DATA`` says."""
    flops_max, flops_min = float(result.diagnostics.flops_max), float(result.diagnostics.flops_min)
    decades = float(np.log10(flops / flops_max)) if np.isfinite(flops) and flops > 0 else np.nan
    placed = flagged(p for p in placements([result], [flops]) if p[0]) if solved and np.isfinite(flops) else ()
    below = () if placed else flagged(below_data(float(flops), flops_min))  # placements say below the data too
    outside = (*placed, *below, *flagged(beyond_k(k, fitted_k_max(result))))
    return (*fit_flags(result), *distance_flags(decades, flops_max), *outside)


def _refuse_unused_question(result: FitResult, *, k: int | None, flops: float | None, tpr: float | None) -> None:
    """Refuse ``k``, ``flops`` and ``tpr`` where the fitted law's covariates give them no use: the
    answer would be the same without them, so taking them would mislead."""
    law = result.law_object
    covariates = set(law.covariates)
    if tpr is not None and not {"params", "tokens"} <= covariates:
        raise BenchcastError(
            f"tpr (--tpr) splits a planned compute into N and D for laws of N and D; law {law.name!r} is a function "
            f"of {', '.join(law.covariates)} alone, so the answer would not change: drop --tpr."
        )
    if "k" not in covariates:
        if k is not None:
            raise BenchcastError(
                f"k (--k) is the number of attempts of laws with k as a covariate (passk_compute); law {law.name!r} "
                f"has none (this fit is of {result.spec.benchmark} {result.spec.metric}, one metric at one k): "
                "drop --k, or fit passk_compute to plan over k."
            )
        if flops is not None:
            raise BenchcastError(
                f"flops (--flops) asks a law with k as a covariate (passk_compute) for the k needed at that compute; "
                f"law {law.name!r} has no k to solve for, and plan gives the compute it needs: drop --flops."
            )
    elif k is not None and flops is not None:
        raise BenchcastError(
            "give either k (--k: the compute needed at that k) or flops (--flops: the k needed at that compute), "
            "not both."
        )


def _refuse_no_tpr(result: FitResult) -> None:
    """Refuse to plan a compute for a law of N and D fitted across TPRs without a TPR to place the run at (a
    law that places a run of compute C itself, on its compute-optimal envelope, needs none: the law says)."""
    if not {"params", "tokens"} <= set(result.law_object.covariates):
        return
    try:
        result.fitted.covariates_at(np.array([float(result.points["flops"].max())]))
        return
    except BenchcastError:
        pass
    points = result.points
    tprs = sorted({round(float(v), 3) for v in points["tokens"] / points["params"]}) if "tokens" in points else []
    listed = ", ".join(f"{v:g}" for v in tprs) if tprs else "unknown"
    example = f"--tpr {tprs[len(tprs) // 2]:g}" if tprs else "--tpr 20"
    raise BenchcastError(
        f"law {result.law!r} is a function of parameters and tokens, and this fit of {result.spec.benchmark} has no "
        f"single tokens-per-parameter ratio (its runs' TPRs: {listed}): a planned compute C needs a ratio to split "
        f"C = 6 N D into N and D. Give the planned run's TPR with --tpr T (tpr=T), e.g. {example}."
    )


def plan(
    result: FitResult,
    target: float,
    *,
    k: int | None = None,
    flops: float | None = None,
    tpr: float | None = None,
    level: float = 0.9,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
    boot: Bootstrap | None = None,
    interval: str = "extrapolation",
    pooled: Spread | None = None,
    ray_address: str | None = None,
) -> PlanResult:
    """Compute needed to reach ``target`` (or, for laws with k given ``flops``, the k needed), with a
    bootstrap interval, or a statement that the target lies above the law's limit.

    Parameters
    ----------
    result : FitResult
        The fit to plan with.
    target : float
        The target score, in (0, 1) and above chance.
    k : int, optional
        Attempts (laws with k: the compute needed at this k).
    flops : float, optional
        Compute (laws with k: the k needed at this compute).
    tpr : float, optional
        Tokens per parameter placing a run of compute C for laws of N and D (default: the fit's).
    level, n_boot, seed, n_jobs, boot, interval, pooled, ray_address
        As :func:`forecast` (``n_boot=0``: no interval).

    Returns
    -------
    PlanResult
    """
    check_score("target score", target)
    check_level(level)
    check_replicates(n_boot, allow_zero=True)
    flops, tpr = _positive("flops", flops), _positive("tpr", tpr)
    k = check_count("k", k)
    _refuse_unused_question(result, k=k, flops=flops, tpr=tpr)
    fitted, spec = result.fitted, result.spec
    if target <= spec.q_rand:
        raise BenchcastError(
            f"target {target:g} is at or below the chance level {spec.q_rand:g} of {spec.benchmark}: "
            "a model reaches it without training, so there is no compute to plan."
        )
    check_interval(interval)
    tpr = spec.tpr if tpr is None else tpr
    if tpr is None:  # a law of N and D fitted across TPRs: no ratio to place the planned run at
        _refuse_no_tpr(result)
    has_k = "k" in fitted.law.covariates
    if has_k and k is None and flops is None:
        raise BenchcastError(f"{result.law} plans need --k (to get compute) or --flops (to get k).")
    solve_k = has_k and flops is not None and k is None
    k = k if k is not None else spec.k

    def solve(frozen) -> float:
        return frozen.k_for(target, flops) if solve_k else frozen.compute_for(target, tpr=tpr, k=k)

    if solve_k:
        ceiling, meaning = fitted.law.limit_in_k(fitted.vector, spec.q_rand, flops)
    else:
        ceiling, meaning = fitted.law.limit(fitted.vector, spec.q_rand, k=k)
    needed = solve(fitted)
    flags = _plan_flags(result, flops if solve_k else needed, needed if solve_k else k, solved=not solve_k)
    out = PlanResult(
        law=result.law,
        target=target,
        solves_for="k" if solve_k else "flops",
        ceiling=ceiling,
        ceiling_meaning=meaning,
        reachable=bool(np.isfinite(needed)),
        needed=needed,
        level=level,
        k=k,
        flops=flops,
        tpr=tpr if {"params", "tokens"} <= set(fitted.law.covariates) else None,
        flags=flags,
    )
    if not out.reachable:
        out.message = (
            f"target {target:g} is not reached by the fitted {result.law} law "
            f"(its limit: {ceiling:.4g}, {meaning}): unreachable by scaling {'k' if solve_k else 'compute'} alone"
            + ("" if solve_k else " within 1e40 FLOPs")
            + "."
        )
    if boot is None and n_boot:
        boot = bootstrap(result, n_boot, seed=seed, n_jobs=n_jobs, ray_address=ray_address)
    if boot is not None and interval == "extrapolation" and not isinstance(boot, CalibratedBootstrap):
        boot = calibrate(boot, pooled=pooled)
    if boot is not None:
        thetas = boot.thetas[~np.isnan(boot.thetas).any(axis=1)]
        # the extrapolation error moves the score a law reaches at the point solution's distance:
        # each replicate solves for a target shifted by exp(-tau d eps), eps ~ N(0, 1)
        shifts = np.ones(len(thetas))
        if isinstance(boot, CalibratedBootstrap) and np.isfinite(needed) and not solve_k:
            fitted_flops = result.points["flops"]  # beyond the runs, or below them (extent.outside_decades)
            distance = max(float(outside_decades(needed, fitted_flops.min(), fitted_flops.max())[0]), 0.0)
            # a stream of its own: [seed, 11] was bootstrap replicate 11's resample stream
            eps = point_rng(seed, PLAN_STREAM, ()).standard_normal(len(thetas))
            shifts = np.exp(-boot.spread.tau * distance * eps)
            out.interval, out.extrapolation = "extrapolation", boot.spread.to_dict()
        else:
            out.interval = "bootstrap"
        draws, below_range = [], 0
        for theta, shift in zip(thetas, shifts, strict=True):
            shifted = float(np.clip(target * shift, spec.q_rand + 1e-9, 1 - 1e-9))
            try:
                frozen = fitted.law.freeze(theta, spec.q_rand, k=k)
                draws.append(frozen.k_for(shifted, flops) if solve_k else frozen.compute_for(shifted, tpr=tpr, k=k))
            except BenchcastError:
                # this replicate reaches the target below the searched range: its compute is only known
                # to be at most the range's floor, which it is given (and counted, not hidden)
                draws.append(float(np.exp(LOG_FLOPS_RANGE[0])))
                below_range += 1
        draws = np.array(draws)
        out.fraction_below_range = below_range / max(len(draws), 1)
        out.n_boot, out.n_replicates = int(len(thetas)), int(len(boot.failed))
        out.failed_refits, out.dropped_refits = boot.n_failed, boot.n_dropped
        out.fraction_reachable = float(np.isfinite(draws).mean())
        # unreachable replicates count as +inf (no interpolation, so a bound may be inf)
        lower, upper = Draws(draws[:, None], method="inverted_cdf").interval(level)
        out.lower, out.upper = float(lower[0]), float(upper[0])
    return out
