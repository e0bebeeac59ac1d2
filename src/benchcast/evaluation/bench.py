"""``bench``: a rolling-origin benchmark of forecasting strategies (laws, law choice, intervals).

For each data set, benchmark and split of its runs (:attr:`Dataset.splitter`: the cutoffs, the TPRs and sizes held
out, like a target, or a splitter of your own), every strategy sees only the training runs (its law choice and its
extrapolation error included) and forecasts the held-out runs. The split is made here, once: the workers get the
training runs and the held-out runs' covariates, never a held-out score; scoring happens afterwards in this process.
Each law is fitted once per training side, whichever strategies and splits need it (:func:`fit_cells`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchcast.data.chance import warn_unknown_chance
from benchcast.data.table import TPR_RTOL, _tprs_present, at_tpr, is_score_metric, parse_metric, select
from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.errors import BenchcastError, InsufficientDataError, SelectionError
from benchcast.evaluation import strategies as st
from benchcast.evaluation.bench_result import BenchResult, leaderboard, metrics
from benchcast.evaluation.evaluate import AtTPR, Combined, LargerModels, Split, Thresholds, evaluate
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting import extrapolation as ext
from benchcast.forecasting.alternative import alternative_law
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.flags import OUTSIDE_TPR, cell_flags, describe
from benchcast.forecasting.selection import ladder_laws
from benchcast.laws import get_law
from benchcast.laws.questions import spans_tprs
from benchcast.utils.parallel import parallel_map

# bench's per-point columns, then the bounds at each level (lower50, upper90...)
BENCH = Uncertainty(DEFAULT_REPLICATES, seed=0)  # bench's replicates and seed (the interval is each strategy's)
POINT_COLUMNS = ("run", "flops", "dataset", "benchmark", "metric", "strategy", "cutoff", "decades", "true")
POINT_COLUMNS += ("prediction", "usable", "flags")
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


@dataclass(frozen=True, eq=False)
class Dataset:
    """One data set to bench: its table, benchmarks, selection and split settings (one :attr:`splitter`)."""

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
        """One benchmark's rows and each split of them, the compute floor applied to the training side."""
        rows = self.rows(bench, metric)
        flops = rows["flops"].to_numpy(float)
        return rows, [split.within(flops, self.min_flops) for split in self.splitter.split(rows)]


def cutoff_of(rows: pd.DataFrame, split: Split) -> float:
    """A split's cutoff in bench's tables: the largest compute its training side may (else does) reach."""
    if split.top_flops is not None:
        return float(split.top_flops)
    flops = rows["flops"].to_numpy(float)[split.train]
    return float(flops.max()) if len(flops) else float("nan")


def cell_rows(data: Dataset, rows: pd.DataFrame, split: Split) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One split's training table (every row of its runs) and held-out scored rows at or above the floor."""
    train = data.table[data.table["run"].isin(set(rows["run"][split.train]))].reset_index(drop=True)
    held = rows[split.test & rows["value"].notna().to_numpy()]
    if data.min_flops is not None:
        held = held[held["flops"].to_numpy(float) >= data.min_flops]
    return train, held.sort_values(["flops", "run"]).reset_index(drop=True)


def tprs_held(rows: pd.DataFrame, split: Split) -> bool:
    """Whether the split holds out a TPR no training run has (then outside the fitted TPRs is no flag)."""
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


@dataclass(eq=False)
class Cell:
    """One bench cell: a data set's benchmark and metric on one split, with the laws fitted on its training side."""

    data: Dataset
    split: int  # which of the data set's splits
    benchmark: str
    metric: str
    cutoff: float
    train: pd.DataFrame  # every row of the training runs
    held: pd.DataFrame  # the benchmark's held-out rows
    seen: pd.DataFrame  # the training runs, one row each (the ladder, the alternative)
    candidates: tuple[str, ...]
    fallbacks: tuple[str, ...]
    tprs_held: bool
    members: dict = field(default_factory=dict)  # law -> Member
    picks: dict = field(default_factory=dict)  # chooser name -> law

    @property
    def alternative(self) -> str:
        """The cell's simplest alternative law."""
        return alternative_law(self.seen)

    def spec(self, law: str, seed: int) -> FitSpec:
        """The fit of ``law`` in this cell."""
        return FitSpec(law, self.benchmark, self.metric, tpr=self.data.tpr, min_flops=self.data.min_flops, seed=seed)

    def side(self) -> tuple:
        """What a fit here depends on besides the law: the data, the selection and the training runs."""
        runs = frozenset(self.seen["run"])
        return (
            self.data.name,
            id(self.data.table),
            self.benchmark,
            self.metric,
            self.data.tpr,
            self.data.min_flops,
            runs,
        )


