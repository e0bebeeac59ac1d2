"""The figures behind ``result.plot()``: a fit, a forecast, a backtest, a bench run. The command
line's ``write`` methods and the report draw with these same functions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.data.table import tpr_level
from benchcast.plots.coverage import annotate_counts, coverage_table
from benchcast.plots.labels import metric_label
from benchcast.plots.panels import (
    UNINFORMATIVE_LABEL,
    curve,
    draw_backtest,
    draw_band,
    draw_runs,
    flops_grid,
    run_status,
    uninformative_points,
)
from benchcast.plots.style import (
    FONT,
    figure_legend,
    figure_title,
    given_axes,
    grid_legend,
    law_color,
    law_linestyle,
    panel_grid,
    panel_legend,
    style_axes,
)


def _new_axes(ax, width: float = 8.4, height: float = 4.2):
    # wide enough for the legend right of the data and a title naming benchmark, metric and TPR
    return ax if ax is not None else panel_grid(1, width, height)[1][0]


def plot_fit(fit, ax=None, **style):
    """The runs a fit saw (fitted, dropped with the reason) and the fitted law along compute."""
    given, ax = ax is not None, _new_axes(ax)
    spec = fit.spec
    runs = fit.points.assign(side="train", fitted=True, true=fit.points["value"])
    if fit.dropped:
        dropped = pd.DataFrame(fit.dropped).assign(side="train", fitted=False)
        runs = pd.concat([runs, dropped.assign(true=dropped["value"])], ignore_index=True)
    draw_runs(ax, runs, run_status(runs, fit.dropped))
    found = curve(fit, flops_grid(runs))
    if found is None:  # laws of N and D at several TPRs, the gold law: the fitted values at the runs
        ordered = fit.points.sort_values("flops")
        found = (ordered["flops"].to_numpy(float), ordered["fitted"].to_numpy(float))
    options = {"color": law_color(fit.law), "lw": 1.5, "label": f"{fit.law} (fitted)", **style}
    ax.plot(*found, **options)
    metric = metric_label(spec.metric, spec.k)
    style_axes(
        ax, "training compute C (FLOPs)", metric, figure_title(spec.benchmark, metric, spec.tpr, fit.law), xlog=True
    )
    panel_legend(ax, given)
    return ax


def forecast_x(query: dict, flops=None) -> tuple[np.ndarray, str]:
    """Where a forecast's points lie on a figure (compute, or else gold NLL) and the axis label."""
    if query.get("flops") is not None:
        return np.atleast_1d(np.asarray(query["flops"], float)), "training compute C (FLOPs)"
    if query.get("params") is not None and query.get("tokens") is not None and flops is not None:
        flops = np.atleast_1d(np.asarray(flops, float))
        six_nd = 6.0 * np.asarray(query["params"], float) * np.asarray(query["tokens"], float)
        if np.allclose(flops, np.ravel(six_nd), rtol=1e-9):
            return flops, "training compute C = 6 N D (FLOPs)"
        return flops, "training compute C (FLOPs, as the runs count them: r(N) x 6 N D)"
    return np.atleast_1d(np.asarray(query.get("gold"), float)), "G = -log GoldProb"


CURVE_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def _ratio_groups(tpr) -> int:
    """How many ratio groups (:func:`benchcast.data.table.tpr_level`) some runs' TPRs make."""
    level = tpr_level(tpr)
    return len(np.unique(level[np.isfinite(level)]))


def runs_by_tpr(ax, runs: pd.DataFrame, name: str = "runs") -> None:
    """The runs, coloured by tokens per parameter where they span several (a colour bar says which)."""
    label = f"{name} ({len(runs)})"
    if "tpr" not in runs or _ratio_groups(runs["tpr"]) < 2:
        ax.scatter(runs["flops"], runs["value"], s=14, color="0.2", zorder=4, label=label)
        return
    from matplotlib.colors import LogNorm

    tpr = runs["tpr"].to_numpy(float)
    known = np.isfinite(tpr) & (tpr > 0)
    dots = ax.scatter(
        runs["flops"][known],
        runs["value"][known],
        s=16,
        c=tpr[known],
        cmap="viridis",
        norm=LogNorm(),
        zorder=4,
        label=label,
    )
    if not known.all():  # a run without a ratio is drawn, in grey
        ax.scatter(runs["flops"][~known], runs["value"][~known], s=16, color="0.5", zorder=4, label="runs, TPR unknown")
    # the colour bar inside the panel's upper left (where a rising score leaves room): beside the panel, its label
    # ran into the neighbouring panel's axis
    bar = ax.figure.colorbar(dots, cax=ax.inset_axes((0.04, 0.9, 0.28, 0.03)), orientation="horizontal")
    bar.set_label("tokens per parameter", fontsize=FONT["legend"], labelpad=1)
    bar.ax.tick_params(labelsize=FONT["legend"] - 1, pad=1)


