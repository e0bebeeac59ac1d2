"""Backtests, error metrics, the forecasting benchmark and the reproduction.

The constants below are what the command line needs to declare its options; they live here, not
in ``backtest.py``, so that starting the command line does not load the backtests.
"""

PROTOCOLS = ("threshold", "nd", "passk")
DEFAULT_THRESHOLD = 6e21
