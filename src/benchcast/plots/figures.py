"""Figures (matplotlib, Agg backend): sweeps, cutoff backtests, reproduction curves, k-scans.

The building blocks live in :mod:`~benchcast.plots.style` (grids, saving), :mod:`~benchcast.plots.panels`
(the backtest panel) and :mod:`~benchcast.plots.params` (parameter axes); they are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.laws import get_law
from benchcast.plots.panels import (
    DROPPED_COLORS,
    RUN_STYLES,
    curve,
    draw_backtest,
    draw_band,
    draw_intervals,
    draw_runs,
    flops_grid,
    run_status,
)
from benchcast.plots.params import bound_hits, param_errorbars, use_log_axis
from benchcast.plots.style import panel_grid, plt, save_figure

__all__ = [
    "DROPPED_COLORS",
    "RUN_STYLES",
    "bound_hits",
    "curve",
    "draw_backtest",
    "draw_band",
    "draw_intervals",
    "draw_runs",
    "flops_grid",
    "panel_grid",
    "param_errorbars",
    "plot_cutoff",
    "plot_kscan",
    "plot_reproduction_curves",
    "plot_sweep",
    "plt",
    "run_status",
    "save_figure",
    "use_log_axis",
]


def plot_sweep(frame: pd.DataFrame, path: str | Path, critical: list[dict], success_mre: float = 10.0) -> Path:
    """MRE versus threshold, one panel per benchmark, one line per law; the success line and each
    law's critical threshold (``critical``: records with benchmark, law, critical_threshold).

    Parameters
    ----------
    frame : pandas.DataFrame
        Sweep rows: ``benchmark``, ``law``, ``threshold``, ``test_mre``.
    path : str or Path
        Where to save the figure.
    critical : list of dict
        Each law's critical threshold per benchmark (nan or missing: none found).
    success_mre : float
        The MRE (%) counted as success, drawn as a horizontal line.

    Returns
    -------
    Path
        The saved figure.
    """
    found = {(c["benchmark"], c["law"]): c["critical_threshold"] for c in critical}
    benchmarks = list(dict.fromkeys(frame["benchmark"]))
    fig, axes = panel_grid(len(benchmarks))
    for ax, bench in zip(axes, benchmarks, strict=True):
        sub = frame[frame["benchmark"] == bench]
        for i, (law, rows) in enumerate(sub.groupby("law", sort=False)):
            ax.plot(rows["threshold"], rows["test_mre"], marker="o", ms=3, color=f"C{i}", label=law)
            t_crit = found.get((bench, law))
            if t_crit is not None and np.isfinite(t_crit):  # a table holds a missing one as nan
                ax.axvline(t_crit, color=f"C{i}", ls=":", lw=1.2, label=f"{law} critical T = {t_crit:.2g}")
        ax.axhline(success_mre, color="0.5", ls="--", lw=0.8, label=f"success: MRE < {success_mre:g} %")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(bench, fontsize=9)
        ax.set_xlabel("threshold T (FLOPs)", fontsize=8)
        ax.set_ylabel("held-out MRE (%)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6)
    return save_figure(fig, path)


def plot_cutoff(
    frame: pd.DataFrame, param_names: list[str], title: str, path: str | Path, law: str | None = None
) -> Path:
    """Error (and interval coverage, when bootstrapped) and every parameter versus decades of
    extrapolation (cutoff backtest). Scale parameters are on log axes; fits at a bound are marked.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per cutoff: ``extrapolation_decades``, ``mre``, one column per parameter and, when
        bootstrapped, ``coverage50``, ``coverage90`` and ``n_boot``.
    param_names : list of str
        Parameter columns to draw, one panel each.
    title : str
        Figure title.
    path : str or Path
        Where to save the figure.
    law : str, optional
        Registered law, for bound marks and log axes.

    Returns
    -------
    Path
        The saved figure.
    """
    has_coverage = "coverage90" in frame and frame["coverage90"].notna().any()
    n_panels = len(param_names) + 1 + int(has_coverage)
    fig, axes = panel_grid(n_panels, 3.2, 2.6)
    x = frame["extrapolation_decades"]
    axes[0].plot(x, frame["mre"], marker="o", ms=3)
    axes[0].set_ylabel("MRE on targets (%)", fontsize=8)
    axes[0].set_yscale("log")
    params_axes = axes[1:]
    if has_coverage:
        ax = axes[1]
        for level, color in ((50, "C2"), (90, "C3")):
            ax.plot(x, frame[f"coverage{level}"], marker="o", ms=3, color=color, label=f"{level} % interval")
            ax.axhline(level / 100, color=color, ls="--", lw=0.8, label=f"nominal {level} %")
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("coverage of the targets", fontsize=8)
        reps = f" ({int(frame['n_boot'].iloc[0])} replicates)" if "n_boot" in frame else ""
        ax.set_title(f"interval coverage{reps}", fontsize=8)
        ax.legend(fontsize=5)
        params_axes = axes[2:]
    for ax, name in zip(params_axes, param_names, strict=True):
        values = frame[name].to_numpy(float)
        ax.plot(x, values, marker="o", ms=3, color="C1", label="fit at this cutoff")
        if law is not None:
            hits = bound_hits(law, name, values)
            if hits.any():
                ax.scatter(x[hits], values[hits], marker="x", s=40, color="red", zorder=5, label="at a bound")
            if use_log_axis(law, name, values):
                ax.set_yscale("log")
        ax.axhline(values[-1], color="0.5", ls="--", lw=0.8, label="final fit (most data)")
        ax.set_ylabel(name, fontsize=8)
    if params_axes:
        params_axes[0].legend(fontsize=5)
    for ax in axes:
        ax.set_xlabel("log10(target C / cutoff C)", fontsize=8)
        ax.invert_xaxis()
        ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def plot_reproduction_curves(
    backtests: dict, laws: list[tuple[str, str]], path: str | Path, benchmarks, threshold: float, proxy: str = ""
) -> Path:
    """One panel per benchmark: training and held-out runs and each law's fitted curve.

    Parameters
    ----------
    backtests : dict
        (kind, law, benchmark, proxy) -> backtest result (``predictions`` and ``fit``).
    laws : list of tuple of (str, str)
        (kind, law) pairs to draw.
    path : str or Path
        Where to save the figure.
    benchmarks : iterable of tuple of (str, str)
        (benchmark, metric) pairs, one panel each.
    threshold : float
        The fit/held-out split in FLOPs.
    proxy : str
        Proxy benchmark of the two-stage backtests.

    Returns
    -------
    Path
        The saved figure.
    """
    fig, axes = panel_grid(len(benchmarks))
    for ax, (bench, metric) in zip(axes, benchmarks, strict=True):
        found = {law: backtests.get((kind, law, bench, proxy if kind == "two_stage" else "")) for kind, law in laws}
        found = {law: bt for law, bt in found.items() if bt is not None}
        if not found:
            ax.set_visible(False)
            continue
        first = next(iter(found.values()))
        grid = flops_grid(first.predictions)
        curves = {law: c for law, bt in found.items() if (c := curve(bt.fit, grid)) is not None}
        draw_backtest(ax, first.predictions, curves, f"{bench} ({metric})", threshold, dropped=first.fit.dropped)
        ax.legend(fontsize=5)
    return save_figure(fig, path)


def plot_kscan(scan: pd.DataFrame, fits: list, param_names: list[str], title: str, path: str | Path) -> Path:
    """Left panels: each parameter versus k (log2 axis). Last panel: -log pass@k versus the
    law's covariate, one colour per k, points and fitted curves.

    Parameters
    ----------
    scan : pandas.DataFrame
        One row per k: ``k``, one column per parameter and optional ``<name>_stderr`` columns.
    fits : list of FitResult
        The fit at each k, in order.
    param_names : list of str
        Parameter columns to draw.
    title : str
        Figure title.
    path : str or Path
        Where to save the figure.

    Returns
    -------
    Path
        The saved figure.
    """
    fig, axes = panel_grid(len(param_names) + 1, 3.2, 2.7)
    ok = scan.dropna(subset=[param_names[0]])
    law_name = fits[0].law if fits else None
    for ax, name in zip(axes, param_names, strict=False):
        values = ok[name].to_numpy(float)
        yerr = param_errorbars(law_name, name, values, ok.get(f"{name}_stderr")) if law_name else None
        ax.errorbar(ok["k"], values, yerr=yerr, marker="o", ms=3, capsize=2, label="fit ± 1 s.e. (within bounds)")
        if law_name is not None:
            hits = bound_hits(law_name, name, values)
            if hits.any():
                ax.scatter(ok["k"][hits], values[hits], marker="x", s=40, color="red", zorder=5, label="at a bound")
            ax.legend(fontsize=5)
        ax.set_xscale("log", base=2)
        if law_name is not None and use_log_axis(law_name, name, values):
            ax.set_yscale("log")
        ax.set_xlabel("k", fontsize=8)
        ax.set_ylabel(name, fontsize=8)
        ax.tick_params(labelsize=7)
    ax = axes[-1]
    cmap = plt.get_cmap("viridis")
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
            ax.plot(grid, -np.log(pred), color=color, lw=0.6, alpha=0.6, label=f"k={result.spec.k}")
            continue
        ax.plot(grid, -np.log(pred), color=color, lw=1, label=f"k={result.spec.k}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(
        "G = -log GoldProb" if fits and "gold" in get_law(fits[0].law).covariates else "C (FLOPs)", fontsize=8
    )
    ax.set_ylabel("-log pass@k", fontsize=8)
    ax.legend(fontsize=5, ncol=2)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
