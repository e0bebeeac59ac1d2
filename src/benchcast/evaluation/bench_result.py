"""What ``bench`` measured: the per-cell rows, the leaderboard, its CSV files and figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.evaluation.strategies import DEFAULT_STRATEGY
from benchcast.fitting.metrics import coverage, mae, mre
from benchcast.utils.display import WrittenView
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import NO_VALUE as MISSING
from benchcast.utils.rich_view import Markup, RichView, missing, rich_table

LEADERBOARD_COLUMNS = (
    "dataset",
    "strategy",
    "cells",
    "no_support",
    "failed",
    "flagged",
    "refused",
    "mre",
    "mre_common",
    "coverage50",
    "coverage90",
    "width90",
    "wis",
    "decades",
)
ALTERNATIVE = "power"  # the simplest alternative: a power law in compute alone, what a user would fit by hand
VERSUS_COLUMNS = (
    "dataset",
    "default",
    "alternative",
    "cells",
    "flagged",
    "wins_wis",
    "losses_wis",
    "wins_mre",
    "losses_mre",
    "wis",
    "wis_alternative",
    "mre",
    "mre_alternative",
)


@dataclass(frozen=True, eq=False)
class BenchResult(RichView, WrittenView):
    """What :func:`bench` measured: each strategy's held-out error and interval coverage.

    Parameters
    ----------
    rows : pandas.DataFrame
        One row per data set x benchmark x strategy x cutoff (the columns of ``ROW_KEYS``, and ``tau``).
    predictions : pandas.DataFrame
        One row per held-out point and strategy: truth, forecast and interval bounds.
    leaderboard : pandas.DataFrame
        Per data set and strategy: means over benchmarks and cutoffs (see :func:`leaderboard`).
    seconds : float
        Wall time of the run.
    settings : dict
        Strategies, laws, candidates, replicates, seed and each data set's selection and cutoffs.
    """

    rows: pd.DataFrame
    predictions: pd.DataFrame
    leaderboard: pd.DataFrame
    seconds: float
    settings: dict = field(default_factory=dict)

    @property
    def versus(self) -> pd.DataFrame:
        """The default against the simplest alternative, cell by cell (:func:`head_to_head`)."""
        return head_to_head(self.rows)

    def to_dict(self) -> dict:
        """The per-cell ``rows`` (what ``bench --json`` prints), leaderboard, versus, settings and seconds."""
        return jsonable(
            {
                "rows": self.rows.replace({np.nan: None}).to_dict("records"),
                "leaderboard": self.leaderboard.to_dict("records"),
                "versus": self.versus.to_dict("records"),
                "settings": self.settings,
                "seconds": self.seconds,
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """The leaderboard's main columns (``LEADERBOARD_COLUMNS``)."""
        return self.leaderboard[[c for c in LEADERBOARD_COLUMNS if c in self.leaderboard]]

    @property
    def title(self) -> str:
        return (
            f"bench leaderboard (means over benchmarks x cutoffs; default strategy: {DEFAULT_STRATEGY}; "
            f"{self.seconds:.0f} s)"
        )

    def plot(self, ax=None):
        """The figure of each strategy's error, 90 % and 50 % coverage and width against decades of extrapolation."""
        from benchcast.plots.results import plot_bench  # matplotlib loads only when a figure is drawn

        return plot_bench(self.predictions, ax=ax)

    def write(self, out: str | Path, figure_format: str = "png", dpi: int | None = None) -> None:
        """The CSV tables and the figure into the folder ``out`` (:func:`write_outputs`)."""
        write_outputs(self, out, figure_format, dpi)

    def rich_items(self) -> list:
        """The leaderboard (3 significant digits), the default against the simplest alternative, then the notes."""
        board = self.to_frame()
        cells = [[MISSING if missing(v) else v for v in row.values()] for row in board.to_dict("records")]
        tables = [rich_table(self.title, list(board.columns), cells, ".3g")]  # escapes its cells
        versus = self.versus
        if len(versus):
            title = (
                f"{DEFAULT_STRATEGY} against {ALTERNATIVE} (compute alone), cell by cell: wins and losses by WIS and "
                "by MRE, and both one's means on the same cells"
            )
            rows = [[MISSING if missing(v) else v for v in row.values()] for row in versus.to_dict("records")]
            tables.append(rich_table(title, list(versus.columns), rows, ".3g"))
        notes = [*self.notes, *_missing_notes(board)]
        return [*tables, *(Markup(escape(note), highlight=False) for note in notes)]


