"""``bench``: a rolling-origin benchmark of forecasting strategies (laws, law choice, intervals).

For each data set, benchmark and cutoff, every strategy sees only the runs at or below the cutoff
(its law choice and its interval calibration included) and forecasts every run above it. The
split is made here, once: the workers get the training runs and the held-out runs' covariates,
never a held-out score; scoring happens afterwards in this process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.data.table import is_score_metric, parse_metric, select
from benchcast.errors import BenchcastError, SelectionError
from benchcast.evaluation import strategies as st
from benchcast.evaluation.bench_result import BenchResult, leaderboard, metrics, write_outputs  # noqa: F401 (API)
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting import calibration as cal
from benchcast.utils.parallel import parallel_map

DEFAULT_REPLICATES = 20  # bootstrap replicates per law fit (the extrapolation term dominates the width)
ROW_KEYS = (
    "dataset",
    "benchmark",
    "metric",
    "strategy",
    "cutoff",
    "status",
    "laws",
    "n_test",
    "mae",
    "mre",
    "n_usable",
    "mre_usable",
    "coverage50",
    "coverage90",
    "width90",
    "decades",
)
QUERY_COLUMNS = ("run", "flops", "params", "tokens", "tpr", "k", "gold", "proxy")


@dataclass
class Dataset:
    """One data set to bench: its table, benchmarks (name, metric) and the runs' selection."""

    name: str
    table: pd.DataFrame
    benchmarks: tuple[tuple[str, str], ...]
    cutoffs: tuple[float, ...]
    tpr: float | None = None
    min_flops: float | None = None


def ladder(table: pd.DataFrame, n: int, *, tpr: float | None = None, top: float = 0.25, depth: float = 1.25) -> tuple:
    """``n`` cutoffs spread in log compute from ``depth`` to ``top`` decades below the largest run."""
    if n < 1:
        raise BenchcastError(f"the number of cutoffs must be at least 1, got {n}.")
    flops = table["flops"] if tpr is None else table.loc[np.isclose(table["tpr"], tpr, rtol=1e-6), "flops"]
    if flops.empty:
        raise SelectionError(f"no runs{'' if tpr is None else f' at TPR {tpr:g}'} to place cutoffs on.")
    hi = np.log10(flops.max())
    return tuple(float(c) for c in 10 ** np.linspace(hi - depth, hi - top, n)) if n > 1 else (10 ** (hi - top),)


