"""CLI commands for backtests: example, backtest, sweep, cutoff."""

from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.markup import escape

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, rich_table, user_errors
from benchcast.cli.options import (
    Benchmark,
    Data,
    Format,
    Jobs,
    Json,
    Laws,
    Metadata,
    Metric,
    MinFlops,
    NBoot,
    OutDir,
    Proxy,
    QRand,
    RayAddress,
    Threshold,
    Tpr,
    read,
)
from benchcast.errors import BenchcastError
from benchcast.evaluation import DEFAULT_THRESHOLD, PROTOCOLS
from benchcast.fitting.api import FitSpec
from benchcast.laws import get_law
from benchcast.utils.io import atomic_write_text, output_folder


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    return atomic_write_text(path, frame.to_csv(index=False))


@app.command("example")
@user_errors
def example_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("benchcast-example"),
    law: Annotated[str, typer.Option("--law", "-l", help="Law to fit.")] = "power",
    json: Json = False,
) -> None:
    """Run the main job on the bundled synthetic ladder: fit, backtest, forecast, plot."""
    from benchcast.studies.example import run_example

    summary = run_example(out, law)
    if json:
        emit_json(summary)
        return
    rows = [
        [b["benchmark"], b["metric"], b["n_train"], b["n_test"], b["train_r2"], b["test_mae"], b["test_mre"]]
        for b in summary["benchmarks"]
    ]
    console.print(
        rich_table(
            f"Backtest of '{law}' on the bundled ladder (fit C <= {summary['threshold']:.1e})",
            ["benchmark", "metric", "fitted", "held out", "R2 (fit)", "MAE", "MRE %"],
            rows,
        )
    )
    rows = [
        [f["benchmark"], f["run"], f"{f['flops']:.3g}", f["true"], f["predicted"], f["truth_law"]]
        for f in summary["forecasts"]
    ]
    console.print(
        rich_table(
            "Forecasts for the held-out runs", ["benchmark", "run", "flops", "observed", "forecast", "true law"], rows
        )
    )
    console.print(escape(f"figure: {summary['figure']}; fits: {summary['out_dir']}/fit-*.json"))


@app.command("backtest")
@user_errors
def backtest_command(
    data: Data,
    law: Laws = None,
    benchmark: Benchmark = ...,
    metric: Metric = None,
    threshold: Threshold = DEFAULT_THRESHOLD,
    tpr: Tpr = None,
    min_flops: MinFlops = None,
    protocol: Annotated[str, typer.Option(help=f"Split protocol: {', '.join(PROTOCOLS)}.")] = "threshold",
    max_k: Annotated[int, typer.Option(help="passk protocol: largest k fitted.")] = 32,
    proxy: Proxy = None,
    boot: NBoot = 1000,
    format: Format = "auto",
    metadata: Metadata = None,
    q_rand: QRand = None,
    out: OutDir = None,
    json: Json = False,
) -> None:
    """Fit below a threshold (or by protocol), predict the held-out runs, report MAE/MRE/RMSE/R²."""
    from benchcast.evaluation.backtest import backtest

    table = read(data, format, metadata, q_rand)
    law = law or ["power"]
    results = []
    for name in law:
        spec = FitSpec(law=name, benchmark=benchmark, metric=metric, proxy=proxy, max_k=max_k)
        results.append(
            backtest(table, spec, protocol=protocol, threshold=threshold, tpr=tpr, min_flops=min_flops, n_boot=boot)
        )
    if out is not None:
        from benchcast.plots.figures import curve, draw_backtest, flops_grid, panel_grid, save_figure

        frames = [bt.predictions.assign(law=bt.law) for bt in results]
        fig, axes = panel_grid(1, 5.0, 3.8)
        grid = flops_grid(results[0].predictions)
        curves = {bt.law: c for bt in results if (c := curve(bt.fit, grid)) is not None}
        draw_backtest(
            axes[0],
            results[0].predictions,
            curves,
            benchmark,
            threshold,
            dropped=results[0].fit.dropped,
            n_boot=boot or None,
        )
        axes[0].legend(fontsize=6)
        with output_folder(out) as folder:
            write_csv(pd.concat(frames), folder / f"backtest-{benchmark}.csv")
            save_figure(fig, folder / f"backtest-{benchmark}.png")
    if json:
        emit_json([bt.to_dict() for bt in results])
        return
    rows = [
        [
            bt.law,
            bt.metrics["n_train"],
            bt.metrics["n_test"],
            bt.metrics["train_rmse"],
            bt.metrics["train_r2"],
            bt.metrics["test_mae"],
            bt.metrics["test_mre"],
            bt.metrics.get("coverage50", float("nan")),
            bt.metrics.get("coverage90", float("nan")),
        ]
        for bt in results
    ]
    console.print(
        rich_table(
            f"{benchmark}: {protocol} backtest at {threshold:.3g} FLOPs"
            + (f" (coverage of intervals from {boot} bootstrap replicates)" if boot else " (no intervals: --n-boot 0)"),
            ["law", "fitted", "held out", "RMSE (fit)", "R2 (fit)", "MAE", "MRE %", "cov 50", "cov 90"],
            rows,
        )
    )
    for bt in results:
        test = bt.predictions[bt.predictions["side"] == "test"]
        rows = [
            [r.run, f"{r.flops:.3g}", f"{r.params:.3g}", f"{r.tokens:.3g}", int(r.k), r.true, r.predicted]
            for r in test.itertuples()
        ]
        columns = ["run", "C", "N", "D", "k", "true", "predicted"]
        console.print(rich_table(f"{bt.law}: held-out predictions", columns, rows))


