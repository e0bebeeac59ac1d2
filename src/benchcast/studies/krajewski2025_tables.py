"""The tables and figures of the Krajewski et al. 2025 reproduction, built from its backtests."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from rich.markup import escape

from benchcast.evaluation.backtest import BacktestResult
from benchcast.evaluation.sweep_result import Sweep
from benchcast.evaluation.sweep_result import usable_errors as errors
from benchcast.studies.krajewski2025_protocol import (
    AVERAGE_LOSS,
    AVERAGE_SETS,
    BENCHMARKS,
    CORPUS_PROXIES,
    DIRECT_LAWS,
    PAPER_AVERAGE,
    PROTOCOL,
    TABLES,
    THRESHOLD,
    TPR,
    TWO_STAGE_LAWS,
)
from benchcast.studies.proxy import proxy_diagnostic
from benchcast.utils.io import atomic_write_text
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table


def _has(table: pd.DataFrame, benchmark: str, metric: str) -> bool:
    """Whether ``table`` has rows of ``benchmark`` in ``metric``."""
    return bool(((table["benchmark"] == benchmark) & (table["metric"] == metric)).any())


USABLE = ["test_mre", "test_mre_usable", "test_mae", "n_test", "n_test_usable"]
# the columns each printed table shows, in the order printed (None: all of them)
SHOWN = {
    "direct": [
        "benchmark",
        *(f"{law}_{c}" for law in DIRECT_LAWS for c in ("mre", "mre_usable", "coverage50", "coverage90")),
    ],
    "two_stage_paper": ["law", "proxy", *USABLE, "train_rmse", "train_r2", "benchmarks"],
    "two_stage_all_benchmarks": ["law", "proxy", *USABLE, "train_rmse", "train_r2", "benchmarks"],
    "nd": ["benchmark", "train_mre", "train_mre_usable", *USABLE, "n_fit"],
    "passk_compute": ["benchmark", "train_mre", "train_mre_usable", *USABLE],
    "power_floor": ["benchmark", "q_max", "q_max_normalised", *USABLE],
    "average": ["set", "loss", "paper", "runs_fitted", *USABLE, "A", "alpha", "converged"],
    "proxy": ["benchmark", "proxy", "n", "r2", "rmse", "refused"],
    "critical_thresholds": None,
}


def _shown_table(frame: pd.DataFrame, title: str, columns: list[str] | None):
    """One table as ``reproduce`` prints it: the chosen columns, missing values blank."""
    if frame.empty:
        return Markup(f"{escape(title)}: [italic]nothing to show[/]")
    frame = frame[[c for c in columns if c in frame]] if columns else frame
    rows = [["" if not isinstance(v, float) and pd.isna(v) else v for v in r] for r in frame.itertuples(index=False)]
    return rich_table(title, list(frame.columns), rows)


@dataclass
class Reproduction(RichView):
    """The study's tables, the backtests and sweeps behind them, and where its outputs went."""

    tables: dict[str, pd.DataFrame]
    backtests: dict[tuple, BacktestResult]
    sweeps: dict[tuple, Sweep]
    seconds: float
    benchmarks: tuple = BENCHMARKS
    figures: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    out: Path | None = None
    n_boot: int | None = None
    interval: str | None = None

    def to_dict(self) -> dict:
        """The protocol, the tables' meanings and records, the wall time and the figures (``reproduce --json``)."""
        explained = {name: TABLES.get(name, "") for name in self.tables}
        return jsonable(
            {
                "protocol": PROTOCOL,
                "tables_explained": explained,
                "seconds": self.seconds,
                "intervals": {"n_boot": self.n_boot, "interval": self.interval},
                "figures": self.figures,
                **{name: frame.to_dict("records") for name, frame in self.tables.items()},
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """The headline table: the direct laws per benchmark (``tables['direct']``)."""
        return self.tables.get("direct", pd.DataFrame())

    @property
    def title(self) -> str:
        return f"Krajewski et al. 2025 reproduction: {TABLES['direct']}"

    @property
    def notes(self) -> list[str]:
        """The other tables by name, the skipped jobs and the wall time."""
        others = [name for name in self.tables if name != "direct"]
        notes = [f"other tables (in .tables): {', '.join(others)}"]
        if self.failures:
            notes.append(f"{len(self.failures)} job(s) could not run: " + "; ".join(self.failures))
        return [*notes, f"wall time {self.seconds:.1f} s"]

    def rich_items(self) -> list:
        """What ``benchcast reproduce`` prints: the tables, the protocol's terms, the skipped jobs, the outputs."""
        items = []
        for name, columns in SHOWN.items():
            if name in self.tables:
                title = TABLES[name]
                if name == "direct" and self.n_boot is not None:
                    kind = f", {self.interval} intervals" if self.interval else ""
                    title = f"{title} ({self.n_boot} bootstrap replicates{kind})"
                items.append(_shown_table(self.tables[name], title, columns))
        items.append(
            Markup(escape(f"success: {PROTOCOL['success']}.\ncritical threshold: {PROTOCOL['critical_threshold']}."))
        )
        items.append(Markup(escape(f"{PROTOCOL['usable']}.")))
        if self.out is None:  # no skipped.csv to point to: the failures themselves
            return items + [Markup(escape(note)) for note in self.notes[1:]]
        skipped = self.tables.get("skipped", pd.DataFrame())
        if len(skipped):
            where = Path(self.out) / "skipped.csv"
            items.append(Markup(escape(f"{len(skipped)} job(s) or sweep threshold(s) skipped: see {where}")))
        return items + [Markup(escape(f"tables and figures in {self.out}; wall time {self.seconds:.1f} s"))]


def _with_mean(frame: pd.DataFrame, label_column: str = "benchmark") -> pd.DataFrame:
    """``frame`` with a last row of its numbers' means, labelled 'average'."""
    if frame.empty:
        return frame
    mean = frame.select_dtypes("number").mean().to_dict()
    return pd.concat([frame, pd.DataFrame([{label_column: "average", **mean}])], ignore_index=True)


COMPARED = ["test_mre", "test_mre_usable", "test_mae", "train_rmse", "train_r2", "n_test", "n_test_usable"]


def compare_methods(per_bench: pd.DataFrame, benchmarks: list[str], *, complete: bool) -> pd.DataFrame:
    """Each method's errors averaged over ``benchmarks`` (with ``complete``, of the methods that ran on every one)."""
    sub = per_bench[per_bench["benchmark"].isin(benchmarks)]
    rows = []
    for (law, proxy), group in sub.groupby(["law", "proxy"], sort=False):
        if complete and set(group["benchmark"]) != set(benchmarks):
            continue
        rows.append(
            {
                "law": law,
                "proxy": proxy,
                **group[COMPARED].mean().to_dict(),
                "benchmarks": len(group),
                "benchmark_names": " ".join(group["benchmark"]),
            }
        )
    return pd.DataFrame(rows)


def _direct_table(done: dict, benchmarks) -> pd.DataFrame:
    """The direct laws' errors and coverage per benchmark."""
    rows = []
    for bench, metric in benchmarks:
        row = {"benchmark": bench, "metric": metric}
        for law in DIRECT_LAWS:
            bt = done.get(("direct", law, bench, ""))
            if bt is None:
                continue
            e = errors(bt)
            row[f"{law}_mae"], row[f"{law}_mre"] = e["test_mae"], e["test_mre"]
            row[f"{law}_mre_usable"], row[f"{law}_n_test_usable"] = e["test_mre_usable"], e["n_test_usable"]
            row.update({f"{law}_{key}": bt.metrics[key] for key in ("coverage50", "coverage90") if key in bt.metrics})
            if "interval" in bt.metrics:  # the kind of interval behind the coverage columns
                row["interval"] = bt.metrics["interval"]
            if bt.fit.law_object.search.n_screen:  # a global search: how many points and the loss it reached
                row[f"{law}_points"] = bt.fit.diagnostics.n_used
                row[f"{law}_huber_loss"] = bt.fit.diagnostics.loss
        rows.append(row)
    return _with_mean(pd.DataFrame(rows))


def _power_floor_table(done: dict, benchmarks) -> pd.DataFrame:
    """power_floor's ceiling and errors per benchmark."""
    rows = []
    for bench, _ in benchmarks:
        bt = done.get(("direct", "power_floor", bench, ""))
        if bt is None:
            continue
        q_max, meaning = bt.fit.fitted.limit()
        q_rand = bt.fit.spec.q_rand
        coverage = {key: v for key, v in bt.metrics.items() if key in ("coverage50", "coverage90")}
        rows.append(
            {
                "benchmark": bench,
                "q_max": q_max,
                "q_max_normalised": (q_max - q_rand) / (1 - q_rand),
                "limit": meaning,
                **errors(bt),
                **coverage,
            }
        )
    return _with_mean(pd.DataFrame(rows))


def _average_table(done: dict) -> pd.DataFrame:
    """The benchmark averages' fits (K8)."""
    rows = []
    for name, subset in AVERAGE_SETS.items():
        for loss in (AVERAGE_LOSS, "lsq"):
            bt = done.get(("average", name, loss, ""))
            if bt is None:
                continue
            d = bt.fit.diagnostics
            rows.append(
                {
                    "set": name,
                    "loss": loss,
                    "paper": subset is PAPER_AVERAGE and loss == AVERAGE_LOSS,
                    "runs_fitted": int(bt.predictions["fitted"].sum()),
                    **errors(bt),
                    **bt.fit.params,
                    "converged": d.converged,
                    "optimiser": d.message,
                    "benchmark_names": " ".join(b for b, _ in subset),
                }
            )
    return pd.DataFrame(rows)


def _proxy_table(table: pd.DataFrame, benchmarks) -> pd.DataFrame:
    """K7: each proxy's diagnostic per benchmark."""
    rows = []
    for bench, metric in benchmarks:
        candidates = [f"{bench}:loglikelihood", f"{bench}:brier", *CORPUS_PROXIES]
        if metric == "acc_norm":
            candidates.append(f"{bench}:acc")
        for proxy in candidates:
            pb, _, pm = proxy.partition(":")
            if _has(table, pb, pm):
                rows.append(proxy_diagnostic(table, bench, metric, proxy))
    return pd.DataFrame(rows)


def write_outputs(result: Reproduction, out_dir: Path, figure_format: str = "png", dpi: int | None = None) -> None:
    """The study's tables (CSV) and figures into ``out_dir``."""
    from benchcast.plots.figures import plot_reproduction_curves, plot_sweep
    from benchcast.plots.style import figure_title, save_figure

    def save(fig, name: str) -> Path:
        """One figure into ``out_dir``."""
        return save_figure(fig, out_dir / f"{name}.{figure_format}", figure_format, dpi)

    for name, frame in result.tables.items():
        atomic_write_text(out_dir / f"{name}.csv", frame.to_csv(index=False))
    direct = [("direct", law) for law in DIRECT_LAWS]
    two_stage = [("direct", "power"), *(("two_stage", law) for law in TWO_STAGE_LAWS)]
    first = save(plot_reproduction_curves(result.backtests, direct, result.benchmarks, THRESHOLD), "direct_laws")
    vs = plot_reproduction_curves(result.backtests, two_stage, result.benchmarks, THRESHOLD, proxy="dclm:loss")
    figures = [first, save(vs, "two_stage_vs_direct")]
    if not result.tables["sweep"].empty:
        critical = result.tables["critical_thresholds"].to_dict("records")
        titles = {bench: figure_title(bench, metric, TPR) for bench, metric in result.benchmarks}
        figures.append(save(plot_sweep(result.tables["sweep"], critical, titles=titles), "sweep"))
    result.figures = [str(f) for f in figures]
    notes = {
        "protocol": PROTOCOL,
        "tables": {name: TABLES.get(name, "") for name in result.tables},
        "intervals": {"n_boot": result.n_boot, "interval": result.interval},
    }
    # names, not paths: out_dir is the temporary folder that is renamed into place when complete
    figures = [Path(f).name for f in result.figures]
    atomic_write_text(out_dir / "README.json", json.dumps(jsonable({**notes, "figures": figures}), indent=2))