def make_cells(datasets: list[Dataset], candidates: tuple | None = None, fallbacks: tuple = ()) -> tuple[list, dict]:
    """Every cell with held-out runs, and each data set's and split's candidate and fallback laws."""
    cells, ladders = [], {}
    for data in datasets:
        everyone = data.table.drop_duplicates("run")
        for bench_name, metric in data.benchmarks:
            rows, splits = data.splits(bench_name, metric)
            for i, split in enumerate(splits):
                train, held = cell_rows(data, rows, split)
                seen = everyone[everyone["run"].isin(set(train["run"]))]
                cutoff = cutoff_of(rows, split)
                ladder = (tuple(candidates), tuple(fallbacks)) if candidates else ladder_laws(seen)
                ladders.setdefault((data.name, cutoff), ladder)
                if not held.empty:
                    cell = Cell(data, i, bench_name, metric, cutoff, train, held, seen, *ladder, tprs_held(rows, split))
                    cells.append(cell)
    _refuse_empty(datasets, cells)
    return cells, ladders


def _refuse_empty(datasets: list[Dataset], cells: list) -> None:
    """A data set none of whose splits holds out a scored run is said, not benched as an empty table: refused where
    it is every data set, warned of beside the others."""
    empty = [data.name for data in datasets if not any(cell.data is data for cell in cells)]
    if not empty:
        return
    words = (
        f"{', '.join(empty)}: no split holds out a scored run of any benchmark asked (a cutoff at or above the largest "
        "run, or a target inside the ladder: it needs no extrapolation backtest)"
    )
    if len(empty) == len(datasets):
        raise InsufficientDataError(f"nothing to bench: {words}.")
    warnings.warn(f"{words}; not benched.", stacklevel=3)


def _law_job(job: tuple):
    train, spec, n_boot, seed = job
    return st.law_outcome(train, spec, n_boot, seed)


def _choose_job(job: tuple) -> str | None:
    train, spec, chooser = job
    return chooser.pick(train, spec)


def fit_cells(
    cells: list[Cell],
    strategies: list,
    *,
    uncertainty: Uncertainty,
    n_jobs: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
) -> dict:
    """Run the choosers and fit each (law, training side) the strategies need once; the counts made."""
    n_boot, seed = uncertainty.n_boot, uncertainty.seed
    pool = {"n_jobs": n_jobs, "progress": progress, "ray_address": ray_address}
    choosers = [s for s in strategies if isinstance(s, st.Chooser)]
    picks = {}
    for cell in cells:
        for chooser in choosers:
            picks.setdefault((chooser.name, cell.side()), (cell.train, cell.spec("power", seed), chooser))
    chosen = parallel_map(_choose_job, list(picks.values()), description="bench: choosers", **pool)
    chosen = dict(zip(picks, chosen, strict=True))
    for cell in cells:
        cell.picks = {chooser.name: chosen[chooser.name, cell.side()] for chooser in choosers}
    wanted, jobs = [], {}
    for cell in cells:
        laws = tuple(dict.fromkeys(law for strategy in strategies for law in strategy.needs(cell)))
        wanted.append(laws)
        for law in laws:
            jobs.setdefault((law, cell.side()), (cell.train, cell.spec(law, seed), n_boot, seed))
    fitted = parallel_map(_law_job, list(jobs.values()), description="bench: fit laws", **pool)
    fitted = dict(zip(jobs, fitted, strict=True))
    for cell, laws in zip(cells, wanted, strict=True):
        cell.members = {law: fitted[law, cell.side()] for law in laws}
    return {"needed": sum(len(laws) for laws in wanted), "fitted": len(jobs)}


