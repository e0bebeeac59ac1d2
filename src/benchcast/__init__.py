"""benchcast: forecast LLM benchmark scores from cheaper runs with scaling laws.

The top level is the whole public API: read data (:func:`load`), fit a law (:func:`fit`,
:class:`Ensemble`), judge it out of sample (:func:`backtest`, :func:`sweep`,
:func:`cutoff_backtest`), and answer planning questions with intervals (:func:`forecast`,
:func:`plan`, :func:`recommend`, :func:`bootstrap`), and choose between recipes (:func:`compare`).
See ARCHITECTURE.md for the layout.
"""

import importlib

from benchcast._version import __version__
from benchcast.errors import BenchcastError, DataError, FitWarning, InsufficientDataError, SelectionError

# The rest of the API is imported on first use (PEP 562), so that a command pays only for the
# modules it needs: importing every subpackage up front cost `benchcast fit` about 0.2 s.
_LAZY = {
    "chance_level": "benchcast.data.chance",
    "estimate_chance": "benchcast.data.chance",
    "load": "benchcast.data.readers",
    "read_apple": "benchcast.data.readers",
    "read_lm_eval": "benchcast.data.readers",
    "read_tidy": "benchcast.data.readers",
    "select": "benchcast.data.table",
    "summary": "benchcast.data.table",
    "validate": "benchcast.data.schema",
    "backtest": "benchcast.evaluation.backtest",
    "BacktestResult": "benchcast.evaluation.backtest_result",
    "BenchResult": "benchcast.evaluation.bench_result",
    "CutoffResult": "benchcast.evaluation.cutoff",
    "Sweep": "benchcast.evaluation.sweep_result",
    "FitDiagnostics": "benchcast.fitting.diagnostics",
    "Forecast": "benchcast.forecasting.forecast",
    "Plan": "benchcast.forecasting.results",
    "Recommendation": "benchcast.forecasting.results",
    "ScoreDraws": "benchcast.forecasting.draws",
    "KScan": "benchcast.generative.kscan",
    "cutoff_backtest": "benchcast.evaluation.cutoff",
    "sweep": "benchcast.evaluation.sweep",
    "Threshold": "benchcast.evaluation.evaluate",
    "ThresholdOrTPR": "benchcast.evaluation.evaluate",
    "ThresholdAndK": "benchcast.evaluation.evaluate",
    "LargestRuns": "benchcast.evaluation.evaluate",
    "LargerModels": "benchcast.evaluation.evaluate",
    "AtTPR": "benchcast.evaluation.evaluate",
    "Thresholds": "benchcast.evaluation.evaluate",
    "Cutoffs": "benchcast.evaluation.evaluate",
    "LikeTarget": "benchcast.evaluation.evaluate",
    "evaluate": "benchcast.evaluation.evaluate",
    "bench": "benchcast.evaluation.bench",
    "fit": "benchcast.fitting.api",
    "fit_rows": "benchcast.fitting.api",
    "FitResult": "benchcast.fitting.result",
    "FitSpec": "benchcast.fitting.spec",
    "design": "benchcast.fitting.spec",
    "forecast": "benchcast.forecasting.answers",
    "compare": "benchcast.forecasting.compare",
    "Comparison": "benchcast.forecasting.compare",
    "compare_backtest": "benchcast.evaluation.compare_backtest",
    "CompareBacktest": "benchcast.evaluation.compare_backtest",
    "plan": "benchcast.forecasting.planning",
    "bootstrap": "benchcast.forecasting.bootstrap",
    "recommend": "benchcast.forecasting.answers",
    "forecast_default": "benchcast.forecasting.answers",
    "plan_default": "benchcast.forecasting.planning",
    "Ensemble": "benchcast.forecasting.ensemble",
    "Uncertainty": "benchcast.forecasting.bootstrap",
    "kscan": "benchcast.generative.kscan",
    "PassKPastN": "benchcast.generative.past_n",
    "passk_table": "benchcast.generative.past_n",
    "fit_curve": "benchcast.generative.success",
    "fit_ladder": "benchcast.generative.ladder",
    "Law": "benchcast.laws",
    "Parameter": "benchcast.laws",
    "available_laws": "benchcast.laws",
    "get_law": "benchcast.laws",
    "FittedLaw": "benchcast.laws.fitted",
}


_SUBPACKAGES = frozenset(
    {
        "cli",
        "collect",
        "data",
        "evaluation",
        "fitting",
        "forecasting",
        "generative",
        "laws",
        "plots",
        "report",
        "studies",
        "utils",
        "validation",
    }
)


def __getattr__(name: str):
    if name == "load_fit":
        return __getattr__("FitResult").load
    if name in _SUBPACKAGES:  # `import benchcast` then `benchcast.fitting...`, as before the API was lazy
        return importlib.import_module(f"benchcast.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'benchcast' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "__version__",
    "BacktestResult",
    "BenchResult",
    "CutoffResult",
    "FitDiagnostics",
    "Ensemble",
    "Forecast",
    "KScan",
    "Plan",
    "Recommendation",
    "Uncertainty",
    "ScoreDraws",
    "PassKPastN",
    "passk_table",
    "fit_curve",
    "fit_ladder",
    "Sweep",
    "Threshold",
    "ThresholdOrTPR",
    "ThresholdAndK",
    "LargestRuns",
    "LargerModels",
    "AtTPR",
    "Thresholds",
    "Cutoffs",
    "LikeTarget",
    "evaluate",
    "BenchcastError",
    "DataError",
    "FitResult",
    "FitSpec",
    "FitWarning",
    "FittedLaw",
    "InsufficientDataError",
    "Law",
    "Parameter",
    "SelectionError",
    "available_laws",
    "backtest",
    "bench",
    "bootstrap",
    "chance_level",
    "compare",
    "Comparison",
    "compare_backtest",
    "CompareBacktest",
    "cutoff_backtest",
    "design",
    "estimate_chance",
    "fit",
    "fit_rows",
    "forecast",
    "forecast_default",
    "plan_default",
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
