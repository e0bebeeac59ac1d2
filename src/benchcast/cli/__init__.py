"""The ``benchcast`` command line: a thin Typer layer over the Python API.

Importing this package registers every command on :data:`app`.
"""

from benchcast.cli import backtest, bench, collect, core, passk, plan, reproduce  # noqa: F401  (register commands)
from benchcast.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
