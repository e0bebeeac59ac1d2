"""The one in-memory table every reader produces, its validation, and selections from it.

A table is a :class:`pandas.DataFrame` with one row per (run, benchmark, metric[, k]):

=========== ==============================================================
run         run identifier (replicate runs with equal N, D keep distinct ids)
params      N, non-embedding parameters (> 0)
tokens      D, training tokens (> 0)
flops       C, training compute in FLOPs (> 0; C = 6 N D when not given)
tpr         tokens per parameter, D / N
benchmark   benchmark name
metric      metric name (``pass@k`` metrics carry their k in ``k``)
k           attempts for pass@k metrics, missing otherwise (nullable integer)
value       the metric's value
stderr      standard error of ``value`` (optional, may be missing)
=========== ==============================================================
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import DataError, SelectionError, did_you_mean

COLUMNS = ("run", "params", "tokens", "flops", "tpr", "benchmark", "metric", "k", "value", "stderr")
SIZE_COLUMNS = ("params", "tokens", "flops")

# Metrics whose values are probabilities of success and must lie in [0, 1].
SCORE_METRICS = frozenset({"acc", "acc_norm", "exact_match", "pass@k", "f1", "em", "mc1", "mc2", "accuracy", "score"})


def is_score_metric(metric: str) -> bool:
    return metric in SCORE_METRICS or metric.split("/")[0] in SCORE_METRICS


def parse_metric(metric: str) -> tuple[str, int | None]:
    """Split ``'pass@8'`` into ``('pass@k', 8)``; other names pass through with ``k=None``."""
    if metric.startswith("pass@") and metric[5:].isdigit():
        return "pass@k", int(metric[5:])
    return metric, None


def _numeric(frame: pd.DataFrame, column: str, source: str) -> pd.Series:
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{source}: column '{column}' must be numeric, but row {row} holds {frame[column].iloc[row]!r}."
        )
    return values.astype(float)


def validate(frame: pd.DataFrame, source: str = "table") -> pd.DataFrame:
    """Check and complete a table: derive missing sizes, coerce types, check ranges.

    Raises :class:`DataError` naming ``source``, the column and the offending value.
    """
    missing = [c for c in ("benchmark", "metric", "value") if c not in frame.columns]
    if "run" not in frame.columns:
        missing.insert(0, "run")
    if missing:
        raise DataError(
            f"{source}: missing required column(s) {', '.join(repr(m) for m in missing)}; "
            f"found {', '.join(repr(c) for c in frame.columns)}."
        )
    sizes = [c for c in SIZE_COLUMNS if c in frame.columns]
    if "flops" not in sizes and not {"params", "tokens"} <= set(sizes):
        raise DataError(
            f"{source}: need either a 'flops' column or both 'params' and 'tokens' "
            f"(found {', '.join(repr(c) for c in frame.columns)})."
        )
    if frame.empty:
        raise DataError(f"{source}: the table has no rows.")
    out = pd.DataFrame(index=frame.index)
    out["run"] = frame["run"].astype(str)
    for column in SIZE_COLUMNS:
        out[column] = _numeric(frame, column, source) if column in frame.columns else np.nan
    derived_flops = 6.0 * out["params"] * out["tokens"]
    out["flops"] = out["flops"].fillna(derived_flops)
    out["params"] = out["params"].fillna(out["flops"] / (6.0 * out["tokens"]))
    out["tokens"] = out["tokens"].fillna(out["flops"] / (6.0 * out["params"]))
    for column in SIZE_COLUMNS:
        values = out[column]
        bad = ~(values > 0) & values.notna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(
                f"{source}: column '{column}' must be positive, but row {row} "
                f"(run {out['run'].iloc[row]!r}) holds {values.iloc[row]!r}."
            )
    if out["flops"].isna().any():
        row = int(np.flatnonzero(out["flops"].isna().to_numpy())[0])
        raise DataError(
            f"{source}: row {row} (run {out['run'].iloc[row]!r}) has no compute: give 'flops' "
            f"or both 'params' and 'tokens'."
        )
    out["tpr"] = _numeric(frame, "tpr", source) if "tpr" in frame.columns else out["tokens"] / out["params"]
    out["benchmark"] = frame["benchmark"].astype(str)
    metric = frame["metric"].astype(str)
    k = _numeric(frame, "k", source) if "k" in frame.columns else pd.Series(np.nan, index=frame.index)
    parsed = metric.map(parse_metric)
    out["metric"] = parsed.map(lambda mk: mk[0])
    parsed_k = parsed.map(lambda mk: np.nan if mk[1] is None else float(mk[1])).astype(float)
    k = k.fillna(parsed_k)
    bad_k = k.notna() & ~((k >= 1) & (k == np.round(k)))
    if bad_k.any():
        row = int(np.flatnonzero(bad_k.to_numpy())[0])
        raise DataError(f"{source}: column 'k' must hold integers >= 1; row {row} has {k.iloc[row]!r}.")
    out["k"] = k.round().astype("Int64")
    needs_k = (out["metric"] == "pass@k") & out["k"].isna()
    if needs_k.any():
        row = int(np.flatnonzero(needs_k.to_numpy())[0])
        raise DataError(f"{source}: row {row} has metric 'pass@k' but no k.")
    out["value"] = _numeric(frame, "value", source)
    out["stderr"] = _numeric(frame, "stderr", source) if "stderr" in frame.columns else np.nan
    scores = out["metric"].map(is_score_metric).astype(bool)
    outside = scores & ~out["value"].between(0.0, 1.0) & out["value"].notna()
    if outside.any():
        row = int(np.flatnonzero(outside.to_numpy())[0])
        raise DataError(
            f"{source}: score metric '{out['metric'].iloc[row]}' of benchmark "
            f"'{out['benchmark'].iloc[row]}' must lie in [0, 1], but run "
            f"{out['run'].iloc[row]!r} has {out['value'].iloc[row]!r}."
        )
    for extra in frame.columns:
        if extra not in out.columns and extra not in ("k",):
            out[extra] = frame[extra]
    out = out.dropna(subset=["value"]).reset_index(drop=True)
    return out


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
    """
    if benchmark not in set(table["benchmark"]):
        raise SelectionError(f"unknown benchmark {benchmark!r}." + did_you_mean(benchmark, table["benchmark"]))
    rows = table[table["benchmark"] == benchmark]
    if metric is None:
        scores = sorted({m for m in rows["metric"] if is_score_metric(m)})
        if len(scores) != 1:
            raise SelectionError(f"benchmark {benchmark!r} has score metrics {scores}; choose one with --metric.")
        metric = scores[0]
    metric, parsed_k = parse_metric(metric)
    k = parsed_k if k is None else k
    if metric not in set(rows["metric"]):
        raise SelectionError(
            f"benchmark {benchmark!r} has no metric {metric!r}." + did_you_mean(metric, rows["metric"])
        )
    rows = rows[rows["metric"] == metric]
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
    """One row per run with its sizes, sorted by compute."""
    cols = ["run", "params", "tokens", "flops", "tpr"]
    return table[cols].drop_duplicates("run").sort_values("flops").reset_index(drop=True)


def covariate_column(table: pd.DataFrame, benchmark: str, metric: str) -> pd.Series:
    """Per-run values of another (benchmark, metric) pair, e.g. a proxy loss, indexed by run."""
    rows = select(table, benchmark, metric)
    return rows.groupby("run")["value"].mean()


def summary(table: pd.DataFrame) -> dict:
    """What a table holds: runs, compute range, benchmarks with their metrics."""
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
