"""Figures of commands and studies: sweeps, cutoff backtests, reproduction curves, k-scans; each is returned unsaved
(:func:`~benchcast.plots.style.save_figure` writes it), so a notebook can restyle it first."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.laws import get_law
from benchcast.plots.coverage import draw_coverage
from benchcast.plots.panels import curve, draw_backtest, flops_grid
from benchcast.plots.params import mark_bounds, param_errorbars, use_log_axis
from benchcast.plots.style import (
    figure_legend,
    figure_title,
    given_axes,
    law_color,
    law_linestyle,
    legend_outside,
    plt,
    style_axes,
)
from benchcast.plots.ticks import readable_log_axis


def plot_sweep(
    frame: pd.DataFrame, critical: list[dict], success_mre: float = 10.0, titles: dict | None = None, ax=None
):
    """MRE versus threshold, one panel per benchmark, one line per law, with the critical thresholds."""
    found = {(c["benchmark"], c["law"]): c["critical_threshold"] for c in critical}
    benchmarks = list(dict.fromkeys(frame["benchmark"]))
    fig, axes = given_axes(ax, len(benchmarks), 4.2, 3.2, max_cols=3)
    for panel, bench in zip(axes, benchmarks, strict=True):
        sub = frame[frame["benchmark"] == bench]
        for law, rows in sub.groupby("law", sort=False):
            color = law_color(law)
            panel.plot(
                rows["threshold"], rows["test_mre"], marker="o", ms=3, color=color, ls=law_linestyle(law), label=law
            )
            t_crit = found.get((bench, law))
            if t_crit is not None and np.isfinite(t_crit):  # a table holds a missing one as nan
                panel.axvline(t_crit, color=color, ls=":", lw=1.2, label=f"{law} critical T = {t_crit:.2g}")
        panel.axhline(success_mre, color="0.5", ls="--", lw=0.8, label=f"success: MRE < {success_mre:g} %")
        title = (titles or {}).get(bench, bench)
        style_axes(panel, "threshold T (FLOPs)", "held-out MRE (%)", title, xlog=True, ylog=True)
        legend_outside(panel, "below", ncol=2)
    return fig


def plot_cutoff(frame: pd.DataFrame, param_names: list[str], title: str, law: str | None = None, ax=None):
    """Error, coverage, width and every parameter versus decades of extrapolation (cutoff backtest)."""
    has_coverage = "coverage90" in frame and frame["coverage90"].notna().any()
    n_panels = len(param_names) + 1 + 2 * int(has_coverage)
    fig, axes = given_axes(ax, n_panels, 3.2, 2.6, max_cols=4 if n_panels % 4 == 0 or n_panels > 6 else 3)
    x = frame["extrapolation_decades"].to_numpy(float)
    axes[0].plot(x, frame["mre"], marker="o", ms=3, color="0.2", label="MRE on the target runs")
    style_axes(axes[0], ylabel="MRE on targets (%)", title="held-out error", ylog=True)
    params_axes = axes[1:]
    if has_coverage:
        n = frame["n_target_runs"].to_numpy(int) if "n_target_runs" in frame else np.zeros(len(frame), int)
        reps = f"{int(frame['n_boot'].iloc[0])} replicates" if "n_boot" in frame else ""
        draw_coverage(axes[1], axes[2], x, frame, n, "target runs per cutoff", reps)
        params_axes = axes[3:]
    for panel, name in zip(params_axes, param_names, strict=True):
        values = frame[name].to_numpy(float)
        panel.plot(x, values, marker="o", ms=3, color=law_color(law or ""), label="fit at this cutoff")
        if law is not None:
            mark_bounds(panel, x, values, law, name)
        panel.axhline(values[-1], color="0.5", ls="--", lw=0.8, label="final fit (most data)")
        style_axes(
            panel, ylabel=name, title=f"parameter {name}", ylog=law is not None and use_log_axis(law, name, values)
        )
    lo, hi = (float(np.nanmin(x)), float(np.nanmax(x))) if len(x) else (0.0, 1.0)
    pad = 0.05 * max(hi - lo, 0.1)
    for panel in axes:
        panel.set_xlim(hi + pad, lo - pad)  # the same range everywhere, most extrapolation on the left
        style_axes(panel, "extrapolation: log10(target C / cutoff C)")
    figure_legend(fig, axes, ncol=5)
    fig.suptitle(title, fontsize=10)
    return fig


def plot_reproduction_curves(
    backtests: dict, laws: list[tuple[str, str]], benchmarks, threshold: float, proxy: str = "", ax=None
):
    """One panel per benchmark: training and held-out runs and each law's fitted curve."""
    drawn = []
    for bench, metric in benchmarks:
        found = {law: backtests.get((kind, law, bench, proxy if kind == "two_stage" else "")) for kind, law in laws}
        found = {law: bt for law, bt in found.items() if bt is not None}
        if found:
            drawn.append((bench, metric, found))
    fig, axes = given_axes(ax, max(len(drawn), 1), 4.2, 3.2, max_cols=3)
    for panel, (bench, metric, found) in zip(axes, drawn, strict=False):
        first = next(iter(found.values()))
        grid = flops_grid(first.predictions)
        curves = {law: c for law, bt in found.items() if (c := curve(bt.fit, grid)) is not None}
        title = figure_title(bench, metric, first.fit.spec.tpr)
        draw_backtest(panel, first.predictions, curves, title, threshold, metric, dropped=first.fit.dropped)
        legend_outside(panel, "below", ncol=2)
    return fig


