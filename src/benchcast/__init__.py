"""benchcast: forecast LLM benchmark scores from cheaper runs with scaling laws."""

from benchcast._version import __version__
from benchcast.data.chance import chance_level, estimate_chance
from benchcast.data.readers import load, read_apple, read_lm_eval, read_tidy
from benchcast.data.table import select, summary, validate
from benchcast.errors import BenchcastError, DataError, FitWarning, InsufficientDataError, SelectionError
from benchcast.fitting.api import FitSpec, Forecaster, design, fit, fit_rows
from benchcast.fitting.result import FitResult
from benchcast.laws import Law, Parameter, available_laws, get_law

load_fit = FitResult.load

__all__ = [
    "__version__",
    "BenchcastError",
    "DataError",
    "FitResult",
    "FitSpec",
    "FitWarning",
    "Forecaster",
    "InsufficientDataError",
    "Law",
    "Parameter",
    "SelectionError",
    "available_laws",
    "chance_level",
    "design",
    "estimate_chance",
    "fit",
    "fit_rows",
    "get_law",
    "load",
    "load_fit",
    "read_apple",
    "read_lm_eval",
    "read_tidy",
    "select",
    "summary",
    "validate",
]
