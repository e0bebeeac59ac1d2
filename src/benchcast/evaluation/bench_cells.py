"""The cells ``bench`` forecasts: data sets, their cutoffs, and each cell's training and held-out runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from benchcast.data.table import TPR_RTOL, _tprs_present, at_tpr, is_score_metric, parse_metric, select
from benchcast.errors import BenchcastError, SelectionError

MIN_TRAINING_RUNGS = 3  # a law of three parameters needs at least three computes to be fitted below the cutoff
QUERY_COLUMNS = ("run", "flops", "params", "tokens", "tpr", "k", "gold", "proxy")


class Cell(NamedTuple):
    """One bench cell: a data set's benchmark and metric below one cutoff (the key of its held-out runs and picks)."""

    dataset: str
    benchmark: str
    metric: str
    cutoff: float


class LawCell(NamedTuple):
    """One law fitted in one cell (the key of bench's law outcomes)."""

    dataset: str
    benchmark: str
    metric: str
    cutoff: float
    law: str


@dataclass
class Dataset:
    """One data set to bench: its table, benchmarks (name, metric) and the runs' selection."""

    name: str
    table: pd.DataFrame
    benchmarks: tuple[tuple[str, str], ...]
    cutoffs: tuple[float, ...]
    tpr: float | None = None
    min_flops: float | None = None
    holdout_tprs: tuple[float, ...] = ()  # runs at these TPRs are held out whatever their compute (K4's protocol)
    holdout_params: float | None = None  # runs of this many parameters or more are held out ("fit < 1B, forecast 3B")

    def __post_init__(self):
        """Refuse a held-out TPR the data do not have: it would hold out nothing, without a word."""
        for held in self.holdout_tprs:
            if not at_tpr(self.table["tpr"], held).any():
                raise SelectionError(
                    f"{self.name}: holdout TPR (--holdout-tpr) {held:g} is none of the data's tokens-per-parameter "
                    f"ratios ({_tprs_present(self.table)}; matched within {TPR_RTOL:.0%}): give one of them."
                )


def ladder(table: pd.DataFrame, n: int, *, tpr: float | None = None, top: float = 0.25, depth: float = 1.25) -> tuple:
    """``n`` cutoffs spread in log compute from ``depth`` to ``top`` decades below the largest run."""
    if n < 1:
        raise BenchcastError(f"the number of cutoffs must be at least 1, got {n}.")
    flops = table["flops"] if tpr is None else table.loc[at_tpr(table["tpr"], tpr), "flops"]
    if flops.empty:
        raise SelectionError(f"no runs{'' if tpr is None else f' at TPR {tpr:g}'} to place cutoffs on.")
    hi = np.log10(flops.max())
    return tuple(float(c) for c in 10 ** np.linspace(hi - depth, hi - top, n)) if n > 1 else (10 ** (hi - top),)


def holdout_largest(
    table: pd.DataFrame, n: int, *, tpr: float | None = None, min_flops: float | None = None
) -> tuple[float, tuple[float, ...]]:
    """The cutoff that holds out the ``n`` largest rungs of a ladder (its ``n`` largest distinct computes; runs of one
    compute, such as seeds, are one rung) and fits on the rest: the geometric mean of the ``n``-th and ``n+1``-th
    largest."""
    flops = table["flops"].to_numpy(float)
    keep = np.isfinite(flops) & (flops > 0)
    if tpr is not None:
        keep &= np.isclose(table["tpr"].to_numpy(float), tpr, rtol=1e-6)
    if min_flops is not None:
        keep &= flops >= min_flops
    rungs = np.unique(np.round(np.log10(flops[keep]), 6))[::-1]  # one rung per compute, to 1 ppm
    where = "" if tpr is None else f" at TPR {tpr:g}"
    where += "" if min_flops is None else f" with C >= {min_flops:.3g}"
    if n < 1 or n > len(rungs) - MIN_TRAINING_RUNGS:
        raise BenchcastError(
            f"--holdout-largest {n}: the ladder{where} has {len(rungs)} rungs (distinct computes), and holding out "
            f"K of them must leave at least {MIN_TRAINING_RUNGS} to fit on: give K from 1 to "
            f"{max(len(rungs) - MIN_TRAINING_RUNGS, 0)}."
        )
    return float(10 ** (0.5 * (rungs[n - 1] + rungs[n]))), tuple(float(10**r) for r in rungs[:n])


