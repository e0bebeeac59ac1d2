"""The compute (or k) a target score needs: a fitted law's (:func:`plan`) and the default strategy's
(:func:`plan_default`), each the forecast of :mod:`benchcast.forecasting.answers` inverted, answered as one
:class:`~benchcast.forecasting.results.Plan`."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.answers import base_spec, check_options, runs_below
from benchcast.forecasting.bootstrap import ANSWER, NO_INTERVAL, Uncertainty, bootstrap
from benchcast.forecasting.draws import Draws
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.flags import (
    AT_FITTED_RUN,
    BELOW_DATA,
    INTERPOLATION,
    OUTSIDE_TPR,
    Flag,
    below_data,
    beyond_k,
    distance_flags,
    falls_with_k,
    fit_flags,
    flagged,
    placement_flags,
    plan_interval_flags,
    target_flags,
)
from benchcast.forecasting.forecast import Forecast
from benchcast.forecasting.results import Plan
from benchcast.forecasting.targets import (
    fitted_k_max,
    flops_convention,
    place,
    planned_runs,
)
from benchcast.laws.fitted import LOG_FLOPS_RANGE, MAX_K
from benchcast.plots.labels import metric_label
from benchcast.validation import check_count, check_score
from benchcast.validation import check_positive as _positive

PLACEMENTS = (AT_FITTED_RUN, BELOW_DATA, INTERPOLATION)  # flags that already say the answer lies among the runs
GRID_PER_DECADE = 8  # bracketing grid of log compute; a bracket is then refined
XTOL_DECADES = 1e-4  # the point answer's precision in decades of compute (0.02 %)
LOCAL_POINTS = 33  # computes across a bound's bracket that its crossing is fitted to


def _band(ensemble: Ensemble, target: float, unc: Uncertainty, tpr, where: dict, needed=None, k=None, convention=None):
    """Where the forecast (``needed``, unless given) and its bounds reach ``target``: it, inverted."""
    level = unc.level

    def at(flops) -> Forecast:
        flops = np.atleast_1d(flops)
        extra = {} if k is None else {"k": np.full(len(flops), float(k))}
        return ensemble.predict(planned_runs(flops=flops, tpr=tpr, convention=convention), unc, extra=extra, **where)

    fits = ensemble.fits.values()
    # (an artifact saved without its points knows its smallest run from its diagnostics)
    smallest = min(float(r.points["flops"].min() if len(r.points) else r.diagnostics.flops_min) for r in fits)
    lo, hi = np.log10(smallest), LOG_FLOPS_RANGE[1] / np.log(10)
    grid = 10 ** np.linspace(lo, hi, int(np.ceil((hi - lo) * GRID_PER_DECADE)) + 1)
    on_grid = at(grid)
    curves = {} if needed is not None else {"needed": on_grid.prediction}
    if unc.n_boot and on_grid.intervals:
        low, up = on_grid.interval(level)
        curves.update({"lower": up, "upper": low})  # the cheapest compute is where the upper bound reaches it
    answers = {
        name: _first_crossing(
            grid, values, target, lambda c, n=name: _value(at(np.array([c])), n, level), smooth=name != "needed"
        )
        for name, values in curves.items()
    }
    if needed is not None:
        answers["needed"] = needed
    answers["note"] = on_grid.meta.note
    answers["forecast"] = at(np.array([answers["needed"]])) if np.isfinite(answers["needed"]) else None
    answers["smallest"] = smallest
    return answers


def plan_default(
    table: pd.DataFrame,
    selection: FitSpec | str,
    *,
    target: float,
    forecast_tpr: float | None = None,
    rule: str = "ensemble",
    uncertainty: Uncertainty = ANSWER,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> Plan:
    """The compute at which the default strategy's forecast (as :func:`forecast_default` gives it for a run
    beyond the data) reaches ``target``, with the interval where its bounds at the uncertainty's level reach it.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs.
    selection : FitSpec or str
        The runs fitted, or a benchmark's name, as :func:`~benchcast.forecasting.answers.recommend` takes them.
    target : float
        The target score, in (0, 1) and above chance.
    forecast_tpr : float, optional
        Tokens per parameter of the planned run, inside the fitted runs' TPRs or not (default: the selection's
        ``tpr``): it splits the compute into N and D for laws of N and D, and the plan answers N and D at it.
    rule : str
        ``'ensemble'`` (the default strategy), ``'stack'`` or ``'select'``.
    uncertainty, n_jobs, ray_address
        As :func:`~benchcast.forecasting.answers.forecast_default` takes them (``n_boot=0``: no interval).

    Returns
    -------
    Plan
    """
    check_score("target score", target)
    check_options(rule, None)
    unc, base = uncertainty, base_spec(selection, uncertainty)
    benchmark, level, n_boot = base.benchmark, unc.level, unc.n_boot
    selection = {"tpr": base.tpr, "min_flops": base.min_flops, "max_flops": base.max_flops}
    placed_at = _positive("forecast_tpr", forecast_tpr) if forecast_tpr is not None else base.tpr
    ensemble = Ensemble(rule).fit(runs_below(table, base, None), base)
    if not ensemble.ok:
        raise BenchcastError(f"no plan for {benchmark}: {ensemble.choice_.reason}")
    results = ensemble.fits
    _refuse_at_chance(target, max(float(r.spec.q_rand) for r in results.values()), benchmark)
    in_size = [law for law, r in results.items() if placed_at is None and not _places_compute(r)]
    if in_size:
        tprs = _tprs(results.values())
        raise BenchcastError(
            f"the default strategy's laws for {benchmark} ({', '.join(in_size)}) are functions of parameters and "
            f"tokens, fitted across the runs' TPRs ({', '.join(f'{v:g}' for v in tprs)}): a planned compute needs "
            "a tokens-per-parameter ratio to split C = 6 N D into N and D. Give the planned run's ratio with "
            f"--forecast-tpr T (forecast_tpr=T), e.g. --forecast-tpr {tprs[len(tprs) // 2]:g}, inside the runs' TPRs "
            "or beyond them; --tpr T would also fit only the runs at T."
        )
    # the planned run placed by the runs' own FLOPs convention, as forecast DATA places a run of N and D
    convention = flops_convention(table, **selection) if placed_at is not None else None
    # a score the forecast reaches at the smallest fitted run needs a compute below every run: refused before the
    # bootstrap (the search starts there and would answer its first point)
    smallest = min(float(r.points["flops"].min()) for r in results.values())
    first = ensemble.predict(planned_runs(flops=[smallest], tpr=placed_at, convention=convention), NO_INTERVAL)
    if float(first.prediction[0]) >= target:
        raise BenchcastError(
            f"no plan for {benchmark}: score {target:g} is reached at or below the smallest fitted run (the forecast "
            f"there is {float(first.prediction[0]):.4g} at {smallest:.3g} FLOPs), so the compute it needs lies below "
            "every run, where nothing was fitted: ask for a score above it."
        )
    band = _band(
        ensemble, target, unc, placed_at, {"n_jobs": n_jobs, "ray_address": ray_address}, convention=convention
    )
    at = band["forecast"]
    fields = {
        "benchmark": benchmark,
        "forecaster": rule,
        "target": target,
        "solves_for": "flops",
        "needed": band["needed"],
        "level": level,
        "weights": dict(ensemble.weights_),
        "lower": band.get("lower"),
        "upper": band.get("upper"),
        "interval": unc.interval,
        "n_boot": n_boot,
        "tpr": placed_at,
        **_sizes(band["needed"], placed_at, convention),
        "largest_run": max(float(r.diagnostics.flops_max) for r in results.values()),
        "flags": (() if at is None else tuple(at.flags[0]))
        + plan_interval_flags(band["needed"], band.get("lower"), band.get("upper"), level),
    }
    placed = any(f.kind in PLACEMENTS for f in fields["flags"])  # its flag says where
    words = convention.at(fields["params"]) if convention is not None and "params" in fields else ""
    notes = _notes(
        {**fields, "convention": words},
        band["note"] if n_boot else "",
        band["smallest"],
        ensemble.choice_.failures,
        placed,
    )
    metric = next((metric_label(r.spec.metric, r.spec.k) for r in results.values() if r.spec.metric), "")
    return Plan(**fields, remarks=tuple(notes), metric=metric)


def _sizes(flops: float, tpr: float | None, convention=None) -> dict:
    """N and D of a planned run of compute C at tokens per parameter ``tpr``, where both are known."""
    if tpr is None or not np.isfinite(flops):
        return {}
    run = planned_runs(flops=[flops], tpr=tpr, convention=convention)  # as the forecast inverted placed it
    return {"params": float(run.params[0]), "tokens": float(run.tokens[0])}


def _places_compute(result) -> bool:
    """Whether the fitted law places a run of compute C by itself (a law of N and D needs a TPR; the law says)."""
    if not {"params", "tokens"} <= set(result.law_object.covariates):
        return True
    try:
        result.fitted.covariates_at(np.array([float(result.points["flops"].max())]))
    except BenchcastError:
        return False
    return True


def _tprs(results) -> list[float]:
    """The fitted runs' tokens-per-parameter ratios, rounded, in order."""
    return sorted({round(float(v), 3) for r in results for v in r.points["tokens"] / r.points["params"]})


