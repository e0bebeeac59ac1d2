"""The cells ``bench`` forecasts: data sets, the splitter their settings make, and each cell's training and held-out
runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.data.table import TPR_RTOL, _tprs_present, at_tpr, is_score_metric, parse_metric, select
from benchcast.errors import BenchcastError, SelectionError
from benchcast.evaluation.evaluate import AtTPR, Combined, LargerModels, Split, Thresholds

QUERY_COLUMNS = ("run", "flops", "params", "tokens", "tpr", "k", "gold", "proxy")


@dataclass(frozen=True, eq=False)
class Dataset:
    """One data set to bench: its table, benchmarks (name, metric), the runs' selection and how they are split.

    The split settings become one splitter (:attr:`splitter`): ``split`` (a splitter value: like a target, the K
    largest rungs, one of your own) or else the ``cutoffs``, with the runs at each of ``holdout_tprs`` and those of
    ``holdout_params`` parameters or more held out too.
    """

    name: str
    table: pd.DataFrame
    benchmarks: tuple[tuple[str, str], ...]
    cutoffs: tuple[float, ...] = ()
    tpr: float | None = None
    min_flops: float | None = None
    holdout_tprs: tuple[float, ...] = ()  # runs at these TPRs are held out whatever their compute (K4's protocol)
    holdout_params: float | None = None  # runs of this many parameters or more are held out ("fit < 1B, forecast 3B")
    split: object | None = None  # a splitter in place of the cutoffs

    def __post_init__(self):
        """Refuse a held-out TPR the data do not have: it would hold out nothing, without a word."""
        for held in self.holdout_tprs:
            if not at_tpr(self.table["tpr"], held).any():
                raise SelectionError(
                    f"{self.name}: holdout TPR (--holdout-tpr) {held:g} is none of the data's tokens-per-parameter "
                    f"ratios ({_tprs_present(self.table)}; matched within {TPR_RTOL:.0%}): give one of them."
                )

    @property
    def splitter(self):
        """The one splitter of the data set's split settings."""
        first = self.split if self.split is not None else (Thresholds(tuple(self.cutoffs)) if self.cutoffs else None)
        rest = tuple(AtTPR(t) for t in self.holdout_tprs)
        rest += (LargerModels(self.holdout_params),) if self.holdout_params is not None else ()
        if first is None:
            if not rest:
                raise BenchcastError(f"{self.name}: no split: give cutoffs, a held-out TPR or size, or a splitter.")
            first, rest = rest[0], rest[1:]
        return Combined(first, rest) if rest else first

    def rows(self, bench: str, metric: str) -> pd.DataFrame:
        """One benchmark's rows at the data set's TPR, those with no score too (the rows ``evaluate`` splits)."""
        name, k = parse_metric(metric)
        rows = select(self.table, bench, name, k, tpr=self.tpr, missing=True).reset_index(drop=True)
        rows["k"] = rows["k"].astype(float).fillna(1.0)
        return rows

    def splits(self, bench: str, metric: str) -> tuple[pd.DataFrame, list[Split]]:
        """One benchmark's rows (:meth:`rows`) and each split of them, the compute floor applied to the training side
        (the one rule, :meth:`Split.within`)."""
        rows = self.rows(bench, metric)
        flops = rows["flops"].to_numpy(float)
        return rows, [split.within(flops, self.min_flops) for split in self.splitter.split(rows)]


def cutoff_of(rows: pd.DataFrame, split: Split) -> float:
    """A split's cutoff as bench's tables show it: the largest compute its training side may reach (the largest it
    holds where the split is not by compute)."""
    if split.top_flops is not None:
        return float(split.top_flops)
    flops = rows["flops"].to_numpy(float)[split.train]
    return float(flops.max()) if len(flops) else float("nan")


def cell_rows(data: Dataset, rows: pd.DataFrame, split: Split) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training table, held-out rows) of one benchmark's split: every row of the training runs, and the benchmark's
    scored rows of the held-out runs at or above the compute floor (those below it are not scored)."""
    train = data.table[data.table["run"].isin(set(rows["run"][split.train]))].reset_index(drop=True)
    held = rows[split.test & rows["value"].notna().to_numpy()]
    if data.min_flops is not None:
        held = held[held["flops"].to_numpy(float) >= data.min_flops]
    return train, held.sort_values(["flops", "run"]).reset_index(drop=True)


def tprs_held(rows: pd.DataFrame, split: Split) -> bool:
    """Whether the split holds out runs at a TPR none of its training runs has (a forecast outside the fitted TPRs is
    then the protocol's premise, not a flag)."""
    tpr = rows["tpr"].to_numpy(float)
    seen = np.unique(tpr[split.train & np.isfinite(tpr)])
    return any(not at_tpr(seen, t).any() for t in np.unique(tpr[split.test & np.isfinite(tpr)]))


def ladder(table: pd.DataFrame, n: int, *, tpr: float | None = None, top: float = 0.25, depth: float = 1.25) -> tuple:
    """``n`` cutoffs spread in log compute from ``depth`` to ``top`` decades below the largest run."""
    if n < 1:
        raise BenchcastError(f"the number of cutoffs must be at least 1, got {n}.")
    flops = table["flops"] if tpr is None else table.loc[at_tpr(table["tpr"], tpr), "flops"]
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


def queries_of(held: pd.DataFrame) -> pd.DataFrame:
    """The held-out rows' covariates, without their scores (what a strategy may see of them)."""
    return held[[c for c in QUERY_COLUMNS if c in held]].copy()
