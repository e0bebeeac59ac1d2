"""CLI commands that collect covariates from models: score-gold and sample."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, rich_table, user_errors
from benchcast.cli.options import Json
from benchcast.errors import BenchcastError

Models = Annotated[list[str], typer.Option("--model", help="HF id or local path (repeat for checkpoints).")]
Problems = Annotated[str, typer.Option("--problems", help="Problem file (JSONL/CSV/Parquet) or HF dataset name.")]
Out = Annotated[Path, typer.Option("--out", "-o", help="Output table (.parquet or .csv); resumed if it exists.")]
Runs = Annotated[Path | None, typer.Option("--runs", help="YAML/CSV mapping each model to run, params, tokens.")]
Template = Annotated[str | None, typer.Option(help="Prompt template: plain, gsm8k, math or a format string.")]
Backend = Annotated[str, typer.Option(help="transformers or vllm.")]
Dtype = Annotated[str, typer.Option(help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16.")]
Bench = Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name for the rows.")]
Split = Annotated[str, typer.Option(help="HF dataset split.")]
Limit = Annotated[int | None, typer.Option(help="Only the first N problems.")]
Params = Annotated[float | None, typer.Option(help="N of a single model.")]
Tokens = Annotated[float | None, typer.Option(help="D of a single model.")]
Ray = Annotated[str | None, typer.Option("--ray", help="Ray address, 'auto', or 'local'.")]
Shards = Annotated[int, typer.Option(help="Problem shards per checkpoint (Ray tasks).")]


def _checkpoints(models: list[str], runs: Path | None, params: float | None, tokens: float | None) -> list[dict]:
    if runs is None:
        return [{"model": m, "run": m, "params": params, "tokens": tokens} for m in models]
    from benchcast.data.readers import _read_metadata

    meta = _read_metadata(runs)
    by_model = {str(r.get("model", r["run"])): r for r in meta.to_dict("records")}
    missing = [m for m in models if m not in by_model]
    if missing:
        raise BenchcastError(f"{runs}: no entry for model(s) {missing} (match on 'model' or 'run').")
    return [
        {
            "model": m,
            "run": by_model[m]["run"],
            "params": by_model[m].get("params"),
            "tokens": by_model[m].get("tokens"),
        }
        for m in models
    ]


@app.command("score-gold")
@user_errors
def score_gold_command(
    model: Models,
    problems: Problems,
    out: Out,
    backend: Backend = "transformers",
    batch_size: Annotated[int, typer.Option(help="Problems per forward pass (halved on OOM).")] = 8,
    dtype: Dtype = "auto",
    benchmark: Bench = "problems",
    template: Template = None,
    split: Split = "test",
    limit: Limit = None,
    runs: Runs = None,
    params: Params = None,
    tokens: Tokens = None,
    ray: Ray = None,
    shards: Shards = 1,
    json: Json = False,
) -> None:
    """log p(gold solution | prompt) per problem and checkpoint.

    Writes one row per (run, benchmark, problem) with the gold log-probability, the number of
    solution tokens and the NLL: the covariate of the gold law (`--law gold`).
    """
    from benchcast.collect import distributed
    from benchcast.collect.problems import load_problems
    from benchcast.collect.scoring import gold_table

    table = load_problems(problems, split=split, template=template, limit=limit)
    scores = distributed.run(
        "score",
        _checkpoints(model, runs, params, tokens),
        table,
        out=out,
        ray_address=ray,
        shards=shards,
        backend=backend,
        batch_size=batch_size,
        dtype=dtype,
        benchmark=benchmark,
    )
    summary = gold_table(scores)
    failed = int(scores["error"].notna().sum())
    if json:
        emit_json({"out": str(out), "rows": len(scores), "failed": failed, "covariate": summary.to_dict("records")})
        return
    rows = [[r.run, r.benchmark, r.value] for r in summary.itertuples()]
    console.print(
        rich_table(
            f"gold NLL per run ({len(scores)} problem rows, {failed} failed) -> {out}",
            ["run", "benchmark", "G = mean -log GoldProb"],
            rows,
        )
    )


@app.command("sample")
@user_errors
def sample_command(
    model: Models,
    problems: Problems,
    out: Out,
    n: Annotated[int, typer.Option("--n", help="Samples per problem.")] = 100,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    max_new_tokens: Annotated[int, typer.Option(help="Generation length limit.")] = 512,
    backend: Backend = "transformers",
    dtype: Dtype = "auto",
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    benchmark: Bench = "problems",
    template: Template = None,
    split: Split = "test",
    limit: Limit = None,
    runs: Runs = None,
    params: Params = None,
    tokens: Tokens = None,
    ray: Ray = None,
    shards: Shards = 1,
    json: Json = False,
) -> None:
    """Draw n samples per problem, grade the final answers, write per-sample rows for `passk`."""
    from benchcast.collect import distributed
    from benchcast.collect.problems import load_problems
    from benchcast.collect.sampling import to_counts

    table = load_problems(problems, split=split, template=template, limit=limit)
    samples = distributed.run(
        "sample",
        _checkpoints(model, runs, params, tokens),
        table,
        out=out,
        ray_address=ray,
        shards=shards,
        n=n,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        backend=backend,
        dtype=dtype,
        seed=seed,
        benchmark=benchmark,
    )
    counts = to_counts(samples)
    summary = (
        counts.groupby(["run", "benchmark"])
        .agg(problems=("n", "size"), samples=("n", "sum"), correct=("c", "sum"))
        .reset_index()
    )
    if json:
        emit_json(
            {
                "out": str(out),
                "rows": len(samples),
                "failed": int(samples["error"].notna().sum()),
                "summary": summary.to_dict("records"),
            }
        )
        return
    rows = [[r.run, r.benchmark, r.problems, r.samples, r.correct] for r in summary.itertuples()]
    console.print(
        rich_table(
            f"graded samples -> {out} (next: benchcast passk {out})",
            ["run", "benchmark", "problems", "samples", "correct"],
            rows,
        )
    )
