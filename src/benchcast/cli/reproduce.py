"""``benchcast reproduce``: published studies re-run end to end on their data."""

from pathlib import Path
from typing import Annotated

import typer

from benchcast.cli.app import app
from benchcast.cli.common import show, user_errors
from benchcast.cli.groups import REPLICATES, SOURCE, WHERE, WRITTEN, DataSource, Figures, Where
from benchcast.cli.options import Json, refuse_interval_without_boot
from benchcast.errors import BenchcastError, did_you_mean

STUDIES = ("krajewski2025",)
STUDY_SOURCE = SOURCE.but(
    data=Annotated[Path, typer.Option("--data", help="The study's data file (Apple DCLM long CSV).")]
)


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
    *,
    study: Annotated[str, typer.Argument(help=f"Study to reproduce: {', '.join(STUDIES)}.")],
    source: DataSource = STUDY_SOURCE,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for tables and figures.")] = Path("benchcast-out"),
    benchmark: Annotated[
        list[str] | None,
        typer.Option("--benchmark", "-b", help="Reproduce only this benchmark (repeatable; default: all twelve)."),
    ] = None,
    sweep_threshold: Annotated[
        list[float] | None,
        typer.Option(help="Sweep threshold in FLOPs (repeatable; default: the 13-point grid 6e19..5e22)."),
    ] = None,
    where: Where = WHERE,
    uncertainty=REPLICATES,
    figures: Figures = WRITTEN,
    json: Json = False,
) -> None:
    """Re-run a published study's protocols and write every table (CSV) and figure (--figure-format)."""
    if study not in STUDIES:
        raise BenchcastError(f"unknown study {study!r}; available: {', '.join(STUDIES)}.")
    from benchcast.evaluation.sweep_result import SWEEP_THRESHOLDS
    from benchcast.studies.krajewski2025 import reproduce_krajewski2025
    from benchcast.validation import check_thresholds

    refuse_interval_without_boot(uncertainty)
    thresholds = check_thresholds(sweep_threshold) if sweep_threshold else SWEEP_THRESHOLDS
    result = reproduce_krajewski2025(
        source.read(),  # the study's own levels unless --q-rand replaces them
        out,
        uncertainty=uncertainty,
        benchmarks=_select(benchmark),
        thresholds=thresholds,
        **where.kwargs(),
        figure_format=figures.format,
        dpi=figures.dpi,
    )
    show(result, json)