@dataclass(frozen=True, eq=False)
class FitCache:
    """The fits of one command: every cell with the laws its strategies need, fitted once (:func:`fit_cells`)."""

    cells: tuple
    ladders: dict
    counts: dict

    @classmethod
    def of(cls, datasets: list[Dataset], strategies: list, *, candidates=None, fallbacks=(), **fitting) -> FitCache:
        """The cells of ``datasets`` (:func:`make_cells`) fitted for ``strategies`` (:func:`fit_cells`'s keywords)."""
        cells, ladders = make_cells(datasets, candidates, fallbacks)
        return cls(tuple(cells), ladders, fit_cells(cells, strategies, **fitting))

    def cells_of(self, spec: FitSpec, table: pd.DataFrame, splitter) -> list[Cell]:
        """The cells of one selection (benchmark, metric, TPR, floor) of ``table`` split by ``splitter``."""
        want = (id(table), spec.benchmark, spec.metric, spec.tpr, spec.min_flops)
        mine = [
            c for c in self.cells if (id(c.data.table), c.benchmark, c.metric, c.data.tpr, c.data.min_flops) == want
        ]
        return [c for c in mine if c.data.splitter == splitter]


def bench(
    datasets: list[Dataset],
    strategies: list | None = None,
    *,
    laws: tuple[str, ...] = st.FIXED_LAWS,
    candidates: tuple[str, ...] | None = None,
    uncertainty: Uncertainty = BENCH,
    n_jobs: int | None = None,
    progress: bool | None = None,
    ray_address: str | None = None,
    choosers: tuple[st.Chooser, ...] = (),
    strategy_interval: str | None = None,
) -> BenchResult:
    """Rolling-origin backtests of every strategy on every data set, benchmark and split.

    Parameters
    ----------
    datasets : list of Dataset
        The data sets, each with its benchmarks and split (:attr:`Dataset.splitter`).
    strategies : list of str or strategy values, optional
        Strategies (:class:`~benchcast.evaluation.strategies.FixedLaw`, ``Combine``, ``Switch``, ``Chooser``) or
        their names (:func:`~benchcast.evaluation.strategies.parse_strategy`: a law, ``ensemble``, ``stack``,
        ``select``, ``switch``, a chooser; ``[bootstrap]`` suffix for the bootstrap-only interval); default:
        :func:`~benchcast.evaluation.strategies.default_strategies`.
    laws : tuple of str
        The fixed laws of the default strategies (and those ``candidates`` may name).
    candidates : tuple of str, optional
        The laws the selectors combine (a subset of ``laws``; no fallback); None: each split's own ladder
        (:func:`benchcast.forecasting.selection.ladder_laws`, with its fallback law where no candidate has support).
    uncertainty : Uncertainty
        Bootstrap replicates per law fit and the seed of the bootstrap and interval draws (default: 1500, seed 0);
        the interval method is each strategy's (``strategy_interval``).
    n_jobs : int, optional
        Worker processes (``None``: :func:`benchcast.utils.parallel.default_jobs`).
    progress : bool, optional
        Show a progress bar (``None``: only on a terminal).
    ray_address : str, optional
        A Ray cluster to run the fits on instead of local processes.
    choosers : tuple of Chooser
        Rules that pick one law per cell; each is also a strategy.
    strategy_interval : {'extrapolation', 'bootstrap'}, optional
        One interval for every strategy named without one (and the default strategies once each with it). None
        (default): both intervals in the default list, a bare name meaning extrapolation.

    Returns
    -------
    BenchResult
        Per-cell rows, per-point predictions, the leaderboard, the run time in seconds and the settings.
    """
    start = time.perf_counter()
    for data in datasets:  # the fits run in workers, whose warnings are not shown: a silent 0 would be
        warn_unknown_chance(data.table, data.benchmarks, data.name)
    interval, n_boot, seed = strategy_interval, uncertainty.n_boot, uncertainty.seed
    given = strategies or st.default_strategies(laws, choosers, interval)
    strategies = [st.parse_strategy(name, interval, choosers) for name in given]
    missing = sorted(set(candidates or ()) - set(laws))
    if missing and any(isinstance(s, st.Combine) for s in strategies):
        raise BenchcastError(f"candidate law(s) {missing} are not among the fitted laws {list(laws)}.")
    pool = {"n_jobs": n_jobs, "progress": progress, "ray_address": ray_address}
    cache = FitCache.of(datasets, strategies, candidates=candidates, uncertainty=uncertainty, **pool)
    ladders = cache.ladders
    rows, predictions = assemble(cache, strategies, n_boot=n_boot, seed=seed)
    settings = {
        "strategies": [s.name for s in strategies],
        "laws": list(laws),
        "candidates": _ladder_settings(ladders, 0),
        "fallbacks": _ladder_settings(ladders, 1),
        "n_boot": n_boot,
        "seed": seed,
        "interval": interval or "both",
        "origin_decades": list(ext.ORIGIN_DECADES),
        "fits": cache.counts,
        "datasets": [
            {
                "name": d.name,
                "tpr": d.tpr,
                "min_flops": d.min_flops,
                "holdout_tprs": list(d.holdout_tprs),
                "cutoffs": sorted({c for n, c in ladders if n == d.name}),
                "benchmarks": [f"{b}:{m}" for b, m in d.benchmarks],
            }
            for d in datasets
        ],
    }
    return BenchResult(rows, predictions, leaderboard(rows), time.perf_counter() - start, settings)


