"""CLI command ``plan``: the compute (or k) needed for a target score, from a fit artifact or from data."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import answer_each, print_answers, refuse_options, show, user_errors
from benchcast.cli.core import refuse_unused_proxy
from benchcast.cli.groups import SOURCE, UNCERTAINTY, WHERE, DataSource, Where
from benchcast.cli.options import (
    Benchmarks,
    Json,
    MaxFlops,
    Metric,
    MinFlops,
    Proxy,
    benchmark_metrics,
    positive_option,
)
from benchcast.cli.plan import is_fit_artifact, refuse_selection
from benchcast.defaults import DEFAULT_INTERVAL, DEFAULT_LEVEL, DEFAULT_SEED
from benchcast.errors import BenchcastError
from benchcast.validation import MIN_REPLICATES

PLAN_SOURCE = SOURCE.but(
    data=Annotated[
        Path,
        typer.Argument(
            metavar="source",
            help="A fit artifact (`benchcast fit --out`): that law's plan; or a data file with -b: the default "
            "strategy's forecast (as `forecast DATA` gives it) inverted.",
        ),
    ]
)


@app.command("plan")
@user_errors
def plan_command(
    *,
    source: DataSource = PLAN_SOURCE,
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
    uncertainty=UNCERTAINTY,
    where: Where = WHERE,
    json: Json = False,
) -> None:
    """Compute (or, for pass@k laws, k) needed to reach a target score, with an interval.

    From a fit artifact: that law inverted. From a data file with -b: the default strategy's forecast (the
    ensemble of the laws with support, as `forecast DATA` gives it for a run beyond the data) inverted: the
    compute where it reaches the target, and the interval where its prediction bounds do.
    """
    if uncertainty.n_boot == 0:
        refuse_options(
            {
                "--level": uncertainty.level != DEFAULT_LEVEL,
                "--interval": uncertainty.interval != DEFAULT_INTERVAL,
                "--seed": uncertainty.seed != DEFAULT_SEED,
                **where.given(),
            },
            "used only by the bootstrap interval, and --n-boot 0 asks for none; drop {them}, or give --n-boot N "
            f"(at least {MIN_REPLICATES}) for an interval.",
        )
    within = {"tpr": tpr, "min_flops": min_flops, "max_flops": max_flops, "proxy": proxy}
    if is_fit_artifact(source.data):
        refuse_selection(source, benchmark, metric, " (the planned run's ratio is --forecast-tpr)", **within)
        from benchcast.fitting.result import FitResult
        from benchcast.forecasting.planning import plan

        result = FitResult.load(source.data)
        asked = {"k": k, "flops": flops, "forecast_tpr": forecast_tpr}
        out = plan(result, target, **asked, uncertainty=uncertainty, **where.kwargs())
    else:
        if not benchmark:
            raise BenchcastError(
                f"{source.data} is not a fit artifact (`benchcast fit --out`): to plan from a data file, name the "
                "benchmark with -b NAME (and -m METRIC): the default strategy's forecast, as `forecast DATA` gives "
                "it, inverted."
            )
        refuse_options(
            {"--flops": flops is not None},
            "from a data file, plan gives the compute the default strategy needs for --target; {them} asks a pass@k "
            "law for the k needed at a compute: fit passk_compute with `benchcast fit --out` and plan from that "
            "artifact, or drop {them}.",
        )
        from benchcast.fitting.spec import FitSpec
        from benchcast.forecasting.answers import consistent_in_k
        from benchcast.forecasting.planning import plan_default
        from benchcast.forecasting.selection import DEFAULT_CANDIDATES

        refuse_unused_proxy(list(DEFAULT_CANDIDATES), proxy)
        table = source.read()
        outs = answer_each(
            benchmark_metrics(benchmark, metric),
            lambda name, own_metric: plan_default(
                table,
                FitSpec("power", name, own_metric, k=k, **within),
                target=target,
                forecast_tpr=forecast_tpr,
                uncertainty=uncertainty,
                **where.kwargs(),
            ),
        )
        print_answers(consistent_in_k(outs), json, str(source.data))  # compute for pass@k rising with k: flagged
        return
    show(out, json)
