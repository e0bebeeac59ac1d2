"""``benchcast reproduce``: published studies re-run end to end on their data."""

from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.markup import escape

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, rich_table, user_errors
from benchcast.cli.options import Format, Jobs, Json, NBoot, RayAddress, read
from benchcast.errors import BenchcastError, did_you_mean

STUDIES = ("krajewski2025",)


def _print(frame: pd.DataFrame, title: str, columns: list[str] | None = None) -> None:
    if frame.empty:
        console.print(f"{escape(title)}: [italic]nothing to show[/]")
        return
    frame = frame[[c for c in columns if c in frame]] if columns else frame
    rows = [["" if not isinstance(v, float) and pd.isna(v) else v for v in r] for r in frame.itertuples(index=False)]
    console.print(rich_table(title, list(frame.columns), rows))


def _select(names: list[str] | None) -> tuple:
    from benchcast.studies.krajewski2025 import BENCHMARKS

    if not names:
        return BENCHMARKS
    known = dict(BENCHMARKS)
    for name in names:
        if name not in known:
            hint = did_you_mean(name, known)
            raise BenchcastError(f"--benchmark {name!r} is not one of the study's benchmarks.{hint}")
    return tuple((name, known[name]) for name in dict.fromkeys(names))


@app.command("reproduce")
@user_errors
def reproduce_command(
    study: Annotated[str, typer.Argument(help=f"Study to reproduce: {', '.join(STUDIES)}.")],
    data: Annotated[Path, typer.Option("--data", help="The study's data file (Apple DCLM long CSV).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for tables and figures.")] = Path("benchcast-out"),
    benchmark: Annotated[
        list[str] | None,
        typer.Option("--benchmark", "-b", help="Reproduce only this benchmark (repeatable; default: all twelve)."),
    ] = None,
    sweep_threshold: Annotated[
        list[float] | None,
        typer.Option(help="Sweep threshold in FLOPs (repeatable; default: the 13-point grid 6e19..5e22)."),
    ] = None,
    jobs: Jobs = None,
    boot: NBoot = 100,
    ray: RayAddress = None,
    format: Format = "auto",
    json: Json = False,
) -> None:
    """Re-run a published study's protocols and write every table (CSV) and figure (PNG)."""
    if study not in STUDIES:
        raise BenchcastError(f"unknown study {study!r}; available: {', '.join(STUDIES)}.")
    from benchcast.evaluation.sweep import SWEEP_THRESHOLDS
    from benchcast.studies.krajewski2025 import DIRECT_LAWS, TABLES, reproduce_krajewski2025
    from benchcast.validation import check_thresholds

    thresholds = check_thresholds(sweep_threshold) if sweep_threshold else SWEEP_THRESHOLDS
    result = reproduce_krajewski2025(
        read(data, format, None),
        out,
        n_jobs=jobs,
        n_boot=boot,
        benchmarks=_select(benchmark),
        thresholds=thresholds,
        ray_address=ray,
    )
    if json:
        emit_json(result.to_dict())
        return
    t = result.tables
    usable = ["test_mre", "test_mre_usable", "test_mae", "n_test", "n_test_usable"]
    shown = ("mre", "mre_usable", "coverage50", "coverage90")
    direct = ["benchmark", *(f"{law}_{c}" for law in DIRECT_LAWS for c in shown)]
    _print(t["direct"], f"{TABLES['direct']} ({boot} bootstrap replicates)", direct)
    for name in ("two_stage_paper", "two_stage_all_benchmarks"):
        if name in t:
            _print(t[name], TABLES[name], ["law", "proxy", *usable, "train_rmse", "train_r2", "benchmarks"])
    _print(t["nd"], TABLES["nd"], ["benchmark", "train_mre", "train_mre_usable", *usable, "n_fit"])
    _print(t["passk_compute"], TABLES["passk_compute"], ["benchmark", "train_mre", "train_mre_usable", *usable])
    _print(t["power_floor"], TABLES["power_floor"], ["benchmark", "q_max", "q_max_normalised", *usable])
    _print(t["average"], TABLES["average"], ["set", "loss", "paper", "runs_fitted", *usable, "A", "alpha", "converged"])
    _print(t["proxy"], TABLES["proxy"], ["benchmark", "proxy", "n", "r2", "rmse"])
    _print(t["critical_thresholds"], TABLES["critical_thresholds"])
    from benchcast.studies.krajewski2025 import PROTOCOL

    console.print(escape(f"success: {PROTOCOL['success']}.\ncritical threshold: {PROTOCOL['critical_threshold']}."))
    console.print(escape(f"{PROTOCOL['usable']}."))
    if len(t["skipped"]):
        console.print(escape(f"{len(t['skipped'])} job(s) or sweep threshold(s) skipped: see {out / 'skipped.csv'}"))
    console.print(escape(f"tables and figures in {out}; wall time {result.seconds:.1f} s"))
