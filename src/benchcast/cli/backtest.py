"""CLI commands for backtests: example, backtest, sweep, cutoff."""

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, print_warning, refuse_options, show, user_errors
from benchcast.cli.core import refuse_unused_proxy
from benchcast.cli.groups import FIGURES, REPLICATES, RUNS_FLOOR, SOURCE, WHERE, WRITTEN, DataSource, Figures, Where
from benchcast.cli.options import (
    Benchmark,
    Jobs,
    Json,
    Laws,
    LikeTargetRun,
    Metric,
    Proxy,
    Threshold,
    refuse_interval_without_boot,
)
from benchcast.errors import BenchcastError
from benchcast.evaluation import DEFAULT_THRESHOLD, PROTOCOLS

DEFAULT_MAX_K = 32

SweepBoot = Annotated[
    int,
    typer.Option(
        "--n-boot",
        "--boot",
        help="Bootstrap replicates per threshold for the interval coverage in --json and --out "
        "(0: none; the terminal does not show it).",
    ),
]
SWEEP_UNCERTAINTY = REPLICATES.but(boot=(SweepBoot, 0))


@app.command("example")
@user_errors
def example_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder.")] = Path("benchcast-example"),
    law: Annotated[str, typer.Option("--law", "-l", help="Law to fit.")] = "power",
    figures: Figures = WRITTEN,
    jobs: Jobs = None,
    json: Json = False,
) -> None:
    """Run the main job on the bundled synthetic ladder: fit, backtest, forecast, plot."""
    from benchcast.studies.example import run_example

    show(run_example(out, law, figures.format, figures.dpi, n_jobs=jobs), json)


@app.command("backtest")
@user_errors
def backtest_command(
    source: DataSource = SOURCE,
    law: Laws = None,
    benchmark: Benchmark = ...,
    metric: Metric = None,
    threshold: Threshold = DEFAULT_THRESHOLD,
    runs: dict = RUNS_FLOOR,
    protocol: Annotated[str, typer.Option(help=f"Split protocol: {', '.join(PROTOCOLS)}.")] = "threshold",
    max_k: Annotated[int, typer.Option(help="Largest k fitted (passk protocol, or laws with k).")] = DEFAULT_MAX_K,
    holdout_params: Annotated[
        float | None,
        typer.Option(
            "--holdout-params",
            help="Fit the runs with fewer than N parameters, forecast the rest (in place of --threshold).",
            metavar="N",
        ),
    ] = None,
    like_target: LikeTargetRun = None,
    proxy: Proxy = None,
    uncertainty=REPLICATES,
    figures: Figures = FIGURES,
    json: Json = False,
) -> None:
    """Fit below a threshold (or by protocol), predict the held-out runs, report MAE/MRE/RMSE/R²."""
    from benchcast.evaluation.backtest import compare_backtests
    from benchcast.fitting.api import FitSpec
    from benchcast.laws import get_law

    laws = law or ["power"]
    refuse_unused_proxy(laws, proxy)
    uses_k = protocol == "passk" or any("k" in get_law(name).covariates for name in laws)
    refuse_options(
        {"--max-k": max_k != DEFAULT_MAX_K and not uses_k},
        "it bounds the k fitted by the passk protocol or by laws with k as a covariate (passk_compute); "
        f"here neither is used (--protocol {protocol}, law(s) {', '.join(laws)}): drop it.",
    )
    refuse_interval_without_boot(uncertainty)
    for option, given in (("--holdout-params", holdout_params), ("--like-target", like_target)):
        refuse_options(
            {
                "--threshold": threshold != DEFAULT_THRESHOLD and given is not None,
                "--protocol": protocol != "threshold" and given is not None,
                "--holdout-params": option == "--like-target" and given is not None and holdout_params is not None,
            },
            f"{option} places its own split; {{them}} split(s) the runs otherwise: give one or the other.",
        )
    table = source.read()
    specs = [FitSpec(law=name, benchmark=benchmark, metric=metric, proxy=proxy, max_k=max_k) for name in laws]
    results = compare_backtests(
        table,
        specs,
        protocol=protocol,
        threshold=threshold,
        **runs,
        holdout_params=holdout_params,
        like_target=like_target,
        uncertainty=uncertainty,
    )
    figures.write(results)
    show(results, json, lambda r: [bt.to_dict() for bt in r.backtests])
    if like_target is not None and not json:
        console.print(f"split like the target: {results.backtests[0].metrics['reach']}")


