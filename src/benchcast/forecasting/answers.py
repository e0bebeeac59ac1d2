"""The questions a user asks, each answered through the one forecaster
(:class:`benchcast.forecasting.ensemble.Ensemble`): a fit's forecast (:func:`forecast`), the default strategy's
forecast from a table (:func:`forecast_default`), which laws to use (:func:`recommend`), and the compute a
target score needs (:mod:`benchcast.forecasting.planning`). Settings travel as values: the runs selected as one
:class:`~benchcast.fitting.spec.FitSpec` (``selection``), the interval as one
:class:`~benchcast.forecasting.bootstrap.Uncertainty`, whose defaults are the same for every question; where the
bootstrap runs (``n_jobs``, ``ray_address``) is an argument of the call.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast.data.schema import parse_metric
from benchcast.data.table import tpr_level, within_compute
from benchcast.errors import BenchcastError, SelectionError
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.alternative import beside, compare, fit_alternative
from benchcast.forecasting.bootstrap import ANSWER, Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.flags import falls_across_k
from benchcast.forecasting.forecast import Forecast, ForecastMeta, make_forecast
from benchcast.forecasting.results import Plan, Recommendation
from benchcast.forecasting.selection import SELECTION_RULES
from benchcast.forecasting.targets import (
    PlannedRuns,
    as_runs,
    placed_query,
    planned_runs,
    table_runs,
)
from benchcast.laws import available_laws
from benchcast.plots.labels import metric_label
from benchcast.validation import check_law, check_positive


def forecast(
    result: FitResult,
    *,
    uncertainty: Uncertainty = ANSWER,
    n_jobs: int | None = None,
    ray_address: str | None = None,
    flops_per_6nd: float | None = None,
    **covariates,
) -> Forecast:
    """A fit's forecast with a prediction interval (a new run) and a confidence interval (the law), as a
    one-member ensemble gives it.

    Parameters
    ----------
    result : FitResult
        The fit to forecast with.
    uncertainty : Uncertainty
        Replicates (0: no interval), seed, levels and the interval method (``'extrapolation'`` widens the bootstrap
        by the extrapolation error measured inside the fit's runs); default: the 90 % interval.
    n_jobs, ray_address : optional
        Worker processes for the bootstrap, or a Ray cluster to run its batches on.
    flops_per_6nd : float, optional
        r placing planned runs (params= and tokens=) at C = r 6 N D; default: the convention of the fit's own runs
        (:func:`~benchcast.forecasting.targets.placed_query`), which the forecast names.
    **covariates
        The points: flops=, or params= and tokens=, k=, gold=.

    Returns
    -------
    Forecast
    """
    placed, convention = placed_query(result, covariates, flops_per_6nd)
    result.covariates(**placed)  # the query as the fit takes it: a covariate it lacks is named here
    runs, extra, shape = _query_runs(result, covariates, convention)
    query = {k: v for k, v in covariates.items() if v is not None}
    # what the law was given: the placement's words, in the forecast's covariates
    notes = [f"planned runs placed at {runs.convention}"] if convention is not None else []
    return Ensemble.of_fit(result).predict(
        runs,
        uncertainty,
        n_jobs=n_jobs,
        ray_address=ray_address,
        confidence=True,
        extra=extra,
        query=query,
        shape=shape,
        remarks=notes,
    )


def _query_runs(result: FitResult, covariates: dict, convention) -> tuple[PlannedRuns, dict, tuple]:
    """A fit's query as runs (compute, N and D where known) and the other covariates, flattened; and its shape."""
    names = [name for name in ("flops", "params", "tokens", "k", "gold") if covariates.get(name) is not None]
    if not names:
        raise BenchcastError("give the points to forecast: flops=, or params= and tokens= (and k=, gold= where used).")
    arrays = np.broadcast_arrays(*(np.asarray(covariates[name], float) for name in names))
    values = dict(zip(names, (a.ravel() for a in arrays), strict=True))
    shape = arrays[0].shape if arrays[0].ndim > 1 else ()
    size = arrays[0].size
    missing = np.full(size, np.nan)
    if "flops" in values:
        tpr = result.spec.tpr
        flops = values["flops"]
        params = np.sqrt(flops / (6.0 * tpr)) if tpr else missing
        runs = PlannedRuns(flops, params, flops / (6.0 * params) if tpr else missing, np.zeros(size, bool))
    elif "params" in values and "tokens" in values:
        runs = planned_runs(params=values["params"], tokens=values["tokens"], convention=convention)
    else:
        runs = PlannedRuns(missing, missing, missing, np.zeros(size, bool))
    extra = {name: values[name] for name in ("k", "gold") if name in values}
    return runs, extra, shape


def runs_below(table: pd.DataFrame, base: FitSpec, target_flops: float | None) -> pd.DataFrame:
    """The runs a forecaster may see for a forecast at ``target_flops``: those cheaper than it (all without one)."""
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


def base_spec(selection: FitSpec | str, uncertainty: Uncertainty) -> FitSpec:
    """The runs an answer selects, as the spec its forecaster is fitted with (a law or seed it ignores: refused)."""
    spec = FitSpec("power", selection) if isinstance(selection, str) else selection
    # the forecaster chooses its laws and the uncertainty holds the seed: a selection saying otherwise is refused, not
    # overridden without a word
    if spec.law != "power":
        raise BenchcastError(
            f"the default forecaster chooses its own laws; the selection names law {spec.law!r}, which it would not "
            "use: give FitSpec('power', ...) as the selection, or fit one law with benchcast.fit."
        )
    if spec.seed not in (0, uncertainty.seed):
        raise BenchcastError(
            f"the selection's seed {spec.seed} differs from the uncertainty's {uncertainty.seed}: the answer's seed is "
            "the uncertainty's (give Uncertainty(seed=...))."
        )
    return replace(spec, seed=uncertainty.seed)


def check_options(rule: str, laws) -> None:
    """Refuse a rule or law name that does not exist."""
    if rule not in SELECTION_RULES:
        raise BenchcastError(f"unknown selection rule {rule!r}; expected one of {', '.join(SELECTION_RULES)}.")
    for name in laws or ():
        check_law(name, available_laws())


def recommend(
    table: pd.DataFrame,
    selection: FitSpec | str,
    *,
    laws: list[str] | None = None,
    target_flops: float | None = None,
    target_params: float | None = None,
    target_tokens: float | None = None,
    forecast_tpr: float | None = None,
    flops_per_6nd: float | None = None,
    rule: str = "ensemble",
    uncertainty: Uncertainty = ANSWER,
    n_jobs: int | None = None,
    ray_address: str | None = None,
) -> Recommendation:
    """Weight (``rule='ensemble'``: equally unless their errors separate the laws; ``'stack'``: by inverse error) or
    choose (``'select'``) laws with support, judged by rolling-origin forecasts inside the runs cheaper than
    ``target_flops`` (all runs when None).

    Parameters
    ----------
    table : pandas.DataFrame
        The runs (a table as :func:`benchcast.load` returns).
    selection : FitSpec or str
        The runs selected (benchmark, metric, k, compute range, TPR, proxy... as :class:`~benchcast.FitSpec` holds
        them; its law must be the placeholder ``'power'`` and its seed 0 or the uncertainty's, else it is refused:
        the answer chooses its laws and takes the uncertainty's seed), or a benchmark's name; the metric defaults as in
        :func:`benchcast.fit`.
    laws : list of str, optional
        Laws to compare (default: the ladder's candidates that apply).
    target_flops : float, optional
        The planned run's compute: only cheaper runs are used, and the combination forecasts it.
    target_params, target_tokens : float, optional
        The planned run as N parameters trained on D tokens (both, and not with ``target_flops``).
    forecast_tpr : float, optional
        Tokens per parameter of a planned run given by ``target_flops`` (default: the selection's ``tpr``), inside
        the fitted runs' ratios or beyond them.
    flops_per_6nd : float, optional
        r in C = r 6 N D placing a planned run.
    rule : str
        ``'ensemble'``, ``'stack'`` or ``'select'``.
    uncertainty : Uncertainty
        The forecast's interval (:class:`~benchcast.forecasting.bootstrap.Uncertainty`; ``n_boot`` 0: none;
        default: 90 %); its seed is the fits' too.
    n_jobs, ray_address : optional
        Where the bootstrap runs: worker processes, or a Ray cluster.

    Returns
    -------
    Recommendation
        The ranking, weights, the choice's nested error and, with a target, the forecast there.
    """
    check_options(rule, laws)
    base = base_spec(selection, uncertainty)
    check_positive("target_flops", target_flops)
    if forecast_tpr is not None and (target_params is not None or target_tokens is not None):
        raise BenchcastError(
            "forecast_tpr (--forecast-tpr) places a planned run given by its compute (--target-flops); a run given by "
            "--params N --tokens D has its own ratio D / N: drop one."
        )
    check_positive("target_params", target_params)
    check_positive("target_tokens", target_tokens)
    target = None
    if target_params is not None or target_tokens is not None or flops_per_6nd is not None:
        target = table_runs(table, target_flops, target_params, target_tokens, **_within(base), given=flops_per_6nd)
        target_flops = float(target.flops[0])
    data = runs_below(table, base, target_flops)
    ensemble = Ensemble(rule, laws).fit(data, base)
    rec = ensemble.choice_
    if not ensemble.ok:
        return rec
    alternative = fit_alternative(data, base)
    rec = replace(rec, versus=compare(ensemble, alternative))
    if target_flops is not None:
        runs = target if target is not None else np.array([float(target_flops)])
        placed_at = base.tpr if forecast_tpr is None else check_positive("forecast_tpr", forecast_tpr)
        runs = as_runs(runs, None if target is not None else placed_at)
        made = ensemble.predict(runs, uncertainty, n_jobs=n_jobs, ray_address=ray_address)
        rec = replace(rec, forecast=beside(made, alternative, rec.versus, runs))
    return rec


CURVE_POINTS = 60  # a curve's grid of compute, the targets added to it


def _within(spec: FitSpec) -> dict:
    """The selection's TPR and compute range, as the planned runs are placed by them."""
    return {"tpr": spec.tpr, "min_flops": spec.min_flops, "max_flops": spec.max_flops}


def _ratio_curves(
    ensemble: Ensemble, runs: PlannedRuns, i: int, unc: Uncertainty, several: bool, confidence: bool, where: dict
) -> dict:
    """The forecast along compute at target ``i``'s ratio, through its targets (50 and 90 %), by label."""
    tpr = float(runs.tpr[i])
    group = tpr_level(runs.tpr)  # the targets' ratio groups, as data.table groups a ladder's
    same = group == group[i] if np.isfinite(tpr) else ~np.isfinite(runs.tpr)
    through = runs.flops[same & (runs.flops <= runs.flops[i] * (1 + 1e-9))]
    lowest = min(float(fit.points["flops"].min()) for fit in ensemble.fits.values())
    grid = np.unique(np.concatenate([np.geomspace(lowest, runs.flops[i] * 1.5, CURVE_POINTS), through]))
    along = planned_runs(flops=grid, tpr=tpr, convention=runs.rule) if np.isfinite(tpr) else planned_runs(flops=grid)
    label = f"TPR {tpr:.4g}" if np.isfinite(tpr) else "by compute"
    label += f", fitted below {runs.flops[i]:.3g}" if several else ""
    return {label: ensemble.predict(along, replace(unc, levels=(0.5, 0.9)), confidence=confidence, **where)}


def consistent_in_k(answers: list) -> list:
    """``answers`` with one benchmark's forecasts (or plans) at several k flagged where pass@k falls with k."""
    groups: dict[tuple, list] = {}
    for i, answer in enumerate(answers):
        # a forecast or plan at one k names its metric pass@K (plots.labels.metric_label), read back by the one parser
        base, k = parse_metric(getattr(answer, "metric", "") or "")
        if k is None or base != "pass@k":
            continue
        if isinstance(answer, Forecast):
            groups.setdefault((answer.benchmark, "forecast", None), []).append((k, i))
        elif isinstance(answer, Plan) and answer.solves_for == "flops":  # one target: the compute for it
            groups.setdefault((answer.benchmark, "plan", answer.target), []).append((k, i))
    out = list(answers)
    for (_, kind, _), members in ((key, m) for key, m in groups.items() if len(m) > 1):
        ks = [k for k, _ in members]
        if kind == "plan":
            needed = [[answers[i].needed] for _, i in members]
            for (_, i), (extra,) in zip(members, falls_across_k(ks, needed, True), strict=True):
                out[i] = replace(answers[i], flags=(*answers[i].flags, *extra)) if extra else answers[i]
            continue
        runs = [answers[i].points[["flops", "params", "tokens"]].to_numpy(float) for _, i in members]
        if any(r.shape != runs[0].shape or not np.allclose(r, runs[0], equal_nan=True) for r in runs):
            continue  # not the same runs: nothing to compare point by point
        flags = falls_across_k(ks, [answers[i].prediction for _, i in members])
        for (_, i), extra in zip(members, flags, strict=True):
            out[i] = answers[i].with_flags(extra) if any(extra) else answers[i]
    return out


def forecast_default(
    table: pd.DataFrame,
    selection: FitSpec | str,
    *,
    flops=None,
    params=None,
    tokens=None,
    flops_per_6nd: float | None = None,
    rule: str = "ensemble",
    uncertainty: Uncertainty = ANSWER,
    n_jobs: int | None = None,
    ray_address: str | None = None,
    curves: bool | str = False,
) -> Forecast:
    """The default strategy's forecast of runs of compute ``flops`` from a table: each exactly as
    :func:`recommend` with ``target_flops`` gives it (laws compared and weighted on the runs cheaper
    than it), the ensemble fitted once for targets that see the same runs.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs.
    selection : FitSpec or str
        The runs selected, or a benchmark's name, as :func:`recommend` takes them.
    flops : float or sequence of float
        Compute of each run to forecast.
    params, tokens : float or sequence of float
        Instead of ``flops``: each run as N parameters trained on D tokens (paired in order).
    flops_per_6nd : float, optional
        r in C = r 6 N D placing a planned run.
    rule : str
        ``'ensemble'`` (the default strategy), ``'stack'`` or ``'select'``.
    uncertainty, n_jobs, ray_address
        As :func:`recommend` takes them.
    curves : bool
        Also the forecast along compute at each target's ratio, through the targets (:attr:`Forecast.curves`,
        what :meth:`Forecast.plot` draws); ``'confidence'``: with the law's (confidence) draws too.

    Returns
    -------
    Forecast
        One point per target: the forecast and its interval, or why there is none (``note``).
    """
    if flops is not None and not len(np.atleast_1d(flops)):
        raise BenchcastError("give at least one compute to forecast (flops=).")
    check_options(rule, None)
    unc, where = uncertainty, {"n_jobs": n_jobs, "ray_address": ray_address}
    base = base_spec(selection, unc)
    runs = table_runs(table, flops, params, tokens, **_within(base), given=flops_per_6nd).by_compute()
    parts, fitted, last, alternatives = [], {}, {}, {}
    for i, target in enumerate(runs.flops):
        data = runs_below(table, base, target)
        if len(data) not in fitted:  # the ensemble depends only on the runs the target sees
            fitted[len(data)] = Ensemble(rule).fit(data, base)
        ensemble = fitted[len(data)]
        if ensemble.ok:
            if len(data) not in alternatives:  # the simplest alternative on the same runs, with its comparison
                alternatives[len(data)] = (alternative := fit_alternative(data, base)), compare(ensemble, alternative)
            parts.append(beside(ensemble.predict(runs.take(i), unc, **where), *alternatives[len(data)], runs.take(i)))
            group = tpr_level(runs.tpr)[i]  # one curve per ratio group
            last[(len(data), group if np.isfinite(group) else None)] = i
        else:
            meta, asked = ForecastMeta(note=f"no forecast: {ensemble.choice_.reason}"), ""
            if base.metric:  # the metric asked, as a forecast names it
                asked = metric_label(base.metric, base.k)
            parts.append(
                make_forecast(base.benchmark, rule, runs.take(i), [np.nan], [()], unc, meta=meta, metric=asked)
            )
    for (seen, _), i in last.items() if curves else ():  # the last target of a ratio and runs: its curve through all
        along = _ratio_curves(fitted[seen], runs, i, unc, len(fitted) > 1, curves == "confidence", where)
        parts[i] = replace(parts[i], curves=along)
    return Forecast.concat(parts)
