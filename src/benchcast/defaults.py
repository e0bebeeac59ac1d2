"""The one table of defaults behind every forecast's uncertainty, read by every entry point (the Python API's
:class:`benchcast.forecasting.bootstrap.Uncertainty` and every command's options), so that one question with
default settings gets one answer whichever command asks it. No imports: the command line reads it at start-up."""

DEFAULT_REPLICATES = 200  # bootstrap replicates per law; widened draws are tiled to 4000 per point
DEFAULT_LEVELS = (0.5, 0.9)  # the interval levels backtests, bench and the report show
DEFAULT_LEVEL = 0.9  # the level a one-level answer (forecast, recommend, plan) shows
DEFAULT_INTERVAL = "extrapolation"  # the bootstrap widened by the extrapolation error
DEFAULT_SEED = 0