def score_benchmarks(table: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """Every (benchmark, score metric) pair of a table, pass@k as pass@1."""
    pairs = []
    for (bench, metric), rows in table.groupby(["benchmark", "metric"], sort=True):
        if not is_score_metric(metric):
            continue
        pairs.append((bench, "pass@1" if metric == "pass@k" and (rows["k"] == 1).any() else metric))
    return tuple(p for p in pairs if p[1] != "pass@k")


def split_for(dataset: Dataset, bench: str, metric: str, cutoff: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training table, held-out rows) for one benchmark and cutoff. The training table holds only runs with min_flops
    <= C <= cutoff and a TPR outside ``holdout_tprs``; the held-out rows are the benchmark's runs above the cutoff,
    and those at a held-out TPR with C >= min_flops."""
    table = dataset.table
    flops = table["flops"].to_numpy(float)
    keep = flops <= cutoff
    if dataset.min_flops is not None:
        keep &= flops >= dataset.min_flops
    held_tpr = _at_tprs(table, dataset.holdout_tprs) | _larger(table, dataset.holdout_params)
    train = table[keep & ~held_tpr].reset_index(drop=True)
    name, k = parse_metric(metric)
    rows = select(table, bench, name, k, tpr=dataset.tpr)
    above = rows["flops"].to_numpy(float) > cutoff
    at_tpr = _at_tprs(rows, dataset.holdout_tprs) | _larger(rows, dataset.holdout_params)
    if dataset.min_flops is not None:
        at_tpr &= rows["flops"].to_numpy(float) >= dataset.min_flops
    held = rows[above | at_tpr].copy()
    held["k"] = held["k"].astype(float).fillna(1.0)
    return train, held.sort_values(["flops", "run"]).reset_index(drop=True)


def _larger(table: pd.DataFrame, params: float | None) -> np.ndarray:
    """Rows of runs with ``params`` parameters or more (none where no size is held out)."""
    if params is None:
        return np.zeros(len(table), bool)
    return table["params"].to_numpy(float) >= params


def size_cutoff(table: pd.DataFrame, params: float, *, tpr=None, min_flops=None) -> float:
    """The one cutoff of a hold-out by size: the largest compute of the runs smaller than ``params`` (they are the
    training side; the larger runs are held out whatever their compute)."""
    keep = table["params"].to_numpy(float) < params
    if tpr is not None:
        keep &= at_tpr(table["tpr"].to_numpy(float), tpr)
    if min_flops is not None:
        keep &= table["flops"].to_numpy(float) >= min_flops
    larger = int(np.unique(table.loc[~keep, "run"]).size) if "run" in table else 0
    if not keep.any() or not larger:
        sizes = np.unique(table["params"].to_numpy(float))
        raise BenchcastError(
            f"--holdout-params {params:.3g} must leave runs on both sides: the runs' sizes are "
            f"{', '.join(f'{n:.3g}' for n in sizes)}."
        )
    return float(table["flops"].to_numpy(float)[keep].max())


def _at_tprs(table: pd.DataFrame, tprs: tuple[float, ...]) -> np.ndarray:
    tpr = table["tpr"].to_numpy(float)
    out = np.zeros(len(table), bool)
    for value in tprs:
        out |= at_tpr(tpr, value)
    return out


def queries_of(held: pd.DataFrame) -> pd.DataFrame:
    """The held-out rows' covariates, without their scores (what a strategy may see of them)."""
    return held[[c for c in QUERY_COLUMNS if c in held]].copy()
