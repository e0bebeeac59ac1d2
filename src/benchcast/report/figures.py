"""The report's figures, drawn with the shared plotting primitives and embedded as PNG data."""

from __future__ import annotations

import base64
import io

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from benchcast.laws import get_law
from benchcast.plots.figures import (
    bound_hits,
    curve,
    draw_backtest,
    draw_band,
    draw_runs,
    flops_grid,
    panel_grid,
    param_errorbars,
    use_log_axis,
)
from benchcast.report.analysis import BenchmarkReport, profile_summary

DPI = 80  # small pages: a 12-benchmark report stays a few MB


def png_data_uri(fig) -> str:
    """The figure as a base64 PNG data URI (and close it).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to embed.

    Returns
    -------
    str
        A ``data:image/png;base64,...`` URI.
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def draw_forecast(ax, report: BenchmarkReport) -> None:
    """Runs by status, the fitted law and its 50/90 % prediction bands out to the targets.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel to draw on.
    report : BenchmarkReport
        The benchmark's analysis (runs, curve, bands, forecasts).
    """
    runs = report.runs.rename(columns={"value": "true"})
    draw_runs(ax, runs, runs["status"])
    for i, (law, member_curve) in enumerate(report.member_curves.items() if len(report.member_curves) > 1 else ()):
        ax.plot(report.grid, member_curve, color=f"C{i + 1}", lw=0.7, ls="--", label=f"{law} (member)")
    ax.plot(report.grid, report.curve, color="C0", lw=1.5, label=f"{report.strategy} (fitted on all runs)")
    draw_band(ax, report.grid, report.bands, "C0", "")
    f = report.forecasts
    ax.errorbar(
        f["flops"],
        f["forecast"],
        yerr=[f["forecast"] - f["lower90"], f["upper90"] - f["forecast"]],
        fmt="*",
        ms=9,
        color="C0",
        mec="k",
        capsize=3,
        label="forecast at target, 90 % interval",
        zorder=6,
    )
    largest = float(report.fit.points["flops"].max())
    ax.axvline(largest, color="0.5", ls=":", lw=0.8, label=f"largest fitted run {largest:.2g}")
    ax.set_xscale("log")
    ax.set_title(f"forecast ({report.n_boot} bootstrap replicates)", fontsize=9)
    ax.set_xlabel("training compute C (FLOPs)", fontsize=9)
    ax.set_ylabel(report.metric, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, loc="best")


def draw_validation(ax, report: BenchmarkReport) -> None:
    """The validation backtest: runs by status, the chosen law's curve, held-out intervals.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel to draw on.
    report : BenchmarkReport
        The benchmark's analysis (its ``validation`` backtest).
    """
    bt = report.validation
    fitted_curve = curve(bt.fit, flops_grid(bt.predictions))  # None for laws of N and D: points only
    curves = {bt.law: fitted_curve} if fitted_curve is not None else {}
    title = f"backtest: fit below {bt.threshold:.2g}, held-out MRE {bt.metrics['test_mre']:.2f} %"
    draw_backtest(
        ax,
        bt.predictions,
        curves,
        title,
        bt.threshold,
        report.metric,
        dropped=bt.fit.dropped,
        n_boot=bt.metrics.get("n_boot"),
    )
    ax.legend(fontsize=7)


def draw_profile(ax_error, ax_coverage, report: BenchmarkReport) -> None:
    """Backtest error and interval coverage versus decades of extrapolation.

    Parameters
    ----------
    ax_error, ax_coverage : matplotlib.axes.Axes
        The panels for the absolute error and for the coverage.
    report : BenchmarkReport
        The benchmark's analysis (its ``profile``).
    """
    profile = report.profile
    if profile.empty:
        for ax in (ax_error, ax_coverage):
            ax.text(0.5, 0.5, "too few runs for backtests", ha="center", va="center", transform=ax.transAxes)
        return
    summary = profile_summary(profile)
    for i, (threshold, rows) in enumerate(profile.groupby("threshold")):
        ax_error.scatter(
            rows["decades"], rows["abs_error"], s=8, color=f"C{i}", alpha=0.6, label=f"fit below {threshold:.2g}"
        )
    ax_error.plot(summary["decades"], summary["mae"], color="k", lw=1.2, marker="o", ms=3, label="mean per 0.25 decade")
    ax_error.set_xlabel("decades beyond the largest fitted run", fontsize=9)
    ax_error.set_ylabel("|forecast - observed|", fontsize=9)
    ax_error.set_title("backtest error vs extrapolation", fontsize=9)
    ax_error.legend(fontsize=7)
    for level, color in ((50, "C2"), (90, "C3")):
        ax_coverage.plot(
            summary["decades"], summary[f"coverage{level}"], color=color, marker="o", ms=3, label=f"{level} % interval"
        )
        ax_coverage.axhline(level / 100, color=color, ls="--", lw=0.8, label=f"nominal {level} %")
    ax_coverage.set_ylim(-0.05, 1.05)
    ax_coverage.set_xlabel("decades beyond the largest fitted run", fontsize=9)
    ax_coverage.set_ylabel("share of held-out runs inside", fontsize=9)
    ax_coverage.set_title(f"interval coverage ({report.n_boot} replicates)", fontsize=9)
    ax_coverage.legend(fontsize=7)
    for ax in (ax_error, ax_coverage):
        ax.tick_params(labelsize=7)


def benchmark_figure(report: BenchmarkReport) -> str:
    """The benchmark's four panels: forecast, validation backtest, error and coverage profile.

    Parameters
    ----------
    report : BenchmarkReport
        The benchmark's analysis.

    Returns
    -------
    str
        The figure as a PNG data URI.
    """
    fig, axes = panel_grid(4, 5.6, 3.8, max_cols=2)
    draw_forecast(axes[0], report)
    draw_validation(axes[1], report)
    draw_profile(axes[2], axes[3], report)
    label = f"pass@{report.k}" if report.metric == "pass@k" and report.k is not None else report.metric
    fig.suptitle(f"{report.benchmark} ({label})", fontsize=11)
    return png_data_uri(fig)


def passk_figure(scan: pd.DataFrame, fits: list) -> str:
    """pass@k versus compute per k (points and the compute law fitted at each k), and every
    parameter of that law versus k.

    Parameters
    ----------
    scan : pandas.DataFrame
        The k-scan table: ``k``, one column per parameter, optional ``<name>_stderr``.
    fits : list of FitResult
        The compute law fitted at each k.

    Returns
    -------
    str
        The figure as a PNG data URI.
    """
    names = get_law("compute").param_names
    fig, axes = panel_grid(len(names) + 1, 3.2, 2.7)
    ax = axes[0]
    cmap = plt.get_cmap("viridis")
    for i, result in enumerate(fits):
        color = cmap(i / max(len(fits) - 1, 1))
        pts = result.points
        k = result.settings.get("k")
        ax.scatter(pts["flops"], pts["value"], s=6, color=color)
        grid = np.geomspace(pts["flops"].min(), pts["flops"].max(), 80)
        ax.plot(grid, result.predict(flops=grid), color=color, lw=1, label=f"k={k}")
    ax.set_xscale("log")
    ax.set_xlabel("training compute C (FLOPs)", fontsize=9)
    ax.set_ylabel("pass@k", fontsize=9)
    ax.set_title("pass@k vs compute, per k", fontsize=9)
    ax.legend(fontsize=5, ncol=2)
    ok = scan.dropna(subset=[names[0]])
    for ax, name in zip(axes[1:], names, strict=True):
        values = ok[name].to_numpy(float)
        yerr = param_errorbars("compute", name, values, ok.get(f"{name}_stderr"))
        ax.errorbar(ok["k"], values, yerr=yerr, marker="o", ms=3, capsize=2, label="fit ± 1 s.e. (within bounds)")
        hits = bound_hits("compute", name, values)
        if hits.any():
            ax.scatter(ok["k"][hits], values[hits], marker="x", s=40, color="red", zorder=5, label="at a bound")
        ax.set_xscale("log", base=2)
        if use_log_axis("compute", name, values):
            ax.set_yscale("log")
        ax.set_xlabel("k", fontsize=9)
        ax.set_ylabel(name, fontsize=9)
        ax.set_title(f"{name} vs k", fontsize=9)
        ax.legend(fontsize=5)
    for ax in axes:
        ax.tick_params(labelsize=7)
    fig.suptitle("compute law (S1) fitted at each k", fontsize=10)
    return png_data_uri(fig)
