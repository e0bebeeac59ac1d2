"""Import every CLI command module so that each registers its commands on the app."""

from . import cli_backtest, cli_collect, cli_passk, cli_plan, cli_reproduce  # noqa: F401
