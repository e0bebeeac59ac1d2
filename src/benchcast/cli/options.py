"""Option and argument types shared by the commands; no pandas or numpy (``--help`` imports this module)."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.data import FORMATS
from benchcast.defaults import ALL_BENCHMARKS

Data = Annotated[
    Path,
    typer.Argument(
        help="Data: tidy CSV/Parquet, Apple long CSV, lm-eval results JSON/folder, or training-log exports (W&B "
        "histories: a folder of per-run CSV/Parquet files, or one file with a run column)."
    ),
]
Format = Annotated[str, typer.Option("--format", help=f"Input format: {', '.join(FORMATS)}.")]
Metadata = Annotated[
    Path | None,
    typer.Option(
        help="Run metadata (YAML/CSV: run, params, tokens) for lm-eval results; for training-log exports run, "
        "params[, tokens or final_step: the final checkpoint]."
    ),
]
Columns = Annotated[
    list[str] | None,
    typer.Option(
        "--column",
        metavar="FILE_COLUMN=NAME",
        help="Read a column of a tidy file or training-log export as one benchcast knows (run, params, tokens, flops, "
        "step; e.g. --column throughput/total_flops=flops); repeatable.",
    ),
]
Samples = Annotated[
    Path | None,
    typer.Option(
        "--samples",
        help="lm-eval --log_samples files' folder (or one file): the multiple-choice tasks' chance levels are "
        "counted from their answer choices (those beside the results files are read anyway).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
Benchmark = Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name.")]
Benchmarks = Annotated[
    list[str] | None,
    typer.Option(
        "--benchmark",
        "-b",
        help="With a data file: the benchmark (repeatable: one table, one JSON list); BENCHMARK:METRIC names its "
        "metric, else -m's.",
    ),
]
Metric = Annotated[
    str | None, typer.Option("--metric", "-m", help="Metric (acc, acc_norm, exact_match, pass@k, pass@8...).")
]


def law_option(ctx: typer.Context, param, value):
    """``--law`` values, refused where one names a strategy (it chooses and blends laws: bench backtests it)."""
    if ctx.resilient_parsing or not value:
        return value
    from benchcast.forecasting.selection import SELECTION_RULES

    if strategies := [name for name in value if name in SELECTION_RULES]:
        raise typer.BadParameter(
            f"{strategies[0]!r} is a strategy (it chooses and blends laws), not a law: `benchcast bench --data DATA "
            f"-b BENCHMARK -s {strategies[0]}` backtests it beside the laws; --law takes a law (`benchcast laws`)."
        )
    return value


Laws = Annotated[
    list[str] | None,
    typer.Option("--law", "-l", help="Law name; repeat to compare (default: power).", callback=law_option),
]
Threshold = Annotated[float, typer.Option(help="Compute threshold T (FLOPs): fit C <= T, test C > T.")]


# the run selection of every command that fits (fit, backtest, forecast, recommend, report...): one definition
def positive_option(ctx: typer.Context, param, value):
    """A size option's value(s), refused naming the option where one is not positive and finite."""
    from benchcast.errors import BenchcastError
    from benchcast.validation import check_positive

    if ctx.resilient_parsing:
        return value
    for item in value if isinstance(value, (list, tuple)) else [value]:
        try:
            check_positive(param.opts[0].lstrip("-"), item)
        except BenchcastError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


