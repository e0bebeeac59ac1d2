"""``benchcast report --from DIR``: a page from outputs already written by ``bench``, ``backtest``,
``reproduce``, ``recommend --json`` or ``fit --out``, recognised by their columns and fields (not
by file names). Nothing is refitted: the page shows what the files say."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from benchcast.errors import DataError
from benchcast.evaluation.refusals import ranked
from benchcast.fitting.metrics import mae, mre
from benchcast.plots.options import check_dpi, check_page_figure_format
from benchcast.plots.panels import draw_backtest
from benchcast.plots.results import plot_bench
from benchcast.plots.style import legend_outside, panel_grid, plt
from benchcast.report import html as h
from benchcast.report.figures import embed
from benchcast.report.page import provenance
from benchcast.utils.io import atomic_write_text

BENCH_KEYS = ("dataset", "benchmark", "metric", "strategy")  # a row of bench_rows.csv: its cell, then its numbers
BENCH_MEANS = ("mae", "mre", "mre_usable", "coverage50", "coverage90", "width90")
BENCH_COLUMNS = (*BENCH_KEYS, "cutoff", "n_test", *BENCH_MEANS, "decades")
BACKTEST_COLUMNS = ("run", "flops", "true", "prediction", "side", "law")
OLD_POINT = {"predicted": "prediction"}  # the point's name in bench and backtest outputs before #51
MAX_TABLE_ROWS = 200
BENCH_PREDICTIONS = "bench_predictions.csv"  # written by bench --out beside bench_rows.csv
BENCH_FIGURE_STEM = "bench_extrapolation"
MAX_IMAGE_BYTES = 1_500_000


def _bench_section(
    frame: pd.DataFrame,
    source: str,
    figure_format: str = "png",
    dpi: int | None = None,
    predictions: pd.DataFrame | None = None,
) -> str:
    """The rolling-origin benchmark: each strategy's error, coverage and width, overall and versus extrapolation."""
    grouped = frame.groupby(list(BENCH_KEYS), sort=True)
    means = list(BENCH_MEANS)
    rows = [[*key, len(g), g["n_test"].sum(), *(g[c].mean() for c in means), g["decades"].max()] for key, g in grouped]
    # more than a tenth of cells refused: ranked after
    overall = (
        frame.assign(refused=frame["refused"].eq(True) if "refused" in frame else False)
        .groupby("strategy")
        .agg(cutoffs=("cutoff", "size"), refused=("refused", "sum"), **{c: (c, "mean") for c in means[1:]})
        .pipe(ranked, "mre_usable", "refused", "cutoffs")
    )
    labels = ("MAE", "MRE %", "MRE % (usable)", "50 % coverage", "90 % coverage", "90 % width")  # of BENCH_MEANS
    head = [*BENCH_KEYS, "cutoffs", "held-out points", *labels, "max decades"]
    figure = ""
    if predictions is not None:
        figure = h.figure(
            embed(plot_bench(predictions), figure_format, dpi),
            "error and coverage of each strategy versus decades of extrapolation",
            "Mean relative error, 90 % and 50 % coverage (n: held-out points with an interval behind each bin) "
            "and median 90 % interval width of each strategy versus decades of extrapolation, drawn from "
            "bench_predictions.csv as bench --out draws it.",
        )
    return (
        f'<section id="bench"><h2>Forecasting benchmark <span class="muted">({h.esc(source)})</span></h2>'
        + h.table(
            ["strategy", "cutoffs", "refused", "MRE %", "MRE % (usable)", "50 % cover", "90 % cover", "90 % width"],
            [[s, int(r.cutoffs), int(r.refused), *r[means[1:]]] for s, r in overall.iterrows()],
            caption="Strategies over every dataset, benchmark and cutoff (sorted by usable MRE, refusing >10 % last)",
            sortable=True,
        )
        + figure
        + h.table(head, rows, caption="Per dataset, benchmark and strategy", sortable=True, text_columns=4)
        + "</section>"
    )


