"""What a backtest returns: :class:`BacktestResult` (one law) and :class:`BacktestComparison`
(several laws on the same split), each a table in a notebook and the CLI's text in a terminal."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.evaluation.refusals import MAX_REFUSED_SHARE, refused_cell, too_many_refused
from benchcast.fitting.result import FitResult
from benchcast.utils.display import WrittenView, html_table
from benchcast.utils.io import atomic_write_text, output_folder
from benchcast.utils.rich_view import NO_VALUE as MISSING
from benchcast.utils.rich_view import Markup, RichView, missing, rich_table

INTERVAL_WORDS = {"extrapolation": "extrapolation-aware ", "bootstrap": "bootstrap-only "}
FEW_COVERED = 10  # held-out forecasts below which a coverage is said to be a count of so few
SUMMARY_COLUMNS = ("law", "fitted", "held out", "refused", "RMSE (fit)", "R2 (fit)", "MAE", "MRE %", "cov 50", "cov 90")


@dataclass(frozen=True, eq=False)
class BacktestResult(RichView, WrittenView):
    """One law, one benchmark, one split: the fit, every prediction, and the error metrics.

    Parameters
    ----------
    law, benchmark, protocol : str
    threshold : float
        Compute of the split.
    fit : FitResult
        The fit of the training side.
    predictions : DataFrame
        One row per design row: run, sizes, ``true``, ``prediction``, ``side``, ``fitted``, ``usable``
        (and ``lower50``/``upper50``/``lower90``/``upper90`` with intervals).
    metrics : dict
        Errors of the fit and of the held-out forecasts (and interval coverage, with ``n_covered50``/``n_covered90``:
        the held-out runs with a score and an interval that it is a share of).
    """

    law: str
    benchmark: str
    protocol: str
    threshold: float
    fit: FitResult
    predictions: pd.DataFrame
    metrics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The backtest as ``benchcast backtest --json`` prints it (one element of its list)."""
        return {
            "law": self.law,
            "benchmark": self.benchmark,
            "protocol": self.protocol,
            "threshold": self.threshold,
            "metrics": self.metrics,
            "params": self.fit.params,
            "fit_warnings": self.fit.warnings,
            "predictions": self.predictions.to_dict("records"),
        }

    def to_frame(self) -> pd.DataFrame:
        """The held-out predictions (and their intervals, where made)."""
        test = self.predictions[self.predictions["side"] == "test"]
        columns = [c for c in ("run", "flops", "params", "tokens", "k", "true", "prediction") if c in test]
        bounds = [c for c in test if c.startswith(("lower", "upper"))]
        return test[columns + bounds + [c for c in ("flags",) if c in test]].reset_index(drop=True)

    @property
    def title(self) -> str:
        return BacktestComparison([self]).title

    @property
    def notes(self) -> list[str]:
        m = self.metrics
        return [
            f"MAE {m['test_mae']:.4g}, MRE {m['test_mre']:.4g} % over {m['n_test']} held-out forecasts",
            *self.refusal_notes(),
            *self.drop_notes(),
            *self.flag_notes(),
        ]

    @property
    def n_held_out(self) -> int:
        """Held-out points, forecast or refused."""
        return int(self.metrics["n_test"]) + int(self.metrics.get("n_refused", 0))

    def drop_notes(self) -> list[str]:
        """The rows the backtest did not use, counted by reason: dropped by the training fit (near chance, a
        score NaN...) and held out with no score to check.

        Returns
        -------
        list of str
            ``'law: n training row(s) dropped (reason)'`` and ``'law: n held-out run(s) without a score'`` lines.
        """
        out = [
            f"{self.law}: {n} training row(s) dropped ({why})"
            for why, n in self.fit.diagnostics.dropped_reasons.items()
        ]
        unscored = int(self.metrics.get("n_test_without_score", 0))
        return out + ([f"{self.law}: {unscored} held-out run(s) without a score (NaN), not scored"] if unscored else [])

    def refusal_notes(self) -> list[str]:
        """What the refused held-out forecasts do to the errors (:mod:`benchcast.evaluation.refusals`).

        Returns
        -------
        list of str
            One line where any forecast was refused; empty otherwise.
        """
        n = int(self.metrics.get("n_refused", 0))
        if not n:
            return []
        line = f"{self.law}: {n} of {self.n_held_out} held-out forecasts refused; MAE and MRE are over the other "
        line += f"{self.metrics['n_test']}"
        if too_many_refused(n, self.n_held_out):
            line += f": more than {MAX_REFUSED_SHARE:.0%} refused, so its errors do not stand for the split"
        return [line]

    def flag_notes(self) -> list[str]:
        """Each distinct reason a held-out forecast is refused (no number) or flagged, with its count.

        Returns
        -------
        list of str
            ``'law: k held-out forecast(s) refused: ...'`` lines; empty when none is flagged.
        """
        if "flags" not in self.predictions:
            return []
        test = self.predictions[self.predictions["side"] == "test"]
        flagged = test[test["flags"] != ""]
        refused = flagged["refused"] if "refused" in flagged else pd.Series(False, index=flagged.index)
        counts = flagged.assign(refused=refused.astype(bool)).groupby(["flags", "refused"], sort=False).size()
        return [
            f"{self.law}: {n} held-out forecast(s) {text}" + (" (no number, left out of the errors)" if no else "")
            for (text, no), n in counts.items()
        ]

    def summary_row(self) -> list:
        """The law's row of the CLI's summary table.

        Returns
        -------
        list
            Law, training and held-out counts, the held-out forecasts refused (``'24 of 33'``), training RMSE and
            R², held-out MAE and MRE (%, over the forecasts not refused), and
            50 % / 90 % coverage in [0, 1] (NaN without intervals).
        """
        m = self.metrics
        return [
            self.law,
            m["n_train"],
            self.n_held_out,
            refused_cell(m.get("n_refused", 0), self.n_held_out),
            m["train_rmse"],
            m["train_r2"],
            m["test_mae"],
            m["test_mre"],
            m.get("coverage50", float("nan")),
            m.get("coverage90", float("nan")),
        ]

    def coverage_note(self) -> str:
        """Why this backtest's coverage does not exist (empty when it does).

        Returns
        -------
        str
            The reason, in words a reader can act on.
        """
        m = self.metrics
        if all(np.isfinite(m.get(f"coverage{pct}", np.nan)) for pct in (50, 90)):
            return ""
        if not m.get("n_boot"):
            return "no intervals were made (--n-boot 0)"
        if m.get("interval_note"):
            return f"no held-out run has an interval: {m['interval_note']} On the command line: --interval bootstrap."
        return "no held-out run has an interval: the law gives no forecast at the held-out runs' covariates"

    def held_out_table(self):
        """The CLI's table of held-out predictions."""
        test = self.predictions[self.predictions["side"] == "test"]
        flags = test["flags"] if "flags" in test else pd.Series("", index=test.index)
        rows = [
            [
                r.run,
                f"{r.flops:.3g}",
                f"{r.params:.3g}",
                f"{r.tokens:.3g}",
                int(r.k),
                r.true,
                MISSING if missing(r.prediction) else r.prediction,
                flag.split(":")[0],
            ]
            for r, flag in zip(test.itertuples(), flags, strict=True)
        ]
        columns = ["run", "C", "N", "D", "k", "true", "prediction", "flags"]
        return rich_table(f"{self.law}: held-out predictions", columns, rows)

    def rich_items(self) -> list:
        """What ``benchcast backtest`` prints for this law."""
        return BacktestComparison([self]).rich_items()

    def plot(self, ax=None, **style):
        """The backtest panel (an Axes): runs by status, the fitted curve, held-out intervals and the split."""
        return BacktestComparison([self]).plot(ax, **style)

    def write(self, out: str | Path, figure_format: str = "png", dpi: int | None = None) -> None:
        """The predictions (CSV) and the figure into the folder ``out`` (see :class:`BacktestComparison`)."""
        BacktestComparison([self]).write(out, figure_format, dpi)


