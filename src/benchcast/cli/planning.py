"""CLI command ``plan``: the compute (or k) needed for a target score, from a fit artifact or from data."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import (
    answer_each,
    console,
    emit_json,
    print_answers,
    refuse_jobs_with_ray,
    refuse_options,
    user_errors,
)
from benchcast.cli.core import refuse_unused_proxy
from benchcast.cli.options import (
    Benchmarks,
    Columns,
    Format,
    Interval,
    Jobs,
    Json,
    Level,
    Margin,
    MaxFlops,
    Metadata,
    Metric,
    MinFlops,
    NBoot,
    Proxy,
    QRand,
    RayAddress,
    Seed,
    benchmark_metrics,
    forecast_settings,
    positive_option,
    read,
)
from benchcast.cli.plan import DEFAULT_INTERVAL, DEFAULT_LEVEL, DEFAULT_SEED, is_fit_artifact
from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.errors import BenchcastError
from benchcast.validation import MIN_REPLICATES


@app.command("plan")
@user_errors
def plan_command(
    source: Annotated[
        Path,
        typer.Argument(
            help="A fit artifact (`benchcast fit --out`): that law's plan; or a data file with -b: the default "
            "strategy's forecast (as `forecast DATA` gives it) inverted."
        ),
    ],
    target: Annotated[float, typer.Option("--target", help="Target score in (0, 1).")],
    k: Annotated[
        int | None,
        typer.Option(help="Attempts k (passk_compute: compute needed at this k; with a data file: of pass@k)."),
    ] = None,
    flops: Annotated[float | None, typer.Option("--flops", "-C", help="passk_compute: the k needed at this C.")] = None,
    tpr: Annotated[
        float | None, typer.Option(help="With a data file: fit only the runs at this tokens-per-parameter ratio.")
    ] = None,
    forecast_tpr: Annotated[
        float | None,
        typer.Option(
            "--forecast-tpr",
            help="Tokens per parameter of the planned run, inside the fitted runs' ratios or beyond them (default: "
            "--tpr, or the fit's TPR): it splits C into N and D, and the plan answers them.",
            callback=positive_option,
        ),
    ] = None,
    benchmark: Benchmarks = None,
    metric: Metric = None,
    min_flops: MinFlops = None,
    max_flops: MaxFlops = None,
    proxy: Proxy = None,
    interval: Interval = DEFAULT_INTERVAL,
    level: Level = DEFAULT_LEVEL,
    boot: NBoot = DEFAULT_REPLICATES,
    seed: Seed = DEFAULT_SEED,
    jobs: Jobs = None,
    ray: RayAddress = None,
    format: Format = "auto",
    metadata: Metadata = None,
    column: Columns = None,
    q_rand: QRand = None,
    margin: Margin = None,
    json: Json = False,
) -> None:
    """Compute (or, for pass@k laws, k) needed to reach a target score, with an interval.

    From a fit artifact: that law inverted. From a data file with -b: the default strategy's forecast (the
    ensemble of the laws with support, as `forecast DATA` gives it for a run beyond the data) inverted: the
    compute where it reaches the target, and the interval where its prediction bounds do.
    """
    refuse_jobs_with_ray(jobs, ray)
    if boot == 0:
        refuse_options(
            {
                "--level": level != DEFAULT_LEVEL,
                "--interval": interval != DEFAULT_INTERVAL,
                "--seed": seed != DEFAULT_SEED,
                "--jobs": jobs is not None,
                "--ray": ray is not None,
            },
            "used only by the bootstrap interval, and --n-boot 0 asks for none; drop {them}, or give --n-boot N "
            f"(at least {MIN_REPLICATES}) for an interval.",
        )
    if is_fit_artifact(source):
        refuse_options(
            {
                "-b/--benchmark": bool(benchmark),
                "-m/--metric": metric is not None,
                "--tpr": tpr is not None,
                "--min-flops": min_flops is not None,
                "--max-flops": max_flops is not None,
                "--proxy": proxy is not None,
                "--format": format != "auto",
                "--metadata": metadata is not None,
                "--column": bool(column),
                "--q-rand": bool(q_rand),
                "--margin": bool(margin),
            },
            f"{source} is a fit artifact, whose law, benchmark and runs are fixed; {{them}} select(s) runs of a "
            "data file (the planned run's ratio is --forecast-tpr): drop {them}, or give the data file instead of the "
            "artifact.",
        )
        from benchcast.fitting.result import FitResult
        from benchcast.forecasting.planning import plan

        options = {"level": level, "n_boot": boot, "seed": seed, "n_jobs": jobs, "ray_address": ray}
        result = FitResult.load(source)
        out = plan(result, target, k=k, flops=flops, forecast_tpr=forecast_tpr, interval=interval, **options)
    else:
        if not benchmark:
            raise BenchcastError(
                f"{source} is not a fit artifact (`benchcast fit --out`): to plan from a data file, name the "
                "benchmark with -b NAME (and -m METRIC): the default strategy's forecast, as `forecast DATA` gives "
                "it, inverted."
            )
        refuse_options(
            {"--flops": flops is not None},
            "from a data file, plan gives the compute the default strategy needs for --target; {them} asks a pass@k "
            "law for the k needed at a compute: fit passk_compute with `benchcast fit --out` and plan from that "
            "artifact, or drop {them}.",
        )
        from benchcast.forecasting.planning import plan_default
        from benchcast.forecasting.selection import DEFAULT_CANDIDATES

        refuse_unused_proxy(list(DEFAULT_CANDIDATES), proxy)
        table = read(source, format, metadata, q_rand, margin=margin, columns=column)
        settings = forecast_settings(
            boot, level, interval, seed, jobs, ray, tpr=tpr, min_flops=min_flops, max_flops=max_flops, proxy=proxy
        )
        outs = answer_each(
            benchmark_metrics(benchmark, metric),
            lambda name, own_metric: plan_default(
                table, name, own_metric, k, target=target, forecast_tpr=forecast_tpr, **settings
            ),
        )
        print_answers(outs, json, str(source))
        return
    if json:
        emit_json(out.to_dict())
        return
    console.print(out)