Tpr = Annotated[
    float | None,
    typer.Option(
        help="Use only runs with this tokens-per-parameter ratio (matched within 1 %: 20 selects 20.013).",
        callback=positive_option,
    ),
]
MinFlops = Annotated[float | None, typer.Option(help="Fit only runs with C >= this.", callback=positive_option)]
MaxFlops = Annotated[float | None, typer.Option(help="Fit only runs with C <= this.", callback=positive_option)]
FlopsPer6ND = Annotated[
    float | None,
    typer.Option(
        "--flops-per-6nd",
        help="Place a planned run (--params N --tokens D) at C = R x 6 N D (default: the data's own convention, "
        "FLOPs / (6 N D) of its selected runs, log-linear in N; 1 where it gives no FLOPs).",
        metavar="R",
        callback=positive_option,
    ),
]
# a planned run given by its size ("my 7B on 4T tokens"): C = 6 N D, TPR = D / N; not with the compute options
PlannedParams = Annotated[
    list[float] | None,
    typer.Option(
        "--params",
        "-N",
        help="Parameters N of a planned run, with --tokens (repeatable, paired in order).",
        metavar="N",
    ),
]
PlannedTokens = Annotated[
    list[float] | None,
    typer.Option(
        "--tokens",
        "-D",
        help="Training tokens D of a planned run, with --params (C = 6 N D at the data's FLOPs convention, "
        "TPR = D / N).",
        metavar="D",
    ),
]
Proxy = Annotated[
    str | None,
    typer.Option(help="Proxy 'benchmark:metric' for two-stage laws (default: the benchmark's own loglikelihood)."),
]
LikeTargetRun = Annotated[
    tuple[float, float] | None,
    typer.Option(
        "--like-target",
        help="A planned run N D (e.g. 7e9 4e12): hold out the largest runs and the highest TPRs so that the backtest "
        "reaches as far beyond its fitted runs, in compute and in TPR, as the run lies beyond the ladder, and say how "
        "far short it falls (not with --threshold).",
        metavar="N D",
    ),
]
OutDir = Annotated[Path | None, typer.Option("--out", "-o", help="Folder for CSV tables and figures.")]
NBoot = Annotated[
    int, typer.Option("--n-boot", "--boot", help="Bootstrap replicates over runs for the intervals (0: none).")
]
Level = Annotated[float, typer.Option("--level", help="Interval level, e.g. 0.9.")]
Seed = Annotated[int, typer.Option("--seed", help="Random seed (bootstrap, global search).")]
Jobs = Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores).")]


def _interval_option(value: str | None) -> str | None:
    """``--interval`` checked as it is parsed, so a wrong kind is refused naming the option, before any work."""
    from benchcast.errors import BenchcastError
    from benchcast.validation import check_interval

    if value is None:
        return value
    try:
        return check_interval(value)
    except BenchcastError as exc:
        raise typer.BadParameter(str(exc)) from None


from benchcast.defaults import DEFAULT_INTERVAL  # noqa: E402  (the one table of defaults)

Interval = Annotated[
    str,
    typer.Option(
        "--interval",
        help="'extrapolation' (bootstrap plus the extrapolation error measured inside your runs) or 'bootstrap'.",
        callback=_interval_option,
    ),
]


def refuse_interval_without_boot(uncertainty) -> None:
    """Refuse ``--interval`` given with ``--n-boot 0``: it would choose the kind of an interval none asked for."""
    from benchcast.cli.common import refuse_options

    refuse_options(
        {"--interval": uncertainty.n_boot == 0 and uncertainty.interval != DEFAULT_INTERVAL},
        "it chooses the kind of interval, and --n-boot 0 asks for none; drop it, or give --n-boot N.",
    )


def parse_q_rand(values: list[str] | None, option: str = "--q-rand") -> dict[str, float]:
    """``--q-rand``/``--margin`` values (BENCHMARK[:METRIC]=VALUE, or VALUE for all) as a mapping; checked."""
    import math

    from benchcast.errors import DataError

    levels: dict[str, float] = {}
    for text in values or []:
        name, equals, number = str(text).rpartition("=")
        if not equals:  # a bare VALUE applies to every benchmark of the command
            name, equals = ALL_BENCHMARKS, "="
        if not name.strip():
            raise DataError(f"{option} {text!r}: expected BENCHMARK=VALUE (or BENCHMARK:METRIC=VALUE), e.g. piqa=0.5.")
        try:
            level = float(number)
        except ValueError:
            raise DataError(f"{option} {text!r}: {number!r} is not a number.") from None
        if not (math.isfinite(level) and 0.0 <= level < 1.0):
            raise DataError(f"{option} {text!r}: a value must lie in [0, 1).")
        key = name.strip()
        if key in levels and levels[key] != level:
            raise DataError(f"{option}: {key!r} is given twice ({levels[key]} and {level}).")
        levels[key] = level
    return levels