def _ladder_settings(ladders: dict, which: int) -> dict:
    """The candidates (``which`` 0) or fallbacks (1) by data set name (``'name @ cutoff'`` if several splits)."""
    names = [name for name, _ in ladders]
    return {
        name if names.count(name) == 1 else f"{name} @ {cutoff:.3g}": list(pair[which])
        for (name, cutoff), pair in ladders.items()
    }


def assemble(cache: FitCache, strategies: list, *, n_boot: int = DEFAULT_REPLICATES, seed: int = 0):
    """Each strategy's rows (forecasts, intervals, metrics) in every cell, and the per-point predictions."""
    found = []  # (order, row, points)
    datasets = list({id(cell.data): cell.data for cell in cache.cells}.values())
    for d, data in enumerate(datasets):
        for s, strategy in enumerate(strategies):
            unc = Uncertainty(n_boot, seed, strategy.interval)
            options = {"forecaster": strategy, "uncertainty": unc, "cache": cache, "return_models": True}
            for b, (bench_name, metric) in enumerate(data.benchmarks):
                spec = FitSpec("power", bench_name, metric, tpr=data.tpr, min_flops=data.min_flops)
                frame, made = evaluate(spec, data.table, data.splitter, **options)
                for cell, model, forecast in made:
                    block = frame[frame["split"].to_numpy() == cell.split]
                    found.append(((d, cell.split, s, b), *_cell_row(cell, strategy, block, model, forecast)))
    found.sort(key=lambda item: item[0])  # by data set and split, then strategy, then benchmark
    rows = pd.DataFrame([row for _, row, _ in found])
    for key in ROW_KEYS:
        if key not in rows:
            rows[key] = np.nan
    points = [frame for _, _, frame in found if frame is not None]
    return rows, pd.concat(points, ignore_index=True) if points else pd.DataFrame()


def _cell_row(cell: Cell, strategy, block: pd.DataFrame, model, forecast):
    """One strategy's row in one cell, and its block as bench's per-point table (None without a forecast)."""
    row = {
        "dataset": cell.data.name,
        "benchmark": cell.benchmark,
        "metric": cell.metric,
        "strategy": strategy.name,
        "cutoff": cell.cutoff,
        "status": block["status"].iloc[0],
        "n_test": len(block),
        "decades": float(np.mean(block["decades"])),
    }
    if model is None:
        return row, None
    # a TPR held out lies outside the fitted TPRs by construction: the protocol's premise, not a flag
    premise = (OUTSIDE_TPR,) if cell.tprs_held else ()
    row.update(cell_flags(list(block["flags"]), premise))
    if row["status"] != "ok":  # refused: no number, the status says why
        return row, None
    true, ok = block["true"].to_numpy(float), block["usable"].to_numpy(bool)
    bounds = {
        int(c[5:]) / 100: (block[c].to_numpy(float), block["upper" + c[5:]].to_numpy(float))
        for c in block
        if c.startswith("lower")
    }
    row.update(metrics(true, block["prediction"].to_numpy(float), ok, bounds))
    row["laws"] = ",".join(f"{law}:{w:.2f}" for law, w in model.weights_.items() if w > 0)
    if spans_tprs(cell.seen) and any(get_law(law).across_tprs(cell.seen) for law in model.weights_):
        row["laws"] += " (compute alone, across TPRs)"  # runs at several TPRs read as one curve
    row["tau"] = (forecast.meta.error_model or {"tau": np.nan})["tau"]
    frame = block.assign(dataset=cell.data.name, metric=cell.metric, strategy=strategy.name)
    frame = frame.assign(flags=[describe(p, premise) for p in block["flags"]])
    return row, frame[[*POINT_COLUMNS, *(c for c in frame if c[:5] in ("lower", "upper"))]]
