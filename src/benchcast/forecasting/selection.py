"""Law choice on the user's own runs, by rolling-origin forecasts inside them.

Each candidate law is fitted to every run, then refitted from several origins below the largest
run (:func:`benchcast.forecasting.calibration.rolling_origin`) to forecast the runs above each
origin. Laws are compared on the inner points every candidate forecasts, by the mean (over
origins) of the mean squared log-ratio error; ``stack`` weights each law by the inverse of
that error, ``select`` keeps the best one, and ``ensemble`` (the default) weights every
law with support equally. The error reported for the choice is nested: at each
origin the choice is made from the deeper origins' forecasts of runs below it only, and scored on
the runs above it, which it never saw.

A benchmark where no candidate has at least ``calibration.MIN_ORIGINS`` inner origins with usable
points (scores near chance, a short compute range) gets no forecast: it is reported as having no
support.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError, SelectionError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting import calibration as cal
from benchcast.forecasting.intervals import check_replicates
from benchcast.forecasting.law_comparison import (  # noqa: F401 (API)
    SELECTION_RULES,
    blend_errors,
    common_errors,
    inner_scores,
    nested_error,
    weights_for,
)
from benchcast.forecasting.recommendation import Recommendation, StrategyForecast
from benchcast.forecasting.strategy import StrategyFit
from benchcast.forecasting.targets import planned_runs
from benchcast.laws import available_laws, get_law
from benchcast.utils.progress import track
from benchcast.validation import check_interval, check_law, check_level, check_positive

# Candidates of the default choice: the laws with a ceiling below a perfect score (chosen by
# `benchcast bench`; README, "Which law should I use?"); add laws here by name.
DEFAULT_CANDIDATES = ("power_floor", "bnsl_monotone")


def applicable_laws(table: pd.DataFrame, spec: FitSpec) -> list[str]:
    """Every registered law that can be fitted to this selection (each law says what it needs).

    Parameters
    ----------
    table : DataFrame
        Long-format scores.
    spec : FitSpec
        The benchmark, metric and selection (its law is ignored).

    Returns
    -------
    list of str
        Law names, in the registry's order.
    """
    rows, resolved = design(table, spec)
    has_gold = bool(((table["benchmark"] == spec.benchmark) & (table["metric"] == resolved.gold_metric)).any())
    return [
        name for name in available_laws() if not get_law(name).applicable(rows, proxy=spec.proxy, has_gold=has_gold)
    ]


# -- the recommendation ----------------------------------------------------------------------


def recommend(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    *,
    laws: list[str] | None = None,
    target_flops: float | None = None,
    target_params: float | None = None,
    target_tokens: float | None = None,
    tpr: float | None = None,
    min_flops: float | None = None,
    proxy: str | None = None,
    rule: str = "ensemble",
    n_boot: int = 200,
    level: float = 0.9,
    interval: str = "extrapolation",
    seed: int = 0,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> Recommendation:
    """Weight (``rule='ensemble'``: equally; ``'stack'``: by inverse error) or choose (``'select'``)
    laws with support, judged by rolling-origin forecasts inside the runs cheaper than
    ``target_flops`` (all runs when None).

    Parameters
    ----------
    table : pandas.DataFrame
        The runs (a table as :func:`benchcast.load` returns).
    benchmark, metric, k : str, str or None, int or None
        The selection; the metric defaults as in :func:`benchcast.fit`.
    laws : list of str, optional
        Laws to compare (default: those of ``DEFAULT_CANDIDATES`` that apply).
    target_flops : float, optional
        The planned run's compute: only cheaper runs are used, and the combination forecasts it.
    target_params, target_tokens : float, optional
        The planned run as N parameters trained on D tokens (both, and not with ``target_flops``): its
        compute is C = 6 N D (the runs used, the interval's distance), laws of N and D are given N and D,
        laws of compute C (the forecast says which law used which).
    tpr, min_flops, proxy : optional
        Further selection, as in :class:`benchcast.fitting.spec.FitSpec`.
    rule : str
        ``'ensemble'``, ``'stack'`` or ``'select'``.
    n_boot : int
        Bootstrap replicates of the forecast's interval (0: no interval).
    level : float
        The interval's level.
    interval : str
        ``'extrapolation'`` (bootstrap widened by the inner extrapolation error) or ``'bootstrap'``.
    seed, n_jobs, ray_address
        Random seed, and where the bootstrap's refits run.

    Returns
    -------
    Recommendation
        The ranking, weights, the choice's nested error and, with ``target_flops``, the forecast;
        ``str()`` of it is the advice.
    """
    check_options(rule, interval, n_boot, level, laws)
    check_positive("target_flops", target_flops)
    target = None
    if target_params is not None or target_tokens is not None:
        check_positive("target_params", target_params)
        check_positive("target_tokens", target_tokens)
        target = planned_runs(target_flops, target_params, target_tokens)
        target_flops = float(target.flops[0])
    base = FitSpec("power", benchmark, metric, k=k, proxy=proxy, seed=seed, tpr=tpr, min_flops=min_flops)
    data = runs_below(table, base, target_flops)
    rec, strategy = compare_laws(data, base, laws=laws, rule=rule)
    if strategy is not None and target_flops is not None:
        rec.forecast = strategy.forecast_at(
            float(target_flops) if target is None else target,
            n_boot=n_boot,
            seed=seed,
            n_jobs=n_jobs,
            interval=interval,
            level=level,
            tpr=tpr,
            ray_address=ray_address,
        )
    return rec


def check_options(rule: str, interval: str, n_boot: int, level: float, laws: list[str] | None) -> None:
    """Refuse a rule, interval kind, replicate count, level or law name that does not exist.

    Parameters
    ----------
    rule, interval : str
    n_boot : int
    level : float
    laws : list of str or None

    Returns
    -------
    None
        Raises a BenchcastError naming what is wrong.
    """
    weights_for(rule, pd.Series({"x": 1.0}))  # validates the rule
    check_interval(interval)
    check_replicates(n_boot, allow_zero=True)
    check_level(level)
    for name in laws or ():
        check_law(name, available_laws())


def runs_below(table: pd.DataFrame, base: FitSpec, target_flops: float | None) -> pd.DataFrame:
    """The runs a strategy may see for a forecast at ``target_flops``: those cheaper than it (all without one).

    Parameters
    ----------
    table : DataFrame
        The runs.
    base : FitSpec
        The benchmark, metric and selection.
    target_flops : float or None
        The compute to forecast.

    Returns
    -------
    DataFrame
        The rows of the cheaper runs (selection errors and data warnings surface here, once).
    """
    data = table if target_flops is None else table[table["flops"] < target_flops]
    try:
        design(data, base)
    except SelectionError:
        if target_flops is None:
            raise
        rows, _ = design(table, base)  # empty without the target too: that error says which filter
        raise SelectionError(
            f"none of the {rows['run'].nunique()} runs selected for {base.benchmark} has compute below the target "
            f"{target_flops:.3g} FLOPs (they span {rows['flops'].min():.3g} .. {rows['flops'].max():.3g} FLOPs): "
            "laws are judged on the runs cheaper than the target."
        ) from None
    return data


def forecast_default(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    *,
    flops=None,
    params=None,
    tokens=None,
    tpr: float | None = None,
    min_flops: float | None = None,
    proxy: str | None = None,
    rule: str = "ensemble",
    n_boot: int = 1000,
    level: float = 0.9,
    interval: str = "extrapolation",
    seed: int = 0,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> StrategyForecast:
    """The default strategy's forecast of runs of compute ``flops`` from a table: each exactly as
    :func:`recommend` with ``target_flops`` gives it (laws compared and weighted on the runs cheaper
    than it, the blend's interval), the comparison made once for targets that see the same runs.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs.
    benchmark, metric, k : str, str or None, int or None
        The selection; the metric defaults as in :func:`benchcast.fit`.
    flops : float or sequence of float
        Compute of each run to forecast.
    params, tokens : float or sequence of float
        Instead of ``flops``: each run as N parameters trained on D tokens (paired in order; C = 6 N D, as
        :func:`recommend` takes ``target_params`` and ``target_tokens``).
    tpr, min_flops, proxy : optional
        Further selection, as in :class:`benchcast.fitting.spec.FitSpec`.
    rule : str
        ``'ensemble'`` (the default strategy), ``'stack'`` or ``'select'``.
    n_boot, level, interval, seed, n_jobs, ray_address
        As :func:`recommend` takes them.

    Returns
    -------
    StrategyForecast
        One row per target: the forecast and its interval, or why there is none.
    """
    if flops is not None and not len(np.atleast_1d(flops)):
        raise BenchcastError("give at least one compute to forecast (flops=).")
    check_options(rule, interval, n_boot, level, None)
    sized = params is not None or tokens is not None
    runs = planned_runs(flops, params, tokens, tpr=None if sized else tpr).by_compute()
    base = FitSpec("power", benchmark, metric, k=k, proxy=proxy, seed=seed, tpr=tpr, min_flops=min_flops)
    options = {"n_boot": n_boot, "seed": seed, "interval": interval, "tpr": tpr, "n_jobs": n_jobs}
    rows, compared = [], {}
    for i, target in enumerate(runs.flops):
        data = runs_below(table, base, target)
        if len(data) not in compared:  # the comparison depends only on the runs the target sees
            compared[len(data)] = compare_laws(data, base, rule=rule)
        rec, strategy = compared[len(data)]
        if strategy is None:
            row = {**runs.record(i), "prediction": np.nan, "level": level, "note": f"no forecast: {rec.reason}"}
            rows.append(row)
            continue
        row = strategy.forecast_at(runs.take(i), level=level, ray_address=ray_address, **options)
        rows.append({**row, "weights": dict(strategy.members)})
    return StrategyForecast(benchmark, rule, level, interval, n_boot, pd.DataFrame(rows))


def compare_laws(
    data: pd.DataFrame, base: FitSpec, *, laws: list[str] | None = None, rule: str = "ensemble"
) -> tuple[Recommendation, StrategyFit | None]:
    """Fit each candidate law to ``data`` and compare them by rolling-origin forecasts inside the runs.

    Parameters
    ----------
    data : DataFrame
        The runs the strategy may see.
    base : FitSpec
        The benchmark, metric and selection (its law is ignored).
    laws : list of str, optional
        Laws to compare (default: those of ``DEFAULT_CANDIDATES`` that apply).
    rule : str
        ``'ensemble'``, ``'stack'`` or ``'select'``.

    Returns
    -------
    recommendation : Recommendation
        The ranking, weights and nested error (no forecast).
    strategy : StrategyFit or None
        The rule's laws fitted to every run, their weights and the blend's rolling-origin forecasts
        (what its forecast needs); None without support.
    """
    benchmark = base.benchmark
    candidates = laws or [law for law in DEFAULT_CANDIDATES if law in applicable_laws(data, base)]
    errors, results, records, failures = {}, {}, [], []
    for law in track(candidates, f"recommend {benchmark}: laws fitted and backtested"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows, resolved = design(data, base.replace(law=law))
                result = fit_rows(rows, resolved, quiet=True)
                inner = cal.rolling_origin(result)
        except BenchcastError as exc:
            failures.append(f"{law}: {exc}")
            continue
        if cal.log_errors(inner)["origin_decades"].nunique() < cal.MIN_ORIGINS:
            failures.append(f"{law}: fewer than {cal.MIN_ORIGINS} inner origins with usable points")
            continue
        errors[law], results[law] = inner, result
        try:
            tau = cal.estimate_spread(inner).tau
        except BenchcastError:
            tau = float("nan")
        records.append(
            {
                "law": law,
                "tau": tau,
                "n_fit": result.diagnostics.n_used,
                "decades_fitted": result.diagnostics.decades,
                "converged": result.converged,
                # the law's own constraint active (information) apart from a search limit reached (a warning)
                **result.bounds.columns(),
            }
        )
    if rule == "ensemble" and failures:
        errors = {}  # the equal-weight mean is only as supported as every one of its laws
    wide = common_errors(errors)
    n_origins = int(wide["origin_decades"].nunique()) if len(wide) else 0
    if n_origins < cal.MIN_ORIGINS:
        reason = (
            f"no law has support: fewer than {cal.MIN_ORIGINS} rolling origins with usable points inside the runs "
            f"(scores too close to chance, or too short a compute range). {'; '.join(failures)}"
        )
        rec = Recommendation(benchmark, rule, False, reason, pd.DataFrame(records), {}, None, np.nan, 0, 0.0, failures)
        return rec, None
    names = list(errors)
    scores = inner_scores(wide, names)
    weights = weights_for(rule, scores)
    ranking = pd.DataFrame(records).set_index("law")
    ranking["inner_msle"] = scores
    ranking["inner_mre"] = [
        float(np.mean(np.abs(wide[law] - wide["true"]) / wide["true"]) * 100) for law in ranking.index
    ]
    ranking["weight"] = weights
    ranking = ranking.sort_values("inner_msle").reset_index()
    nested = nested_error(wide, names, rule)
    rec = Recommendation(
        benchmark,
        rule,
        True,
        "",
        ranking,
        {law: float(w) for law, w in weights.items()},
        str(ranking["law"].iloc[0]),
        nested["mre"],
        nested["n_origins"],
        float(wide["decades"].max()),
        failures,
    )
    return rec, StrategyFit(rule, rec.weights, results, blend_errors(wide, weights))
