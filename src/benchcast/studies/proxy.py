"""Krajewski et al. 2025 analyses that are not forecasting laws themselves:
K7 proxy diagnostics (how well a proxy explains the score) and K8 the benchmark average."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.data.chance import chance_level, filter_margin
from benchcast.data.schema import validate
from benchcast.data.table import parse_metric, select
from benchcast.errors import InsufficientDataError
from benchcast.fitting.engine.search import minimize_law
from benchcast.fitting.metrics import r2, rmse
from benchcast.laws.base import Law, Parameter, SearchSettings


class _ProxyLogistic(Law):
    """Q = 1 / (1 + exp(-(a * proxy + b))): the K7 diagnostic link (not a forecasting law)."""

    name = "proxy_logistic"
    formula = "Q = 1 / (1 + exp(-(a * proxy + b)))"
    covariates = ("proxy",)
    target = "score"
    loss = "lsq"
    uses_margin = False
    search = SearchSettings(n_screen=256)
    parameters = (Parameter("a", -1e3, 1e3, -1.0), Parameter("b", -1e3, 1e3, 0.0))

    def forward(self, theta, X):
        return 1.0 / (1.0 + np.exp(-(theta[..., 0:1] * X["proxy"] + theta[..., 1:2])))

    def initial_guesses(self, X, y):
        # logit-linear least squares gives the start
        logit = np.log(np.clip(y, 1e-4, 1 - 1e-4) / (1 - np.clip(y, 1e-4, 1 - 1e-4)))
        slope, intercept = np.polyfit(X["proxy"], logit, 1)
        return np.array([[slope, intercept]])


def proxy_diagnostic(table: pd.DataFrame, benchmark: str, metric: str, proxy: str) -> dict:
    """R² and RMSE of the logistic link from a proxy ('benchmark:metric') to the score."""
    target = select(table, benchmark, metric).groupby("run")["value"].mean()
    bench, _, proxy_metric = proxy.partition(":")
    values = select(table, bench, proxy_metric).groupby("run")["value"].mean()
    joined = pd.concat([target.rename("score"), values.rename("proxy")], axis=1, join="inner").dropna()
    X, y = {"proxy": joined["proxy"].to_numpy(float)}, joined["score"].to_numpy(float)
    row = {"benchmark": benchmark, "metric": metric, "proxy": proxy, "n": int(len(y))}
    try:
        optimum = minimize_law(_ProxyLogistic(), X, y)
    except InsufficientDataError as exc:  # two runs fit any link exactly: no diagnostic, refused in its own row
        return {**row, "a": np.nan, "b": np.nan, "r2": np.nan, "rmse": np.nan, "refused": str(exc)}
    fitted = _ProxyLogistic().forward(optimum.theta, X)
    return {
        **row,
        "a": float(optimum.theta[0]),
        "b": float(optimum.theta[1]),
        "r2": r2(y, fitted),
        "rmse": rmse(y, fitted),
        "refused": "",
    }


def benchmark_average(table: pd.DataFrame, benchmarks: list[tuple[str, str]], name: str = "average") -> pd.DataFrame:
    """The mean chance-normalised score Q' over ``benchmarks`` per run (K8), of runs above chance + margin on all."""
    per_run = {}
    for bench, metric_name in benchmarks:
        metric, k = parse_metric(metric_name)
        rows = select(table, bench, metric, k)
        q_rand, _ = chance_level(bench, metric)
        margin = filter_margin(bench)
        for row in rows.itertuples():
            sizes = (row.params, row.tokens, row.flops, row.tpr)
            entry = per_run.setdefault(row.run, {"sizes": sizes, "normed": [], "ok": True})
            entry["normed"].append((row.value - q_rand) / (1 - q_rand))
            entry["ok"] &= bool(row.value >= q_rand + margin)  # K8: every benchmark >= margin above chance
    records = []
    for run, entry in per_run.items():
        if entry["ok"] and len(entry["normed"]) == len(benchmarks):
            sizes = dict(zip(("params", "tokens", "flops", "tpr"), entry["sizes"], strict=True))
            records.append(
                {"run": run, **sizes, "benchmark": name, "metric": "score", "value": float(np.mean(entry["normed"]))}
            )
    if not records:
        return pd.DataFrame(columns=["run", "benchmark", "metric", "value", "flops"])
    return validate(pd.DataFrame(records), source=f"benchmark average {name}")