def score_benchmarks(table: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """Every (benchmark, score metric) pair of a table, pass@k as pass@1."""
    pairs = []
    for (bench, metric), rows in table.groupby(["benchmark", "metric"], sort=True):
        if not is_score_metric(metric):
            continue
        pairs.append((bench, "pass@1" if metric == "pass@k" and (rows["k"] == 1).any() else metric))
    return tuple(p for p in pairs if p[1] != "pass@k")


def split_for(dataset: Dataset, bench: str, metric: str, cutoff: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training table, held-out rows) for one benchmark and cutoff. The training table holds only
    runs with min_flops <= C <= cutoff; the held-out rows are the benchmark's runs above it."""
    table = dataset.table
    flops = table["flops"].to_numpy(float)
    keep = flops <= cutoff
    if dataset.min_flops is not None:
        keep &= flops >= dataset.min_flops
    train = table[keep].reset_index(drop=True)
    name, k = parse_metric(metric)
    rows = select(table, bench, name, k, tpr=dataset.tpr)
    held = rows[rows["flops"] > cutoff].copy()
    held["k"] = held["k"].astype(float).fillna(1.0)
    return train, held.sort_values(["flops", "run"]).reset_index(drop=True)


def queries_of(held: pd.DataFrame) -> pd.DataFrame:
    """The held-out rows' covariates, without their scores (what a strategy may see of them)."""
    return held[[c for c in QUERY_COLUMNS if c in held]].copy()


def _law_job(job: tuple) -> st.LawOutcome:
    train, queries, spec, n_boot, seed = job
    return st.law_outcome(train, queries, spec, n_boot, seed)


def _choose_job(job: tuple) -> str | None:
    train, spec, chooser = job
    return chooser.pick(train, spec)


def bench(
    datasets: list[Dataset],
    strategies: list[str] | None = None,
    *,
    laws: tuple[str, ...] = st.FIXED_LAWS,
    candidates: tuple[str, ...] = st.DEFAULT_CANDIDATES,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
    choosers: tuple[st.Chooser, ...] = (),
) -> BenchResult:
    """Rolling-origin backtests of every strategy on every data set, benchmark and cutoff.

    ``laws`` are fitted, each also a fixed-law strategy; ``candidates`` (a subset) are what
    ``ensemble``, ``stack`` and ``select`` combine. ``strategies`` default to every fixed law with
    both intervals, ``ensemble`` (also with the bootstrap-only interval), ``stack``, ``select`` and
    each of ``choosers`` (rules that pick one law per cell from its training runs)."""
    start = time.perf_counter()
    by_name = {chooser.name: chooser for chooser in choosers}
    strategies = list(strategies or default_strategies(laws, by_name))
    missing = sorted(set(candidates) - set(laws))
    if missing and any(st.base_name(name, by_name)[0] in st.SELECTORS for name in strategies):
        raise BenchcastError(f"candidate law(s) {missing} are not among the fitted laws {list(laws)}.")
    outcomes, picks, held_out = fit_cells(
        datasets,
        laws,
        choosers=[by_name[name] for name in strategies if name in by_name],
        n_boot=n_boot,
        seed=seed,
        n_jobs=n_jobs,
        progress=progress,
        ray_address=ray_address,
    )
    rows, predictions = assemble(datasets, strategies, outcomes, picks, held_out, seed, candidates, by_name)
    board = leaderboard(rows)
    settings = {
        "strategies": strategies,
        "laws": list(laws),
        "candidates": list(candidates),
        "n_boot": n_boot,
        "seed": seed,
        "origin_decades": list(cal.ORIGIN_DECADES),
        "pool_origins": cal.POOL_ORIGINS,
        "datasets": [
            {
                "name": d.name,
                "tpr": d.tpr,
                "min_flops": d.min_flops,
                "cutoffs": list(d.cutoffs),
                "benchmarks": [f"{b}:{m}" for b, m in d.benchmarks],
            }
            for d in datasets
        ],
    }
    return BenchResult(rows, predictions, board, time.perf_counter() - start, settings)


def fit_cells(
    datasets: list[Dataset],
    laws: tuple[str, ...],
    *,
    choosers: list[st.Chooser],
    n_boot: int,
    seed: int,
    n_jobs: int | None,
    progress: bool | None,
    ray_address: str | None = None,
) -> tuple[dict, dict, dict]:
    """Fit every candidate law for every data set, benchmark and cutoff, and run each chooser:
    (law outcomes, picks {cell key: {chooser: law}}, held-out rows with the largest training compute)."""
    pool = {"n_jobs": n_jobs, "progress": progress, "ray_address": ray_address}
    keys, law_jobs, pick_keys, pick_jobs, held_out = [], [], [], [], {}
    for data in datasets:
        for bench_name, metric in data.benchmarks:
            for cutoff in data.cutoffs:
                train, held = split_for(data, bench_name, metric, cutoff)
                if held.empty:
                    continue
                held_out[(data.name, bench_name, metric, cutoff)] = (held, float(train["flops"].max()))
                queries = queries_of(held)
                base = FitSpec("power", bench_name, metric, tpr=data.tpr, min_flops=data.min_flops, seed=seed)
                for law in laws:
                    keys.append((data.name, bench_name, metric, cutoff, law))
                    law_jobs.append((train, queries, base.replace(law=law), n_boot, seed))
                for chooser in choosers:
                    pick_keys.append(((data.name, bench_name, metric, cutoff), chooser.name))
                    pick_jobs.append((train, base, chooser))
    outcomes = dict(
        zip(
            keys,
            parallel_map(_law_job, law_jobs, description="bench: fit laws", **pool),
            strict=True,
        )
    )
    picks: dict[tuple, dict[str, str | None]] = {}
    chosen = parallel_map(_choose_job, pick_jobs, description="bench: choosers", **pool) if pick_jobs else []
    for (key, name), law in zip(pick_keys, chosen, strict=True):
        picks.setdefault(key, {})[name] = law
    # a chooser may pick a law outside the candidates: fit it too
    extra = sorted(
        {(*key, law) for key, cell in picks.items() for law in cell.values() if law and (*key, law) not in outcomes}
    )
    if extra:
        jobs = []
        for dname, bench_name, metric, cutoff, law in extra:
            data = next(d for d in datasets if d.name == dname)
            train, held = split_for(data, bench_name, metric, cutoff)
            spec = FitSpec(law, bench_name, metric, tpr=data.tpr, min_flops=data.min_flops, seed=seed)
            jobs.append((train, queries_of(held), spec, n_boot, seed))
        outcomes.update(
            dict(
                zip(
                    extra,
                    parallel_map(_law_job, jobs, description="bench: chosen laws", **pool),
                    strict=True,
                )
            )
        )
    return outcomes, picks, held_out


def default_strategies(laws, choosers=()) -> list[str]:
    """Every law with both intervals, the selectors, the default with the bootstrap interval, the choosers."""
    return [
        *laws,
        *(f"{law}[bootstrap]" for law in laws),
        *st.SELECTORS,
        f"{st.DEFAULT_STRATEGY}[bootstrap]",
        *choosers,
    ]


def assemble(
    datasets, strategies, outcomes, picks, held_out, seed, candidates=st.DEFAULT_CANDIDATES, choosers=None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn law outcomes into each strategy's forecasts, intervals and metrics."""
    records, points = [], []
    for data in datasets:
        for cutoff in data.cutoffs:
            cells = [(b, m) for b, m in data.benchmarks if (data.name, b, m, cutoff) in held_out]
            by_cell = {
                (b, m): {key[4]: o for key, o in outcomes.items() if key[:4] == (data.name, b, m, cutoff)}
                for b, m in cells
            }
            for strategy in strategies:
                plans = {
                    cell: st.plan_strategy(
                        strategy, by_cell[cell], picks.get((data.name, *cell, cutoff), {}), candidates, choosers
                    )
                    for cell in cells
                }
                pooled = st.pooled_spread(
                    [p.errors.assign(benchmark=cell[0]) for cell, p in plans.items() if p.status == "ok"]
                )
                for (bench_name, metric), plan in plans.items():
                    held, top = held_out[(data.name, bench_name, metric, cutoff)]
                    true = held["value"].to_numpy(float)
                    decades = np.log10(held["flops"].to_numpy(float) / top)
                    row = {
                        "dataset": data.name,
                        "benchmark": bench_name,
                        "metric": metric,
                        "strategy": strategy,
                        "cutoff": cutoff,
                        "status": plan.status,
                        "n_test": int(len(held)),
                        "decades": float(np.mean(decades)),
                    }
                    if plan.status != "ok":
                        records.append(row)
                        continue
                    cell = by_cell[(bench_name, metric)]
                    predicted, draws = st.blend(cell, plan.weights)
                    spread = st.spread_or_none(plan.errors, pooled) if plan.interval == "extrapolation" else None
                    if plan.interval == "extrapolation" and spread is None:
                        draws = None  # no calibration possible: no interval rather than a wrong one
                    fit_top = max(cell[law].flops_max for law, w in plan.weights.items() if w > 0)
                    intervals = st.intervals_from(
                        draws, np.log10(held["flops"].to_numpy(float) / fit_top), spread, seed
                    )
                    ok = st.usable(cell, plan.weights, true, bench_name)
                    row.update(metrics(true, predicted, ok, intervals))
                    row["laws"] = ",".join(f"{law}:{w:.2f}" for law, w in plan.weights.items() if w > 0)
                    row["tau"] = spread.tau if spread is not None else np.nan
                    records.append(row)
                    frame = held[["run", "flops"]].copy()
                    frame = frame.assign(
                        dataset=data.name,
                        benchmark=bench_name,
                        metric=metric,
                        strategy=strategy,
                        cutoff=cutoff,
                        decades=decades,
                        true=true,
                        predicted=predicted,
                        usable=ok,
                    )
                    for level, (lower, upper) in intervals.items():
                        pct = int(round(level * 100))
                        frame[f"lower{pct}"], frame[f"upper{pct}"] = lower, upper
                    points.append(frame)
    rows = pd.DataFrame(records)
    for key in ROW_KEYS:
        if key not in rows:
            rows[key] = np.nan
    return rows, pd.concat(points, ignore_index=True) if points else pd.DataFrame()
