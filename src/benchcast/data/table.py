"""Selections from the in-memory table: rows of one benchmark and metric, its runs, a summary.

The table's columns and its validation are :mod:`benchcast.data.schema` (its names are importable
from here too).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# the schema's names are part of this module's API (readers and fits import them from here)
from benchcast.data.schema import (  # noqa: F401
    COLUMNS,
    SCORE_METRICS,
    SIZE_ALIASES,
    SIZE_COLUMNS,
    is_score_metric,
    parse_metric,
    require_names,
    validate,
)
from benchcast.errors import SelectionError, did_you_mean


def select(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    *,
    max_flops: float | None = None,
    min_flops: float | None = None,
    tpr: float | None = None,
) -> pd.DataFrame:
    """Rows of one benchmark and metric (and k), optionally within a compute range or TPR.

    ``metric='pass@8'`` is read as ``metric='pass@k', k=8``. Unknown names raise
    :class:`SelectionError` with close matches; an empty result raises too.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.
    benchmark : str
        The benchmark.
    metric : str, optional
        Its metric (needed when it has several).
    k : int, optional
        The number of attempts of a pass@k metric.
    max_flops, min_flops : float, optional
        The compute range kept, in FLOPs (inclusive).
    tpr : float, optional
        Keep only runs at this tokens-per-parameter ratio.

    Returns
    -------
    pandas.DataFrame
        The selected rows.
    """
    # compared as a column, not as a Python set of every row's name (14 ms on the Apple file)
    if table.empty:
        raise SelectionError(f"no rows to select benchmark {benchmark!r} from: the table is empty.")
    in_benchmark = (table["benchmark"] == benchmark).to_numpy(bool)
    if not in_benchmark.any():
        raise SelectionError(f"unknown benchmark {benchmark!r}." + did_you_mean(benchmark, table["benchmark"]))
    rows = table[in_benchmark]
    if metric is None:
        scores = sorted({m for m in rows["metric"] if is_score_metric(m)})
        if len(scores) != 1:
            raise SelectionError(f"benchmark {benchmark!r} has score metrics {scores}; choose one with --metric.")
        metric = scores[0]
    metric, parsed_k = parse_metric(metric)
    k = parsed_k if k is None else k
    of_metric = (rows["metric"] == metric).to_numpy(bool)
    if not of_metric.any():
        raise SelectionError(
            f"benchmark {benchmark!r} has no metric {metric!r}." + did_you_mean(metric, rows["metric"])
        )
    rows = rows[of_metric]
    if k is not None:
        available = sorted(int(v) for v in rows["k"].dropna().unique())
        if int(k) not in available:
            raise SelectionError(f"benchmark {benchmark!r}, metric {metric!r} has no k={k}; available k: {available}.")
        rows = rows[rows["k"] == int(k)]
    if tpr is not None:
        rows = rows[np.isclose(rows["tpr"].to_numpy(float), tpr, rtol=1e-6)]
    if min_flops is not None:
        rows = rows[rows["flops"] >= min_flops]
    if max_flops is not None:
        rows = rows[rows["flops"] <= max_flops]
    if rows.empty:
        raise SelectionError(
            f"no rows for benchmark {benchmark!r}, metric {metric!r}"
            + (f", k={k}" if k is not None else "")
            + (f", tpr={tpr:g}" if tpr is not None else "")
            + (f", flops >= {min_flops:.3g}" if min_flops is not None else "")
            + (f", flops <= {max_flops:.3g}" if max_flops is not None else "")
            + "."
        )
    return rows.reset_index(drop=True)


def runs(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run with its sizes, sorted by compute.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.

    Returns
    -------
    pandas.DataFrame
        Columns run, params, tokens, flops (FLOPs) and tpr.
    """
    cols = ["run", "params", "tokens", "flops", "tpr"]
    return table[cols].drop_duplicates("run").sort_values("flops").reset_index(drop=True)


def covariate_column(table: pd.DataFrame, benchmark: str, metric: str) -> pd.Series:
    """Per-run values of another (benchmark, metric) pair, e.g. a proxy loss, indexed by run.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.
    benchmark : str
        The benchmark holding the covariate.
    metric : str
        Its metric.

    Returns
    -------
    pandas.Series
        The mean value of each run.
    """
    rows = select(table, benchmark, metric)
    return rows.groupby("run")["value"].mean()


def summary(table: pd.DataFrame) -> dict:
    """What a table holds: runs, compute range, benchmarks with their metrics.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.

    Returns
    -------
    dict
        JSON-ready counts of runs and rows, the FLOPs and parameter ranges, the tokens-per-parameter
        ratios, and each benchmark's metrics with their runs (and k).
    """
    benchmarks: dict[str, dict[str, object]] = {}
    for (bench, metric), rows in table.groupby(["benchmark", "metric"], sort=True):
        entry = benchmarks.setdefault(str(bench), {})
        ks = sorted(int(v) for v in rows["k"].dropna().unique())
        entry[str(metric)] = {"runs": int(rows["run"].nunique()), **({"k": ks} if ks else {})}
    by_run = runs(table)
    return {
        "runs": int(len(by_run)),
        "rows": int(len(table)),
        "flops_min": float(by_run["flops"].min()),
        "flops_max": float(by_run["flops"].max()),
        "params_min": float(by_run["params"].min()),
        "params_max": float(by_run["params"].max()),
        "tpr": sorted({round(float(t), 6) for t in by_run["tpr"]}),
        "benchmarks": benchmarks,
    }
