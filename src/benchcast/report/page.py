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
from benchcast.errors import BenchcastError
from benchcast.laws import get_law
from benchcast.report.analysis import RECOMMENDED, BenchmarkReport, analyse_benchmark, profile_summary
from benchcast.report.figures import benchmark_figure, passk_figure
from benchcast.utils.io import atomic_write_text
from benchcast.utils.progress import track


def file_fingerprint(path: str | Path) -> str:
    """sha256 of a data file's bytes (of every file, in name order, for a folder)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(file.read_bytes())
    return "sha256:" + digest.hexdigest()


def provenance(data: str | Path | None, settings: dict, command: Sequence[str] | None = None) -> dict:
    """Who made the page, from what, how: version, data fingerprint, command line, settings, date."""
    entries = {
        "benchcast version": __version__,
        "python": platform.python_version(),
        "date (UTC)": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "command line": " ".join(command if command is not None else sys.argv),
    }
    if data is not None:
        entries["data file"] = str(data)
        entries["data fingerprint"] = file_fingerprint(data)
    return entries | {key: settings[key] for key in sorted(settings)}


@dataclass
class Target:
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


def _interval(row, level: int) -> str:
    return f"{row[f'lower{level}']:.3f} – {row[f'upper{level}']:.3f}"


def summary_section(reports: list[BenchmarkReport], targets: list[float], n_boot: int) -> str:
    columns = ["benchmark", "metric", "law", "why"]
    for c in targets:
        columns += [f"forecast @ {c:.2g}", "50 % | 90 % interval", "decades beyond the data"]
    columns += ["backtest MRE %", "backtest 90 % coverage", "warnings"]
    rows = []
    for r in reports:
        row = [
            h.Markup(f'<a href="#{anchor(r)}">{h.esc(r.benchmark)}</a>'),
            metric_label(r),
            r.fit.law,
            r.choice.reason,
        ]
        for f in r.forecasts.to_dict("records"):
            intervals = h.Markup(f"{h.esc(_interval(f, 50))}<br>{h.esc(_interval(f, 90))}")
            row += [f["forecast"], intervals, round(f["decades"], 2)]
        m = r.validation.metrics
        row += [m["test_mre"], m.get("coverage90", float("nan")), h.Markup("<br>".join(h.esc(w) for w in r.warnings))]
        rows.append(row)
    note = (
        f"Intervals are prediction intervals (where one new run's score lies): a bootstrap over runs with "
        f"{n_boot} replicates, widened by the error of extrapolating measured on rolling origins inside the runs "
        "(bootstrap alone where a benchmark's runs are too few, with a warning); the backtest columns score "
        "the chosen law on the runs it did not see."
    )
    return (
        '<section id="summary"><h2>Summary</h2>'
        + h.table(columns, rows, caption="One row per benchmark (sortable)", sortable=True, text_columns=4)
        + f'<p class="muted">{h.esc(note)}</p></section>'
    )


def metric_label(report: BenchmarkReport) -> str:
    """'pass@1' for a pass@k metric at k = 1; the metric's name otherwise."""
    if report.metric == "pass@k" and report.k is not None:
        return f"pass@{report.k}"
    return report.metric


def anchor(report: BenchmarkReport) -> str:
    return "bench-" + "".join(ch if ch.isalnum() else "-" for ch in report.benchmark)


def benchmark_section(r: BenchmarkReport) -> str:
    law = get_law(r.fit.law)
    fit, d = r.fit, r.fit.diagnostics
    counts = r.runs["status"].value_counts()
    run_rows = [[status, int(n)] for status, n in counts.items()]
    parts = [
        f'<section class="bench" id="{anchor(r)}"><h2>{h.esc(r.benchmark)} '
        f'<span class="muted">({h.esc(metric_label(r))})</span></h2>',
        f"<p><strong>Law:</strong> {h.esc(fit.law)} — <code>{h.esc(law.formula)}</code>. "
        f"<strong>Why:</strong> {h.esc(r.choice.reason)}.</p>",
        f"<p>Fitted on {d.n_used} runs spanning {d.flops_min:.3g} – {d.flops_max:.3g} FLOPs "
        f"({d.decades:.2f} decades); in-sample RMSE {d.rmse:.4f}, R² {d.r2:.3f}; chance level "
        f"{fit.settings['q_rand']:.3g} ({h.esc(fit.settings.get('q_rand_source', ''))}).</p>",
        h.warnings_list(r.warnings),
        h.figure(
            benchmark_figure(r),
            f"{r.benchmark}: runs, fitted {fit.law} law with 50 and 90 % bands, backtest, error and coverage "
            "versus decades of extrapolation",
            "Top left: the forecast (fitted, dropped and held-out runs are drawn differently; the law and its "
            "50 %/90 % prediction bands out to the target compute). Top right: the backtest used to judge the law. "
            "Bottom: the backtests' absolute error and their intervals' coverage versus decades beyond the "
            "largest fitted run.",
        ),
        h.table(
            ["target C (FLOPs)", "forecast", "50 % lower", "50 % upper", "90 % lower", "90 % upper", "decades"],
            [
                [f["flops"], f["forecast"], f["lower50"], f["upper50"], f["lower90"], f["upper90"], f["decades"]]
                for f in r.forecasts.to_dict("records")
            ],
            caption=f"Forecasts ({r.n_boot} bootstrap replicates)",
            text_columns=0,
            spec=".4g",
        ),
        h.table(["runs", "count"], run_rows, caption="Runs in the forecast fit"),
        h.table(
            ["parameter", "value", "std. error", "at a bound"],
            [
                [name, value, fit.stderr.get(name, float("nan")), name in d.at_bound]
                for name, value in fit.params.items()
            ],
            caption="Fitted parameters",
            spec=".5g",
        ),
    ]
    if r.choice.ranking is not None:
        rk = r.choice.ranking
        parts.append(
            h.table(
                ["law", "inner MRE %", "inner MSLE", "extrapolation spread per decade", "fitted runs", "at bound"],
                [[x.law, x.inner_mre, x.inner_msle, x.tau, x.n_fit, x.at_bound or ""] for x in rk.itertuples()],
                caption="Laws compared by their rolling-origin forecasts inside the runs (each fitted below an "
                "origin, scored on the runs above it; none of the page's held-out runs is used)",
                sortable=True,
            )
        )
    summary = profile_summary(r.profile)
    if not summary.empty:
        parts.append(
            h.table(
                ["decades beyond fit", "held-out points", "MAE", "50 % coverage", "90 % coverage"],
                [[x.decades, int(x.n), x.mae, x.coverage50, x.coverage90] for x in summary.itertuples()],
                caption="Backtest error and coverage versus extrapolation",
                text_columns=0,
            )
        )
    if r.passk is not None:
        scan, fits = r.passk
        names = get_law("compute").param_names
        parts.append("<h3>pass@k</h3>")
        parts.append(
            h.figure(
                passk_figure(scan, fits),
                f"{r.benchmark}: pass@k versus compute for each k, and the compute law's parameters versus k",
                "pass@k versus compute, one colour per k, with the compute law (S1) fitted at each k; then each of its "
                "parameters versus k (error bars are one standard error cut at the parameter's bounds; x marks a "
                "fit at a bound).",
            )
        )
        ok = scan.dropna(subset=[names[0]])
        parts.append(
            h.table(
                ["k", *names, "points", "R²", "at bound"],
                [
                    [int(x["k"]), *[x[n] for n in names], x["n_used"], x["r2"], x["at_bound"]]
                    for x in ok.to_dict("records")
                ],
                caption="compute law fitted at each k",
                text_columns=0,
            )
        )
    parts.append("</section>")
    return "\n".join(parts)


