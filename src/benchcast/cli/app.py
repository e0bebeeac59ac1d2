"""The Typer application object; command modules register themselves on it.

The command modules do not use ``from __future__ import annotations``: Typer resolves the
annotations of every command at each start, and evaluating them from strings cost 40 ms.
"""

from typing import Annotated

import typer

from benchcast import __version__

app = typer.Typer(
    help="Forecast LLM benchmark scores from cheaper runs: fit scaling laws, backtest, plan.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"benchcast {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """benchcast: scaling-law forecasts of downstream and generative benchmarks."""
