"""The sweep's results: errors per threshold, the critical threshold, and their table and figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.evaluation.backtest import BacktestResult
from benchcast.evaluation.backtest_result import write_table_and_figure
from benchcast.evaluation.critical import CRITICAL_DEFINITION
from benchcast.evaluation.refusals import MAX_REFUSED_SHARE, refused_cell, too_many_refused
from benchcast.fitting.metrics import mae, mre, usable_points
from benchcast.plots.labels import figure_title
from benchcast.utils.display import WrittenView
from benchcast.utils.rich_view import Markup, RichView, rich_table

SWEEP_THRESHOLDS = tuple(np.geomspace(6e19, 5e22, 13))
SUCCESS_MRE = 10.0  # percent: a threshold "succeeds" when held-out MRE is below this
NO_INTERVALS = (
    "interval coverage not computed (no bootstrap); --n-boot 100 adds it to --json and --out sweep.csv "
    "(a bootstrap per threshold: minutes, not seconds)"
)
SUCCESS_DEFINITION = (
    "a threshold T succeeds when the law, fitted on the runs with C <= T, forecasts the held-out runs "
    "(C > T) with a mean relative error (MRE over every held-out forecast) below {success_mre:g} % and refuses "
    f"(a forecast outside [0, 1]: no number) at most {MAX_REFUSED_SHARE:.0%} of the held-out points"
)


def usable_errors(bt: BacktestResult) -> dict:
    """Training and held-out errors over all points and over usable points (one definition for every law)."""
    frame = bt.predictions
    true, prediction = frame["true"].to_numpy(float), frame["prediction"].to_numpy(float)
    usable = usable_points(true, bt.fit.spec.q_rand, bt.benchmark)
    fitted = frame["fitted"].to_numpy(bool)
    test = (frame["side"] == "test").to_numpy() & np.isfinite(prediction)
    out = {}
    for side, mask in (("train", fitted), ("test", test)):
        out[f"{side}_mae"] = mae(true[mask], prediction[mask])
        out[f"{side}_mre"] = mre(true[mask], prediction[mask])
        out[f"{side}_mre_usable"] = mre(true[mask & usable], prediction[mask & usable])
    out["n_fit"], out["n_test"], out["n_test_usable"] = int(fitted.sum()), int(test.sum()), int((test & usable).sum())
    out["train_rmse"], out["train_r2"] = bt.metrics["train_rmse"], bt.metrics["train_r2"]
    return out


def _refused(row) -> int:
    """A sweep row's refused held-out forecasts (0 in a table written before they were counted)."""
    n = getattr(row, "n_refused", 0)
    return int(n) if n == n else 0


def succeeds(frame: pd.DataFrame, success_mre: float) -> pd.Series:
    """Each threshold's success: held-out MRE below ``success_mre``, at most ``MAX_REFUSED_SHARE`` refused."""
    refused = frame["n_refused"] if "n_refused" in frame else pd.Series(0, index=frame.index)
    many = [too_many_refused(r, n + r) for r, n in zip(refused, frame["n_test"], strict=True)]
    return (frame["test_mre"] < success_mre) & ~pd.Series(many, index=frame.index, dtype=bool)


