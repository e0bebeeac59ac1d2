"""benchcast: forecast LLM benchmark scores from cheaper runs with scaling laws.

The top level is the whole public API: read data (:func:`load`), fit a law (:func:`fit`,
:class:`Forecaster`), judge it out of sample (:func:`backtest`, :func:`sweep`,
:func:`cutoff_backtest`), and answer planning questions with intervals (:func:`forecast`,
:func:`plan`, :func:`recommend`, :func:`bootstrap`). See ARCHITECTURE.md for the layout.
"""

from benchcast._version import __version__
from benchcast.data.chance import chance_level, estimate_chance
from benchcast.data.readers import load, read_apple, read_lm_eval, read_tidy
from benchcast.data.table import select, summary, validate
from benchcast.errors import BenchcastError, DataError, FitWarning, InsufficientDataError, SelectionError
from benchcast.evaluation.backtest import backtest, cutoff_backtest, sweep
from benchcast.evaluation.bench import bench
from benchcast.fitting.api import Forecaster, fit, fit_rows
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.forecast import forecast, plan
from benchcast.forecasting.intervals import bootstrap
from benchcast.forecasting.selection import recommend
from benchcast.generative.kscan import kscan
from benchcast.laws import Law, Parameter, available_laws, get_law
from benchcast.laws.fitted import FittedLaw

load_fit = FitResult.load

__all__ = [
    "__version__",
    "BenchcastError",
    "DataError",
    "FitResult",
    "FitSpec",
    "FitWarning",
    "FittedLaw",
    "Forecaster",
    "InsufficientDataError",
    "Law",
    "Parameter",
    "SelectionError",
    "available_laws",
    "backtest",
    "bench",
    "bootstrap",
    "chance_level",
    "cutoff_backtest",
    "design",
    "estimate_chance",
    "fit",
    "fit_rows",
    "forecast",
    "get_law",
    "kscan",
    "load",
    "load_fit",
    "plan",
    "read_apple",
    "read_lm_eval",
    "read_tidy",
    "recommend",
    "select",
    "summary",
    "sweep",
    "validate",
]
