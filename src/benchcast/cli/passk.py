"""CLI commands for generative evaluations: passk, kscan, optimal."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import parse_ks, refuse_options, show, user_errors
from benchcast.cli.groups import FIGURES, RUNS, SOURCE, UNCERTAINTY, DataSource, Figures
from benchcast.cli.options import Benchmark, Json, Metadata, Metric
from benchcast.errors import BenchcastError
from benchcast.utils.io import atomic_write_text, output_folder

DEFAULT_KS = "1,2,4,8,16,32,64,128,256,512,1024"
# the bootstrap over problems: its own defaults and help (no interval method)
PASSK_UNCERTAINTY = UNCERTAINTY.but(
    drop=("interval",),
    level=(Annotated[float, typer.Option("--level", help="Interval level, in (0, 1).")], 0.9),
    boot=(
        Annotated[int, typer.Option("--n-boot", "--boot", help="Bootstrap replicates over problems (0: no interval).")],
        1000,
    ),
    seed=(Annotated[int, typer.Option(help="Bootstrap seed.")], 0),
)
KSCAN_FIGURES = FIGURES.but(
    out=Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the table and plot.")]
)


@app.command("passk")
@user_errors
def passk_command(
    samples: Annotated[
        Path,
        typer.Argument(
            help="Per-problem (problem_id,n,c) or per-sample (problem_id,correct) "
            "CSV/Parquet/JSONL, or lm-eval --log_samples JSONL."
        ),
    ],
    k: Annotated[str, typer.Option("--k", help="Comma-separated k values.")] = DEFAULT_KS,
    extrapolate_to: Annotated[
        int | None, typer.Option(help="Forecast pass@k past n up to this k, with an interval (see --family).")
    ] = None,
    family: Annotated[
        str,
        typer.Option(
            "--family",
            help="How pass@k is forecast past n: auto (the candidate of least error in a backtest in k inside the "
            "samples: thin to n/10, forecast pass@n), power_k (-log pass@k = a k^-b, the aggregate power law in k), "
            "a distribution of per-problem success rates: beta, zi_beta (a never-solved mass plus a beta), "
            "beta_mix (two betas), or joint (one item-response model of every run of the benchmark: problems keep "
            "their difficulty across runs, abilities follow log compute from the sample file's run sizes or "
            "--metadata). Under any choice, a run that solved nothing is answered by the joint model.",
        ),
    ] = "auto",
    uncertainty=PASSK_UNCERTAINTY,
    benchmark: Annotated[
        str | None, typer.Option("--benchmark", "-b", help="Benchmark name if the file has none.")
    ] = None,
    run: Annotated[str | None, typer.Option(help="Run name if the file has none.")] = None,
    metadata: Metadata = None,
    gold: Annotated[
        Path | None,
        typer.Option(
            "--gold",
            help="Per-problem gold scores (score-gold --out): add each run's gold covariate rows to --out "
            "(metric loglikelihood = mean over the sampled problems of log p(gold | prompt)) for `fit --law gold`.",
        ),
    ] = None,
    per_token: Annotated[
        bool, typer.Option("--per-token", help="With --gold: per-token log-probabilities (loglikelihood_per_token).")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Tidy CSV for `fit`/`kscan`: pass@k rows, run sizes, gold rows."),
    ] = None,
    json: Json = False,
) -> None:
    """pass@k with bootstrap intervals from sampled outcomes (beta model beyond the sampled n).

    Run sizes (params, tokens) recorded by `sample --runs` are carried into --out; --metadata
    overrides them. With --gold, the gold covariate is averaged over exactly the problems pass@k
    was computed on.
    """
    from benchcast.generative.past_n import passk_table
    from benchcast.generative.samples import read_counts
    from benchcast.generative.tables import PassKTable, passk_tidy

    if (gold is not None or per_token) and out is None:
        raise BenchcastError("--gold/--per-token add rows to the --out table; give --out too.")
    if per_token and gold is None:
        raise BenchcastError("--per-token says how --gold's scores are averaged; give --gold too.")
    if metadata is not None and out is None and extrapolate_to is None:
        raise BenchcastError(
            "--metadata gives the run sizes written to the --out table, or with --extrapolate-to the "
            "compute that places runs on the ladder past n; give --out too (or --extrapolate-to)."
        )
    refuse_options(
        {"--seed": uncertainty.n_boot == 0 and uncertainty.seed != 0},
        "it seeds the bootstrap over problems, and --n-boot 0 asks for none; drop it, or give --n-boot N.",
    )
    counts = read_counts(samples, benchmark=benchmark, run=run)
    for flag, column, value in (("--run", "run", run), ("--benchmark", "benchmark", benchmark)):
        if value is not None and (counts[column] != value).any():
            raise BenchcastError(
                f"{flag} {value!r} names the {column} of a sample file that has none, and {samples} has its own "
                f"({', '.join(sorted(set(counts[column]))[:5])}): drop {flag}."
            )
    from benchcast.generative.tables import run_flops

    table = passk_table(
        counts,
        parse_ks(k),
        uncertainty=uncertainty,
        extrapolate_to=extrapolate_to,
        family=family,
        compute=run_flops(samples, metadata),
    )
    if out is not None:
        tidy = passk_tidy(
            table, samples, counts=counts, gold=gold, per_token=per_token, metadata=metadata, destination=out
        )
        atomic_write_text(out, tidy.to_csv(index=False))
    problems = counts["problem_id"].nunique()
    result = PassKTable(table, str(samples), problems, uncertainty.n_boot, uncertainty.level)
    show(result, json, lambda r: r.to_dict()["rows"])


@app.command("kscan")
@user_errors
def kscan_command(
    source: DataSource = SOURCE,
    law: Annotated[str, typer.Option("--law", "-l", help="compute, params_tokens or gold.")] = "compute",
    benchmark: Benchmark = ...,
    metric: Metric = None,
    ks: Annotated[str | None, typer.Option(help="Comma-separated k (default: every k in the data).")] = None,
    runs: dict = RUNS,
    figures: Figures = KSCAN_FIGURES,
    json: Json = False,
) -> None:
    """Fit a pass@k law separately at each k and report every parameter as a function of k."""
    from benchcast.generative.kscan import kscan

    table = source.read()
    scan = kscan(table, law, benchmark, parse_ks(ks), metric=metric, **runs).require_fits()
    if figures.out is not None:
        with output_folder(figures.out) as folder:
            scan.write(folder, figures.format, figures.dpi)
    show(scan, json)


@app.command("optimal")
@user_errors
def optimal_command(
    fit_file: Annotated[Path, typer.Argument(help="A params_tokens (S2) fit artifact.")],
    flops: Annotated[float, typer.Option("--flops", "-C", help="Compute budget C (FLOPs).")],
    params: Annotated[float | None, typer.Option("--params", "-N", help="A planned model size N to assess.")] = None,
    json: Json = False,
) -> None:
    """Compute-optimal N*, D* for a budget, and the penalty of a planned N.

    Also reports the envelope (C0_eff, alpha_eff) and the effective compute of the planned run.
    """
    from benchcast.fitting.result import FitResult
    from benchcast.generative.tables import OptimalPlan

    show(OptimalPlan(FitResult.load(fit_file).fitted.envelope().plan(flops, params)), json)