@dataclass(frozen=True, eq=False)
class Sweep(RichView, WrittenView):
    """Protocol 4 for one law and benchmark: one row per threshold that has held-out runs.

    Parameters
    ----------
    law, benchmark : str
    table : DataFrame
        One row per threshold: the backtest's metrics and ``success``.
    critical : float or None
        The critical threshold (:data:`CRITICAL_DEFINITION`), None where undefined.
    note : str
        What the grid showed about success.
    skipped : list of dict
        Thresholds left out of the grid, with the reason.
    success_mre : float
        Held-out MRE (percent) below which a threshold succeeds.
    n_boot : int
        Bootstrap replicates per threshold (0: no intervals).
    metric : str, optional
        The metric swept, named in the figure's titles.
    tpr : float, optional
        Tokens per parameter of the runs (None: all).
    interval : {'extrapolation', 'bootstrap'}
        The kind of interval whose coverage the rows hold (with ``n_boot`` > 0).
    """

    law: str
    benchmark: str
    table: pd.DataFrame
    critical: float | None
    note: str
    skipped: list[dict] = field(default_factory=list)
    success_mre: float = SUCCESS_MRE
    n_boot: int = 0  # bootstrap replicates per threshold behind the interval coverage (0: none)
    metric: str | None = None  # named in the figure's titles
    tpr: float | None = None
    interval: str = "extrapolation"

    @property
    def definitions(self) -> dict:
        return {
            "success": SUCCESS_DEFINITION.format(success_mre=self.success_mre),
            "critical_threshold": CRITICAL_DEFINITION,
        }

    def summary_row(self) -> dict:
        """One line of the sweep: law, benchmark, critical threshold and note, and the counts.

        Returns
        -------
        dict
            ``law``, ``benchmark``, ``critical_threshold`` (FLOPs or None), ``note``, ``successes``,
            ``thresholds`` and ``skipped``.
        """
        return {
            "law": self.law,
            "benchmark": self.benchmark,
            "critical_threshold": self.critical,
            "note": self.note,
            "successes": int(self.table["success"].sum()) if len(self.table) else 0,
            "thresholds": int(len(self.table)),
            "skipped": len(self.skipped),
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per threshold, with law, benchmark, ``n_boot`` (0: no coverage) and, with coverage, ``interval``."""
        frame = self.table.assign(law=self.law, benchmark=self.benchmark, n_boot=self.n_boot)
        return frame.assign(interval=self.interval) if self.n_boot else frame

    def to_dict(self) -> dict:
        """As ``benchcast sweep --json`` prints it."""
        return SweepComparison([self]).to_dict()

    @property
    def title(self) -> str:
        return f"{self.law} on {self.benchmark}: threshold sweep"

    @property
    def notes(self) -> list[str]:
        found = f"{self.critical:.3g} FLOPs" if self.critical is not None else "not reported"
        return [f"critical threshold: {found} ({self.note})"]

    def rich_items(self) -> list:
        """What ``benchcast sweep`` prints."""
        return SweepComparison([self]).rich_items()

    def plot(self, ax=None):
        """The figure of MRE versus threshold with the success line and the critical threshold."""
        return SweepComparison([self]).plot(None if ax is None else [ax])

    def write(self, out: str | Path, figure_format: str = "png", dpi: int | None = None) -> None:
        """``sweep.csv`` and the figure into the folder ``out`` (see :class:`SweepComparison`)."""
        SweepComparison([self]).write(out, figure_format, dpi)


@dataclass(frozen=True, eq=False)
class SweepComparison(RichView, WrittenView):
    """Sweeps of several laws and benchmarks (what ``benchcast sweep`` runs)."""

    sweeps: list[Sweep]

    def to_frame(self) -> pd.DataFrame:
        """Every sweep's rows, with law, benchmark and ``n_boot`` columns (``sweep.csv``)."""
        frames = [s.to_frame() for s in self.sweeps if len(s.table)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def to_dict(self) -> dict:
        """The definitions, rows, critical thresholds, thresholds left out and whether coverage was computed."""
        n_boot, kind = self.sweeps[0].n_boot, self.sweeps[0].interval
        return {
            "definitions": self.sweeps[0].definitions,
            "sweep": self.to_frame().to_dict("records"),
            "critical": [s.summary_row() for s in self.sweeps],
            "skipped": [{"law": s.law, "benchmark": s.benchmark, **r} for s in self.sweeps for r in s.skipped],
            "intervals": f"{kind} interval coverage from {n_boot} bootstrap replicates per threshold"
            if n_boot
            else NO_INTERVALS,
        }

    @property
    def title(self) -> str:
        return "Sweep (MRE over the held-out forecasts made, those refused beside it; usable: Q > Q_rand + margin)"

    def rich_items(self) -> list:
        """The definitions, each critical threshold, the table and the replicates behind coverage."""
        definitions = self.sweeps[0].definitions
        items = [
            Markup(
                escape(f"success: {definitions['success']}.\ncritical threshold: {definitions['critical_threshold']}.")
            )
        ]
        for s in self.sweeps:
            found = (
                f"[bold]{s.critical:.3g}[/] FLOPs ({escape(s.note)})"
                if s.critical is not None
                else escape(f"not reported: {s.note}")
            )
            items.append(Markup(escape(f"{s.benchmark} / {s.law}: critical threshold ") + found))
            items += [
                Markup(escape(f"  left out of the grid: {r['threshold']:.3g} ({r['skipped']})")) for r in s.skipped
            ]
        rows = []
        for r in self.to_frame().itertuples():
            held = r.n_test + _refused(r)  # forecast or refused
            counts = [r.n_train, held, refused_cell(_refused(r), held)]
            rows.append([r.benchmark, r.law, f"{r.threshold:.3g}", *counts, r.test_mre, r.test_mre_usable, r.success])
        columns = ["benchmark", "law", "threshold", "fitted", "held out", "refused", "MRE %", "MRE % usable", "success"]
        items.append(rich_table(self.title, columns, rows))
        n_boot, kind = self.sweeps[0].n_boot, self.sweeps[0].interval
        coverage = (
            f"{kind} interval coverage in --json and --out sweep.csv: {n_boot} bootstrap replicates per threshold"
        )
        return [*items, Markup(coverage if n_boot else escape(NO_INTERVALS))]

    def plot(self, ax=None):
        """MRE versus threshold, a panel per benchmark, a line per law (:func:`benchcast.plots.plot_sweep`)."""
        from benchcast.plots.figures import plot_sweep  # matplotlib loads only when a figure is drawn

        critical = [{"law": s.law, "benchmark": s.benchmark, "critical_threshold": s.critical} for s in self.sweeps]
        titles = {s.benchmark: figure_title(s.benchmark, s.metric, s.tpr) for s in self.sweeps}
        return plot_sweep(self.to_frame(), critical, self.sweeps[0].success_mre, titles, ax=ax)

    def write(self, out: str | Path, figure_format: str = "png", dpi: int | None = None) -> None:
        """``sweep.csv`` and its figure into the folder ``out``; nothing where no threshold had both sides."""
        write_table_and_figure(out, "sweep", self.to_frame(), self.plot, figure_format, dpi, skip_empty=True)
