"""``bench``: a rolling-origin benchmark of forecasting strategies (laws, law choice, intervals).

For each data set, benchmark and cutoff, every strategy sees only the runs at or below the cutoff
(its law choice and its extrapolation error included) and forecasts every run above it. The
split is made here, once: the workers get the training runs and the held-out runs' covariates,
never a held-out score; scoring happens afterwards in this process.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from benchcast.data.chance import warn_unknown_chance
from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.errors import BenchcastError
from benchcast.evaluation import strategies as st
from benchcast.evaluation.bench_cells import Cell, Dataset, LawCell, split_for
from benchcast.evaluation.bench_result import BenchResult, leaderboard, metrics
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting import extrapolation as ext
from benchcast.forecasting.alternative import alternative_law
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.flags import OUTSIDE_TPR, cell_flags, describe
from benchcast.forecasting.selection import DEFAULT_CANDIDATES
from benchcast.forecasting.targets import frame_runs
from benchcast.laws import get_law
from benchcast.laws.questions import spans_tprs
from benchcast.utils.parallel import parallel_map

# bench's per-point columns, then the bounds at each level (lower50, upper90...)
POINT_COLUMNS = ("run", "flops", "dataset", "benchmark", "metric", "strategy", "cutoff", "decades", "true")
POINT_COLUMNS += ("predicted", "usable", "flags")
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
    "is50",
    "is90",
    "wis",
    "decades",
    "flagged",
    "flags",
    "refused",
)


def _law_job(job: tuple):
    train, spec, n_boot, seed = job
    return st.law_outcome(train, spec, n_boot, seed)


def _choose_job(job: tuple) -> str | None:
    train, spec, chooser = job
    return chooser.pick(train, spec)


def bench(
    datasets: list[Dataset],
    strategies: list[str] | None = None,
    *,
    laws: tuple[str, ...] = st.FIXED_LAWS,
    candidates: tuple[str, ...] | None = None,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
    choosers: tuple[st.Chooser, ...] = (),
    interval: str | None = None,
) -> BenchResult:
    """Rolling-origin backtests of every strategy on every data set, benchmark and cutoff.

    ``laws`` are fitted, each also a fixed-law strategy; ``candidates`` are what ``ensemble``,
    ``stack`` and ``select`` combine (default: each cutoff's own ladder, fitted beside ``laws``, with its
    fallback law where no candidate has support: :func:`strategies.ladder_candidates`). ``strategies``
    default to every fixed law with both intervals, ``ensemble`` (also with the bootstrap-only interval),
    ``stack``, ``select`` and each of ``choosers`` (rules that pick one law per cell from its training runs).

    Parameters
    ----------
    datasets : list of Dataset
        The data sets, each with its benchmarks and cutoffs.
    strategies : list of str, optional
        Strategy names (a law, ``ensemble``, ``stack``, ``select``, a chooser; ``[bootstrap]`` suffix
        for the bootstrap-only interval); default :func:`_default_strategies`.
    laws : tuple of str
        The laws fitted in every cell.
    candidates : tuple of str, optional
        The laws the selectors combine (a subset of ``laws``; no fallback); None: each cutoff's training runs'.
    n_boot : int
        Bootstrap replicates per law fit.
    seed : int
        Seed of the bootstrap and interval draws.
    n_jobs : int, optional
        Worker processes (``None``: :func:`benchcast.utils.parallel.default_jobs`).
    progress : bool, optional
        Show a progress bar (``None``: only on a terminal).
    ray_address : str, optional
        A Ray cluster to run the fits on instead of local processes.
    choosers : tuple of Chooser
        Rules that pick one law per cell; each is also a strategy.
    interval : {'extrapolation', 'bootstrap'}, optional
        One interval for every strategy: the default strategies once each with it, and a strategy
        named without a ``[...]`` suffix gets it (``'bootstrap'`` adds the suffix). None (default):
        both intervals, as :func:`_default_strategies` lists them, a bare name meaning extrapolation.

    Returns
    -------
    BenchResult
        Per-cell rows, per-point predictions, the leaderboard, the run time in seconds and the settings.
    """
    start = time.perf_counter()
    for data in datasets:  # the fits run in workers, whose warnings are not shown: a silent 0 would be
        warn_unknown_chance(data.table, data.benchmarks, data.name)
    by_name = {chooser.name: chooser for chooser in choosers}
    strategies = list(strategies or _default_strategies(laws, by_name, interval))
    if interval is not None:
        strategies = [st.with_interval(name, interval, by_name) for name in strategies]
    missing = sorted(set(candidates or ()) - set(laws))
    if missing and any(st.base_name(name, by_name)[0] in st.SELECTORS for name in strategies):
        raise BenchcastError(f"candidate law(s) {missing} are not among the fitted laws {list(laws)}.")
    selected = any(st.base_name(name, by_name)[0] in (*st.SELECTORS, st.SWITCH) for name in strategies)
    ladders = st.cell_ladders(datasets, candidates)  # each cutoff's, from its training runs only
    extra = {d.name: sum((sum(p, ()) for (n, _), p in ladders.items() if n == d.name), ()) for d in datasets}
    if any(st.base_name(name, by_name)[0] == st.SWITCH for name in strategies):  # each cutoff's simplest alternative
        extra = {d.name: (*extra[d.name], *(alternative_law(st.runs_of(d, c)) for c in d.cutoffs)) for d in datasets}
    outcomes, picks, held_out = fit_cells(
        datasets,
        laws,
        extra_laws=extra if selected else None,
        choosers=[by_name[name] for name in strategies if name in by_name],
        n_boot=n_boot,
        seed=seed,
        n_jobs=n_jobs,
        progress=progress,
        ray_address=ray_address,
    )
    rows, predictions = assemble(datasets, strategies, outcomes, picks, held_out, seed, ladders, by_name, n_boot=n_boot)
    board = leaderboard(rows)
    settings = {
        "strategies": strategies,
        "laws": list(laws),
        "candidates": st.ladder_settings(ladders, 0),
        "fallbacks": st.ladder_settings(ladders, 1),
        "n_boot": n_boot,
        "seed": seed,
        "interval": interval or "both",
        "origin_decades": list(ext.ORIGIN_DECADES),
        "datasets": [
            {
                "name": d.name,
                "tpr": d.tpr,
                "min_flops": d.min_flops,
                "holdout_tprs": list(d.holdout_tprs),
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
    extra_laws: dict[str, tuple[str, ...]] | None = None,
) -> tuple[dict, dict, dict]:
    """Fit every candidate law for every data set, benchmark and cutoff, and run each chooser: (law outcomes, picks
    {cell key: {chooser: law}}, held-out rows with the largest training compute)."""
    pool = {"n_jobs": n_jobs, "progress": progress, "ray_address": ray_address}
    keys, law_jobs, pick_keys, pick_jobs, held_out = [], [], [], [], {}
    for data in datasets:
        for bench_name, metric in data.benchmarks:
            for cutoff in data.cutoffs:
                train, held = split_for(data, bench_name, metric, cutoff)
                if held.empty:
                    continue
                held_out[Cell(data.name, bench_name, metric, cutoff)] = (held, float(train["flops"].max()))
                base = FitSpec("power", bench_name, metric, tpr=data.tpr, min_flops=data.min_flops, seed=seed)
                for law in dict.fromkeys((*laws, *(extra_laws or {}).get(data.name, ()))):
                    keys.append(LawCell(data.name, bench_name, metric, cutoff, law))
                    law_jobs.append((train, base.replace(law=law), n_boot, seed))
                for chooser in choosers:
                    pick_keys.append((Cell(data.name, bench_name, metric, cutoff), chooser.name))
                    pick_jobs.append((train, base, chooser))
    fitted = parallel_map(_law_job, law_jobs, description="bench: fit laws", **pool)
    outcomes = dict(zip(keys, fitted, strict=True))
    picks: dict[tuple, dict[str, str | None]] = {}
    chosen = parallel_map(_choose_job, pick_jobs, description="bench: choosers", **pool) if pick_jobs else []
    for (key, name), law in zip(pick_keys, chosen, strict=True):
        picks.setdefault(key, {})[name] = law
    # a chooser may pick a law outside the candidates: fit it too
    extra = sorted(
        {
            LawCell(*key, law)
            for key, cell in picks.items()
            for law in cell.values()
            if law and LawCell(*key, law) not in outcomes
        }
    )
    if extra:
        jobs = []
        for dname, bench_name, metric, cutoff, law in extra:
            data = next(d for d in datasets if d.name == dname)
            train, held = split_for(data, bench_name, metric, cutoff)
            spec = FitSpec(law, bench_name, metric, tpr=data.tpr, min_flops=data.min_flops, seed=seed)
            jobs.append((train, spec, n_boot, seed))
        fitted = parallel_map(_law_job, jobs, description="bench: chosen laws", **pool)
        outcomes.update(zip(extra, fitted, strict=True))
    return outcomes, picks, held_out


def _default_strategies(laws, choosers=(), interval: str | None = None) -> list[str]:
    """Every law with both intervals, the selectors, the default with the bootstrap interval, the choosers (with
    ``interval``: every law and selector once, with that interval)."""
    if interval is not None:
        return [st.with_interval(name, interval) for name in (*laws, *st.SELECTORS)] + list(choosers)
    return [
        *laws,
        *(f"{law}[bootstrap]" for law in laws),
        *st.SELECTORS,
        f"{st.DEFAULT_STRATEGY}[bootstrap]",
        *choosers,
    ]


def assemble(
    datasets,
    strategies,
    outcomes,
    picks,
    held_out,
    seed,
    candidates=DEFAULT_CANDIDATES,
    choosers=None,
    *,
    n_boot: int = DEFAULT_REPLICATES,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn law outcomes into each strategy's forecasts, intervals and metrics."""
    records, points = [], []
    for data in datasets:
        for cutoff in data.cutoffs:
            laws, fallbacks = candidates[data.name, cutoff] if isinstance(candidates, dict) else (tuple(candidates), ())
            seen = st.runs_of(data, cutoff)
            several, simplest = spans_tprs(seen), alternative_law(seen)
            cells = [(b, m) for b, m in data.benchmarks if (data.name, b, m, cutoff) in held_out]
            by_cell = {
                (b, m): {key[4]: o for key, o in outcomes.items() if key[:4] == (data.name, b, m, cutoff)}
                for b, m in cells
            }  # each cell's fitted laws (Members)
            for strategy in strategies:
                for bench_name, metric in cells:
                    made, interval = st.strategy_ensemble(
                        strategy,
                        by_cell[(bench_name, metric)],
                        picks.get((data.name, bench_name, metric, cutoff), {}),
                        laws,
                        choosers,
                        fallbacks,
                        simplest,
                    )
                    held, top = held_out[Cell(data.name, bench_name, metric, cutoff)]
                    true = held["value"].to_numpy(float)
                    decades = np.log10(held["flops"].to_numpy(float) / top)
                    row = {
                        "dataset": data.name,
                        "benchmark": bench_name,
                        "metric": metric,
                        "strategy": strategy,
                        "cutoff": cutoff,
                        "status": made if isinstance(made, str) else "ok",
                        "n_test": int(len(held)),
                        "decades": float(np.mean(decades)),
                    }
                    if isinstance(made, str):
                        records.append(row)
                        continue
                    # the strategy's forecast as every other command makes it: the one forecaster
                    runs, extra = frame_runs(held)
                    forecast = made.predict(runs, Uncertainty(n_boot, seed, interval), extra=extra)
                    predicted, intervals = forecast.prediction, forecast.intervals
                    # a TPR held out lies outside the fitted TPRs by construction: the protocol's premise, not a flag
                    row.update(cell_flags(forecast.flags, (OUTSIDE_TPR,) if data.holdout_tprs else ()))
                    if row["status"] != "ok":  # refused: no number, the status says why
                        records.append(row)
                        continue
                    ok = st.usable(made, true, bench_name)
                    row.update(metrics(true, predicted, ok, intervals))
                    row["laws"] = ",".join(f"{law}:{w:.2f}" for law, w in made.weights_.items() if w > 0)
                    if several and any(get_law(law).across_tprs(seen) for law in made.weights_):
                        row["laws"] += " (compute alone, across TPRs)"  # runs at several TPRs read as one curve
                    row["tau"] = (forecast.meta.error_model or {"tau": np.nan})["tau"]
                    records.append(row)
                    # the forecast's own table, with the held-out runs' truth
                    frame = forecast.to_frame().assign(
                        run=held["run"].to_numpy(),
                        dataset=data.name,
                        metric=metric,
                        strategy=strategy,
                        cutoff=cutoff,
                        decades=decades,
                        true=true,
                        predicted=predicted,
                        usable=ok,
                        flags=[describe(point) for point in forecast.flags],
                    )
                    points.append(frame[[*POINT_COLUMNS, *(c for c in frame if c[:5] in ("lower", "upper"))]])
    rows = pd.DataFrame(records)
    for key in ROW_KEYS:
        if key not in rows:
            rows[key] = np.nan
    return rows, pd.concat(points, ignore_index=True) if points else pd.DataFrame()