def _value(blend, name: str, level: float) -> float:
    """The blended forecast's point (``needed``) or a bound (``lower``: the upper bound; ``upper``: the lower)."""
    if name == "needed":
        return float(blend.prediction[0])
    low, up = blend.interval(level)
    return float((up if name == "lower" else low)[0])


def _first_crossing(grid: np.ndarray, values: np.ndarray, target: float, at, smooth: bool = False) -> float:
    """The smallest compute where ``at(C)`` reaches ``target``: bracketed on ``grid``, then refined."""
    reached = np.isfinite(values) & (values >= target)
    if not reached.any():
        return float("inf")
    i = int(np.argmax(reached))
    if i == 0:
        return float(grid[0])
    below, above = np.log10(grid[i - 1]), np.log10(grid[i])
    if not np.isfinite(values[i - 1]):  # a refused point just below: the bracket's top is the answer we can give
        return float(grid[i])
    if smooth:
        xs = np.linspace(below, above, LOCAL_POINTS)
        ys = np.array([at(10**x) for x in xs])
        ok = np.isfinite(ys)
        slope, intercept = np.polyfit(xs[ok], ys[ok], 1)
        root = (target - intercept) / slope if slope > 0 else above
        return float(10 ** np.clip(root, below, above))
    while above - below > XTOL_DECADES:
        middle = 0.5 * (below + above)
        value = at(10**middle)
        below, above = (below, middle) if np.isfinite(value) and value >= target else (middle, above)
    return float(10**above)