def _missing_notes(board: pd.DataFrame) -> list[str]:
    """Why a leaderboard row has no error or no coverage (the terminal shows those as "—")."""
    notes = []
    for row in board.to_dict("records"):
        name = f"{MISSING} {row['dataset']}, {row['strategy']}"
        if not row.get("cells"):
            refused = row.get("refused", 0)
            notes.append(
                f"{name}: no cell forecast ({row['no_support']} without support, {row['failed']} failed"
                + (f", {refused} refused)." if refused else ").")
            )
        elif missing(row.get("coverage90", 0.0)) or missing(row.get("coverage50", 0.0)):
            why = (
                "no bootstrap draws"
                if row["strategy"].endswith("[bootstrap]")
                else "the extrapolation error could not be estimated from rolling origins inside the training runs, "
                "own or pooled over the data set's benchmarks (--interval bootstrap gives the bootstrap alone)"
            )
            notes.append(f"{name}: no held-out run has an interval: {why}.")
    if {"flagged", "refused"} <= set(board) and (board["flagged"] + board["refused"]).sum():
        notes.append(
            "flagged: how many of the cells counted carry a flag (a fit with few points per parameter, a parameter "
            "at a search limit, a forecast above the law's own limit, far beyond the data, a law of compute alone "
            "across TPRs): a flag qualifies the number, it stays in the means; refused: no number (a forecast "
            "outside [0, 1]). Each cell's reasons: the rows' flags and status (--json, bench_rows.csv)."
        )
    if "mre_common" in board and board["mre_common"].isna().any() and (board["cells"] > 0).any():
        notes.append(f"{MISSING} mre_common: no benchmark and cutoff was forecast by every strategy.")
    return notes


SCORE_FLOOR = 1e-4  # scores and bounds below this are read as it, so that the log of a bound at 0 stays finite


def interval_score(true, lower, upper, level: float) -> np.ndarray:
    """Interval score (Gneiting & Raftery 2007, eq. 43) of central ``level`` intervals on the log score, in %."""
    alpha = 1.0 - float(level)
    y, lo, hi = (np.log(np.maximum(np.asarray(v, float), SCORE_FLOOR)) for v in (true, lower, upper))
    return 100.0 * ((hi - lo) + 2.0 / alpha * (np.maximum(lo - y, 0.0) + np.maximum(y - hi, 0.0)))


def weighted_interval_score(true, predicted, intervals: dict) -> np.ndarray:
    """Weighted interval score (Bracher et al. 2021; ~CRPS) of a point forecast and intervals, log score, in %."""
    y, m = (np.log(np.maximum(np.asarray(v, float), SCORE_FLOOR)) for v in (true, predicted))
    total = 50.0 * np.abs(y - m)
    for level, (lower, upper) in intervals.items():
        total = total + (1.0 - level) / 2.0 * interval_score(true, lower, upper, level)
    return total / (len(intervals) + 0.5)


def metrics(true: np.ndarray, predicted: np.ndarray, usable: np.ndarray, intervals: dict) -> dict:
    """Error and interval metrics of one strategy's forecasts of the held-out points."""
    ok = np.isfinite(predicted)
    out = {
        "n_test": int(ok.sum()),
        "mae": mae(true[ok], predicted[ok]),
        "mre": mre(true[ok], predicted[ok]),
        "n_usable": int((ok & usable).sum()),
        "mre_usable": mre(true[ok & usable], predicted[ok & usable]),
    }
    for level in (0.5, 0.9):
        pct = int(round(level * 100))
        lower, upper = intervals.get(level, (predicted, predicted))
        has = ok & np.isfinite(lower) & np.isfinite(upper) if level in intervals else np.zeros_like(ok)
        out[f"coverage{pct}"] = coverage(true[has], lower[has], upper[has])  # NaN where no point has an interval
        out[f"is{pct}"] = (
            float(np.mean(interval_score(true[has], lower[has], upper[has], level))) if has.any() else np.nan
        )
        if pct == 90:
            out["width90"] = float(np.median(upper[has] - lower[has])) if has.any() else np.nan
    out["wis"] = np.nan
    if 0.5 in intervals and 0.9 in intervals:
        both = {level: intervals[level] for level in (0.5, 0.9)}
        has = ok & np.all([np.isfinite(b) for pair in both.values() for b in pair], axis=0)
        if has.any():
            picked = {level: (lo[has], hi[has]) for level, (lo, hi) in both.items()}
            out["wis"] = float(np.mean(weighted_interval_score(true[has], predicted[has], picked)))
    return out


