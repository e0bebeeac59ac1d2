"""``benchcast reproduce``: published studies re-run end to end on their data."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, refuse_jobs_with_ray, user_errors
from benchcast.cli.options import (
    DEFAULT_INTERVAL,
    Dpi,
    FigureFormat,
    Format,
    Interval,
    Jobs,
    Json,
    NBoot,
    QRand,
    RayAddress,
    figure_options,
    read,
    refuse_interval_without_boot,
)
from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.errors import BenchcastError, did_you_mean

STUDIES = ("krajewski2025",)


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
    boot: NBoot = DEFAULT_REPLICATES,
    interval: Interval = DEFAULT_INTERVAL,
    ray: RayAddress = None,
    format: Format = "auto",
    q_rand: QRand = None,
    figure_format: FigureFormat = "png",
    dpi: Dpi = None,
    json: Json = False,
) -> None:
    """Re-run a published study's protocols and write every table (CSV) and figure (--figure-format)."""
    if study not in STUDIES:
        raise BenchcastError(f"unknown study {study!r}; available: {', '.join(STUDIES)}.")
    from benchcast.evaluation.sweep_result import SWEEP_THRESHOLDS
    from benchcast.studies.krajewski2025 import reproduce_krajewski2025
    from benchcast.validation import check_thresholds

    figure_format, dpi = figure_options(figure_format, dpi, writes=True)
    refuse_jobs_with_ray(jobs, ray)
    refuse_interval_without_boot(boot, interval)
    thresholds = check_thresholds(sweep_threshold) if sweep_threshold else SWEEP_THRESHOLDS
    result = reproduce_krajewski2025(
        read(data, format, None, q_rand),  # the study's own levels unless --q-rand replaces them
        out,
        n_jobs=jobs,
        n_boot=boot,
        interval=interval,
        benchmarks=_select(benchmark),
        thresholds=thresholds,
        ray_address=ray,
        figure_format=figure_format,
        dpi=dpi,
    )
    if json:
        emit_json(result.to_dict())
        return
    console.print(result)
