"""CLI command ``bench``: rolling-origin benchmark of forecasting strategies."""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, user_errors
from benchcast.cli.groups import FIGURES, UNCERTAINTY, WHERE, DataSource, Figures, Where
from benchcast.cli.options import Json, LikeTargetRun, Margin, QRand
from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.errors import BenchcastError

BenchBoot = Annotated[int, typer.Option("--n-boot", "--boot", help="Bootstrap replicates per law fit.")]
# the replicates and seed; the interval method is each strategy's (--interval: one for every strategy, or both)
BENCH_UNCERTAINTY = UNCERTAINTY.but(drop=("level", "interval"), boot=(BenchBoot, DEFAULT_REPLICATES), seed=0)


def _pairs(items: list[str] | None) -> tuple[tuple[str, str], ...] | None:
    if not items:
        return None
    pairs = []
    for item in items:
        bench, sep, metric = item.partition(":")
        if not sep or not bench or not metric:
            raise BenchcastError(f"--benchmark takes 'benchmark:metric' (e.g. arc_easy:acc_norm), got {item!r}.")
        pairs.append((bench, metric))
    return tuple(pairs)


@app.command("bench")
@user_errors
def bench_command(
    data: Annotated[
        list[Path] | None, typer.Option("--data", help="Data file or folder; repeat for several data sets.")
    ] = None,
    format: Annotated[
        list[str] | None, typer.Option("--format", help="Format of each --data (in order; default: auto).")
    ] = None,
    metadata: Annotated[
        list[Path] | None, typer.Option("--metadata", help="Run metadata of each lm-eval --data (in order).")
    ] = None,
    preset: Annotated[
        list[str] | None,
        typer.Option("--preset", help="Bundled setting: apple-dclm, apple-dclm-tpr, apple-c4 (repeatable)."),
    ] = None,
    benchmark: Annotated[
        list[str] | None, typer.Option("--benchmark", "-b", help="'benchmark:metric' (repeat; default: all).")
    ] = None,
    strategy: Annotated[
        list[str] | None, typer.Option("--strategy", "-s", help="Strategy (repeat; default: all).")
    ] = None,
    law: Annotated[list[str] | None, typer.Option("--law", "-l", help="Law to fit and bench (repeat).")] = None,
    candidate: Annotated[
        list[str] | None,
        typer.Option(
            "--candidate",
            help="Law combined by ensemble/stack/select (repeat; default from the ladder: power_floor, bnsl_monotone "
            "at one TPR, nd_floor, power_floor_tpr across TPRs; power, nd where none has support).",
        ),
    ] = None,
    threshold: Annotated[list[float] | None, typer.Option("--threshold", help="Cutoff in FLOPs (repeat).")] = None,
    cutoffs: Annotated[
        int | None, typer.Option("--cutoffs", help="N cutoffs spread over the top of the compute range.")
    ] = None,
    holdout_largest: Annotated[
        int | None,
        typer.Option(
            "--holdout-largest",
            help="Hold out the K largest rungs (distinct computes) of each data set's ladder and fit on the rest: "
            "one cutoff, at the distance you care about (not with --threshold or --cutoffs).",
            metavar="K",
        ),
    ] = None,
    tpr: Annotated[float | None, typer.Option(help="Only runs with this tokens-per-parameter ratio.")] = None,
    min_flops: Annotated[float | None, typer.Option(help="Only runs with C >= this.")] = None,
    holdout_tpr: Annotated[
        list[float] | None,
        typer.Option("--holdout-tpr", help="Hold out every run at this tokens-per-parameter ratio (repeat)."),
    ] = None,
    holdout_params: Annotated[
        float | None,
        typer.Option(
            "--holdout-params",
            help='Hold out every run of N parameters or more and fit the smaller models ("fit < 1B, forecast 3B"); '
            "alone, the one cutoff is the largest smaller model's compute.",
            metavar="N",
        ),
    ] = None,
    like_target: LikeTargetRun = None,
    q_rand: QRand = None,
    margin: Margin = None,
    uncertainty=BENCH_UNCERTAINTY,
    interval: Annotated[
        str | None,
        typer.Option(
            "--interval",
            help="'extrapolation' or 'bootstrap': every strategy once with that interval (default: both).",
        ),
    ] = None,
    where: Where = WHERE,
    figures: Figures = FIGURES,
    json: Json = False,
) -> None:
    """Rolling-origin backtests of forecasting strategies: error, interval coverage and width."""
    from benchcast.evaluation.bench import Dataset, bench, ladder, score_benchmarks
    from benchcast.evaluation.bench_result import write_outputs
    from benchcast.evaluation.strategies import FIXED_LAWS, SELECTORS, Combine, parse_strategy
    from benchcast.studies.legacy import HOLDOUT
    from benchcast.studies.presets import locate, preset_dataset
    from benchcast.validation import check_count, check_interval, check_replicates

    check_replicates(uncertainty.n_boot, allow_zero=False)
    check_count("--cutoffs", cutoffs)
    if interval is not None:
        check_interval(interval)
    if preset:
        fixed = {
            "--q-rand": q_rand,
            "--tpr": tpr,
            "--min-flops": min_flops,
            "--holdout-tpr": holdout_tpr,
            "--format": format,
            "--metadata": metadata,
        }
        given = [name for name, value in fixed.items() if value is not None and value != []]
        if given:
            raise BenchcastError(
                f"{', '.join(given)} cannot be combined with --preset: a preset reads its Apple file with its own "
                "chance levels, tokens-per-parameter ratio and compute floor. To set them, give the file with "
                "--data instead of --preset."
            )
        if data and (len(preset) != 1 or len(data) != 1):
            raise BenchcastError(
                f"--data with --preset replaces that preset's Apple file, so it takes one --preset and one --data; "
                f"got {len(preset)} --preset and {len(data)} --data."
            )
    else:
        for name, values in (("--format", format), ("--metadata", metadata)):
            if values and len(values) > len(data or []):
                raise BenchcastError(
                    f"{len(values)} {name} for {len(data or [])} --data: each {name} belongs to the --data at "
                    "the same position."
                )
    if threshold and cutoffs is not None:
        raise BenchcastError(
            "--threshold gives the cutoffs, --cutoffs the number of cutoffs to place: give one or the other."
        )
    if (
        candidate
        and strategy
        and not any(isinstance(parse_strategy(name, choosers=(HOLDOUT,)), Combine) for name in strategy)
    ):
        raise BenchcastError(
            f"--candidate names the laws that {'/'.join(SELECTORS)} combine; none of the --strategy given combines "
            "laws."
        )
    datasets = []
    for name in preset or []:
        given = data[0] if data and len(preset) == 1 and len(data) == 1 else None
        datasets.append(preset_dataset(name, given or locate(name)))

    def cuts(table, at):  # the cutoffs asked, or N (default 3) placed on the top of the ladder
        return tuple(threshold) if threshold else ladder(table, cutoffs or 3, tpr=at)

    for i, path in enumerate([] if preset else data or []):
        fmt = format[i] if format and i < len(format) else "auto"
        meta = metadata[i] if metadata and i < len(metadata) else None
        table = DataSource(path, fmt, meta, q_rand=q_rand, margin=margin).read()
        pairs = _pairs(benchmark) or score_benchmarks(table)
        datasets.append(Dataset(path.stem, table, pairs, cuts(table, tpr), tpr, min_flops, tuple(holdout_tpr or ())))
    if preset and (benchmark or threshold or cutoffs):
        from dataclasses import replace

        datasets = [
            replace(
                d,
                benchmarks=_pairs(benchmark) or d.benchmarks,
                cutoffs=cuts(d.table, d.tpr) if threshold or cutoffs else d.cutoffs,
            )
            for d in datasets
        ]
    if not datasets:
        raise BenchcastError("give --data FILE (repeatable) or --preset apple-dclm / apple-dclm-tpr / apple-c4.")
    held_out = []
    own = bool(threshold) or cutoffs is not None
    if like_target is not None and (own or holdout_largest is not None or holdout_params is not None):
        raise BenchcastError(
            "--like-target places its own split: give it without --threshold, --cutoffs, "
            "--holdout-largest or --holdout-params."
        )
    if holdout_largest is not None and own:
        raise BenchcastError(
            f"--holdout-largest {holdout_largest} places the one cutoff below the {holdout_largest} largest rungs; "
            f"{'--threshold' if threshold else '--cutoffs'} places others: give one or the other."
        )
    for i, d in enumerate(datasets):
        datasets[i], words = _split_settings(d, holdout_largest, holdout_params, like_target, own)
        held_out += [f"{d.name}: {line}" for line in words]
    # the simplest alternatives, and on a ladder across TPRs the forecaster's own candidates for it
    laws = tuple(law or dict.fromkeys((*FIXED_LAWS, *(c for d in datasets for c in _tpr_candidates(d)))))
    candidates = tuple(candidate) if candidate else None  # None: each data set's ladder decides (and its fallback)
    result = bench(
        datasets,
        strategy,
        laws=laws,
        candidates=candidates,
        uncertainty=uncertainty,
        **where.kwargs(),
        choosers=(HOLDOUT,),  # the earlier release's law choice, a row to measure the others against
        strategy_interval=interval,
    )
    written = write_outputs(result, figures.out, figures.format, figures.dpi) if figures.out else []
    if json:
        emit_json(result.to_dict()["rows"])
        return
    for line in held_out:
        console.print(escape(line), highlight=False)
    console.print(result)
    for path in written:
        console.print(escape(f"wrote {path}"))