def _notes(plan: dict, interval_note: str, smallest: float, failures: list[str], placed: bool) -> list[str]:
    """What the plan (its fields) rests on, and where to read it with care."""
    plan = SimpleNamespace(**plan, reachable=bool(np.isfinite(plan["needed"])))
    pct = int(round(plan.level * 100))
    kind = "extrapolation-aware" if plan.interval == "extrapolation" else "bootstrap-only"
    notes = [
        f"the {plan.forecaster} (the default strategy) fitted to every selected run (largest {plan.largest_run:.3g} "
        f"FLOPs), as `forecast DATA --flops C` forecasts a run beyond them; the interval is where that forecast's "
        f"{pct} % {kind} prediction bounds reach the target ({plan.n_boot} bootstrap replicates per law)."
    ]
    if plan.tpr is not None and getattr(plan, "params", None) is not None:
        placed_by = getattr(plan, "convention", "") or "C = 6 N D"
        size = f"N = {plan.params:.3g}, D = {plan.tokens:.3g}"
        notes.append(f"the planned run is placed at TPR {plan.tpr:g}: {size} ({placed_by}).")
    if not plan.n_boot:
        notes.append("no interval: --n-boot 0.")
    elif interval_note:
        notes.append(interval_note)
    if plan.reachable and plan.needed <= plan.largest_run and not placed:
        notes.append(
            f"the target is reached inside the fitted runs (at {plan.needed:.3g} <= {plan.largest_run:.3g} FLOPs): "
            "an interpolation of the curve through them, not a forecast beyond them."
        )
    if plan.upper is not None and not np.isfinite(plan.upper):
        notes.append(
            f"no upper end: the forecast's {pct} % lower bound does not reach the target within 1e40 FLOPs (the "
            "interval widens with the distance beyond the runs faster than the forecast rises)."
        )
    if plan.lower is not None and smallest < plan.lower <= plan.largest_run:
        notes.append(
            f"the interval's lower end ({plan.lower:.3g} FLOPs) lies inside the fitted runs: read off the curve "
            "fitted to every run (a forecast there from the cheaper runs alone may differ)."
        )
    if plan.lower is not None and plan.lower <= smallest:
        notes.append("the interval's lower end is the smallest run's compute: the bound reaches the target there.")
    return notes + list(failures)


