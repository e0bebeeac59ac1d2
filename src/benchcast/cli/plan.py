"""CLI commands for trustworthy forecasts: forecast, plan, recommend."""

from pathlib import Path
from typing import Annotated

import numpy as np
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
    Level,
    Metadata,
    Metric,
    MinFlops,
    NBoot,
    Proxy,
    QRand,
    RayAddress,
    Seed,
    Tpr,
    read,
)
from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult

Interval = Annotated[
    str,
    typer.Option(
        "--interval",
        help="'extrapolation' (bootstrap plus the extrapolation error measured inside your runs) or 'bootstrap'.",
    ),
]


@app.command("forecast")
@user_errors
def forecast_command(
    fit_file: Annotated[Path, typer.Argument(help="A fit artifact written by `benchcast fit --out`.")],
    flops: Annotated[list[float] | None, typer.Option("--flops", "-C", help="Training compute (repeatable).")] = None,
    params: Annotated[float | None, typer.Option("--params", "-N", help="Parameters N.")] = None,
    tokens: Annotated[float | None, typer.Option("--tokens", "-D", help="Training tokens D.")] = None,
    k: Annotated[int | None, typer.Option(help="Attempts k (passk_compute).")] = None,
    gold: Annotated[float | None, typer.Option(help="Gold NLL G (gold law).")] = None,
    interval: Interval = "extrapolation",
    level: Level = 0.9,
    boot: NBoot = 1000,
    seed: Seed = 0,
    jobs: Jobs = None,
    ray: RayAddress = None,
    json: Json = False,
) -> None:
    """The forecast score with its prediction and confidence intervals.

    The prediction interval is where one new run's score lies (what backtests check): by default it
    adds the error of extrapolating, measured on rolling origins inside the runs, to a bootstrap over
    runs; the confidence interval is where the law's mean curve lies.
    """
    from benchcast.forecasting.forecast import forecast

    if not flops and params is None and gold is None:
        raise BenchcastError("give --flops C, or --params N and --tokens D (or --gold G for the gold law).")
    result = FitResult.load(fit_file)
    out = forecast(
        result,
        level=level,
        n_boot=boot,
        seed=seed,
        n_jobs=jobs,
        ray_address=ray,
        flops=np.asarray(flops, float) if flops else None,
        params=params,
        tokens=tokens,
        k=k,
        gold=gold,
        interval=interval,
    )
    if json:
        emit_json(out.to_dict())
        return
    console.print(out)


@app.command("plan")
@user_errors
def plan_command(
    fit_file: Annotated[Path, typer.Argument(help="A fit artifact written by `benchcast fit --out`.")],
    target: Annotated[float, typer.Option("--target", help="Target score in (0, 1).")],
    k: Annotated[int | None, typer.Option(help="Attempts k (passk_compute: compute needed at this k).")] = None,
    flops: Annotated[float | None, typer.Option("--flops", "-C", help="passk_compute: the k needed at this C.")] = None,
    tpr: Annotated[
        float | None,
        typer.Option(help="Tokens per parameter of the planned run, for laws of N and D (default: the fit's TPR)."),
    ] = None,
    interval: Interval = "extrapolation",
    level: Level = 0.9,
    boot: NBoot = 1000,
    seed: Seed = 0,
    jobs: Jobs = None,
    ray: RayAddress = None,
    json: Json = False,
) -> None:
    """Compute (or, for pass@k laws, k) needed to reach a target score, with an interval."""
    from benchcast.forecasting.forecast import plan

    out = plan(
        FitResult.load(fit_file),
        target,
        k=k,
        flops=flops,
        tpr=tpr,
        level=level,
        n_boot=boot,
        seed=seed,
        n_jobs=jobs,
        ray_address=ray,
        interval=interval,
    )
    if json:
        emit_json(out.to_dict())
        return
    console.print(out)


@app.command("recommend")
@user_errors
def recommend_command(
    data: Data,
    benchmark: Benchmark = ...,
    metric: Metric = None,
    k: Annotated[int | None, typer.Option(help="k of a pass@k metric.")] = None,
    law: Annotated[list[str] | None, typer.Option("--law", "-l", help="Laws to compare (default: applicable).")] = None,
    target_flops: Annotated[
        float | None, typer.Option(help="Planned run's compute: only cheaper runs are used.")
    ] = None,
    tpr: Tpr = None,
    min_flops: MinFlops = None,
    proxy: Proxy = None,
    rule: Annotated[
        str, typer.Option("--rule", help="'ensemble' (equal weights), 'stack' (inverse-error weights), 'select'.")
    ] = "ensemble",
    interval: Interval = "extrapolation",
    level: Level = 0.9,
    boot: NBoot = 200,
    seed: Seed = 0,
    jobs: Jobs = None,
    ray: RayAddress = None,
    format: Format = "auto",
    metadata: Metadata = None,
    q_rand: QRand = None,
    json: Json = False,
) -> None:
    """Compare laws by rolling-origin forecasts inside your runs; weight or pick them (and, with
    --target-flops, forecast that run with an interval)."""
    from benchcast.forecasting.selection import recommend

    rec = recommend(
        read(data, format, metadata, q_rand),
        benchmark,
        metric,
        k,
        laws=law,
        target_flops=target_flops,
        tpr=tpr,
        min_flops=min_flops,
        proxy=proxy,
        rule=rule,
        n_boot=boot,
        level=level,
        interval=interval,
        seed=seed,
        n_jobs=jobs,
        ray_address=ray,
    )
    if json:
        emit_json(rec.to_dict())
        return
    if rec.supported:
        ranking = rec.to_frame()
        console.print(rich_table(rec.title, list(ranking.columns), ranking.values.tolist()))  # escapes its cells
    for note in rec.notes:
        console.print(escape(note), highlight=False)