@app.command("sweep")
@user_errors
def sweep_command(
    data: Data,
    law: Laws = None,
    benchmark: Annotated[list[str], typer.Option("--benchmark", "-b", help="Benchmark (repeatable).")] = ...,
    metric: Metric = None,
    tpr: Tpr = None,
    min_flops: MinFlops = None,
    proxy: Proxy = None,
    boot: NBoot = 100,
    jobs: Jobs = None,
    ray: RayAddress = None,
    format: Format = "auto",
    metadata: Metadata = None,
    q_rand: QRand = None,
    out: OutDir = None,
    json: Json = False,
) -> None:
    """Threshold sweep (6e19 .. 5e22): held-out MRE per threshold and the critical threshold."""
    from benchcast.evaluation.backtest import sweep

    table = read(data, format, metadata, q_rand)
    law = law or ["power"]
    sweeps = []
    for bench in benchmark:
        for name in law:
            spec = FitSpec(law=name, benchmark=bench, metric=metric, proxy=proxy)
            sweeps.append(sweep(table, spec, min_flops=min_flops, tpr=tpr, n_boot=boot, n_jobs=jobs, ray_address=ray))
    frames = [s.table.assign(law=s.law, benchmark=s.benchmark) for s in sweeps if len(s.table)]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    definitions = sweeps[0].definitions
    if out is not None and not frame.empty:
        from benchcast.plots.figures import plot_sweep

        critical = [{"law": s.law, "benchmark": s.benchmark, "critical_threshold": s.critical} for s in sweeps]
        with output_folder(out) as folder:
            write_csv(frame, folder / "sweep.csv")
            plot_sweep(frame, folder / "sweep.png", critical=critical)
    if json:
        emit_json(
            {
                "definitions": definitions,
                "sweep": frame.to_dict("records"),
                "critical": [s.summary() for s in sweeps],
                "skipped": [{"law": s.law, "benchmark": s.benchmark, **r} for s in sweeps for r in s.skipped],
            }
        )
        return
    console.print(
        escape(f"success: {definitions['success']}.\ncritical threshold: {definitions['critical_threshold']}.")
    )
    for s in sweeps:
        t = s.critical
        console.print(
            escape(f"{s.benchmark} / {s.law}: critical threshold ")
            + (f"[bold]{t:.3g}[/] FLOPs ({escape(s.note)})" if t is not None else escape(f"not reported: {s.note}"))
        )
        for r in s.skipped:
            console.print(escape(f"  left out of the grid: {r['threshold']:.3g} ({r['skipped']})"))
    rows = [
        [r.benchmark, r.law, f"{r.threshold:.3g}", r.n_train, r.n_test, r.test_mre, r.test_mre_usable, r.success]
        for r in frame.itertuples()
    ]
    console.print(
        rich_table(
            "Sweep (MRE over all held-out points; usable: Q > Q_rand + margin)",
            ["benchmark", "law", "threshold", "fitted", "held out", "MRE %", "MRE % usable", "success"],
            rows,
        )
    )
    if boot:
        console.print(f"interval coverage in --json and --out sweep.csv: {boot} bootstrap replicates per threshold")


