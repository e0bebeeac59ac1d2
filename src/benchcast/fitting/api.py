"""The fitting front end: select data, build covariates, filter points, run the engine, explain.

``fit(table, law=..., benchmark=..., metric=...)`` returns a :class:`FitResult`;
:class:`Forecaster` wraps it as a scikit-learn style estimator.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.data.chance import chance_level, filter_margin
from benchcast.data.table import covariate_column, parse_metric, select
from benchcast.errors import FitWarning, InsufficientDataError, SelectionError
from benchcast.evaluation.metrics import r2, rmse
from benchcast.fitting.engine import minimize_law
from benchcast.fitting.result import FitResult, fingerprint
from benchcast.laws import Law, get_law, to_target

MIN_DECADES = 1.0  # less compute range than this is an interpolation, not a forecast


@dataclass(frozen=True)
class FitSpec:
    """What to fit: the selection and settings shared by fit, backtests and bootstraps."""

    law: str
    benchmark: str
    metric: str | None = None
    k: int | None = None
    max_k: int | None = None
    q_rand: float | None = None
    margin: float | None = None
    proxy: str | None = None  # 'benchmark:metric' of a proxy loss, for the two-stage laws
    gold_metric: str = "loglikelihood"  # same-benchmark metric holding the gold log-likelihood
    loss: str | None = None
    huber_delta: float | None = None
    seed: int = 0


def _resolve_metric(law: Law, table: pd.DataFrame, spec: FitSpec) -> tuple[str | None, int | None]:
    metric, k = spec.metric, spec.k
    if metric is None and law.default_metric:
        metric = law.default_metric
    if metric is not None:
        metric, parsed = parse_metric(metric)
        k = parsed if k is None else k
    if law.per_k and metric == "pass@k" and k is None:
        rows = select(table, spec.benchmark, metric)
        ks = sorted(int(v) for v in rows["k"].dropna().unique())
        if len(ks) != 1:
            raise SelectionError(f"law {law.name!r} is fitted one k at a time; choose k with --k (available: {ks}).")
        k = ks[0]
    return metric, (k if law.per_k else None)


def design(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    runs: list[str] | None = None,
    max_flops: float | None = None,
    min_flops: float | None = None,
    tpr: float | None = None,
) -> tuple[pd.DataFrame, dict]:
    """The rows a fit sees, with every covariate the law needs, and the resolved settings."""
    law = get_law(spec.law)
    metric, k = _resolve_metric(law, table, spec)
    rows = select(table, spec.benchmark, metric, k, max_flops=max_flops, min_flops=min_flops, tpr=tpr)
    if runs is not None:
        rows = rows[rows["run"].isin(runs)]
    if not law.per_k and spec.max_k is not None:
        rows = rows[rows["k"].fillna(1) <= spec.max_k]
    if rows.empty:
        raise SelectionError(f"no rows left for {spec.benchmark!r} after selecting runs.")
    rows = rows.copy()
    metric = str(rows["metric"].iloc[0])
    rows["k"] = rows["k"].astype(float).fillna(1.0)
    needed = set(law.covariates) | set(law.fit_covariates)
    if "gold" in needed:
        gold = covariate_column(table, spec.benchmark, spec.gold_metric)
        # A log-likelihood is negative; the covariate is the positive NLL G = -log GoldProb.
        rows["gold"] = rows["run"].map(-gold if (gold <= 0).all() else gold)
    if "proxy" in needed:
        if not spec.proxy:
            raise SelectionError(f"law {law.name!r} needs a proxy loss: pass proxy='benchmark:metric'.")
        bench, _, proxy_metric = spec.proxy.partition(":")
        proxy = covariate_column(table, bench, proxy_metric or "loss")
        rows["proxy"] = rows["run"].map(-proxy if (proxy <= 0).all() else proxy)
    q_rand, q_source = chance_level(spec.benchmark, metric, spec.q_rand)
    margin = (
        law.default_margin
        if law.default_margin is not None and spec.margin is None
        else filter_margin(spec.benchmark, spec.margin)
    )
    settings = {
        "benchmark": spec.benchmark,
        "metric": metric,
        "k": k,
        "max_k": spec.max_k,
        "q_rand": q_rand,
        "q_rand_source": q_source,
        "margin": margin if law.uses_margin else None,
        "proxy": spec.proxy if "proxy" in needed else None,
        "gold_metric": spec.gold_metric if "gold" in needed else None,
        "loss": spec.loss or law.loss,
        "huber_delta": (law.huber_delta if spec.huber_delta is None else spec.huber_delta),
        "seed": spec.seed,
        "max_flops": max_flops,
        "min_flops": min_flops,
        "tpr": tpr,
    }
    return rows.sort_values(["flops", "run", "k"]).reset_index(drop=True), settings


def _drop_reasons(law: Law, rows: pd.DataFrame, settings: dict) -> np.ndarray:
    reasons = law.point_filter(rows["value"].to_numpy(float), settings["q_rand"], settings["margin"] or 0.0)
    for column in set(law.covariates) | set(law.fit_covariates):
        values = rows[column].to_numpy(float)
        bad = ~(np.isfinite(values) & (values > 0)) & (reasons == "")
        reasons[bad] = f"no positive {column} value"
    return reasons


def fit_rows(
    rows: pd.DataFrame, settings: dict, law_name: str, *, start: np.ndarray | None = None, quiet: bool = False
) -> FitResult:
    """Fit a law on prepared rows (from :func:`design`): the engine plus every diagnostic.

    ``start`` warm-starts the search; ``quiet`` makes a light refit for bootstraps: no
    FitWarnings, no standard errors, no data fingerprint.
    """
    law = get_law(law_name)
    reasons = _drop_reasons(law, rows, settings)
    used = rows[reasons == ""].reset_index(drop=True)
    dropped = [
        {"run": r.run, "flops": float(r.flops), "k": float(r.k), "value": float(r.value), "reason": why}
        for r, why in zip(rows.itertuples(), reasons, strict=True)
        if why
    ]
    if len(used) <= law.n_params - law.n_presolved:
        raise InsufficientDataError(
            f"law {law.name!r} has {law.n_params} parameters but only {len(used)} usable points "
            f"for {settings['benchmark']} ({len(dropped)} dropped); a fit needs more points than "
            "parameters."
        )
    X = {c: used[c].to_numpy(float) for c in set(law.covariates) | set(law.fit_covariates)}
    y = to_target(law.target, used["value"].to_numpy(float), settings["q_rand"])
    optimum = minimize_law(
        law,
        X,
        y,
        loss=settings["loss"],
        huber_delta=settings["huber_delta"],
        seed=settings["seed"],
        start=start,
        with_stderr=not quiet,
    )
    predict_X = {c: X[c] for c in law.covariates}
    fitted = law.predict_score(optimum.theta, predict_X, settings["q_rand"])
    observed = used["value"].to_numpy(float)
    flops = used["flops"].to_numpy(float)
    decades = float(np.log10(flops.max() / flops.min()))
    counts: dict[str, int] = {}
    for item in dropped:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
    diagnostics = {
        "loss": optimum.loss,
        "n_used": len(used),
        "n_dropped": len(dropped),
        "dropped_reasons": counts,
        "converged": optimum.converged,
        "message": optimum.message,
        "at_bound": optimum.at_bound,
        "rmse": rmse(observed, fitted),
        "r2": r2(observed, fitted),
        "flops_min": float(flops.min()),
        "flops_max": float(flops.max()),
        "decades": decades,
        "n_starts": optimum.n_starts,
        "n_evaluations": optimum.n_evaluations,
    }
    notes = []
    if not optimum.converged:
        notes.append(f"the optimiser did not report convergence: {optimum.message}")
    for name in optimum.at_bound:
        notes.append(f"parameter {name} sits on a bound of its range (or outside it); treat it with care")
    free = law.n_params
    if len(used) < 2 * free + 3:
        notes.append(f"only {len(used)} points for {free} parameters: the fit is weakly constrained")
    if decades < MIN_DECADES:
        notes.append(
            f"the fitted runs span only {decades:.2f} decades of compute: extrapolation from this fit is not a forecast"
        )
    for note in [] if quiet else notes:
        warnings.warn(f"{law.name} on {settings['benchmark']}: {note}", FitWarning, stacklevel=3)
    keep = [c for c in ("run", "flops", "params", "tokens", "k", "gold", "proxy", "value") if c in used]
    points = used[keep].copy()
    points["fitted"] = fitted
    return FitResult(
        law=law.name,
        params=dict(zip(law.param_names, map(float, optimum.theta), strict=True)),
        stderr=dict(zip(law.param_names, map(float, optimum.stderr), strict=True))
        if optimum.stderr is not None
        else {},
        settings=settings,
        diagnostics=diagnostics,
        points=points,
        dropped=dropped,
        warnings=notes,
        data_fingerprint="" if quiet else fingerprint(points),
    )


def fit(
    table: pd.DataFrame,
    law: str,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    *,
    max_flops: float | None = None,
    min_flops: float | None = None,
    tpr: float | None = None,
    runs: list[str] | None = None,
    **settings,
) -> FitResult:
    """Fit ``law`` to one benchmark and metric of ``table``.

    Extra keyword settings are those of :class:`FitSpec` (``q_rand``, ``margin``, ``proxy``,
    ``gold_metric``, ``loss``, ``huber_delta``, ``seed``, ``max_k``).
    """
    spec = FitSpec(law=law, benchmark=benchmark, metric=metric, k=k, **settings)
    rows, resolved = design(table, spec, runs=runs, max_flops=max_flops, min_flops=min_flops, tpr=tpr)
    return fit_rows(rows, resolved, spec.law)


class Forecaster:
    """scikit-learn style estimator: ``Forecaster(law, benchmark, metric).fit(table).predict(...)``."""

    def __init__(
        self,
        law: str = "power",
        benchmark: str | None = None,
        metric: str | None = None,
        k: int | None = None,
        *,
        max_flops: float | None = None,
        seed: int = 0,
        **settings,
    ):
        self.law, self.benchmark, self.metric, self.k = law, benchmark, metric, k
        self.max_flops, self.seed, self.settings = max_flops, seed, settings

    def fit(self, table: pd.DataFrame) -> Forecaster:
        if self.benchmark is None:
            raise SelectionError("Forecaster needs a benchmark.")
        self.result_ = fit(
            table,
            self.law,
            self.benchmark,
            self.metric,
            self.k,
            max_flops=self.max_flops,
            seed=self.seed,
            **self.settings,
        )
        self.params_ = dict(self.result_.params)
        return self

    def predict(self, flops=None, params=None, tokens=None, k=None, gold=None) -> np.ndarray:
        if not hasattr(self, "result_"):
            raise SelectionError("this Forecaster is not fitted yet; call fit(table) first.")
        return self.result_.predict(flops=flops, params=params, tokens=tokens, k=k, gold=gold)