def plot_kscan(scan: pd.DataFrame, fits: list, param_names: list[str], title: str | None = None, ax=None):
    """Each parameter versus k, then -log pass@k versus the law's covariate, one colour per k."""
    n_panels = len(param_names) + 1
    fig, axes = given_axes(ax, n_panels, 3.2, 2.7, max_cols=4 if n_panels % 4 == 0 else 3)
    ok = scan.dropna(subset=[param_names[0]]) if param_names[0] in scan else scan.iloc[0:0]
    law_name = fits[0].law if fits else None
    for panel, name in zip(axes, param_names, strict=False):
        values = ok[name].to_numpy(float)
        yerr = param_errorbars(law_name, name, values, ok.get(f"{name}_stderr")) if law_name else None
        look = {"marker": "o", "ms": 3, "capsize": 2, "color": law_color(law_name or "")}
        panel.errorbar(ok["k"], values, yerr=yerr, label="fit ± 1 s.e. (within bounds)", **look)
        if law_name is not None:
            mark_bounds(panel, ok["k"], values, law_name, name)
        readable_log_axis(panel, "x", base=2)
        style_axes(panel, "k", name, f"{name} vs k", ylog=law_name is not None and use_log_axis(law_name, name, values))
    figure_legend(fig, axes[:-1], ncol=2)
    _draw_kscan_curves(axes[-1], fits)
    if title is None and fits:
        spec = fits[0].spec
        title = figure_title(spec.benchmark, spec.metric, spec.tpr, f"{fits[0].law} fitted at each k")
    fig.suptitle(title or "", fontsize=10)
    return fig


def _draw_kscan_curves(ax, fits: list) -> None:
    cmap = plt.get_cmap("viridis")
    gold = bool(fits) and "gold" in get_law(fits[0].law).covariates
    for i, result in enumerate(fits):
        law = get_law(result.law)
        covariate = "gold" if "gold" in law.covariates else "flops"
        pts = result.points
        color = cmap(i / max(len(fits) - 1, 1))
        ax.scatter(pts[covariate], -np.log(pts["value"]), s=6, color=color)
        grid = np.geomspace(pts[covariate].min(), pts[covariate].max(), 100)
        if covariate == "gold":
            pred = result.predict(gold=grid)
        elif law.covariates == ("flops",):
            pred = result.predict(flops=grid)
        else:  # params_tokens: draw the fitted values at the runs instead of a curve
            order = np.argsort(pts["flops"].to_numpy())
            grid, pred = pts["flops"].to_numpy()[order], pts["fitted"].to_numpy()[order]
        ax.plot(grid, -np.log(pred), color=color, lw=1, label=f"k={result.spec.k or 1}")
    xlabel = "G = -log GoldProb" if gold else "training compute C (FLOPs)"
    style_axes(ax, xlabel, "-log pass@k", "-log pass@k, points and fit per k", xlog=True, ylog=True)
    legend_outside(ax, "right", ncol=2 if len(fits) > 8 else 1)