def _backtest_section(frame: pd.DataFrame, source: str, figure_format: str = "png", dpi: int | None = None) -> str:
    """Held-out predictions of a backtest: the runs by status, each law's predictions, the metrics."""
    parts = [f"<section><h2>Backtest <span class=muted>({h.esc(source)})</span></h2>"]
    rows = []
    fig, axes = panel_grid(1, 8.4, 4.2)
    by_law, curves = {}, {}
    for law, g in frame.groupby("law", sort=False):
        test = g[g["side"] == "test"]
        cov = {
            level: float(((test["true"] >= test[f"lower{level}"]) & (test["true"] <= test[f"upper{level}"])).mean())
            if f"lower{level}" in test and test[f"lower{level}"].notna().any()
            else float("nan")
            for level in (50, 90)
        }
        errors = mae(test["true"], test["prediction"]), mre(test["true"], test["prediction"])
        rows.append([law, int((g["side"] == "train").sum()), len(test), *errors, cov[50], cov[90]])
        ordered = g.sort_values("flops")
        by_law[law] = g
        curves[f"{law} (predictions)"] = (ordered["flops"].to_numpy(), ordered["prediction"].to_numpy())
    draw_backtest(axes[0], by_law, curves, f"backtest predictions in {source}", ylabel="score (the file's metric)")
    legend_outside(axes[0])
    head = ["law", "training rows", "held-out rows", "MAE", "MRE %", "50 % coverage", "90 % coverage"]
    caption = (
        "Held-out error (coverage from the intervals in the file; their replicate count is not recorded there: "
        "see the backtest's own output)"
    )
    parts.append(h.table(head, rows, caption=caption, sortable=True))
    drawn = "Fitted, dropped and held-out runs, with each law's predictions and held-out intervals."
    parts.append(h.figure(embed(fig, figure_format, dpi), f"backtest predictions from {source}", drawn))
    return "\n".join(parts) + "</section>"


def _json_section(doc, source: str) -> str | None:
    """A section for a ``fit --out`` document (parameters) or a ``recommend --json`` one (ranking)."""
    if isinstance(doc, dict) and doc.get("format") == "benchcast-fit":
        settings = doc.get("settings", {})
        title = f"Fit: {doc['law']} on {settings.get('benchmark')} ({settings.get('metric')})"
        params = [[n, v, (doc.get("stderr") or {}).get(n)] for n, v in doc["params"].items()]
        return (
            f"<section><h2>{h.esc(title)} <span class=muted>({h.esc(source)})</span></h2>"
            f"<p><code>{h.esc(doc.get('formula', ''))}</code></p>"
            + h.table(["parameter", "value", "std. error"], params, caption="Parameters", spec=".5g")
            + h.warnings_list(doc.get("warnings", []))
            + "</section>"
        )
    if isinstance(doc, dict) and "ranking" in doc and "best" in doc:
        ranking = pd.DataFrame(doc["ranking"])
        shown = ("law", "test_mre", "test_mae", "coverage50", "coverage90", "n_fit", "n_test")
        columns = [c for c in shown if c in ranking]
        caption = (
            "Ranking (coverage from the replicates recommend was run with, printed by it; not recorded in its JSON)"
        )
        return (
            f"<section><h2>Law choice for {h.esc(doc.get('benchmark', ''))} "
            f"<span class=muted>({h.esc(source)})</span></h2>"
            f"<p>Best: <strong>{h.esc(doc['best'])}</strong>, backtested on runs above "
            f"{float(doc.get('validation_threshold', float('nan'))):.3g} FLOPs.</p>"
            + h.table(columns, ranking[columns].itertuples(index=False), caption=caption, sortable=True)
            + "</section>"
        )
    return None


