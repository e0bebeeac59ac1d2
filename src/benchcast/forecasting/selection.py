"""Law choice on the user's own runs, by rolling-origin forecasts inside them.

Each candidate law is fitted to every run, then refitted from several origins below the largest
run (:func:`benchcast.forecasting.calibration.rolling_origin`) to forecast the runs above each
origin. Laws are compared on the inner points every candidate forecasts, by the mean (over
origins) of the mean squared log-ratio error; ``stack`` weights each law by the inverse of
that error, ``select`` keeps the best one, and ``ensemble`` (the default) weights every
law with support equally. The error reported for the choice is nested: at each
origin the choice is made from the deeper origins' forecasts of runs below it only, and scored on
the runs above it, which it never saw.

Which laws are candidates depends on the ladder, decided in one place (:func:`ladder_laws`): each law
says whether it models tokens per parameter (``Law.models_tpr``); runs that separate parameters from
tokens (several TPRs at one model size: :func:`benchcast.laws.questions.spans_tprs`) get the laws of N
and D, any other ladder the laws of compute, so no law of compute alone is fitted across TPRs by the
default. A combination uses the candidates with support (at least ``calibration.MIN_ORIGINS`` inner
origins with usable points, on points they share) and names them; where none has it (a short ladder,
scores near chance), the fallback law of that ladder (``power``; ``nd`` across TPRs) forecasts alone
wherever it fits, its interval calibrated on its own origins or, with too few, on the spread pooled
over the table's other benchmarks (the output says which). No forecast only where nothing fits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.data.table import within_compute
from benchcast.errors import BenchcastError, SelectionError
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting import calibration as cal
from benchcast.forecasting.candidates import (  # noqa: F401 (API)
    DEFAULT_CANDIDATES,
    DEFAULT_POOL,
    FALLBACK_POOL,
    across_tprs,
    fit_laws,
    ladder_laws,
    pooled_over_table,
    ranking_record,
    too_short,
)
from benchcast.forecasting.convention import table_runs
from benchcast.forecasting.intervals import check_replicates
from benchcast.forecasting.law_comparison import (  # noqa: F401 (API)
    SELECTION_RULES,
    blend_errors,
    common_errors,
    inner_scores,
    members_with_support,
    nested_error,
    pooled_spread,
    weights_for,
)
from benchcast.forecasting.recommendation import Recommendation, StrategyForecast
from benchcast.forecasting.strategy import StrategyFit
from benchcast.laws import available_laws, get_law
from benchcast.validation import check_interval, check_law, check_level, check_positive


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
    max_flops: float | None = None,
    flops_per_6nd: float | None = None,
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
    tpr, min_flops, max_flops, proxy, flops_per_6nd : optional
        Further selection, as in :class:`benchcast.fitting.spec.FitSpec`; r in C = r 6 N D placing a planned run
        (:func:`~benchcast.forecasting.convention.table_runs`).
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
    selection = {"tpr": tpr, "min_flops": min_flops, "max_flops": max_flops}
    if target_params is not None or target_tokens is not None or flops_per_6nd is not None:
        target = table_runs(table, target_flops, target_params, target_tokens, **selection, given=flops_per_6nd)
        target_flops = float(target.flops[0])
    base = FitSpec("power", benchmark, metric, k=k, proxy=proxy, seed=seed, **selection)
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
    data = within_compute(table, below=target_flops)
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
    max_flops: float | None = None,
    flops_per_6nd: float | None = None,
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
    tpr, min_flops, max_flops, proxy, flops_per_6nd : optional
        Further selection, as in :class:`benchcast.fitting.spec.FitSpec`; r in C = r 6 N D placing a planned run
        (:func:`~benchcast.forecasting.convention.table_runs`).
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
    selection = {"tpr": tpr, "min_flops": min_flops, "max_flops": max_flops}
    runs = table_runs(table, flops, params, tokens, **selection, given=flops_per_6nd).by_compute()
    base = FitSpec("power", benchmark, metric, k=k, proxy=proxy, seed=seed, **selection)
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
        if strategy.pooled is not None and "note" not in row:  # the output says where its interval comes from
            row["note"] = "interval: extrapolation spread pooled over the table's other benchmarks"
        rows.append({**row, "weights": dict(strategy.members)})
    return StrategyForecast(benchmark, rule, level, interval, n_boot, pd.DataFrame(rows))


def compare_laws(
    data: pd.DataFrame, base: FitSpec, *, laws: list[str] | None = None, rule: str = "ensemble"
) -> tuple[Recommendation, StrategyFit | None]:
    """Fit each candidate law to ``data`` and compare them by rolling-origin forecasts inside the runs;
    the rule combines those with support, or the ladder's fallback law where none has it.

    Parameters
    ----------
    data : DataFrame
        The runs the strategy may see (every benchmark of the table: the others pool a spread where
        this one has too few rolling origins of its own).
    base : FitSpec
        The benchmark, metric and selection (its law is ignored).
    laws : list of str, optional
        Laws to compare (default: the ladder's candidates, :func:`ladder_laws`, that apply; then its
        fallback where none has support).
    rule : str
        ``'ensemble'``, ``'stack'`` or ``'select'``.

    Returns
    -------
    recommendation : Recommendation
        The ranking, weights and nested error (no forecast); ``failures`` name the laws left out and why.
    strategy : StrategyFit or None
        The rule's laws fitted to every run, their weights and the blend's rolling-origin forecasts
        (what its forecast needs); None where no law fits.
    """
    benchmark = base.benchmark
    rows, _ = design(data, base)
    if laws:
        candidates, fallbacks = list(laws), []
    else:
        usable = applicable_laws(data, base)
        ladder, backup = ladder_laws(rows)
        candidates, fallbacks = [law for law in ladder if law in usable], [law for law in backup if law in usable]
    warned = [w for w in (across_tprs(rows, law) for law in candidates) if w]
    errors, results, failures = fit_laws(data, base, candidates)
    if not laws:  # the ladder's length, as each law declares what it needs
        short = {law: reason for law in errors if (reason := too_short(law, results[law]))}
        failures += list(short.values())
        errors = {law: e for law, e in errors.items() if law not in short}
    members = members_with_support(errors)
    failures += [
        f"{law}: fewer than {cal.MIN_ORIGINS} inner origins with usable points (shared with the other laws)"
        for law in errors
        if law not in members
    ]
    if not members and fallbacks:
        more_errors, more_results, more_failures = fit_laws(data, base, fallbacks)
        failures += more_failures
        members = list(more_errors)[:1]  # the first fallback that fits: forecast wherever it does
        errors.update(more_errors)
        results.update(more_results)
        if members:
            failures.append(f"no candidate has support: the fallback {members[0]} forecasts alone")
    failures = warned + failures
    if not members:
        reason = (
            f"no law has support: no candidate has {cal.MIN_ORIGINS} rolling origins with usable points inside "
            f"the runs, and no fallback law fits (scores too close to chance, or too few runs). {'; '.join(failures)}"
        )
        rec = Recommendation(benchmark, rule, False, reason, pd.DataFrame(), {}, None, np.nan, 0, 0.0, failures)
        return rec, None
    wide = common_errors({law: errors[law] for law in members})
    scores = inner_scores(wide, members) if len(wide) else pd.Series(np.nan, index=members)
    weights = weights_for(rule, scores) if len(wide) else pd.Series(1.0 / len(members), index=members)
    ranking = pd.DataFrame([ranking_record(law, errors[law], results[law]) for law in members]).set_index("law")
    ranking["inner_msle"] = scores
    ranking["inner_mre"] = [
        float(np.mean(np.abs(wide[law] - wide["true"]) / wide["true"]) * 100) if len(wide) else np.nan
        for law in ranking.index
    ]
    ranking["weight"] = weights
    ranking = ranking.sort_values("inner_msle").reset_index()
    nested = nested_error(wide, members, rule) if len(wide) else {"mre": np.nan, "n_origins": 0}
    own = blend_errors(wide, weights) if len(wide) else pd.DataFrame()
    pooled = None
    if not len(own) or cal.log_errors(own)["origin_decades"].nunique() < cal.MIN_ORIGINS:
        pooled, n_pooled = pooled_over_table(data, base, weights)
        if pooled is not None:
            failures.append(
                f"too few rolling origins of its own: its interval borrows the extrapolation spread pooled over "
                f"{n_pooled} other benchmark(s) of the table (tau {pooled.tau:.3f} per decade)"
            )
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
        float(wide["decades"].max()) if len(wide) else 0.0,
        failures,
    )
    return rec, StrategyFit(rule, rec.weights, results, own, pooled=pooled)