def _plan_flags(result: FitResult, flops: float, k, solved: bool = False, tpr: float | None = None) -> tuple:
    """A plan's flags: the fit's, and where its compute and k lie among (or beyond) the data."""
    flops_max, flops_min = float(result.diagnostics.flops_max), float(result.diagnostics.flops_min)
    decades = float(np.log10(flops / flops_max)) if np.isfinite(flops) and flops > 0 else np.nan
    outside = flagged(beyond_k(k, fitted_k_max(result)))
    if not (np.isfinite(flops) and flops > 0):
        return (*fit_flags(result), *outside)
    fits = {result.law: result}
    placed = placement_flags(place(planned_runs(flops=[flops]), fits))[0] if solved else ()
    below = () if placed else flagged(below_data(float(flops), flops_min))  # a placement says below the data too
    if tpr is not None:  # the planned run's ratio outside the fitted runs', as forecast says
        (words,) = target_flags(place(planned_runs(flops=[flops], tpr=tpr), fits), fits)
        outside += (Flag(OUTSIDE_TPR, words, False),) if words else ()
    return (*fit_flags(result), *distance_flags(decades, flops_max), *placed, *below, *outside)


def _refuse_unused_question(result: FitResult, *, k: int | None, flops: float | None, tpr: float | None) -> None:
    """Refuse ``k``, ``flops`` and ``tpr`` where the law has no use for them."""
    law = result.law_object
    covariates = set(law.covariates)
    if tpr is not None and not {"params", "tokens"} <= covariates:
        raise BenchcastError(
            f"forecast_tpr (--forecast-tpr) splits a planned compute into N and D for laws of N and D; law "
            f"{law.name!r} is a function of {', '.join(law.covariates)} alone, so the answer would not change: drop "
            "--forecast-tpr."
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


def _refuse_at_chance(target: float, q_rand: float, benchmark) -> None:
    """Refuse a target at or below the chance level: there is no compute to plan."""
    if target <= q_rand:
        raise BenchcastError(
            f"target {target:g} is at or below the chance level {q_rand:g} of {benchmark}: a model reaches it "
            "without training, so there is no compute to plan."
        )


def _refuse_no_tpr(result: FitResult) -> None:
    """Refuse to plan a compute for a law of N and D with no TPR to place the run at."""
    if _places_compute(result):
        return
    tprs = _tprs([result]) if "tokens" in result.points else []
    listed = ", ".join(f"{v:g}" for v in tprs) if tprs else "unknown"
    example = f"--forecast-tpr {tprs[len(tprs) // 2]:g}" if tprs else "--forecast-tpr 20"
    raise BenchcastError(
        f"law {result.law!r} is a function of parameters and tokens, and this fit of {result.spec.benchmark} has no "
        f"single tokens-per-parameter ratio (its runs' TPRs: {listed}): a planned compute C needs a ratio to split "
        f"C = 6 N D into N and D. Give the planned run's TPR with --forecast-tpr T (forecast_tpr=T), e.g. {example}."
    )


def plan(
    result: FitResult,
    target: float,
    *,
    k: int | None = None,
    flops: float | None = None,
    forecast_tpr: float | None = None,
    uncertainty: Uncertainty = ANSWER,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> Plan:
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
    forecast_tpr : float, optional
        Tokens per parameter of the planned run, for laws of N and D (default: the fit's TPR): it splits C into N
        and D, and the plan answers them; a ratio outside the fitted runs' is flagged.
    uncertainty, n_jobs, ray_address
        As :func:`~benchcast.forecasting.answers.forecast` takes them (``n_boot=0``: no interval). A compute's
        interval is where the fit's forecast (as :func:`~benchcast.forecasting.answers.forecast` gives it) has its
        bounds at the uncertainty's level reach the target; a k's, the bootstrap's.

    Returns
    -------
    Plan
    """
    check_score("target score", target)
    unc, where = uncertainty, {"n_jobs": n_jobs, "ray_address": ray_address}
    level = unc.level
    flops, tpr = _positive("flops", flops), _positive("forecast_tpr", forecast_tpr)
    k = check_count("k", k)
    _refuse_unused_question(result, k=k, flops=flops, tpr=tpr)
    fitted, spec = result.fitted, result.spec
    _refuse_at_chance(target, spec.q_rand, spec.benchmark)
    tpr = spec.tpr if tpr is None else tpr
    if tpr is None:  # a law of N and D fitted across TPRs: no ratio to place the planned run at
        _refuse_no_tpr(result)
    has_k = "k" in fitted.law.covariates
    if has_k and k is None and flops is None:
        raise BenchcastError(f"{result.law} plans need --k (to get compute) or --flops (to get k).")
    solve_k = has_k and flops is not None and k is None
    k = k if k is not None else spec.k

    if solve_k:
        ceiling, meaning = fitted.law.limit_in_k(fitted.vector, spec.q_rand, flops)
    else:
        ceiling, meaning = fitted.law.limit(fitted.vector, spec.q_rand, k=k)
    needed = fitted.k_for(target, flops) if solve_k else fitted.compute_for(target, tpr=tpr, k=k)
    # a law of k that has pass@k fall with k at the compute read: no plan there (as no forecast)
    at = flops if solve_k else needed
    if has_k and np.isfinite(at) and (falls := falls_with_k(result, [at])[0]):
        raise BenchcastError(f"no plan for {spec.benchmark}: {falls[0].reason}.")
    in_size = {"params", "tokens"} <= set(fitted.law.covariates)
    placed_at = tpr if in_size and not solve_k else None
    flags = _plan_flags(result, flops if solve_k else needed, needed if solve_k else k, not solve_k, placed_at)
    fields = {
        "benchmark": str(spec.benchmark),
        "forecaster": result.law,
        "target": target,
        "solves_for": "k" if solve_k else "flops",
        "needed": needed,
        "level": level,
        "weights": {result.law: 1.0},
        "k": k,
        "flops": flops,
        "tpr": tpr if in_size else None,
        **_sizes(needed, placed_at),
        "ceiling": ceiling,
        "ceiling_meaning": meaning,
        "largest_run": float(result.diagnostics.flops_max),
        "flags": flags,
    }
    if not np.isfinite(needed) and solve_k and ceiling > target:  # below the limit, but past the k searched
        fields["message"] = (
            f"target {target:g} is not reached by the fitted {result.law} law within k = {MAX_K:.0e} attempts at "
            f"{flops:.3g} FLOPs (its limit as k grows is {ceiling:.4g}, above the target, but the law nears it slowly)."
        )
    elif not np.isfinite(needed):
        fields["message"] = (
            f"target {target:g} is not reached by the fitted {result.law} law "
            f"(its limit: {ceiling:.4g}, {meaning}): unreachable by scaling {'k' if solve_k else 'compute'} alone"
            + ("" if solve_k else " within 1e40 FLOPs")
            + "."
        )
    if unc.n_boot:
        interval = (
            _k_interval(result, fields, unc, where)
            if solve_k
            else _plan_interval(result, target, unc, fields, where, has_k)
        )
        fields.update(interval)
        if not solve_k:
            fields["flags"] += plan_interval_flags(needed, fields.get("lower"), fields.get("upper"), level)
    return Plan(**fields, metric=metric_label(spec.metric, spec.k) if spec.metric else "")


def _plan_interval(result: FitResult, target: float, unc: Uncertainty, fields: dict, where: dict, has_k: bool) -> dict:
    """A compute plan's interval: where the fit's forecast's bounds reach the target."""
    placed = fields["tpr"] if "params" in result.law_object.covariates else None
    k = fields["k"] if has_k else None
    out = {"interval": unc.interval, "n_boot": unc.n_boot}
    # the bounds are searched from the smallest fitted run up (as plan DATA's): an answer below it has no interval
    # there, not one that leaves its point out
    if fields["needed"] < (smallest := float(result.diagnostics.flops_min)):
        below = f"the compute needed lies below the smallest fitted run ({smallest:.3g} FLOPs), where the bounds are"
        out["message"] = " ".join(m for m in (fields.get("message"), f"no interval: {below} not searched.") if m)
        return out
    band = _band(Ensemble.of_fit(result), target, unc, placed, where, fields["needed"], k)
    if band["note"] or "lower" not in band:
        out["message"] = " ".join(m for m in (fields.get("message"), band["note"] or "no interval") if m)
        return out
    at = band["forecast"]
    if at is not None and at.meta.error_model is not None:
        out["extrapolation"] = at.meta.error_model
    return out | {"lower": float(band["lower"]), "upper": float(band["upper"])}


def _k_interval(result: FitResult, fields: dict, unc: Uncertainty, where: dict) -> dict:
    """A k plan's interval: the k each bootstrap replicate needs at the compute (unreachable ones count as inf)."""
    fitted, spec = result.fitted, result.spec
    boot = bootstrap(result, unc, **where)
    thetas = boot.thetas[~np.isnan(boot.thetas).any(axis=1)]
    frozen = (fitted.law.freeze(theta, spec.q_rand, k=fields["k"]) for theta in thetas)
    draws = np.array([law.k_for(fields["target"], fields["flops"]) for law in frozen])
    lower, upper = Draws(draws[:, None], method="inverted_cdf").interval(fields["level"])
    return {
        "interval": "bootstrap",
        "n_boot": int(len(thetas)),
        "n_replicates": int(len(boot.failed)),
        "failed_refits": boot.n_failed,
        "dropped_refits": boot.n_dropped,
        "fraction_reachable": float(np.isfinite(draws).mean()) if len(draws) else 0.0,
        "lower": float(lower[0]),
        "upper": float(upper[0]),
    }
