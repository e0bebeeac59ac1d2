"""CLI commands for generative evaluations: passk, kscan, optimal."""

from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
import typer

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, parse_ks, print_warning, rich_table, user_errors
from benchcast.cli.options import Benchmark, Data, Format, Json, MaxFlops, Metadata, Metric, QRand, Tpr, read
from benchcast.collect.store import SIZES, run_sizes
from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult
from benchcast.laws import get_law
from benchcast.utils.io import atomic_write_text, output_folder

DEFAULT_KS = "1,2,4,8,16,32,64,128,256,512,1024"
OPTIMAL_LABELS = {
    "flops": "compute budget C (FLOPs)",
    "optimal_params": "compute-optimal parameters N*",
    "optimal_tokens": "compute-optimal tokens D*",
    "optimal_tokens_per_param": "compute-optimal tokens per parameter D*/N*",
    "alpha_eff": "envelope exponent alpha_eff",
    "C0_eff": "envelope scale C0_eff",
    "E0": "irreducible -log pass@k E0",
    "optimal_neg_log_passk": "-log pass@k of the compute-optimal run",
    "params": "planned parameters N",
    "tokens": "planned tokens D = C / (6 N)",
    "x": "x = N / N* (planned size over optimal)",
    "penalty": "penalty P(x) >= 1 on the reducible -log pass@k",
    "effective_flops": "effective compute C_eff of the planned run (FLOPs)",
    "neg_log_passk": "-log pass@k of the planned run",
}


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
    extrapolate_to: Annotated[int | None, typer.Option(help="Extend pass@k beyond n with the beta model.")] = None,
    n_boot: Annotated[
        int, typer.Option("--n-boot", "--boot", help="Bootstrap replicates over problems (0: no interval).")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
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
    from benchcast.data.readers import read_frame
    from benchcast.generative.passk import passk_table
    from benchcast.generative.samples import read_counts

    if (gold is not None or per_token) and out is None:
        raise BenchcastError("--gold/--per-token add rows to the --out table; give --out too.")
    counts = read_counts(samples, benchmark=benchmark, run=run)
    table = passk_table(counts, parse_ks(k), n_boot=n_boot, seed=seed, extrapolate_to=extrapolate_to)
    if out is not None:
        tidy = table.rename(columns={"pass_at_k": "value"}).assign(metric="pass@k")
        sources = [run_sizes(_sample_table(samples), str(samples))]
        if gold is not None:
            from benchcast.collect.scoring import gold_table

            scores = read_frame(gold, "gold scores")
            covariate = gold_table(scores, per_token=per_token, problems=counts, source=str(gold))
            tidy = pd.concat([tidy, covariate.drop(columns=list(SIZES), errors="ignore")], ignore_index=True)
            sources.append(run_sizes(scores, str(gold)))
        tidy = _with_sizes(tidy, _merge_sizes(sources, metadata), out)
        atomic_write_text(out, tidy.to_csv(index=False))
    if json:
        emit_json(table.to_dict("records"))
        return
    rows = [
        [r.run, r.benchmark, int(r.k), r.pass_at_k, getattr(r, "lower", np.nan), getattr(r, "upper", np.nan), r.source]
        for r in table.itertuples()
    ]
    console.print(
        rich_table(
            f"pass@k from {samples} ({counts['problem_id'].nunique()} problems; 95 % interval from "
            f"{n_boot} bootstrap replicates over problems)",
            ["run", "benchmark", "k", "pass@k", "lower", "upper", "source"],
            rows,
        )
    )


def _sample_table(path: Path) -> pd.DataFrame:
    """The sample file as a table when it is one (for the run sizes it records), else empty."""
    from benchcast.data.readers import read_frame

    if path.suffix.lower() not in (".csv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json"):
        return pd.DataFrame()
    try:
        return read_frame(path, "sample outcomes")
    except BenchcastError:  # lm-eval logs are not flat tables; read_counts has read them already
        return pd.DataFrame()


def _with_sizes(tidy: pd.DataFrame, sizes: pd.DataFrame, out: Path) -> pd.DataFrame:
    """``tidy`` with each run's sizes; warns about runs that `fit` could not place in compute."""
    if len(sizes.columns) > 1:
        tidy = tidy.merge(sizes, on="run", how="left")
    known = pd.Series(False, index=tidy.index)
    if {"params", "tokens"} <= set(tidy.columns):
        known |= tidy["params"].notna() & tidy["tokens"].notna()
    if "flops" in tidy.columns:
        known |= tidy["flops"].notna()
    unsized = sorted(set(tidy.loc[~known, "run"]))
    if unsized:
        print_warning(f"{out}: no params/tokens known for run(s) {unsized}; `fit` will need them (pass --metadata).")
    return tidy


def _merge_sizes(sources: list[pd.DataFrame], metadata: Path | None) -> pd.DataFrame:
    """Per-run params/tokens/flops: --metadata when given, else what the inputs recorded (they must agree)."""
    if metadata is not None:
        from benchcast.data.readers import _read_metadata

        meta = _read_metadata(metadata)
        return meta[["run", *[c for c in SIZES if c in meta.columns]]]
    merged = pd.DataFrame(columns=["run"])
    for frame in sources:
        if len(frame.columns) <= 1:
            continue
        merged = merged.merge(frame, on="run", how="outer", suffixes=("", "_other"))
        for column in SIZES:
            other = f"{column}_other"
            if other not in merged.columns:
                continue
            clash = merged[column].notna() & merged[other].notna() & ~np.isclose(merged[column], merged[other])
            if clash.any():
                row = merged[clash].iloc[0]
                raise BenchcastError(
                    f"run {row['run']!r} has {column} {row[column]:g} in one input and {row[other]:g} in another; "
                    "fix one, or give --metadata."
                )
            merged[column] = merged[column].fillna(merged[other])
            merged = merged.drop(columns=other)
    return merged


@app.command("kscan")
@user_errors
def kscan_command(
    data: Data,
    law: Annotated[str, typer.Option("--law", "-l", help="compute, params_tokens or gold.")] = "compute",
    benchmark: Benchmark = ...,
    metric: Metric = None,
    ks: Annotated[str | None, typer.Option(help="Comma-separated k (default: every k in the data).")] = None,
    tpr: Tpr = None,
    max_flops: MaxFlops = None,
    format: Format = "auto",
    metadata: Metadata = None,
    q_rand: QRand = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Folder for the table and plot.")] = None,
    json: Json = False,
) -> None:
    """Fit a pass@k law separately at each k and report every parameter as a function of k."""
    from benchcast.generative.kscan import kscan, trend
    from benchcast.plots.figures import plot_kscan

    table = read(data, format, metadata, q_rand)
    scan, fits = kscan(table, law, benchmark, parse_ks(ks), metric=metric, tpr=tpr, max_flops=max_flops)
    if not fits:
        raise BenchcastError(f"no k could be fitted for {benchmark}: {scan.get('error', pd.Series()).tolist()}")
    names = get_law(law).param_names
    trends = {name: trend(scan, name) for name in names}
    if out is not None:
        with output_folder(out) as folder:
            atomic_write_text(folder / f"kscan-{law}-{benchmark}.csv", scan.to_csv(index=False))
            title = f"{law} on {benchmark}: parameters versus k"
            plot_kscan(scan, fits, names, title, folder / f"kscan-{law}-{benchmark}.png")
    if json:
        emit_json({"law": law, "benchmark": benchmark, "scan": scan.to_dict("records"), "trend_per_doubling": trends})
        return
    rows = [
        [int(r["k"])]
        + [r.get(n, np.nan) for n in names]
        + [r.get("n_used", ""), r.get("r2", np.nan), r.get("at_bound", "")]
        for r in scan.to_dict("records")
    ]
    console.print(
        rich_table(f"{law} on {benchmark}, fitted at each k", ["k", *names, "points", "R2", "at bound"], rows)
    )
    console.print("change per doubling of k: " + ", ".join(f"{n} {v:+.4g}" for n, v in trends.items()))


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
    plan = FitResult.load(fit_file).fitted.envelope().plan(flops, params)
    if json:
        emit_json(plan)
        return
    rows = [
        [OPTIMAL_LABELS.get(key, key), f"{value:.6g}" if isinstance(value, float) else value]
        for key, value in plan.items()
    ]
    for key, label in (
        ("optimal_neg_log_passk", "pass@k of the compute-optimal run"),
        ("neg_log_passk", "pass@k of the planned run"),
    ):
        if key in plan:
            rows.append([label, f"{float(np.exp(-plan[key])):.6g}"])
    console.print(rich_table(f"Compute-optimal plan at C = {flops:.3g} FLOPs", ["quantity", "value"], rows))
