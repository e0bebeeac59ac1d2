"""The forecast report: one self-contained HTML page per analysis (``benchcast report``)."""

from benchcast.report.analysis import BenchmarkReport, analyse_benchmark, choose_law, strategy_bands
from benchcast.report.page import Target, build_report, parse_targets

__all__ = [
    "BenchmarkReport",
    "Target",
    "analyse_benchmark",
    "build_report",
    "choose_law",
    "strategy_bands",
    "parse_targets",
]
