"""The ``benchcast`` command line, a thin Typer layer over the Python API; importing it registers every command."""

from benchcast.cli import (  # noqa: F401  (register commands)
    backtest,
    bench,
    collect,
    compare,
    core,
    passk,
    plan,
    planning,
    report,
    reproduce,
)
from benchcast.cli.app import app
from benchcast.utils.progress import report_when_piped


def main() -> None:
    report_when_piped()  # long commands say what they do even when stderr is a pipe or a log
    app()


__all__ = ["app", "main"]