def build_report(
    table: pd.DataFrame,
    targets: list[Target],
    target_flops: list[float],
    *,
    out: str | Path,
    law: str = RECOMMENDED,
    tpr: float | None = None,
    forecast_tpr: float = 20.0,
    n_boot: int = 200,
    seed: int = 0,
    n_jobs: int | None = 1,
    data: str | Path | None = None,
    command: Sequence[str] | None = None,
) -> dict:
    """Analyse every benchmark and write the page; returns a summary (path, size, benchmarks)."""
    if not targets:
        raise BenchcastError("the report needs at least one benchmark (-b).")
    if not target_flops:
        raise BenchcastError("the report needs at least one target compute (--target-flops C).")
    if any(not (c > 0) for c in target_flops):
        raise BenchcastError(f"target compute must be positive FLOPs, got {target_flops}.")
    reports, failures = [], []
    for t in track(targets, "report: benchmarks"):
        try:
            reports.append(
                analyse_benchmark(
                    table,
                    t.benchmark,
                    t.metric,
                    target_flops=target_flops,
                    law=law,
                    tpr=tpr,
                    forecast_tpr=forecast_tpr,
                    n_boot=n_boot,
                    seed=seed,
                    n_jobs=n_jobs,
                )
            )
        except BenchcastError as exc:  # one benchmark the data cannot forecast does not sink the others
            failures.append({"benchmark": t.benchmark, "metric": t.metric, "error": str(exc)})
    if not reports:
        raise BenchcastError("no benchmark could be forecast: " + "; ".join(f["error"] for f in failures))
    settings = {
        "law": law,
        "target flops": ", ".join(f"{c:.3g}" for c in sorted(target_flops)),
        "tpr (runs used)": "all" if tpr is None else tpr,
        "tpr (N/D split of laws in N and D)": forecast_tpr,
        "bootstrap replicates": n_boot,
        "seed": seed,
    }
    sections = [summary_section(reports, sorted(target_flops), n_boot)]
    if failures:
        sections[0] += (
            '<section id="not-forecast"><h2>Not forecast</h2>'
            + h.table(
                ["benchmark", "metric", "why not"],
                [[f["benchmark"], f["metric"] or "", f["error"]] for f in failures],
                caption="Benchmarks the data could not forecast",
                text_columns=3,
            )
            + "</section>"
        )
    sections += [benchmark_section(r) for r in reports]
    sections.append('<section id="provenance"><h2>Provenance</h2>' + h.provenance(provenance(data, settings, command)))
    sections[-1] += "</section>"
    nav = [("summary", "Summary")] + [(anchor(r), r.benchmark) for r in reports] + [("provenance", "Provenance")]
    lead = (
        f"Forecasts of {len(reports)} benchmark(s) at {', '.join(f'{c:.3g}' for c in sorted(target_flops))} FLOPs "
        f"from scaling laws fitted to cheaper runs, with 50 % and 90 % prediction intervals and the backtests "
        "that say how far they can be trusted."
    )
    document = h.page("benchcast forecast report", h.esc(lead), sections, nav)
    path = atomic_write_text(out, document)
    return {
        "out": str(path),
        "bytes": path.stat().st_size,
        "benchmarks": [
            {
                "benchmark": r.benchmark,
                "metric": metric_label(r),
                "law": r.fit.law,
                "why": r.choice.reason,
                "forecasts": r.forecasts.to_dict("records"),
                "warnings": r.warnings,
            }
            for r in reports
        ],
        "not_forecast": failures,
        "n_boot": n_boot,
    }
