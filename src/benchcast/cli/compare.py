"""CLI command: compare (which recipe wins at a planned run, and the backtest of that decision)."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import console, err_console, show, user_errors
from benchcast.cli.groups import RUNS, SOURCE, UNCERTAINTY, WHERE, DataSource, Where
from benchcast.cli.options import Benchmarks, FlopsPer6ND, Json, Metric, Proxy
from benchcast.errors import BenchcastError


@app.command("compare")
@user_errors
def compare_command(
    *,
    source: DataSource = SOURCE,
    by: Annotated[str, typer.Option("--by", help="The column naming each run's recipe (data mixture, recipe).")],
    benchmark: Benchmarks = None,
    metric: Metric = None,
    flops: Annotated[float | None, typer.Option("--flops", "-C", help="The planned run's compute.")] = None,
    params: Annotated[float | None, typer.Option("--params", "-N", help="The planned run's parameters N.")] = None,
    tokens: Annotated[float | None, typer.Option("--tokens", "-D", help="The planned run's tokens D.")] = None,
    reference: Annotated[
        str | None, typer.Option("--reference", help="The recipe multipliers are stated against (default: the best).")
    ] = None,
    decide: Annotated[
        float, typer.Option("--decide", help="A pair is decided where p_a_better >= this or <= 1 - this.")
    ] = 0.9,
    errors: Annotated[
        str,
        typer.Option(
            "--errors", help="'common': one extrapolation error per replicate shared by every recipe; 'independent'."
        ),
    ] = "common",
    shape: Annotated[
        str,
        typer.Option(
            "--shape",
            help="'default': each recipe's default forecast; 'shared': one exponent for every recipe and an offset "
            "each (or a line per recipe where holding out each recipe's largest size says so); 'auto': shared where "
            "recipes have fewer than 4 sizes.",
        ),
    ] = "auto",
    backtest: Annotated[
        bool,
        typer.Option(
            "--backtest",
            help="Hold out each recipe's runs at the largest common budget, compare there from the rest, and score "
            "the decisions (decision accuracy, Brier score) beside the simplest alternative's.",
        ),
    ] = False,
    runs: dict = RUNS,
    flops_per_6nd: FlopsPer6ND = None,
    proxy: Proxy = None,
    uncertainty=UNCERTAINTY,
    where: Where = WHERE,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="A figure (.png/.svg/.pdf): the curves and the pairs' probabilities."),
    ] = None,
    json: Json = False,
) -> None:
    """Which recipe wins at a planned run: each recipe's default forecast (as `forecast` gives it), the probability
    that each recipe of a pair scores higher, the effective-compute multiplier against a reference, where the curves
    cross, and the simplest alternative's ranking (each recipe's best run at the largest common budget) beside it."""
    if not benchmark:
        raise BenchcastError("name the benchmark(s) to compare the recipes on with -b NAME (repeatable).")
    if backtest and (flops is not None or params is not None):
        raise BenchcastError("--backtest forecasts the held-out budget itself: drop --flops / --params --tokens.")
    if not backtest and (flops is None) == (params is None or tokens is None):
        raise BenchcastError("give the planned run: --flops C, or --params N --tokens D (not both).")
    if out is not None:
        from benchcast.plots.options import check_figure_format

        check_figure_format(out.suffix or "png")
    table = source.read(group=by)
    selection = {**runs, "flops_per_6nd": flops_per_6nd}
    options = {"reference": reference, "decide": decide, "errors": errors, "shape": shape, "proxy": proxy, **selection}
    options.update(uncertainty=uncertainty, **where.kwargs())
    if backtest:
        from benchcast.evaluation.compare_backtest import compare_backtest

        result = compare_backtest(table, by, benchmark, metric, **options)
        shown = result.comparison
    else:
        from benchcast.forecasting.compare import compare

        result = shown = compare(table, by, benchmark, metric, flops=flops, params=params, tokens=tokens, **options)
    if out is not None:
        from benchcast.plots.style import save_figure

        names = list(dict.fromkeys(shown.recipes["benchmark"]))
        for name in names:  # a figure per benchmark: OUT itself for one, OUT_<benchmark> for several
            path = out if len(names) == 1 else out.with_name(f"{out.stem}_{name}{out.suffix}")
            written = save_figure(shown.plot(name), path)
            (err_console if json else console).print(f"wrote {written}")
    show(result, json)