def leaderboard(rows: pd.DataFrame) -> pd.DataFrame:
    """Per data set and strategy: means over the cells forecast (flagged too), over the common cells, and counts."""
    if rows.empty:
        return rows
    flagged = rows["flagged"].eq(True) if "flagged" in rows else pd.Series(False, index=rows.index)  # NaN: not flagged
    counted = rows["status"] == "ok"
    ok = rows[counted]
    cell = ["dataset", "benchmark", "metric", "cutoff"]
    n_strategies = rows.groupby("dataset")["strategy"].nunique()
    counts = ok.groupby(cell)["strategy"].nunique().reset_index(name="n")
    counts = counts[counts["n"] == counts["dataset"].map(n_strategies)]
    common = ok.merge(counts[cell], on=cell)
    values = ["mre", "mre_usable", "mae", "coverage50", "coverage90", "width90", "is50", "is90", "wis", "decades"]
    values = [v for v in values if v in rows]  # rows written before the interval scores have none
    keys = [rows["dataset"], rows["strategy"]]
    board = rows[values].where(counted).groupby(keys, sort=False).mean()
    board["cells"] = counted.groupby(keys, sort=False).sum()
    board["no_support"] = (rows["status"] == "no support").groupby(keys, sort=False).sum()
    refused = rows["refused"].eq(True) if "refused" in rows else rows["status"] != rows["status"]
    board["failed"] = (~counted & (rows["status"] != "no support") & ~refused).groupby(keys, sort=False).sum()
    board["flagged"] = (counted & flagged).groupby(keys, sort=False).sum()
    board["refused"] = refused.groupby(keys, sort=False).sum()
    common_board = common.groupby(["dataset", "strategy"], sort=False)[["mre", "coverage50", "coverage90"]].mean()
    board = board.join(common_board.add_suffix("_common"))
    return board.reset_index()


def head_to_head(rows: pd.DataFrame, default: str = DEFAULT_STRATEGY, alternative: str = ALTERNATIVE) -> pd.DataFrame:
    """Per data set, ``default`` against ``alternative`` on the cells both forecast: wins, losses and means."""
    if rows.empty or not {default, alternative} <= set(rows["strategy"]):
        return pd.DataFrame(columns=list(VERSUS_COLUMNS))
    cell = ["dataset", "benchmark", "metric", "cutoff"]
    ok = rows[rows["status"] == "ok"]
    pair = ok[ok["strategy"] == default].merge(ok[ok["strategy"] == alternative], on=cell, suffixes=("", "_alt"))
    out = []
    for name, group in pair.groupby("dataset", sort=False):
        record = {"dataset": name, "default": default, "alternative": alternative, "cells": len(group)}
        record["flagged"] = int((group["flagged"].eq(True) | group["flagged_alt"].eq(True)).sum())
        for score in ("wis", "mre"):
            mine, theirs = group[score].to_numpy(float), group[f"{score}_alt"].to_numpy(float)
            record[f"wins_{score}"], record[f"losses_{score}"] = int((mine < theirs).sum()), int((theirs < mine).sum())
        for score in ("wis", "mre"):
            record[score] = float(group[score].mean())
            record[f"{score}_alternative"] = float(group[f"{score}_alt"].mean())
        out.append(record)
    return pd.DataFrame(out, columns=list(VERSUS_COLUMNS))


def write_outputs(
    result: BenchResult, out: str | Path, figure_format: str = "png", dpi: int | None = None
) -> list[Path]:
    """The CSV tables and the figure of :meth:`BenchResult.plot` as one output folder (complete or absent)."""
    from benchcast.plots.options import check_figure_options
    from benchcast.utils.io import atomic_write_text, output_folder

    figure_format, dpi = check_figure_options(figure_format, dpi)
    out = Path(out)
    names = []
    with output_folder(out) as folder:
        for name, frame in (
            ("bench_rows", result.rows),
            ("bench_leaderboard", result.leaderboard),
            ("bench_versus", result.versus),
            ("bench_predictions", result.predictions),
        ):
            atomic_write_text(folder / f"{name}.csv", frame.to_csv(index=False))
            names.append(f"{name}.csv")
        if not result.predictions.empty:
            from benchcast.plots.style import save_figure

            path = folder / f"bench_extrapolation.{figure_format}"
            names.append(save_figure(result.plot(), path, figure_format, dpi).name)
    return [out / name for name in names]
