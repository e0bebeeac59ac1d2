"""The report's backtests of the default strategy: ``bench``'s cells, one per threshold, for one benchmark.

Each threshold is a bench cell (:func:`benchcast.evaluation.bench.make_cells`, ``fit_cells`` and ``assemble``, the
code ``bench`` runs): the strategy's laws are fitted
to the runs at or below it, weighted from their rolling-origin forecasts there, and their bootstrap draws
blended (and widened) into the strategy's forecasts and intervals at the runs above it. The page's
numbers for a threshold are therefore bench's row and predictions for that cell; this module only lays
them out as a backtest panel and the extrapolation profile draw them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from benchcast.evaluation.bench import Dataset, FitCache, assemble
from benchcast.evaluation.strategies import parse_strategy
from benchcast.fitting.spec import FitSpec, design
from benchcast.plots.panels import curve, flops_grid
from benchcast.report.profile import held_out_rows

ROW_METRICS = {
    "n_test": "n_test",
    "mae": "test_mae",
    "mre": "test_mre",
    "n_usable": "n_test_usable",  # bench's row ->
    "mre_usable": "test_mre_usable",
    "coverage50": "coverage50",
    "coverage90": "coverage90",  # the page's
    "width90": "width90",
}


@dataclass
class StrategyBacktest:
    """The strategy backtested at one threshold: bench's cell for this benchmark, laid out for the page."""

    strategy: str
    benchmark: str
    threshold: float
    status: str
    predictions: pd.DataFrame
    metrics: dict
    members: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)
    grid: np.ndarray = field(default_factory=lambda: np.array([]))
    curve: np.ndarray = field(default_factory=lambda: np.array([]))
    member_curves: dict = field(default_factory=dict)
    row: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The strategy with its weights at this threshold: ``'ensemble (power_floor 0.50, bnsl_monotone 0.50)'``."""
        mix = ", ".join(f"{law} {w:.2f}" for law, w in self.weights.items())
        return f"{self.strategy} ({mix})" if mix else self.strategy

    @property
    def largest_fitted(self) -> float:
        """The largest run a member was fitted to (FLOPs): where its extrapolation starts."""
        return max(float(fit.diagnostics.flops_max) for fit in self.members.values())

    @property
    def dropped(self) -> list[dict]:
        """Runs below the threshold that no member fitted, with the first member's reason."""
        frame = self.predictions[self.predictions["fitted"]]
        fitted = set(zip(frame["run"], frame["k"].astype(float), strict=True))
        out = {}
        for fit in self.members.values():
            for d in fit.dropped:
                out.setdefault((d["run"], float(d["k"])), d)
        return [d for key, d in out.items() if key not in fitted]


def bench_metric(spec: FitSpec) -> str:
    """The metric as bench names it: ``'pass@4'`` for pass@k at k = 4, else the metric's name."""
    return f"pass@{int(spec.k)}" if str(spec.metric) == "pass@k" and spec.k is not None else str(spec.metric)


def strategy_backtests(
    table: pd.DataFrame,
    spec: FitSpec,
    metric: str,
    strategy: str,
    laws: tuple[str, ...],
    thresholds: list[float],
    *,
    tpr: float | None,
    n_boot: int,
    seed: int,
    n_jobs: int | None = 1,
    interval: str = "extrapolation",
    fallbacks: tuple[str, ...] = (),
    splitter=None,
) -> list[StrategyBacktest]:
    """``strategy`` backtested at each threshold (first at ``splitter``'s split where one is given): one bench cell per
    split, run together (so their law fits run in one pool, each training side fitted once), each laid out by
    :func:`_cell_backtest`."""
    made = parse_strategy(strategy, interval)
    pair = ((spec.benchmark, metric),)
    datasets = [Dataset(spec.benchmark, table, pair, tuple(thresholds), tpr=tpr)]
    if splitter is not None:
        datasets.insert(0, Dataset("validation", table, pair, tpr=tpr, split=splitter))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bench's cells record failures as statuses; the page says them
        cache = FitCache.of(
            datasets, [made], candidates=laws, fallbacks=fallbacks, n_boot=n_boot, seed=seed, n_jobs=n_jobs
        )
        rows, predictions = assemble(cache, [made], n_boot=n_boot, seed=seed)
    runs, _ = design(table, replace(spec, tpr=tpr))
    out = []
    for cell in cache.cells:
        row = rows[(rows["dataset"] == cell.data.name) & (rows["cutoff"] == cell.cutoff)].iloc[0].to_dict()
        mine = (
            (predictions["dataset"] == cell.data.name) & (predictions["cutoff"] == cell.cutoff)
            if len(predictions)
            else []
        )
        points = predictions[mine] if len(predictions) else predictions
        options = {"n_boot": n_boot, "seed": seed, "interval": interval}
        out.append(_cell_backtest(runs, row, points, cell, made, **options))
    return out


