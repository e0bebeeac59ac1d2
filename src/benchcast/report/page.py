"""The forecast report: analyse each benchmark, then lay the page out (summary, one section per
benchmark, provenance) and write it as one self-contained HTML file."""

from __future__ import annotations

import datetime as dt
import hashlib
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import benchcast.report.html as h
from benchcast._version import __version__
from benchcast.data.table import within_compute
from benchcast.errors import BenchcastError
from benchcast.forecasting.answers import consistent_in_k
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.targets import describe_run, flops_convention, table_runs
from benchcast.plots.labels import metric_label
from benchcast.report.analysis import RECOMMENDED, analyse_benchmark
from benchcast.report.bands import curve_tpr
from benchcast.report.sections import anchor, benchmark_section, summary_section
from benchcast.utils.io import atomic_write_text
from benchcast.utils.parallel import parallel_map, resolve_jobs


def provenance(data: str | Path | None, settings: dict, command: Sequence[str] | None = None) -> dict:
    """Who made the page, from what, how: version, data fingerprint, command line, settings, date."""
    entries = {
        "benchcast version": __version__,
        "python": platform.python_version(),
        "date (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "command line": " ".join(command if command is not None else sys.argv),
    }
    if data is not None:  # the sha256 of its bytes (of every file, in name order, for a folder)
        path, digest = Path(data), hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            digest.update(file.read_bytes())
        entries |= {"data file": str(data), "data fingerprint": "sha256:" + digest.hexdigest()}
    return entries | {key: settings[key] for key in sorted(settings)}


@dataclass
class Target:
    """A benchmark of the report, and its metric (None: the benchmark's default)."""

    benchmark: str
    metric: str | None


def parse_targets(benchmarks: Sequence[str], metrics: Sequence[str] | None) -> list[Target]:
    """``-b bench`` or ``-b bench:metric``; ``-m`` once for every benchmark, or once per ``-b``."""
    metrics = list(metrics or [])
    if metrics and len(metrics) not in (1, len(benchmarks)):
        raise BenchcastError(
            f"give --metric once (for every benchmark) or once per --benchmark; got {len(metrics)} metrics "
            f"for {len(benchmarks)} benchmarks."
        )
    out = []
    for i, item in enumerate(benchmarks):
        bench, _, metric = item.partition(":")
        given = metrics[i] if len(metrics) > 1 else (metrics[0] if metrics else None)
        out.append(Target(bench, metric or given))
    return out


def _range_words(min_flops: float | None, max_flops: float | None) -> str:
    """The compute range of the runs used, in words ('all' where unbounded)."""
    if min_flops is None and max_flops is None:
        return "all"
    lower = "" if min_flops is None else f"{min_flops:.3g} <= "
    return f"{lower}C" + ("" if max_flops is None else f" <= {max_flops:.3g}")


def _analysed(job: tuple):
    """One benchmark's analysis and its page section, or None and why it could not be forecast."""
    table, target, options, figure_format, dpi = job
    try:
        report = analyse_benchmark(table, target.benchmark, target.metric, **options)
    except BenchcastError as exc:  # one benchmark the data cannot forecast does not sink the others
        return None, {"benchmark": target.benchmark, "metric": target.metric, "error": str(exc)}
    return report, benchmark_section(report, figure_format, dpi)


