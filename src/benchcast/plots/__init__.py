"""benchcast's figures: one plotting path for the command line, the report and ``result.plot()`` (docs/api.md).

Names are imported on first use, so ``import benchcast.plots`` alone does not load matplotlib.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "FIGURE_FORMATS": "options",
    "DEFAULT_DPI": "options",
    "check_figure_options": "options",
    "check_figure_format": "options",
    "check_dpi": "options",
    "law_color": "style",
    "law_linestyle": "style",
    "figure_title": "labels",
    "style_axes": "style",
    "legend_outside": "style",
    "figure_legend": "style",
    "panel_grid": "style",
    "save_figure": "style",
    "figure_bytes": "style",
    "data_uri": "style",
    "readable_log_axis": "ticks",
    "ReadableLogLocator": "ticks",
    "run_status": "panels",
    "draw_runs": "panels",
    "draw_intervals": "panels",
    "draw_band": "panels",
    "draw_backtest": "panels",
    "flops_grid": "panels",
    "curve": "panels",
    "coverage_table": "coverage",
    "draw_coverage": "coverage",
    "annotate_counts": "coverage",
    "draw_bench": "results",
    "bound_hits": "params",
    "mark_bounds": "params",
    "use_log_axis": "params",
    "param_errorbars": "params",
    "plot_fit": "results",
    "plot_forecast": "results",
    "plot_backtests": "results",
    "plot_bench": "results",
    "metric_label": "labels",
    "plot_sweep": "figures",
    "plot_cutoff": "figures",
    "plot_kscan": "figures",
    "plot_reproduction_curves": "figures",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'benchcast.plots' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"benchcast.plots.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
