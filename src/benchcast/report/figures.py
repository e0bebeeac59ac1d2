"""The report's figures, drawn with :mod:`benchcast.plots` (the functions ``result.plot()`` and the
commands use) and embedded as SVG or PNG data."""

from __future__ import annotations

import textwrap

import numpy as np

from benchcast.forecasting.flags import UNINFORMATIVE_LEVEL, uninformative
from benchcast.laws.questions import spans_tprs
from benchcast.plots.coverage import coverage_table, draw_coverage
from benchcast.plots.panels import UNINFORMATIVE_LABEL, draw_backtest, draw_band, draw_runs, uninformative_points
from benchcast.plots.results import interval_bars, metric_label, plot_backtests, runs_by_tpr, value_labels
from benchcast.plots.style import FONT, data_uri, figure_title, law_color, legend_outside, plt, style_axes
from benchcast.report.analysis import BenchmarkReport, StrategyBacktest
from benchcast.report.profile import profile_summary

REPORT_DPI = 100  # default PNG resolution of the page: a 12-benchmark report stays a few MB
PROFILE_BIN = 0.25  # decades per bin of the error and coverage profile


def embed(fig, figure_format: str = "png", dpi: int | None = None) -> str:
    """The figure as a data URI for the page (and close it): SVG when asked for svg, else PNG."""
    return data_uri(fig, figure_format, REPORT_DPI if dpi is None else dpi)


def draw_forecast(ax, report: BenchmarkReport) -> None:
    """Runs by status, the fitted law and its 50/90 % prediction bands out to the targets."""
    runs = report.runs.rename(columns={"value": "true"})
    fitted = (runs["status"] == "fitted").to_numpy()
    if spans_tprs(runs[fitted]):  # a ladder across TPRs: its fitted runs coloured by their ratio (as the table has it)
        draw_runs(ax, runs[~fitted], runs["status"][~fitted])
        runs_by_tpr(ax, runs[fitted].assign(value=runs["true"][fitted]), "fitted runs")
    else:
        draw_runs(ax, runs, runs["status"])
    color = law_color(report.strategy)
    for law, member_curve in report.member_curves.items() if len(report.member_curves) > 1 else ():
        ax.plot(report.grid, member_curve, color=law_color(law), lw=0.8, ls="--", label=f"{law} (member)")
    ax.plot(report.grid, report.curve, color=color, lw=1.5, label=f"{report.strategy} (fitted on all runs)")
    chance = report.forecast.chance  # the forecast's own (an ensemble's largest), as its flags were decided with
    draw_band(ax, report.grid, report.bands, color, "", faint=_uninformative(report.bands, chance))
    styles = ("-.", (0, (5, 2)), (0, (1, 1)), (0, (3, 1, 1, 1, 1, 1)))
    for k, ((ratio, (curve, bands)), ls) in enumerate(zip(report.ratio_curves.items(), styles * 8, strict=False)):
        # a planned target at another TPR: its own curve, named on the curve (staggered along it) and in the legend
        ax.plot(report.grid, curve, color=color, lw=1.2, ls=ls, label=f"{report.strategy} at TPR {ratio:.3g}")
        draw_band(ax, report.grid, bands, color, None, faint=_uninformative(bands, chance))
        curve_label(ax, report.grid, curve, f"TPR {ratio:.3g}", 0.45 + 0.12 * (k % 4), below=True)
    if report.ratio_curves and report.curve_tpr is not None:
        curve_label(ax, report.grid, report.curve, f"TPR {report.curve_tpr:.3g}", 0.3)
    f = report.forecast.to_frame()
    # the bar and its legend entry only where the interval exists (none where no spread was measurable); an
    # uninformative one faint and labelled so
    vague = uninformative_points(f["flags"])
    for part, label, look in ((~vague, "90 % interval at target", {}), (vague, UNINFORMATIVE_LABEL, {"alpha": 0.3})):
        g = f[part]
        interval_bars(ax, g["flops"], g["prediction"], g["lower90"], g["upper90"], color, label, capsize=3, **look)
    star = {"marker": "*", "s": 90, "color": color, "edgecolors": "k", "zorder": 6, "label": "forecast at target"}
    ax.scatter(f["flops"], f["prediction"], **star)
    value_labels(ax, f["flops"].to_numpy(float), f["prediction"].to_numpy(float))
    largest = float(report.fit.points["flops"].max())
    ax.axvline(largest, color="0.5", ls=":", lw=0.8, label=f"largest fitted run {largest:.2g}")
    note = report.curve_note
    if report.ratio_curves:  # the targets sit on their own ratios' curves, not on the one the note names
        shown = ", ".join(f"{ratio:.3g}" for ratio in report.ratio_curves)
        note = (note + "; " if note else "") + f"targets on the curves at their own TPR ({shown})"
    title = f"forecast ({report.n_boot} bootstrap replicates)" + (f"\n{textwrap.fill(note, 90)}" if note else "")
    style_axes(ax, "training compute C (FLOPs)", metric_label(report.metric, report.k), title, xlog=True)
    legend_outside(ax, "below", ncol=2)


def curve_label(ax, grid, curve, text: str, where: float, below: bool = False) -> None:
    """A curve named on itself, ``where`` of the way along its grid (above it, or below with ``below``)."""
    values = np.asarray(curve, float)
    finite = np.flatnonzero(np.isfinite(values))
    if len(finite):
        i = int(finite[min(int(where * len(finite)), len(finite) - 1)])
        ax.annotate(
            text,
            (grid[i], values[i]),
            textcoords="offset points",
            xytext=(0, -4 if below else 4),
            fontsize=FONT["legend"],
            ha="center",
            va="top" if below else "bottom",
            zorder=7,
            bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
        )