def build_report(
    table: pd.DataFrame,
    targets: list[Target],
    target_flops: list[float] | None = None,
    *,
    out: str | Path,
    target_params: list[float] | None = None,
    target_tokens: list[float] | None = None,
    law: str = RECOMMENDED,
    tpr: float | None = None,
    min_flops: float | None = None,
    max_flops: float | None = None,
    flops_per_6nd: float | None = None,
    forecast_tpr: float | None = None,
    uncertainty: Uncertainty | None = None,
    n_jobs: int | None = 1,
    data: str | Path | None = None,
    command: Sequence[str] | None = None,
    figure_format: str = "png",
    dpi: int | None = None,
) -> dict:
    """Analyse every benchmark and write the page; returns a summary (path, size, benchmarks). ``uncertainty``: the
    replicates (at least one), seed and interval method of every interval (default: :class:`Uncertainty`'s)."""
    from benchcast.plots.options import check_dpi, check_page_figure_format

    figure_format, dpi = check_page_figure_format(figure_format), None if dpi is None else check_dpi(dpi)
    if not targets:
        raise BenchcastError("the report needs at least one benchmark (-b).")
    if not target_flops and not target_params and not target_tokens:
        raise BenchcastError(
            "the report needs at least one target: its compute (--target-flops C) or a planned run (--params N "
            "--tokens D)."
        )
    unc = uncertainty or Uncertainty()
    n_boot, seed, interval = unc.n_boot, unc.seed, unc.interval
    if target_flops and any(not (c > 0) for c in target_flops):
        raise BenchcastError(f"target compute must be positive FLOPs, got {target_flops}.")
    in_range = within_compute(table, min_flops, max_flops)
    if in_range.empty:
        raise BenchcastError(
            f"no run has compute within {_range_words(min_flops, max_flops)} FLOPs (--min-flops/--max-flops): "
            f"the data's runs span {table['flops'].min():.3g} .. {table['flops'].max():.3g} FLOPs."
        )
    table = in_range
    sizes = (target_params or None, target_tokens or None)
    planned = table_runs(table, target_flops or None, *sizes, tpr=tpr, given=flops_per_6nd).by_compute()
    labels = [describe_run(planned.record(i)) for i in range(len(planned))]
    runs = {"target_flops": target_flops or None, "target_params": target_params, "target_tokens": target_tokens}
    # the planned runs' FLOPs convention, measured once on the runs used (the same for every benchmark)
    runs["convention"] = flops_convention(table, tpr=tpr, given=flops_per_6nd) if planned.by_size else None
    # with at least as many benchmarks as workers, each benchmark's analysis and section in a worker of its own
    # (its fits inside it in turn): an analysis is a chain of steps of which only the backtests' fits run in
    # parallel, and on 2 cores 12 benchmarks took 56 s this way against 73 s (benchmarks/commands.py)
    workers = resolve_jobs(n_jobs)
    outer = workers > 1 and len(targets) >= workers
    options = {**runs, "law": law, "tpr": tpr, "forecast_tpr": forecast_tpr, "uncertainty": unc}
    options["n_jobs"] = 1 if outer else n_jobs
    jobs = [(table, t, options, figure_format, dpi) for t in targets]
    done = parallel_map(_analysed, jobs, n_jobs=n_jobs if outer else 1, description="report: benchmarks")
    failures = [failure for report, failure in done if report is None]
    forecast = [(report, section) for report, section in done if report is not None]
    # one benchmark at several k: a pass@k falling with k is flagged as forecast flags it (its section made again)
    for i, checked in enumerate(consistent_in_k([report.forecast for report, _ in forecast])):
        if checked is not forecast[i][0].forecast:
            forecast[i][0].forecast = checked
            forecast[i] = (forecast[i][0], benchmark_section(forecast[i][0], figure_format, dpi))
    reports = [report for report, _ in forecast]
    if not reports:
        raise BenchcastError("no benchmark could be forecast: " + "; ".join(f["error"] for f in failures))
    settings = {
        "forecast": "the default strategy (ensemble)" if law == RECOMMENDED else f"{law} (law chosen by you)",
        "interval": interval,
        "target flops": ", ".join(f"{c:.3g}" for c in planned.flops),
        **({"target runs": "; ".join(labels)} if planned.by_size else {}),
        "tpr (runs used)": "all" if tpr is None else tpr,
        "compute (runs used)": _range_words(min_flops, max_flops),
        **({"compute of the planned runs": planned.convention} if planned.by_size else {}),
        "tpr (N/D split of laws in N and D)": curve_tpr(planned, forecast_tpr),
        "bootstrap replicates": n_boot,
        "seed": seed,
    }
    sections = [summary_section(reports, labels if planned.by_size else list(planned.flops), n_boot, interval)]
    if failures:
        why = [[f["benchmark"], f["metric"] or "", f["error"]] for f in failures]
        caption = "Benchmarks the data could not forecast"
        sections[0] += (
            '<section id="not-forecast"><h2>Not forecast</h2>'
            + h.table(["benchmark", "metric", "why not"], why, caption=caption, text_columns=3)
            + "</section>"
        )
    sections += [section for _, section in forecast]
    sections.append('<section id="provenance"><h2>Provenance</h2>' + h.provenance(provenance(data, settings, command)))
    sections[-1] += "</section>"
    nav = [("summary", "Summary")] + [(anchor(r), r.benchmark) for r in reports] + [("provenance", "Provenance")]
    each = f"Each forecast is one law, {law}: law chosen by you (--law)."
    if law == RECOMMENDED:
        each = (
            "Each forecast is the package's default strategy (the ensemble of its laws with support), the "
            "same forecast and interval as benchcast recommend and forecast give for these runs and settings."
        )
    lead = (
        f"Forecasts of {len(reports)} benchmark(s) for {', '.join(labels)} from scaling laws fitted to cheaper "
        "runs, with 50 % and 90 % prediction intervals and the backtests that say how far they can be trusted. " + each
    )
    document = h.page("benchcast forecast report", h.esc(lead), sections, nav)
    path = atomic_write_text(out, document)
    done = [
        {
            "benchmark": r.benchmark,
            "metric": metric_label(r.metric, r.k),
            "law": r.fit.law,
            "strategy": r.strategy,
            "weights": r.weights,
            "law_chosen_by_you": r.choice.named,
            "why": r.choice.reason,
            "forecasts": r.forecast.records(),
            "covariates": r.covariates,
            "warnings": r.warnings,
        }
        for r in reports
    ]
    return {
        "out": str(path),
        "bytes": path.stat().st_size,
        "benchmarks": done,
        "not_forecast": failures,
        "n_boot": n_boot,
        "interval": interval,
    }
