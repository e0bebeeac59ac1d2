"""The one table of defaults behind every forecast's uncertainty, read by every entry point (the Python API's
:class:`benchcast.forecasting.bootstrap.Uncertainty` and every command's options), so that one question with
default settings gets one answer whichever command asks it. No imports: the command line reads it at start-up."""

# bootstrap replicates per law, one number for every command (forecast, plan, recommend, report, bench, backtest):
# enough that a 90 % bound of the one target measured (13B-class, TPR 380) moves by less than 0.005 over five seeds on
# DCLM's HellaSwag, ARC-Easy and ARC-Challenge (200 moved it by up to 0.012; benchmarks/common_random_numbers.md); not
# out to 100x the largest run: there a seed's bounds lie up to 0.0055-0.0086 from a 45,000-replicate pool's on DCLM and
# C4 (90th percentile over 30 seeds), up to 0.0125 on the example (benchmarks/replicate_stopping.md); widened draws are
# tiled to 4000
DEFAULT_REPLICATES = 1500
DEFAULT_LEVELS = (0.5, 0.9)  # the interval levels backtests, bench and the report show
DEFAULT_LEVEL = 0.9  # the level a one-level answer (forecast, recommend, plan) shows
DEFAULT_INTERVAL = "extrapolation"  # the bootstrap widened by the extrapolation error
DEFAULT_SEED = 0
ALL_BENCHMARKS = "*"  # the key of a --q-rand or --margin value given for every benchmark
