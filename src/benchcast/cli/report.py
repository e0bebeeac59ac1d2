"""``benchcast report``: one self-contained HTML page a person reads."""

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from benchcast.cli.app import app
from benchcast.cli.common import (
    EXIT_SOME_REFUSED,
    console,
    emit_json,
    given_options,
    print_error,
    refuse_options,
    user_errors,
)
from benchcast.cli.groups import LOCAL, RUNS, SOURCE, UNCERTAINTY, DataSource, Where
from benchcast.cli.options import (
    FlopsPer6ND,
    Json,
    PlannedParams,
    PlannedTokens,
    check_runs,
    figure_options,
    positive_option,
)
from benchcast.defaults import DEFAULT_INTERVAL, DEFAULT_REPLICATES
from benchcast.errors import BenchcastError

DEFAULT_LAW = "recommended"
REPORT_SOURCE = SOURCE.but(
    data=(
        Annotated[
            Path | None,
            typer.Argument(help="Data file (tidy CSV/Parquet, Apple long CSV, lm-eval JSON/folder); not with --from."),
        ],
        None,
    )
)
ReportBoot = Annotated[
    int, typer.Option("--n-boot", "--boot", help="Bootstrap replicates over runs behind every interval.")
]
REPORT_UNCERTAINTY = UNCERTAINTY.but(drop=("level",), boot=(ReportBoot, DEFAULT_REPLICATES), seed=0)


@app.command("report")
@user_errors
def report_command(
    source: DataSource = REPORT_SOURCE,
    benchmark: Annotated[
        list[str] | None,
        typer.Option("--benchmark", "-b", help="Benchmark, or benchmark:metric (repeatable).", metavar="NAME"),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="Metric: once for every benchmark, or once per -b.", metavar="METRIC"),
    ] = None,
    target_flops: Annotated[
        list[float] | None,
        typer.Option("--target-flops", "-C", help="Planned compute to forecast at (FLOPs, repeatable).", metavar="C"),
    ] = None,
    params: PlannedParams = None,
    tokens: PlannedTokens = None,
    law: Annotated[
        str,
        typer.Option(
            "--law",
            "-l",
            help="One law to forecast with, or 'recommended': the package's default strategy (the ensemble, "
            "as recommend and forecast give it).",
        ),
    ] = DEFAULT_LAW,
    runs: dict = RUNS,
    flops_per_6nd: FlopsPer6ND = None,
    forecast_tpr: Annotated[
        float | None,
        typer.Option(
            help="Tokens per parameter splitting a target C (and the curve) into N and D for laws in N, D "
            "(default: the planned runs' TPR where they share one, else 20).",
            callback=positive_option,
        ),
    ] = None,
    uncertainty=REPORT_UNCERTAINTY,
    where: Where = LOCAL,
    from_dir: Annotated[
        Path | None,
        typer.Option("--from", help="Build the page from outputs already written (bench, reproduce, backtest...)."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    figure_format: Annotated[
        str, typer.Option("--figure-format", help="Figures embedded as svg, or png at --dpi (a page cannot show pdf).")
    ] = "png",
    dpi: Annotated[int | None, typer.Option("--dpi", help="Resolution of PNG figures (default: 100).")] = None,
    json: Json = False,
) -> None:
    """Write a self-contained HTML forecast report: per benchmark the runs, the law and why, the
    forecast at each target (compute -C, or a planned run --params N --tokens D) with 50 % and 90 %
    intervals, and the backtests behind it."""
    command = ["benchcast", *sys.argv[1:]]
    figures = {"figure_format": figure_format, "dpi": dpi}
    figure_options(figure_format, dpi, writes=True)
    if from_dir is not None:
        if source.data is not None:
            raise BenchcastError("give either a data file or --from DIR, not both.")
        refuse_options(
            {
                "-b/--benchmark": bool(benchmark),
                "-m/--metric": bool(metric),
                "-C/--target-flops": bool(target_flops),
                "-N/--params": bool(params),
                "-D/--tokens": bool(tokens),
                "--law": law != DEFAULT_LAW,
                **given_options(runs),
                "--flops-per-6nd": flops_per_6nd is not None,
                "--forecast-tpr": forecast_tpr is not None,
                "--n-boot": uncertainty.n_boot != DEFAULT_REPLICATES,
                "--interval": uncertainty.interval != DEFAULT_INTERVAL,
                "--seed": uncertainty.seed != 0,
                **where.given(),
                **source.given(),
            },
            f"--from {from_dir} builds the page from outputs already written, so the options that choose "
            "and fit the data have nothing to act on; drop {them}, or give the data file instead of --from.",
        )
        from benchcast.report.outputs import build_from_outputs

        summary = build_from_outputs(from_dir, out, command=command, **figures)
    else:
        if source.data is None:
            raise BenchcastError("give a data file (or --from DIR with outputs already written).")
        if not benchmark:
            raise BenchcastError("give at least one benchmark with -b NAME (or -b NAME:METRIC).")
        check_runs(target_flops, params, tokens, "--target-flops")
        if not target_flops and not params:
            raise BenchcastError(
                "give the planned compute with --target-flops C (FLOPs), e.g. --target-flops 1e23, or a planned "
                "run with --params N --tokens D, e.g. --params 7e9 --tokens 4e12."
            )
        from benchcast.report import build_report, parse_targets

        summary = build_report(
            source.read(),
            parse_targets(benchmark, metric),
            list(target_flops) if target_flops else None,
            out=out,
            target_params=params or None,
            target_tokens=tokens or None,
            law=law,
            **runs,
            flops_per_6nd=flops_per_6nd,
            forecast_tpr=forecast_tpr,
            uncertainty=uncertainty,
            n_jobs=where.n_jobs,
            data=source.data,
            command=command,
            **figures,
        )
    if json:
        emit_json(summary)
    else:
        console.print(escape(f"wrote {summary['out']} ({summary['bytes'] / 1e6:.2f} MB)"), highlight=False)
    if missing := summary.get("not_forecast"):  # as forecast and plan do: the page is written, the status says it
        names = ", ".join(f["benchmark"] + (f":{f['metric']}" if f.get("metric") else "") for f in missing)
        total = len(missing) + len(summary.get("benchmarks", ()))
        print_error(
            f"{len(missing)} of {total} benchmarks not forecast ({names}; the page's 'Not forecast' table says why), "
            f"the others are on the page: exit status {EXIT_SOME_REFUSED}."
        )
        raise typer.Exit(EXIT_SOME_REFUSED)