@app.command("cutoff")
@user_errors
def cutoff_command(
    data: Data,
    law: Laws = None,
    benchmark: Benchmark = ...,
    metric: Metric = None,
    k: Annotated[int | None, typer.Option(help="k of a pass@k metric.")] = None,
    targets: Annotated[int, typer.Option(help="Number of most expensive runs to predict.")] = 1,
    tpr: Tpr = None,
    proxy: Proxy = None,
    boot: NBoot = 100,
    format: Format = "auto",
    metadata: Metadata = None,
    q_rand: QRand = None,
    out: OutDir = None,
    json: Json = False,
) -> None:
    """Cutoff backtest: error and every parameter versus orders of magnitude of extrapolation.

    Fits below a moving cutoff and predicts the most expensive runs.
    """
    from benchcast.evaluation.backtest import cutoff_backtest, settling
    from benchcast.plots.figures import plot_cutoff

    table = read(data, format, metadata, q_rand)
    law = law or ["power"]
    payload = []
    for name in law:
        spec = FitSpec(law=name, benchmark=benchmark, metric=metric, k=k, proxy=proxy)
        frame = cutoff_backtest(table, spec, n_targets=targets, tpr=tpr, n_boot=boot)
        if frame.empty:
            raise BenchcastError(f"{benchmark}: no cutoff left enough runs to fit {name!r}.")
        settled = settling(frame, get_law(name).param_names)
        payload.append({"law": name, "cutoffs": frame, "settling": settled})
        if out is not None:
            with output_folder(out) as folder:
                write_csv(frame, folder / f"cutoff-{name}-{benchmark}.csv")
                plot_cutoff(
                    frame.assign(n_boot=boot) if boot else frame,
                    get_law(name).param_names,
                    f"{name} on {benchmark}",
                    folder / f"cutoff-{name}-{benchmark}.png",
                    law=name,
                )
    if json:
        emit_json([{**p, "cutoffs": p["cutoffs"].to_dict("records")} for p in payload])
        return
    for p in payload:
        names = get_law(p["law"]).param_names
        rows = [
            [f"{r['cutoff_flops']:.3g}", r["extrapolation_decades"], r["training_decades"], r["mae"], r["mre"]]
            + [r[n] for n in names]
            for r in p["cutoffs"].to_dict("records")
        ]
        console.print(
            rich_table(
                f"{p['law']} on {benchmark}: cutoff backtest "
                f"({p['cutoffs']['n_target_runs'].iloc[0]} target run(s), replicates at the target's compute included)"
                + (f"; interval coverage in --json/--out from {boot} bootstrap replicates" if boot else ""),
                ["cutoff C", "extrap. dec.", "train dec.", "MAE", "MRE %", *names],
                rows,
            )
        )
        for name, s in p["settling"].items():
            console.print(
                f"  {name}: within 10% of the final fit from {s['training_decades']:.2f} decades of "
                f"training compute ({s['extrapolation_decades']:.2f} decades of extrapolation)"
            )
