"""``benchcast reproduce``: published studies re-run end to end on their data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, rich_table, user_errors
from benchcast.cli.options import Format, Json, read
from benchcast.errors import BenchcastError

STUDIES = ("krajewski2025",)


def _print(frame: pd.DataFrame, title: str, columns: list[str] | None = None) -> None:
    frame = frame[columns] if columns else frame
    rows = [["" if not isinstance(v, float) and pd.isna(v) else v for v in r] for r in frame.itertuples(index=False)]
    console.print(rich_table(title, list(frame.columns), rows))


@app.command("reproduce")
@user_errors
def reproduce_command(
    study: Annotated[str, typer.Argument(help=f"Study to reproduce: {', '.join(STUDIES)}.")],
    data: Annotated[Path, typer.Option("--data", help="The study's data file (Apple DCLM long CSV).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for tables and figures.")] = Path("benchcast-out"),
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Worker processes (default: all cores).")] = None,
    boot: Annotated[int, typer.Option("--boot", help="Bootstrap replicates for the direct laws' intervals.")] = 100,
    format: Format = "auto",
    json: Json = False,
) -> None:
    """Re-run a published study's protocols and write every table (CSV) and figure (PNG)."""
    if study not in STUDIES:
        raise BenchcastError(f"unknown study {study!r}; available: {', '.join(STUDIES)}.")
    from benchcast.evaluation.reproduce import reproduce_krajewski2025

    result = reproduce_krajewski2025(read(data, format, None), out, n_jobs=jobs, n_boot=boot)
    if json:
        emit_json(result.summary())
        return
    t = result.tables
    _print(
        t["direct"],
        "Direct laws on TPR-20 runs (fit 3e18..6e21, test > 6e21): held-out MAE, MRE %, "
        f"coverage of 50 % / 90 % prediction intervals ({boot} bootstrap replicates)",
    )
    _print(t["two_stage"], "Direct power law versus two-stage baselines, averaged over benchmarks")
    _print(
        t["nd"],
        "nd (K4), protocol 2 (test: C > 6e21 or TPR 160)",
        ["benchmark", "train_mae", "train_mre", "test_mae", "test_mre", "test_mre_usable", "n_fit", "n_test"],
    )
    _print(t["passk_compute"], "passk_compute (K5) on HumanEval, protocol 3")
    _print(t["power_floor"], "power_floor (K2): fitted ceiling and held-out error")
    _print(t["average"], "Benchmark average (K8) with the power law")
    _print(
        t["proxy"], "Proxy diagnostics (K7): logistic link proxy -> score", ["benchmark", "proxy", "n", "r2", "rmse"]
    )
    _print(result.critical, "Threshold sweep: critical threshold (P(MRE < 10%) = 0.5)")
    console.print(f"tables and figures in {out}; wall time {result.seconds:.1f} s")
