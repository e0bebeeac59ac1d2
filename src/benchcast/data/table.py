"""Selections from the in-memory table: rows of one benchmark and metric, its runs, a summary.

The table's columns and its validation are :mod:`benchcast.data.schema` (its names are importable
from here too).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

# the schema's names are part of this module's API (readers and fits import them from here)
from benchcast.data.schema import MISSING_COLUMNS, MISSING_VALUES, MissingRows, is_score_metric, parse_metric
from benchcast.errors import DataWarning, SelectionError, did_you_mean

# ratios within this relative tolerance are one: a ladder's ratios are ratios of rounded sizes (20.013 for a "TPR 20"
# run), while two TPRs of one ladder differ by far more than 1 %
TPR_RTOL = 0.01


def tpr_level(tpr) -> np.ndarray:
    """The ratio group of each TPR (0, 1, ...; NaN if not positive): neighbours within :data:`TPR_RTOL`, bounded."""
    values = np.asarray(tpr, float)
    out = np.full(values.shape, np.nan)
    ok = np.isfinite(values) & (values > 0)
    logs, inverse = np.unique(np.log(values[ok]), return_inverse=True)
    step = np.log1p(TPR_RTOL)
    group = np.empty(len(logs))
    level, start, previous = -1, -np.inf, -np.inf
    for i, value in enumerate(logs):  # greedy from the smallest: a gap over 1 %, or a span over 2 %, starts a group
        if value - previous > step or value - start > 2 * step:
            level, start = level + 1, value
        group[i], previous = level, value
    out[ok] = group[inverse.reshape(-1)]
    return out


def at_tpr(values, tpr: float) -> np.ndarray:
    """Which ``values`` are the ratio ``tpr``: a :func:`tpr_level` group with a member within :data:`TPR_RTOL`."""
    values = np.asarray(values, float)
    near = np.isclose(values, tpr, rtol=TPR_RTOL, atol=0.0)
    if not near.any():
        return near
    level = tpr_level(values)
    return np.isin(level, level[near])


def _tprs_present(rows: pd.DataFrame) -> str:
    """The ratio groups of some rows (:func:`tpr_level`), each by its smallest ratio, as an error lists them."""
    values = rows["tpr"].dropna().unique().astype(float)
    level = tpr_level(values)
    return ", ".join(f"{values[level == lv].min():.5g}" for lv in np.unique(level[np.isfinite(level)])) or "none"


SPLITS = ("val", "validation", "test", "dev", "train")  # a task name's last part that names its split


def task_group(names, name: str) -> list[str]:
    """The subtasks a name that is no benchmark groups (``mmlu_val``: ``mmlu_<subtask>_val``); ambiguity raises."""
    names = sorted({str(n) for n in names})
    base, _, split = name.rpartition("_")
    # lm-eval v0.3 joins a group and its subtasks with a hyphen (hendrycksTest-anatomy), later ones with "_"
    members = [n for n in names if n.startswith((name + "_", name + "-"))]
    if not members and base and split in SPLITS:
        members = [n for n in names if n.startswith(base + "_") and n.endswith("_" + split)]
    if len(members) < 2:
        return []
    shots = [re.fullmatch(r"(\d+)shot", m.removeprefix(name + "_")) for m in members]
    if all(shots):  # one task at several shot counts (the reader's piqa_val_0shot, piqa_val_5shot): no mean of them
        counts = sorted(int(n[1]) for n in shots)
        raise SelectionError(
            f"benchmark {name!r} is evaluated at several shot counts ({', '.join(map(str, counts))}): name one "
            f"({', '.join(f'-b {name}_{n}shot' for n in counts)})."
        )
    splits: dict[str, list[str]] = {}
    for member in members:
        last = member.rpartition("_")[2]
        splits.setdefault(last if last in SPLITS else "", []).append(member)
    if len(splits) > 1:
        shown = "; ".join(f"{name}_{sp} ({', '.join(m)})" if sp else ", ".join(m) for sp, m in splits.items())
        raise SelectionError(
            f"benchmark {name!r} is a task group whose subtasks span several splits: {shown}; name one group "
            f"(e.g. -b {name}_{next(sp for sp in splits if sp)}) or a subtask."
        )
    nested = [(a, b) for a in members for b in members if b != a and b.startswith(a + "_")]
    if nested:
        raise SelectionError(
            f"benchmark {name!r} is a task group whose subtasks nest ({nested[0][0]!r} and {nested[0][1]!r}), so their "
            f"mean is not defined; its subtasks: {', '.join(members)}. Name one."
        )
    return members


def group_mean(table: pd.DataFrame, name: str, members: list[str]) -> pd.DataFrame:
    """Rows of benchmark ``name``: per run, step, metric and k the mean of its subtasks' values, where all have one."""
    rows = table[table["benchmark"].isin(members) & table["value"].notna()]  # a NaN score: that subtask is absent
    key = ["run", "metric", "k"] + (["step"] if "step" in rows.columns else [])  # checkpoints are never averaged
    counts = rows.groupby(key, dropna=False)["benchmark"].nunique()
    keyed = rows.set_index(key)
    complete = keyed[keyed.index.isin(counts[counts == len(members)].index)]
    by = complete.groupby(level=key, dropna=False)
    out = by.first().assign(
        benchmark=name,
        value=by["value"].mean(),
        stderr=np.sqrt((complete["stderr"] ** 2).groupby(level=key, dropna=False).sum(min_count=len(members)))
        / len(members),
    )
    own = {"benchmark", "value", "stderr", "q_rand", "q_rand_source", "family"}
    for column in (c for c in complete.columns if c not in own):  # the first subtask's value is not the group's
        varies = by[column].nunique(dropna=False) > 1
        if varies.any():
            out[column] = out[column].where(~varies)
    if "family" in complete.columns:
        out["family"] = by["family"].agg(lambda f: " + ".join(sorted({str(v) for v in f.dropna()})) or None)
    if "q_rand" in complete.columns:  # the mean chance level, where every subtask has one
        out["q_rand"] = by["q_rand"].mean().where(by["q_rand"].count() == len(members))
        given = complete["q_rand_source"] if "q_rand_source" in complete.columns else complete["q_rand"] * np.nan
        sources = given.groupby(level=key, dropna=False).agg(lambda f: "; ".join(sorted({str(v) for v in f.dropna()})))
        text = f"mean of its {len(members)} subtasks' levels" + (" (" + sources + ")").where(sources != "", "")
        out["q_rand_source"] = text.where(out["q_rand"].notna(), None)
    elif "q_rand_source" in complete.columns:
        out["q_rand_source"] = None
    out = out.reset_index()
    out["k"] = out["k"].astype("Int64")
    short = sorted(set(rows["run"]) - set(out["run"]))
    if out.empty:
        raise SelectionError(
            f"benchmark {name!r} is the mean of its {len(members)} subtasks ({', '.join(members)}), but no run has a "
            "value of every one of them with one metric."
        )
    warnings.warn(
        f"benchmark {name!r} is the unweighted mean of its {len(members)} subtasks ({', '.join(members)}), at each "
        f"run that has all of them ({out['run'].nunique()} runs)"
        + (f"; {len(short)} run(s) lacking one left out ({', '.join(short[:3])})" if short else "")
        + ".",
        DataWarning,
        stacklevel=3,
    )
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
    missing: bool = False,
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
        Keep only runs at this tokens-per-parameter ratio, within a relative :data:`TPR_RTOL` (1 %); where
        none is, the error lists the ratios present.
    missing : bool
        Also return the selection's rows with no value (set aside by :func:`~benchcast.validate`, value NaN): a fit
        counts them as dropped, with the reason.

    Returns
    -------
    pandas.DataFrame
        The selected rows.
    """
    if missing and table.attrs.get(MISSING_VALUES):
        aside = pd.DataFrame(list(table.attrs[MISSING_VALUES]), columns=list(MISSING_COLUMNS))
        aside["k"] = aside["k"].astype(float).round().astype("Int64")
        table = pd.concat([table, aside.assign(value=np.nan)], ignore_index=True)
    # compared as a column, not as a Python set of every row's name (14 ms on the Apple file)
    if table.empty:
        raise SelectionError(f"no rows to select benchmark {benchmark!r} from: the table is empty.")
    in_benchmark = (table["benchmark"] == benchmark).to_numpy(bool)
    if in_benchmark.any():
        rows = table[in_benchmark]
    else:
        members = task_group(table["benchmark"].unique(), benchmark)
        if not members:
            raise SelectionError(f"unknown benchmark {benchmark!r}." + did_you_mean(benchmark, table["benchmark"]))
        rows = group_mean(table, benchmark, members)
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
        matched = at_tpr(rows["tpr"], tpr)
        if not matched.any():
            raise SelectionError(
                f"no rows for benchmark {benchmark!r}, metric {metric!r}"
                + (f", k={k}" if k is not None else "")
                + f" at tpr={tpr:g} (matched within {TPR_RTOL:.0%}): the tokens-per-parameter ratios present are "
                f"{_tprs_present(rows)}; give one of them with --tpr (tpr=), or leave --tpr out for every run."
            )
        rows = rows[matched]
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


INCONSISTENT_K = "pass@k outside [pass@j, (k/j) pass@j] of the run's smaller k"  # no samples give such a row
ROUNDING = 5e-4  # half the last digit of a file that prints scores to 3 decimals: rounding is no inconsistency


def inconsistent_k(rows: pd.DataFrame) -> np.ndarray:
    """Which rows of a pass@k curve per run (``run``, ``k``, ``value``) no samples could give beside the same run's
    smaller k: pass@k never falls as k grows and is at most (k/j) pass@j (Bernoulli's inequality, for the unbiased
    estimator too), so a row at k outside [pass@j, (k/j) pass@j] (give or take ``ROUNDING``) of a row at a j < k is
    inconsistent, and so is every row of that run at a larger k: the smallest k is the anchor, and a run whose curve
    broke once is not read past the break (the Apple file's broken runs were scored from one sample a problem)."""
    bad = np.zeros(len(rows), bool)
    k, value = rows["k"].to_numpy(float), rows["value"].to_numpy(float)
    for index in rows.groupby(rows["run"].to_numpy(), sort=False).indices.values():
        ks, vs = k[index][:, None], value[index][:, None]
        smaller = (ks.T < ks) & np.isfinite(vs.T) & np.isfinite(vs)  # [i, j]: row j is a smaller k than row i
        outside = (vs < vs.T - ROUNDING) | (vs > ks / ks.T * (vs.T + ROUNDING) + ROUNDING)
        broken = (smaller & outside).any(axis=1)
        if broken.any():
            bad[index] = k[index] >= k[index][broken].min()
    return bad


def within_compute(
    table: pd.DataFrame,
    min_flops: float | None = None,
    max_flops: float | None = None,
    *,
    below: float | None = None,
) -> pd.DataFrame:
    """The table's runs within a compute range (``min_flops <= C <= max_flops``, ``C < below``), missing rows kept."""
    if min_flops is None and max_flops is None and below is None:
        return table

    def keep(flops: np.ndarray) -> np.ndarray:
        inside = np.ones(len(flops), bool)
        if min_flops is not None:
            inside &= flops >= min_flops
        if max_flops is not None:
            inside &= flops <= max_flops
        if below is not None:
            inside &= flops < below
        return inside

    out = table[keep(table["flops"].to_numpy(float))]
    missing = tuple(table.attrs.get(MISSING_VALUES) or ())
    kept = keep(np.array([row[MISSING_COLUMNS.index("flops")] for row in missing], float))
    out.attrs = (
        {MISSING_VALUES: MissingRows(r for r, ok in zip(missing, kept, strict=True) if ok)} if kept.any() else {}
    )
    return out


def runs(table: pd.DataFrame) -> pd.DataFrame:
    """One row per run with its sizes, sorted by compute."""
    cols = ["run", "params", "tokens", "flops", "tpr"]
    return table[cols].drop_duplicates("run").sort_values("flops").reset_index(drop=True)


def covariate_column(table: pd.DataFrame, benchmark: str, metric: str) -> pd.Series:
    """Per-run values of another (benchmark, metric) pair, e.g. a proxy loss, indexed by run."""
    return select(table, benchmark, metric).groupby("run")["value"].mean()


def summary(table: pd.DataFrame) -> dict:
    """What a table holds: runs, compute range, benchmarks with their metrics.

    Parameters
    ----------
    table : pandas.DataFrame
        The table.

    Returns
    -------
    dict
        JSON-ready counts of runs and rows (and of rows with no value, left out of every fit and counted
        as dropped there), the FLOPs and parameter ranges, the tokens-per-parameter
        ratios grouped into the levels the ladder holds (``tpr``: each level's median to 3 significant digits, with
        ``tpr_runs``: its runs; :func:`tpr_level`), and each
        benchmark's metrics with their runs (and k).
    """
    benchmarks: dict[str, dict[str, object]] = {}
    for (bench, metric), rows in table.groupby(["benchmark", "metric"], sort=True):
        entry = benchmarks.setdefault(str(bench), {})
        ks = sorted(int(v) for v in rows["k"].dropna().unique())
        entry[str(metric)] = {"runs": int(rows["run"].nunique()), **({"k": ks} if ks else {})}
    by_run = runs(table)
    values = by_run["tpr"].to_numpy(float)
    levels = tpr_level(values)
    found = [
        (float(f"{np.median(values[levels == lv]):.3g}"), int((levels == lv).sum()))
        for lv in np.unique(levels[np.isfinite(levels)])
    ]
    return {
        "runs": int(len(by_run)),
        "rows": int(len(table)),
        "rows_without_value": len(table.attrs.get(MISSING_VALUES) or ()),
        "flops_min": float(by_run["flops"].min()),
        "flops_max": float(by_run["flops"].max()),
        "params_min": float(by_run["params"].min()),
        "params_max": float(by_run["params"].max()),
        **dict(zip(("tpr", "tpr_runs"), map(list, zip(*found, strict=True)), strict=True)),
        "benchmarks": benchmarks,
    }