@app.command("sweep")
@user_errors
def sweep_command(
    source: DataSource = SOURCE,
    law: Laws = None,
    benchmark: Annotated[list[str], typer.Option("--benchmark", "-b", help="Benchmark (repeatable).")] = ...,
    metric: Metric = None,
    runs: dict = RUNS_FLOOR,
    proxy: Proxy = None,
    uncertainty=SWEEP_UNCERTAINTY,
    where: Where = WHERE,
    figures: Figures = FIGURES,
    json: Json = False,
) -> None:
    """Threshold sweep (6e19 .. 5e22): held-out MRE per threshold and the critical threshold."""
    from benchcast.evaluation.sweep import compare_sweeps
    from benchcast.fitting.api import FitSpec
    from benchcast.fitting.spec import design

    refuse_unused_proxy(law or ["power"], proxy)
    refuse_interval_without_boot(uncertainty)
    table = source.read()
    specs = [
        FitSpec(law=name, benchmark=bench, metric=metric, proxy=proxy)
        for bench in benchmark
        for name in law or ["power"]
    ]
    for spec in specs:  # a benchmark or metric the data lack is refused before any sweep, not after the others
        design(table, spec)
    sweeps = compare_sweeps(table, specs, **runs, uncertainty=uncertainty, **where.kwargs())
    figures.write(sweeps)
    if figures.out is not None and sweeps.to_frame().empty:
        print_warning(
            f"--out {figures.out}: nothing written: no threshold left both fitted and held-out runs "
            "(every threshold was left out of the grid; the reasons are printed with the results, "
            "and under 'skipped' in --json)."
        )
    show(sweeps, json)


@app.command("cutoff")
@user_errors
def cutoff_command(
    source: DataSource = SOURCE,
    law: Laws = None,
    benchmark: Benchmark = ...,
    metric: Metric = None,
    k: Annotated[int | None, typer.Option(help="k of a pass@k metric.")] = None,
    targets: Annotated[int, typer.Option(help="Number of most expensive runs to predict.")] = 1,
    runs: dict = RUNS_FLOOR,
    proxy: Proxy = None,
    uncertainty=REPLICATES,
    figures: Figures = FIGURES,
    json: Json = False,
) -> None:
    """Cutoff backtest: error and every parameter versus orders of magnitude of extrapolation.

    Fits below a moving cutoff and predicts the most expensive runs.
    """
    from benchcast.evaluation.cutoff import cutoff_backtest
    from benchcast.fitting.api import FitSpec

    refuse_unused_proxy(law or ["power"], proxy)
    refuse_interval_without_boot(uncertainty)
    boot, interval = uncertainty.n_boot, uncertainty.interval
    table = source.read()
    # the terminal's table shows no coverage: bootstrap only where --json or --out will carry it
    shows_coverage = json or figures.out is not None
    results = []
    for name in law or ["power"]:
        result = cutoff_backtest(
            table,
            FitSpec(law=name, benchmark=benchmark, metric=metric, k=k, proxy=proxy, min_flops=runs["min_flops"]),
            n_targets=targets,
            tpr=runs["tpr"],
            uncertainty=uncertainty if shows_coverage else replace(uncertainty, n_boot=0),
        )
        if not len(result):
            raise BenchcastError(f"{benchmark}: no cutoff left enough runs to fit {name!r}.")
        figures.write(result)
        results.append(result)
    if json:
        emit_json([result.to_dict() for result in results])
        return
    for result in results:
        console.print(result)
    if boot:
        console.print(
            f"interval coverage not computed: the table does not show it; --json or --out adds it "
            f"(from {boot} bootstrap replicates per cutoff, {interval} intervals)",
            highlight=False,
        )