def _cell_backtest(
    runs: pd.DataFrame, row: dict, points: pd.DataFrame, cell, strategy, *, n_boot: int, seed: int, interval: str
) -> StrategyBacktest:
    """One bench cell as a backtest: its runs by side, the strategy's held-out predictions and intervals, its metrics,
    and its members' curves blended with the strategy's weights."""
    threshold = float(row["cutoff"])
    frame = runs[[c for c in ("run", "flops", "params", "tokens", "tpr", "k", "value") if c in runs]].copy()
    frame = frame.rename(columns={"value": "true"})
    trained, held = set(cell.seen["run"]), set(cell.held["run"])  # the cell's split, whatever the splitter
    frame["side"] = np.where(frame["run"].isin(trained), "train", np.where(frame["run"].isin(held), "test", "unused"))
    metrics = {ROW_METRICS[key]: row.get(key, np.nan) for key in ROW_METRICS}
    metrics.update(n_boot=n_boot, interval=interval)
    status = str(row["status"])
    # a cell with a refused point gives no number: every held-out point of it counts as refused
    metrics["n_refused"] = int((frame["side"] == "test").sum()) if row.get("refused") in (True,) else 0
    weights, members = {}, {}
    if status == "ok":
        weights = dict(strategy.make(cell).weights_)
        members = {law: cell.members[law].fit for law in weights}
        held = points[["run", "flops", "prediction", *[c for c in points if c.startswith(("lower", "upper"))]]]
        frame = frame.merge(held.rename(columns={"prediction": "predicted"}), on=["run", "flops"], how="left")
    fits = {law: outcome.fit for law, outcome in cell.members.items() if outcome.fit is not None}
    fitted = {(r, float(k)) for fit in fits.values() for r, k in zip(fit.points["run"], fit.points["k"], strict=True)}
    frame["fitted"] = [(r, float(k)) in fitted for r, k in zip(frame["run"], frame["k"], strict=True)]
    frame["fitted"] &= frame["side"] == "train"
    if "predicted" not in frame:
        frame["predicted"] = np.nan
    if not all(np.isfinite(metrics.get(f"coverage{pct}", np.nan)) for pct in (50, 90)):
        metrics["interval_note"] = (
            f"the {row['strategy']} has {status} below {threshold:.3g} FLOPs (too few rolling origins with "
            "usable points inside the runs there)"
            if status == "no support"
            else f"the {row['strategy']} {status} below {threshold:.3g} FLOPs"
            if status != "ok"
            else "no held-out run has an interval (too few rolling origins below the threshold to estimate "
            "the error of extrapolating)"
        )
    out = StrategyBacktest(str(row["strategy"]), str(row["benchmark"]), threshold, status, frame, metrics, row=row)
    out.members, out.fits, out.weights = members, fits, weights
    curves = {law: curve(fit, flops_grid(frame)) for law, fit in members.items()}
    if members and all(c is not None for c in curves.values()):
        grid = next(iter(curves.values()))[0]
        out.member_curves = {law: c[1] for law, c in curves.items()}
        # the blend of the members' curves, as the one forecaster weights them (no draws: the curve alone)
        out.grid = grid
        out.curve = sum(w * np.asarray(out.member_curves[law], float) for law, w in weights.items())
    return out


def strategy_profile(backtests: list[StrategyBacktest]) -> pd.DataFrame:
    """The extrapolation profile of the strategy's backtests: their held-out rows with a forecast, each with its
    distance beyond the largest run a member was fitted to."""
    frames = [held_out_rows(bt.predictions, bt.threshold, bt.largest_fitted) for bt in backtests if bt.members]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