def value_labels(ax, x, values) -> None:
    """Each target's value written beside its star (below right, clear of its interval's cap)."""
    for at, value in zip(x, values, strict=True):
        if np.isfinite(value):
            ax.annotate(f"{value:.3f}", (at, value), textcoords="offset points", xytext=(5, -14), fontsize=8)


def interval_bars(ax, x, predicted, lower, upper, color, label: str, **look) -> None:
    """Error bars from ``lower`` to ``upper`` at the points with both bounds (no label when none has)."""
    x, predicted = np.asarray(x, float), np.asarray(predicted, float)
    lower = np.broadcast_to(np.asarray(lower, float), predicted.shape)
    upper = np.broadcast_to(np.asarray(upper, float), predicted.shape)
    drawn = np.isfinite(lower) & np.isfinite(upper)
    if drawn.any():
        yerr = [predicted[drawn] - lower[drawn], upper[drawn] - predicted[drawn]]
        ax.errorbar(x[drawn], predicted[drawn], yerr=yerr, fmt="none", ecolor=color, label=label, **look)


def plot_forecast(forecast, fit=None, ax=None, runs=None, **style):
    """Each point's forecast with its intervals, over the fit's runs and curve or over ``runs``."""
    given, ax = ax is not None, _new_axes(ax)
    x, xlabel = forecast_x(forecast.query or {"flops": forecast.runs.flops}, forecast.runs.flops)
    color = style.pop("color", law_color(forecast.law))
    metric = tpr = None
    if fit is not None and "gold" not in forecast.query:
        plot_fit(fit, ax)
        top = float(fit.points["flops"].max())
        if x.max() > top:  # the law's curve on out to the forecast
            grid = np.geomspace(top, x.max() * 1.2, 100)
            found = curve(fit, grid)
            if found is not None:
                ax.plot(*found, color=law_color(fit.law), lw=1.2, ls=":", label=f"{fit.law} beyond the runs")
        metric, tpr = metric_label(fit.spec.metric, fit.spec.k), fit.spec.tpr
    elif runs is not None and len(runs):
        if "tpr" in runs and _ratio_groups(runs["tpr"]) == 1 and runs["tpr"].notna().all():
            tpr = float(runs["tpr"].median())
        runs_by_tpr(ax, runs)
        if "metric" in runs and runs["metric"].nunique() == 1:
            one_k = "k" in runs and runs["k"].notna().all() and runs["k"].nunique() == 1
            k = runs["k"].iloc[0] if one_k else None
            metric = metric_label(str(runs["metric"].iloc[0]), None if k is None else int(k))
    pct = int(round(forecast.level * 100))
    pred = np.asarray(forecast.prediction, float)
    shown = np.isfinite(pred)
    bounds = {
        f"{pct} % prediction interval ({forecast.uncertainty.interval}, {forecast.n_boot} replicates)": (
            forecast.interval(),
            {"lw": 1, "capsize": 3},
        ),
        f"{pct} % confidence interval (mean curve)": (forecast.interval(mean=True), {"lw": 3.5, "alpha": 0.6}),
    }
    faint = uninformative_points(forecast.flags)
    for label, ((lower, upper), look) in bounds.items():  # an uninformative interval: dashed, faint, labelled so
        sure, vague = shown & ~faint, shown & faint
        interval_bars(ax, x[sure], pred[sure], lower[sure], upper[sure], color=color, label=label, **look)
        named = UNINFORMATIVE_LABEL in ax.get_legend_handles_labels()[1]
        interval_bars(
            ax,
            x[vague],
            pred[vague],
            lower[vague],
            upper[vague],
            color=color,
            label=None if named else UNINFORMATIVE_LABEL,
            **{**look, "alpha": 0.3},
        )
    for i, (label, along) in enumerate(forecast.curves.items()):  # one curve and band per target ratio
        grid, tone = along.points["flops"].to_numpy(float), CURVE_COLORS[i % len(CURVE_COLORS)]
        ax.plot(grid, along.prediction, color=tone, lw=1.4, label=f"{forecast.law} at {label}")
        bands = {level: along.interval(level) for level in (0.5, 0.9)}
        draw_band(ax, grid, bands, tone, None, faint=uninformative_points(along.flags))
    options = {"marker": "*", "s": 90, "color": color, "edgecolors": "k", "zorder": 6, **style}
    ax.scatter(x[shown], pred[shown], label=f"{forecast.law} forecast", **options)
    if forecast.curves:
        value_labels(ax, x[shown], pred[shown])
    if not shown.all():
        ax.plot([], [], " ", label=f"no forecast at {', '.join(f'{c:.3g}' for c in x[~shown])}")
    ax.set_xscale("log")
    title = figure_title(forecast.benchmark, metric, tpr, f"{forecast.law} forecast")
    style_axes(ax, xlabel, metric or "score", title, xlog=True)
    panel_legend(ax, given)
    return ax


