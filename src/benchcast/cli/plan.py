"""CLI commands for trustworthy forecasts: forecast, plan, recommend."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import (
    Refusal,
    answer_each,
    console,
    err_console,
    given_options,
    print_answers,
    refuse_nothing_forecast,
    refuse_options,
    show,
    user_errors,
)
from benchcast.cli.core import refuse_unused_proxy
from benchcast.cli.groups import RUNS, SOURCE, UNCERTAINTY, WHERE, DataSource, Where
from benchcast.cli.options import (
    Benchmark,
    Benchmarks,
    FlopsPer6ND,
    Json,
    MaxFlops,
    Metric,
    MinFlops,
    PlannedParams,
    PlannedTokens,
    Proxy,
    Tpr,
    benchmark_metric,
    benchmark_metrics,
    check_runs,
    option_values,
)
from benchcast.defaults import DEFAULT_INTERVAL, DEFAULT_LEVEL, DEFAULT_REPLICATES
from benchcast.errors import BenchcastError
from benchcast.validation import MIN_REPLICATES, check_replicates

ForecastBoot = Annotated[
    int,
    typer.Option(
        "--n-boot", "--boot", help=f"Bootstrap replicates over runs for the intervals (at least {MIN_REPLICATES})."
    ),
]

FORECAST_SOURCE = SOURCE.but(
    data=Annotated[
        Path,
        typer.Argument(
            metavar="source",
            help="A fit artifact (`benchcast fit --out`): that law's forecast; or a data file with -b: the "
            "default strategy's forecast, as `recommend --target-flops` gives it.",
        ),
    ]
)
FORECAST_UNCERTAINTY = UNCERTAINTY.but(boot=ForecastBoot)


def is_fit_artifact(path: Path) -> bool:
    """Whether ``path`` is a fit artifact (``benchcast fit --out``) rather than a data file."""
    import json as jsonlib

    from benchcast.fitting.artifact import ARTIFACT_FORMAT

    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    try:
        doc = jsonlib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("format") == ARTIFACT_FORMAT


def refuse_selection(source: DataSource, benchmark, metric, aside: str = "", **within) -> None:
    """Refuse the options that select runs of a data file beside a fit artifact (``within``: as given)."""
    given = {"-b/--benchmark": bool(benchmark), "-m/--metric": metric is not None, **given_options(within)}
    refuse_options(
        given | source.given(),
        f"{source.data} is a fit artifact, whose law, benchmark and runs are fixed; {{them}} select(s) runs of a "
        f"data file{aside}: drop {{them}}, or give the data file instead of the artifact.",
    )


@app.command("forecast")
@user_errors
def forecast_command(
    source: DataSource = FORECAST_SOURCE,
    flops: Annotated[list[float] | None, typer.Option("--flops", "-C", help="Training compute (repeatable).")] = None,
    params: PlannedParams = None,
    tokens: PlannedTokens = None,
    k: Annotated[int | None, typer.Option(help="Attempts k (passk_compute; with a data file: of pass@k).")] = None,
    gold: Annotated[float | None, typer.Option(help="Gold NLL G (gold law).")] = None,
    benchmark: Benchmarks = None,
    metric: Metric = None,
    runs: dict = RUNS,
    flops_per_6nd: FlopsPer6ND = None,
    proxy: Proxy = None,
    uncertainty=FORECAST_UNCERTAINTY,
    where: Where = WHERE,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="With a data file: a figure (.png/.svg/.pdf), per benchmark the runs coloured by "
            "tokens per parameter and, per target ratio, the curve and 50/90 % bands through the targets.",
        ),
    ] = None,
    json: Json = False,
) -> None:
    """The forecast score with its prediction (and, for a fit artifact, confidence) intervals.

    From a fit artifact: that law's forecast. From a data file with -b: the package's default
    strategy (the ensemble of the laws with support, compared on the runs cheaper than each --flops),
    the same forecast and interval as `recommend --target-flops` gives. A planned run can be given as
    --params N --tokens D ("my 7B on 4T tokens"): laws of N and D are given N and D, laws of compute
    C = 6 N D, and the output says which law used which. The prediction interval is
    where one new run's score lies (what backtests check): by default it adds the error of
    extrapolating, measured on rolling origins inside the runs, to a bootstrap over runs.
    """
    check_runs(flops, params, tokens)
    if out is not None:  # before any forecast is made: a figure benchcast cannot write is refused first
        from benchcast.plots.options import check_figure_format

        check_figure_format(out.suffix or "png")
    if is_fit_artifact(source.data):
        if out is not None:
            raise BenchcastError(
                f"--out draws the default's forecast from a data file; {source.data} is a fit artifact: draw its "
                "forecast in Python, bc.forecast(fit).plot(fit=fit) with fit = FitResult.load(path)."
            )
        refuse_selection(source, benchmark, metric, **runs, proxy=proxy)
        if not flops and not params and gold is None:
            raise BenchcastError("give --flops C, or --params N and --tokens D (or --gold G for the gold law).")
        check_replicates(uncertainty.n_boot, allow_zero=False)  # its forecast is its interval (predict: the number)
        import numpy as np

        from benchcast.fitting.result import FitResult
        from benchcast.forecasting.answers import forecast

        made = forecast(
            FitResult.load(source.data),
            uncertainty=uncertainty,
            **where.kwargs(),
            flops=np.asarray(flops, float) if flops else None,
            params=option_values(params),
            tokens=option_values(tokens),
            k=k,
            gold=gold,
            flops_per_6nd=flops_per_6nd,
        )
        show(made, json)
        refuse_nothing_forecast(made.prediction, made.notes, f"{made.law} from {source.data}")
        return
    if not benchmark:
        raise BenchcastError(
            f"{source.data} is not a fit artifact (`benchcast fit --out`): to forecast from a data file, name the "
            "benchmark with -b NAME (and -m METRIC): the default strategy's forecast, as `recommend` gives it."
        )
    refuse_options(
        {"--gold": gold is not None},
        "a data file's forecast (the default strategy) places runs by their compute or their size, not by a gold "
        "log-likelihood: drop {them}, or fit the gold law with `benchcast fit --law gold --out` and forecast from "
        "that artifact with --gold.",
    )
    if not flops and not params:
        raise BenchcastError(
            "give the runs to forecast with --flops C (repeatable), or a planned run with --params N --tokens D."
        )
    from benchcast.data.table import select
    from benchcast.fitting.spec import FitSpec
    from benchcast.forecasting.answers import consistent_in_k, forecast_default
    from benchcast.forecasting.selection import DEFAULT_CANDIDATES

    refuse_unused_proxy(list(DEFAULT_CANDIDATES), proxy)

    table = source.read()
    pairs = benchmark_metrics(benchmark, metric)
    outs = answer_each(
        pairs,
        lambda name, own_metric: forecast_default(
            table,
            FitSpec("power", name, own_metric, k=k, proxy=proxy, **runs),  # the runs (its law: the answer's own)
            flops=flops or None,
            params=params or None,
            tokens=tokens or None,
            flops_per_6nd=flops_per_6nd,
            curves=out is not None,
            uncertainty=uncertainty,
            **where.kwargs(),
        ),
    )
    outs = consistent_in_k(outs)  # one benchmark at several k: a pass@k falling with k is flagged
    answered = [(o, pair) for o, pair in zip(outs, pairs, strict=True) if not isinstance(o, Refusal)]
    if out is not None and answered:
        from benchcast.plots.style import panel_grid, save_figure

        # one panel per benchmark: its runs, each target ratio's curve and bands, the targets
        fig, axes = panel_grid(len(answered), 8.4, 4.6, max_cols=2)
        for ax, (answer, pair) in zip(axes, answered, strict=True):
            answer.plot(ax=ax, runs=select(table, *pair, k, **runs))
        written = save_figure(fig, out)
        (err_console if json else console).print(f"wrote {written}")  # stdout stays JSON with --json
    print_answers(outs, json, str(source.data))


@app.command("recommend")
@user_errors
def recommend_command(
    source: DataSource = SOURCE,
    benchmark: Benchmark = ...,
    metric: Metric = None,
    k: Annotated[int | None, typer.Option(help="k of a pass@k metric.")] = None,
    law: Annotated[list[str] | None, typer.Option("--law", "-l", help="Laws to compare (default: applicable).")] = None,
    target_flops: Annotated[
        float | None, typer.Option(help="Planned run's compute: only cheaper runs are used.")
    ] = None,
    target_params: Annotated[
        float | None,
        typer.Option("--params", "-N", help="Planned run's parameters N, with --tokens (not with --target-flops)."),
    ] = None,
    target_tokens: Annotated[
        float | None,
        typer.Option("--tokens", "-D", help="Planned run's training tokens D, with --params (TPR = D / N)."),
    ] = None,
    tpr: Tpr = None,
    forecast_tpr: Annotated[
        float | None,
        typer.Option(
            "--forecast-tpr",
            help="Tokens per parameter of the run at --target-flops, inside the fitted runs' ratios or beyond them "
            "(default: --tpr).",
        ),
    ] = None,
    min_flops: MinFlops = None,
    max_flops: MaxFlops = None,
    flops_per_6nd: FlopsPer6ND = None,
    proxy: Proxy = None,
    rule: Annotated[
        str,
        typer.Option(
            "--rule",
            help="'ensemble' (equal weights unless the errors separate the laws), 'stack' (inverse-error "
            "weights), 'select'.",
        ),
    ] = "ensemble",
    uncertainty=UNCERTAINTY,
    where: Where = WHERE,
    json: Json = False,
) -> None:
    """Compare laws by rolling-origin forecasts inside your runs; weight or pick them (and, with
    --target-flops C or a planned run --params N --tokens D, forecast that run with an interval)."""
    from benchcast.fitting.spec import FitSpec
    from benchcast.forecasting.answers import recommend
    from benchcast.laws import available_laws

    interval_options = {
        "--level": uncertainty.level != DEFAULT_LEVEL,
        "--interval": uncertainty.interval != DEFAULT_INTERVAL,
        **where.given(),
    }
    check_runs(*([] if v is None else [v] for v in (target_flops, target_params, target_tokens)), "--target-flops")
    if target_flops is None and target_params is None:
        refuse_options(
            {**interval_options, "--n-boot": uncertainty.n_boot not in (DEFAULT_REPLICATES, 0)},  # 0: none, as here
            "used only by the interval of the forecast at --target-flops (or of the planned run --params N "
            "--tokens D), and without a target there is no forecast (only the comparison of laws); give "
            "--target-flops C or --params N --tokens D, or drop {them}.",
        )
    elif uncertainty.n_boot == 0:
        refuse_options(
            interval_options,
            "used only by the forecast's bootstrap interval, and --n-boot 0 asks for none; drop {them}, or give "
            f"--n-boot N (at least {MIN_REPLICATES}).",
        )
    if law and all(name in available_laws() for name in law):  # an unknown one: recommend names it
        refuse_unused_proxy(law, proxy)
    benchmark, metric = benchmark_metric(benchmark, metric)  # -b NAME:METRIC, as forecast reads it
    rec = recommend(
        source.read(),
        FitSpec("power", benchmark, metric, k=k, tpr=tpr, min_flops=min_flops, max_flops=max_flops, proxy=proxy),
        laws=law,
        target_flops=target_flops,
        target_params=target_params,
        target_tokens=target_tokens,
        forecast_tpr=forecast_tpr,
        flops_per_6nd=flops_per_6nd,
        rule=rule,
        uncertainty=uncertainty,
        **where.kwargs(),
    )
    show(rec, json)
    if target_flops is not None or target_params is not None:  # a forecast was asked
        f = rec.forecast
        why = [rec.reason, *([] if f is None else f.notes)]
        refuse_nothing_forecast([float("nan")] if f is None else f.prediction, why, f"{benchmark} from {source.data}")
