"""CLI commands that collect covariates from models: score-gold and sample."""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import Group, console, emit_json, rich_table, user_errors
from benchcast.cli.options import Json
from benchcast.errors import BenchcastError, DataError
from benchcast.utils.io import atomic_write_text

Models = Annotated[list[str], typer.Option("--model", help="HF id or local path (repeat for checkpoints).")]
Problems = Annotated[str, typer.Option("--problems", help="Problem file (JSONL/CSV/Parquet) or HF dataset name.")]
Out = Annotated[Path, typer.Option("--out", "-o", help="Output table (.parquet or .csv); resumed if it exists.")]
Runs = Annotated[
    Path | None,
    typer.Option("--runs", help="YAML/CSV: per run its name (run), checkpoint (model), params and tokens."),
]
Backend = Annotated[str, typer.Option(help="transformers or vllm.")]
Dtype = Annotated[str, typer.Option(help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16.")]


@dataclass(frozen=True)
class Collection:
    """The problems a collecting command reads and the runs its checkpoints are recorded under (``--runs``...)."""

    benchmark: str = "problems"
    template: str | None = None
    split: str = "test"
    limit: int | None = None
    runs: Path | None = None
    params: float | None = None
    tokens: float | None = None

    def run(self, kind: str, models: list[str], problems: str, out: Path, *, ray, shards, verbose, **settings):
        """Each checkpoint's rows of ``kind`` ('score' or 'sample') on the problems, written to ``out``."""
        from benchcast.collect import distributed
        from benchcast.collect.models import quiet_libraries
        from benchcast.collect.problems import load_problems

        checkpoints = _checkpoints(models, self.runs, self.params, self.tokens, shards, ray)
        quiet_libraries(verbose)  # before datasets loads the problems
        problem_set = load_problems(problems, split=self.split, template=self.template, limit=self.limit)
        how = {"ray_address": ray, "shards": shards, "benchmark": self.benchmark, "verbose": verbose}
        return distributed.run(kind, checkpoints, problem_set, out=out, **how, **settings)


PROBLEMS = Group(
    Collection,
    {
        "benchmark": (
            Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name for the rows.")],
            "problems",
        ),
        "template": (
            Annotated[str | None, typer.Option(help="Prompt template: plain, gsm8k, math or a format string.")],
            None,
        ),
        "split": (Annotated[str, typer.Option(help="HF dataset split.")], "test"),
        "limit": (Annotated[int | None, typer.Option(help="Only the first N problems.")], None),
        "runs": (Runs, None),
        "params": (Annotated[float | None, typer.Option(help="N of a single model.")], None),
        "tokens": (Annotated[float | None, typer.Option(help="D of a single model.")], None),
    },
)
CLUSTER = Group(
    dict,
    {
        "ray": (Annotated[str | None, typer.Option("--ray", help="Ray address, 'auto', or 'local'.")], None),
        "shards": (Annotated[int, typer.Option(help="Problem shards per checkpoint (Ray tasks).")], 1),
        "verbose": (
            Annotated[
                bool,
                typer.Option(
                    "--verbose",
                    help="Show the progress bars and logs of transformers, vLLM, datasets and huggingface_hub.",
                ),
            ],
            False,
        ),
    },
)


def _number(value, path: Path, run: str, field: str) -> float | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    try:  # YAML 1.1 reads 8.0e5 (no sign in the exponent) as a string
        number = float(value)
    except (TypeError, ValueError):
        raise DataError(f"{path}: {field} of run {run!r} must be a number, got {value!r}.") from None
    if not number > 0:
        raise DataError(f"{path}: {field} of run {run!r} must be positive, got {value!r}.")
    return number


def _read_runs(path: Path) -> list[dict]:
    """Entries of a runs file: ``run`` (the name), ``model`` (HF id or path), params, tokens, flops."""
    from benchcast.collect.store import SIZES

    if not path.exists():
        raise DataError(f"{path}: runs file not found.")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # only for a YAML runs file (15 ms that other commands need not pay)

        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not valid YAML ({exc}).") from exc
        if isinstance(raw, dict) and "runs" in raw:
            raw = raw["runs"]
        if isinstance(raw, dict):
            raw = [{"run": name, **(fields or {})} for name, fields in raw.items()]
        if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
            raise DataError(f"{path}: expected a list of runs, each with run, model, params and tokens.")
        entries = raw
    else:
        from benchcast.data.readers import read_frame

        entries = read_frame(path, "a runs table").to_dict("records")
    runs = []
    for number, entry in enumerate(entries, 1):
        if entry.get("run") is None:
            raise DataError(f"{path}: entry {number} has no 'run' (the run's name).")
        run = str(entry["run"])
        sizes = {c: _number(entry.get(c), path, run, c) for c in SIZES}
        runs.append({"run": run, "model": str(entry.get("model") or run), **sizes})
    return runs


def _checkpoints(
    models: list[str],
    runs: Path | None,
    params: float | None,
    tokens: float | None,
    shards: int = 1,
    ray: str | None = None,
) -> list[dict]:
    """One entry per --model: the run name and sizes it is recorded under."""
    if shards != 1 and ray is None:
        raise BenchcastError(
            f"--shards {shards} splits each checkpoint's problems into Ray tasks; without --ray they would run one "
            "after another in this process, as one shard does: give --ray ADDRESS (or 'local'), or drop --shards."
        )
    if runs is not None and (params is not None or tokens is not None):
        raise BenchcastError(
            f"--params/--tokens give the sizes of one model without a runs file; with --runs {runs} each run's "
            "params and tokens come from that file: drop --params/--tokens, or put the sizes in the file."
        )
    if runs is None:
        if len(models) > 1 and (params is not None or tokens is not None):
            raise BenchcastError("--params/--tokens describe one model; for several, give their sizes in --runs.")
        return [{"model": m, "run": m, "params": params, "tokens": tokens} for m in models]
    by_model: dict[str, dict] = {}
    for entry in _read_runs(runs):
        if entry["model"] in by_model:
            raise DataError(f"{runs}: model {entry['model']!r} is listed twice.")
        by_model[entry["model"]] = entry
    missing = [m for m in models if m not in by_model]
    if missing:
        raise DataError(f"{runs}: no entry whose 'model' (or, without one, 'run') is {missing[0]!r}.")
    return [by_model[m] for m in models]


PerToken = Annotated[
    bool, typer.Option("--per-token", help="Divide each problem's log-probability by its solution tokens first.")
]
GOLD_HELP = (
    "The covariate of the gold law, per run: loglikelihood = mean over problems of "
    "log p(gold solution | prompt) (summed over solution tokens; --per-token: divided by them), "
    "so G = -loglikelihood = mean -log GoldProb."
)


def print_gold(summary, title: str) -> None:
    """The gold covariate table, with its aggregation stated."""
    rows = [[r.run, r.benchmark, r.problems, r.failed, r.value, -r.value] for r in summary.itertuples()]
    metric = str(summary["metric"].iloc[0]) if len(summary) else "loglikelihood"
    console.print(rich_table(title, ["run", "benchmark", "problems", "failed", metric, "G"], rows))
    if len(summary):
        console.print(f"{metric} = {summary['aggregation'].iloc[0]}; G = -{metric}.", highlight=False, markup=False)


@app.command(
    "score-gold",
    short_help="log p(gold solution | prompt) per problem and checkpoint; the gold law's covariate per run.",
    help="log p(gold solution | prompt) per problem and checkpoint. " + GOLD_HELP,
)
@user_errors
def score_gold_command(
    model: Models,
    problems: Problems,
    out: Out,
    backend: Backend = "transformers",
    batch_size: Annotated[int, typer.Option(help="Problems per forward pass (halved on OOM).")] = 8,
    dtype: Dtype = "auto",
    collection: Collection = PROBLEMS,
    table: Annotated[
        Path | None,
        typer.Option("--table", help="Also write the per-run covariate rows (tidy CSV) for `fit --law gold`."),
    ] = None,
    per_token: PerToken = False,
    cluster: dict = CLUSTER,
    json: Json = False,
) -> None:
    """log p(gold solution | prompt) per problem and checkpoint.

    Writes one row per (run, benchmark, problem) with the gold log-probability, the number of
    solution tokens and the NLL: the covariate of the gold law (`--law gold`).
    """
    from benchcast.collect.scoring import gold_table

    settings = {"backend": backend, "batch_size": batch_size, "dtype": dtype}
    scores = collection.run("score", model, problems, out, **cluster, **settings)
    summary = gold_table(scores, per_token=per_token, source=str(out))
    if table is not None:
        atomic_write_text(table, summary.to_csv(index=False))
    failed = int(scores["error"].notna().sum())
    if json:
        emit_json(
            {
                "out": str(out),
                "table": str(table) if table else None,
                "rows": len(scores),
                "failed": failed,
                "covariate": summary,
            }
        )
        return
    print_gold(summary, f"gold covariate per run ({len(scores)} problem rows, {failed} failed) -> {out}")
    console.print(
        f"next: benchcast passk SAMPLES --gold {out} --out TIDY.csv, then benchcast fit TIDY.csv --law gold",
        highlight=False,
        markup=False,
    )


@app.command(
    "gold-table",
    short_help="Per-run gold covariate rows (tidy CSV, metric loglikelihood) from score-gold's scores.",
    help="Per-run gold covariate rows (tidy CSV) from score-gold's per-problem scores. " + GOLD_HELP,
)
@user_errors
def gold_table_command(
    scores: Annotated[Path, typer.Argument(help="Per-problem gold scores written by `benchcast score-gold --out`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Tidy CSV of the covariate rows.")],
    per_token: PerToken = False,
    json: Json = False,
) -> None:
    from benchcast.collect.scoring import gold_table
    from benchcast.data.readers import read_frame

    summary = gold_table(read_frame(scores, "gold scores"), per_token=per_token, source=str(scores))
    atomic_write_text(out, summary.to_csv(index=False))
    if json:
        emit_json({"out": str(out), "covariate": summary})
        return
    print_gold(summary, f"gold covariate per run -> {out}")


@app.command("sample")
@user_errors
def sample_command(
    model: Models,
    problems: Problems,
    out: Out,
    n: Annotated[int, typer.Option("--n", help="Samples per problem (without --budget).")] = 100,
    budget: Annotated[
        int | None,
        typer.Option(
            help="Total samples per checkpoint, spent in rounds: a first round for every problem, then rounds "
            "given to the problems with fewer than --target-successes correct samples (replaces --n)."
        ),
    ] = None,
    first_round: Annotated[
        int | None, typer.Option(help="With --budget: first-round samples per problem (default: 1/4 of an even share).")
    ] = None,
    round_size: Annotated[
        int | None, typer.Option(help="With --budget: samples per later round (default: the rest in four rounds).")
    ] = None,
    target_successes: Annotated[
        int, typer.Option(help="With --budget: later rounds go to problems with fewer correct samples than this.")
    ] = 1,
    batch_size: Annotated[
        int | None,
        typer.Option(help="Samples decoded together, across problems (transformers; default: from free memory)."),
    ] = None,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    max_new_tokens: Annotated[int, typer.Option(help="Generation length limit.")] = 512,
    backend: Backend = "transformers",
    dtype: Dtype = "auto",
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    collection: Collection = PROBLEMS,
    cluster: dict = CLUSTER,
    json: Json = False,
) -> None:
    """Draw n samples per problem, grade the final answers, write per-sample rows for `passk`."""
    from benchcast.collect.sampling import to_counts

    if budget is None and (first_round is not None or round_size is not None):
        raise BenchcastError("--first-round and --round-size shape a --budget; give --budget, or drop them.")
    rounds = {"budget": budget, "first_round": first_round, "round_size": round_size}
    decoding = {"batch_size": batch_size, "temperature": temperature, "max_new_tokens": max_new_tokens}
    settings = {"n": n, **rounds, "target_successes": target_successes, **decoding}
    settings |= {"backend": backend, "dtype": dtype, "seed": seed}
    samples = collection.run("sample", model, problems, out, **cluster, **settings)
    counts = to_counts(samples)
    summary = (
        counts.groupby(["run", "benchmark"])
        .agg(
            problems=("n", "size"),
            samples=("n", "sum"),
            correct=("c", "sum"),
            min_n=("n", "min"),
            max_n=("n", "max"),
            unsolved=("c", lambda c: int((c == 0).sum())),
        )
        .reset_index()
    )
    if json:
        emit_json(
            {
                "out": str(out),
                "rows": len(samples),
                "failed": int(samples["error"].notna().sum()),
                "summary": summary.to_dict("records"),
                "per_problem": counts.to_dict("records"),
            }
        )
        return
    rows = [
        [r.run, r.benchmark, r.problems, r.samples, r.correct, f"{r.min_n}-{r.max_n}", r.unsolved]
        for r in summary.itertuples()
    ]
    console.print(
        rich_table(
            f"graded samples -> {out} (next: benchcast passk {out})",
            ["run", "benchmark", "problems", "samples", "correct", "n per problem", "unsolved"],
            rows,
        )
    )