def _generic_section(frame: pd.DataFrame, source: str) -> str:
    """Any other table, shown as it is (its first ``MAX_TABLE_ROWS`` rows)."""
    shown = frame.head(MAX_TABLE_ROWS)
    note = "" if len(frame) <= MAX_TABLE_ROWS else f" (first {MAX_TABLE_ROWS} of {len(frame)} rows)"
    text_columns = sum(1 for c in frame.columns[:4] if frame[c].dtype == object)
    shown_table = h.table(
        list(shown.columns), shown.itertuples(index=False), caption=f"{source}{note}", text_columns=max(text_columns, 1)
    )
    return f"<section><h2>{h.esc(source)}</h2>" + shown_table + "</section>"


def _image_section(path: Path, source: str) -> str:
    """A PNG or SVG figure embedded as a data URI (too large ones are named, not embedded)."""
    data = path.read_bytes()
    if len(data) > MAX_IMAGE_BYTES:
        return f"<section><h2>{h.esc(source)}</h2><p class=warn>not embedded: {len(data) / 1e6:.1f} MB</p></section>"
    kind = "svg+xml" if path.suffix.lower() == ".svg" else "png"
    uri = f"data:image/{kind};base64," + base64.b64encode(data).decode("ascii")
    return f"<section><h2>{h.esc(source)}</h2>" + h.figure(uri, f"figure {source}", source) + "</section>"


def build_from_outputs(
    folder: str | Path,
    out: str | Path,
    *,
    command: Sequence[str] | None = None,
    figure_format: str = "png",
    dpi: int | None = None,
) -> dict:
    """Read every CSV, JSON and figure in ``folder`` (recursively) and lay them out on one page."""
    figure_format, dpi = check_page_figure_format(figure_format), None if dpi is None else check_dpi(dpi)
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: --from needs a folder of outputs (CSV/JSON/PNG), and this is not a folder.")
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in (".csv", ".json", ".png", ".svg")
    )
    if Path(out).resolve() in {p.resolve() for p in files}:
        files = [p for p in files if p.resolve() != Path(out).resolve()]
    # bench's figure is drawn again from its predictions (one plotting path): its file would repeat it
    drawn = {p.parent / BENCH_FIGURE_STEM for p in files if p.name == BENCH_PREDICTIONS}
    sections, kinds = [], []
    for path in files:
        source = str(path.relative_to(folder))
        if path.suffix.lower() == ".csv":
            try:
                frame = pd.read_csv(path).rename(columns=OLD_POINT)
            except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
                raise DataError(f"{path}: not a readable CSV ({exc}).") from exc
            if set(BENCH_COLUMNS) <= set(frame.columns):
                beside = path.parent / BENCH_PREDICTIONS
                predictions = pd.read_csv(beside).rename(columns=OLD_POINT) if beside.is_file() else None
                sections.insert(0, _bench_section(frame, source, figure_format, dpi, predictions))
                kinds.append(("bench", source))
            elif set(BACKTEST_COLUMNS) <= set(frame.columns):
                sections.append(_backtest_section(frame, source, figure_format, dpi))
                kinds.append(("backtest", source))
            else:
                sections.append(_generic_section(frame, source))
                kinds.append(("table", source))
        elif path.suffix.lower() == ".json":
            try:
                doc = json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise DataError(f"{path}: not valid JSON ({exc}).") from exc
            section = _json_section(doc, source)
            if section is not None:
                sections.append(section)
                kinds.append(("json", source))
        elif path.with_suffix("") in drawn:
            continue
        else:
            sections.append(_image_section(path, source))
            kinds.append(("figure", source))
    if not sections:
        raise DataError(
            f"{folder}: no outputs found (expected CSV tables of bench/backtest/reproduce/sweep/cutoff, fit or "
            "recommend JSON, or PNG/SVG figures)."
        )
    prov = provenance(None, {"outputs folder": str(folder), "files read": len(kinds)}, command)
    sections.append('<section id="provenance"><h2>Provenance</h2>' + h.provenance(prov) + "</section>")
    document = h.page("benchcast report", h.esc(f"Built from the outputs in {folder} ({len(kinds)} files)."), sections)
    path = atomic_write_text(out, document)
    plt.close("all")
    return {"out": str(path), "bytes": path.stat().st_size, "files": [{"kind": k, "file": s} for k, s in kinds]}