def plot_backtests(backtests: list, ax=None, legend: str = "right", **style):
    """The backtest panel of one benchmark: runs by status, each law's curve and held-out intervals."""
    given, ax = ax is not None, _new_axes(ax)
    first = backtests[0]
    spec = first.fit.spec
    grid = flops_grid(first.predictions)
    curves = {bt.law: c for bt in backtests if (c := curve(bt.fit, grid)) is not None}
    n_boot = int(first.metrics.get("n_boot", 0)) or None
    metric = metric_label(spec.metric, spec.k)
    what = f"{first.protocol} backtest at {first.threshold:.2g} FLOPs"
    title = style.pop("title", figure_title(first.benchmark, metric, spec.tpr, what))
    by_law = {bt.law: bt.predictions for bt in backtests}
    draw_backtest(ax, by_law, curves, title, first.threshold, metric, dropped=first.fit.dropped, n_boot=n_boot)
    panel_legend(ax, given and legend == "right", legend, ncol=2 if legend == "below" else 1)
    return ax


def draw_bench(summaries: dict, ax=None, title: str = "", error_label: str = "mean relative error (%)"):
    """Error, 90 % and 50 % coverage and the 90 % width against decades of extrapolation, per strategy."""
    fig, axes = given_axes(ax, 4, 3.6, 3.0, max_cols=4)
    for i, (strategy, table) in enumerate(summaries.items()):
        style = {"color": law_color(strategy), "ls": law_linestyle(strategy), "marker": "o", "ms": 3}
        axes[0].plot(table["x"], table["error"], label=strategy, **style)
        for panel, pct in ((axes[1], 90), (axes[2], 50)):
            panel.plot(table["x"], table[f"coverage{pct}"], **style)
            if i == 0:
                annotate_counts(panel, table["x"], table[f"coverage{pct}"], table["n"])
        axes[3].plot(table["x"], table["width90"], **style)
    for panel, pct in ((axes[1], 90), (axes[2], 50)):
        panel.axhline(pct / 100, color="0.5", ls=":", lw=0.8, label=f"nominal {pct} %")
        panel.set_ylim(-0.05, 1.12)
        style_axes(panel, ylabel="share of held-out scores inside", title=f"{pct} % interval coverage")
    style_axes(axes[0], ylabel=error_label, title="error")
    style_axes(axes[3], ylabel="median 90 % interval width (score)", title="90 % interval width")
    for panel in axes:
        style_axes(panel, "decades of extrapolation")
    # in a caller's figure: one legend below all its panels, with room made for it (constrained layout)
    grid_legend(fig, ncol=6) if ax is not None else figure_legend(fig, axes, ncol=6)
    fig.suptitle(title + " (n: held-out points behind each bin)", fontsize=10)
    return fig


def plot_bench(predictions: pd.DataFrame, bins: int = 6, ax=None, title: str = ""):
    """Per strategy, binned error, coverage and width against decades of extrapolation (:func:`draw_bench`)."""
    edges = np.linspace(0.0, max(float(predictions["decades"].max()), 1e-3), bins + 1)
    summaries = {}
    for strategy, group in predictions.groupby("strategy", sort=False):
        table = coverage_table(group, "decades", edges)
        which = np.clip(np.digitize(group["decades"], edges) - 1, 0, bins - 1)
        rel = ((group["prediction"] - group["true"]).abs() / group["true"] * 100).groupby(which).mean()
        table["error"] = rel.reindex(np.unique(which)).to_numpy()  # coverage_table's rows: the non-empty bins
        summaries[strategy] = table
    if not title:
        benchmarks = sorted(set(predictions["benchmark"])) if "benchmark" in predictions else []
        shown = ", ".join(benchmarks[:6]) + ("..." if len(benchmarks) > 6 else "")
        title = "bench: error and intervals vs extrapolation" + (
            f" ({len(benchmarks)} benchmarks: {shown})" if benchmarks else ""
        )
    return draw_bench(summaries, ax, title)