def _tpr_candidates(data) -> tuple[str, ...]:
    """The default forecaster's candidates for a data set whose training runs span TPRs (none at one TPR)."""
    from benchcast.forecasting.selection import ladder_laws
    from benchcast.laws.questions import spans_tprs

    rows, splits = data.splits(*data.benchmarks[0])
    seen = data.table.drop_duplicates("run")
    seen = seen[seen["run"].isin(set(rows["run"][splits[0].train]))] if splits else seen.iloc[:0]
    return ladder_laws(seen)[0] if spans_tprs(seen) else ()


def _split_settings(data, largest: int | None, params: float | None, like: tuple | None, own: bool):
    """A data set with the split options as its splitter, and what each holds out, in words."""
    from dataclasses import replace

    from benchcast.evaluation.evaluate import LargestRuns, LikeTarget
    from benchcast.forecasting.targets import flops_convention

    words, rows = [], data.rows(*data.benchmarks[0])  # what the words say: the first benchmark's split
    if largest is not None:
        splitter = LargestRuns(largest, min_flops=data.min_flops)
        cut, rungs = splitter.rungs(rows)
        data = replace(data, split=splitter)
        shown = ", ".join(f"{c:.3g}" for c in rungs)
        words.append(f"held out the {largest} largest rung(s) (C = {shown} FLOPs); fit on C <= {cut:.3g}")
    if params is not None:
        mine = own or largest is not None
        data = replace(data, holdout_params=params, cutoffs=data.cutoffs if mine else ())
        words.append(f"held out every run of {params:.3g} parameters or more")
    if like is not None:
        convention = flops_convention(data.table, tpr=data.tpr, min_flops=data.min_flops)
        splitter = LikeTarget.of_run(*like, convention, min_flops=data.min_flops)
        data = replace(data, split=splitter)
        words.append(splitter.reach(rows))
    return data, words