QRand = Annotated[
    list[str] | None,
    typer.Option(
        "--q-rand",
        help="Chance level Q_rand: BENCHMARK=VALUE or BENCHMARK:METRIC=VALUE (repeatable), or one VALUE for all.",
    ),
]
Margin = Annotated[
    list[str] | None,
    typer.Option(
        "--margin",
        metavar="M",
        help="Chance filter: runs scoring at most chance + M are left out of the fits (default 0.05; LBPP 0.02; "
        "0 keeps every run above chance). One M for all, or BENCHMARK=M / BENCHMARK:METRIC=M (repeatable).",
    ),
]
# help text is Rich markup: a literal '[' is written '\\[' (or Rich drops '[ray]' as a tag)
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS|auto",
        help="Run the independent jobs as Ray tasks on the cluster at ADDRESS ('auto': the running cluster; "
        "'local': a new one on this machine); needs pip install 'benchcast\\[ray]'. Default: a local process pool.",
    ),
]

FigureFormat = Annotated[
    str,
    typer.Option(
        "--figure-format", help="File format of the figures written: png, svg or pdf (--format is the input's)."
    ),
]
Dpi = Annotated[
    int | None, typer.Option("--dpi", help="Resolution of raster (PNG) figures in dots per inch (default: 200).")
]


def figure_options(figure_format: str, dpi: int | None, writes: bool) -> tuple[str, int | None]:
    """``--figure-format`` and ``--dpi`` checked before any work; refused where nothing is drawn."""
    from benchcast.cli.common import refuse_options
    from benchcast.plots.options import check_dpi, check_figure_format

    if not writes:
        refuse_options(
            {"--figure-format": figure_format != "png", "--dpi": dpi is not None},
            "figure options apply to the figures --out writes, and without --out none is written: "
            "give --out or drop {them}.",
        )
    return check_figure_format(figure_format), None if dpi is None else check_dpi(dpi)


def check_runs(
    flops: list[float] | None, params: list[float] | None, tokens: list[float] | None, compute_option: str = "--flops"
) -> None:
    """Refuse compute beside --params/--tokens, one of --params and --tokens alone, or unpaired counts."""
    from benchcast.data.units import check_planned
    from benchcast.errors import BenchcastError
    from benchcast.forecasting.targets import planned_runs

    if flops and (params or tokens):
        raise BenchcastError(
            f"give the run(s) to forecast either by their compute ({compute_option} C) or as planned runs (--params N "
            f"--tokens D: C = 6 N D, TPR = D / N), not both; drop {compute_option} or drop --params/--tokens."
        )
    if bool(params) != bool(tokens):
        given, missing = ("--params", "--tokens") if params else ("--tokens", "--params")
        raise BenchcastError(
            f"{given} was given without {missing}: a planned run is N parameters trained on D tokens, so it needs "
            "both (e.g. --params 7e9 --tokens 4e12)."
        )
    if params and len(params) != len(tokens):
        raise BenchcastError(
            f"give one --tokens per --params (paired in order): got {len(params)} --params and {len(tokens)} --tokens."
        )
    if flops or params:
        planned_runs(flops or None, params or None, tokens or None)  # sizes positive and finite
        check_planned(params or None, tokens or None)  # --params 7000: in millions?


def option_values(values: list[float] | None):
    """A repeatable option's values as the API takes them: None, one number, or an array."""
    import numpy as np

    if not values:
        return None
    return float(values[0]) if len(values) == 1 else np.asarray(values, float)


def benchmark_metrics(benchmarks: list[str], metric: str | None) -> list[tuple[str, str | None]]:
    """``-b`` values as (benchmark, metric) pairs: ``NAME:METRIC`` names its own metric, ``NAME`` takes ``-m``'s."""
    from benchcast.errors import BenchcastError

    pairs = []
    for text in benchmarks:
        name, _, own = text.partition(":")
        if not name.strip():
            raise BenchcastError(f"-b {text!r}: expected BENCHMARK or BENCHMARK:METRIC.")
        pairs.append((name.strip(), own.strip() or metric))
    if len(set(pairs)) < len(pairs):
        raise BenchcastError(f"-b: a benchmark is given twice ({', '.join(benchmarks)}).")
    return pairs


def benchmark_metric(benchmark: str, metric: str | None) -> tuple[str, str | None]:
    """One ``-b`` value as (benchmark, metric); a different ``-m`` beside NAME:METRIC is refused."""
    from benchcast.errors import BenchcastError

    ((name, own),) = benchmark_metrics([benchmark], None)
    if own is not None and metric is not None and own != metric:
        raise BenchcastError(f"-b {benchmark!r} names metric {own!r} and -m names {metric!r}: give one.")
    return name, own if own is not None else metric