@dataclass(frozen=True, eq=False)
class BacktestComparison(RichView, WrittenView):
    """Backtests of several laws on the same benchmark and split (what ``benchcast backtest`` runs)."""

    backtests: list[BacktestResult]

    @property
    def n_boot(self) -> int:
        """Bootstrap replicates behind the intervals (0: none)."""
        return int(self.backtests[0].metrics.get("n_boot", 0))

    def to_dict(self) -> dict:
        """``{'backtests': [...]}``, each as :meth:`BacktestResult.to_dict`."""
        return {"backtests": [bt.to_dict() for bt in self.backtests]}

    def to_frame(self) -> pd.DataFrame:
        """Every law's predictions, with a ``law`` column (the CSV written by :meth:`write`)."""
        return pd.concat([bt.predictions.assign(law=bt.law) for bt in self.backtests])

    @property
    def title(self) -> str:
        first = self.backtests[0]
        kind = INTERVAL_WORDS.get(first.metrics.get("interval", ""), "")
        return f"{first.benchmark}: {first.protocol} backtest at {first.threshold:.3g} FLOPs" + (
            f" (coverage of {kind}intervals from {self.n_boot} bootstrap replicates)"
            if self.n_boot
            else " (no intervals: --n-boot 0)"
        )

    def rich_items(self) -> list:
        """The summary table, the reasons for a coverage shown as "—", then each law's held-out predictions."""
        rows = [[MISSING if missing(v) else v for v in bt.summary_row()] for bt in self.backtests]
        summary = rich_table(self.title, list(SUMMARY_COLUMNS), rows)
        laws_by_note: dict[str, list[str]] = {}
        for bt in self.backtests:
            if note := bt.coverage_note():
                laws_by_note.setdefault(note, []).append(bt.law)
        notes = [
            Markup(escape(f"{MISSING} {', '.join(laws)}: {note}"), highlight=False)
            for note, laws in laws_by_note.items()
        ]
        for bt in self.backtests:  # a coverage of few forecasts is a count, not a rate to set against 90 %
            n = int(bt.metrics.get("n_covered90", 0))  # held-out runs with a score and an interval
            if 0 < n < FEW_COVERED and np.isfinite(bt.metrics.get("coverage90", np.nan)):
                words = f"{bt.law}: coverage from {n} held-out forecast(s), each in or out: one run moves it by 1/{n}"
                notes.append(Markup(escape(words), highlight=False))
        notes += [
            Markup(escape(n), highlight=False)
            for bt in self.backtests
            for n in (*bt.refusal_notes(), *bt.drop_notes(), *bt.flag_notes())
        ]
        return [summary, *notes, *(bt.held_out_table() for bt in self.backtests)]

    def _repr_html_(self) -> str:
        frame = pd.DataFrame([bt.summary_row() for bt in self.backtests], columns=list(SUMMARY_COLUMNS))
        return f"<div><strong>{html.escape(self.title)}</strong>{html_table(frame)}</div>"

    def plot(self, ax=None, **style):
        """The backtest panel (:func:`benchcast.plots.plot_backtests`): every law's curve and intervals."""
        from benchcast.plots.results import plot_backtests  # matplotlib loads only when a figure is drawn

        return plot_backtests(self.backtests, ax, **style)

    def write(self, out: str | Path, figure_format: str = "png", dpi: int | None = None) -> None:
        """``backtest-<benchmark>.csv`` (every law's predictions) and its figure into the folder ``out``."""
        stem = f"backtest-{self.backtests[0].benchmark}"
        write_table_and_figure(out, stem, self.to_frame(), self.plot, figure_format, dpi)


def write_table_and_figure(out, stem: str, frame: pd.DataFrame, plot, figure_format: str, dpi, skip_empty=False):
    """``<stem>.csv`` and the figure ``plot()`` draws into the folder ``out`` (nothing for an empty ``skip_empty``)."""
    from benchcast.plots.options import check_figure_options
    from benchcast.plots.style import save_figure

    figure_format, dpi = check_figure_options(figure_format, dpi)
    if skip_empty and frame.empty:
        return
    fig = plot().figure  # an Axes' figure, or the figure itself
    with output_folder(out) as folder:
        atomic_write_text(folder / f"{stem}.csv", frame.to_csv(index=False))
        save_figure(fig, folder / f"{stem}.{figure_format}", figure_format, dpi)