def _uninformative(bands: dict, chance: float) -> np.ndarray | None:
    """Where along the grid the band's 90 % interval is uninformative (the flags' own rule), None without one."""
    if UNINFORMATIVE_LEVEL not in bands:
        return None
    lower, upper = bands[UNINFORMATIVE_LEVEL]
    return np.array([uninformative(lo, hi, chance) is not None for lo, hi in zip(lower, upper, strict=True)], bool)


def judged(report: BenchmarkReport) -> str:
    """What the page's backtests judge, as a figure names it: the strategy or the law chosen by the user."""
    bt = report.validation
    return bt.strategy if isinstance(bt, StrategyBacktest) else bt.law


def _draw_validation(ax, report: BenchmarkReport) -> None:
    """The validation backtest of the strategy (members thin and dashed) or of a chosen law."""
    bt = report.validation
    mre = bt.metrics.get("test_mre", float("nan"))
    error = f"held-out MRE {mre:.2f} %" if np.isfinite(mre) else "no forecast"
    if not isinstance(bt, StrategyBacktest):
        plot_backtests([bt], ax, legend="below", title=f"backtest of {bt.law}: fit below {bt.threshold:.2g}, {error}")
        return
    title = f"backtest of the {bt.strategy}: members fitted below {bt.threshold:.2g}, {error}"
    curves = {bt.label: (bt.grid, bt.curve)} if len(bt.grid) else {}  # its weights at this split in the legend
    n_boot = int(bt.metrics.get("n_boot", 0)) or None
    ylabel = metric_label(report.metric, report.k)
    draw_backtest(
        ax, {bt.strategy: bt.predictions}, curves, title, bt.threshold, ylabel, dropped=bt.dropped, n_boot=n_boot
    )
    for law, member_curve in bt.member_curves.items() if len(bt.member_curves) > 1 else ():
        ax.plot(bt.grid, member_curve, color=law_color(law), lw=0.8, ls="--", label=f"{law} (member)")
    if not bt.members:
        note = bt.metrics.get("interval_note", bt.status).replace(" (", "\n(", 1)
        ax.text(0.5, 0.5, f"no forecast: {note}", ha="center", va="center", transform=ax.transAxes)
    legend_outside(ax, "below", ncol=2)


def _draw_profile(ax_error, ax_coverage, ax_width, report: BenchmarkReport) -> None:
    """Backtest error, interval coverage (with each bin's n) and width versus decades of extrapolation."""
    profile = report.profile
    xlabel = "decades beyond the largest fitted run"
    name = judged(report)
    if profile.empty:
        for ax in (ax_error, ax_coverage, ax_width):
            text = f"no backtest of {name}\nforecast a held-out run"
            ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
        return
    color = law_color(name)
    for (threshold, rows), marker in zip(profile.groupby("threshold"), "os^vD", strict=False):
        ax_error.scatter(
            rows["decades"],
            rows["abs_error"],
            s=14,
            alpha=0.4,
            color=color,
            marker=marker,
            label=f"fit below {threshold:.2g}",
        )
    errors = profile_summary(profile, PROFILE_BIN)
    ax_error.plot(
        errors["decades"], errors["mae"], color=color, lw=1.5, marker="o", ms=3, label=f"mean per {PROFILE_BIN} decade"
    )
    low = np.floor(profile["decades"].min() / PROFILE_BIN) * PROFILE_BIN  # coverage, width and n per bin
    edges = np.arange(low, profile["decades"].max() + PROFILE_BIN, PROFILE_BIN)
    summary = coverage_table(profile, "decades", edges if len(edges) > 1 else np.array([low, low + PROFILE_BIN]))
    style_axes(ax_error, xlabel, "|forecast - observed|", f"backtests of {name}: error vs extrapolation")
    legend_outside(ax_error, "below", ncol=2)
    counts, reps = f"held-out points per {PROFILE_BIN} decade", f"{report.n_boot} replicates"
    draw_coverage(ax_coverage, ax_width, summary["x"], summary, summary["n"], counts, reps, color=color)
    title = ax_coverage.get_title().replace("interval coverage", f"{name} coverage", 1)
    ax_coverage.set_title(title, fontsize=FONT["title"])
    ax_width.set_title(f"{name}: interval width", fontsize=FONT["title"])
    for ax in (ax_coverage, ax_width):
        style_axes(ax, xlabel)
        legend_outside(ax, "below", ncol=2)


def benchmark_figure(report: BenchmarkReport, figure_format: str = "png", dpi: int | None = None) -> str:
    """The benchmark's five panels (:func:`benchmark_panels`) as the page embeds them."""
    return embed(benchmark_panels(report), figure_format, dpi)


def benchmark_panels(report: BenchmarkReport):
    """The benchmark's five panels: forecast, validation backtest; error, coverage and width profile."""
    fig = plt.figure(figsize=(14.5, 10.5), layout="constrained")
    axes = fig.subplot_mosaic([["forecast"] * 3 + ["validation"] * 3, ["error"] * 2 + ["coverage"] * 2 + ["width"] * 2])
    draw_forecast(axes["forecast"], report)
    _draw_validation(axes["validation"], report)
    _draw_profile(axes["error"], axes["coverage"], axes["width"], report)
    title = figure_title(report.benchmark, metric_label(report.metric, report.k), report.fit.spec.tpr, judged(report))
    fig.suptitle(title, fontsize=11)
    return fig
