"""Figures (matplotlib, Agg backend): fitted curves with training/held-out runs, sweeps, k-scans."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchcast.errors import BenchcastError  # noqa: E402
from benchcast.laws import get_law  # noqa: E402
from benchcast.utils.io import atomic_write  # noqa: E402


def save_figure(fig, path: str | Path) -> Path:
    """Save atomically (format from the suffix) and close the figure."""
    path = Path(path)
    fmt = path.suffix.lstrip(".") or "png"
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=130))
    plt.close(fig)
    return path


def panel_grid(n: int, width: float = 3.6, height: float = 2.9):
    cols = min(n, 4)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def draw_backtest(
    ax,
    predictions: pd.DataFrame,
    curves: dict,
    title: str,
    threshold: float | None = None,
    ylabel: str = "score",
    bands: dict | None = None,
) -> None:
    """One panel: training/held-out runs, one curve per law (flops -> score), optional bands."""
    train = predictions[predictions["side"] == "train"]
    test = predictions[predictions["side"] == "test"]
    ax.scatter(train["flops"], train["true"], s=12, color="0.35", label="fitted runs", zorder=3)
    ax.scatter(test["flops"], test["true"], s=18, color="crimson", marker="D", label="held-out runs", zorder=3)
    for i, (name, (grid, values)) in enumerate(curves.items()):
        color = f"C{i}"
        ax.plot(grid, values, color=color, lw=1.5, label=name)
        if bands and name in bands:
            lo, hi = bands[name]
            ax.fill_between(grid, lo, hi, color=color, alpha=0.18, lw=0)
    if threshold is not None:
        ax.axvline(threshold, color="0.6", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("training compute C (FLOPs)", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)


def flops_grid(predictions: pd.DataFrame, n: int = 200) -> np.ndarray:
    flops = predictions["flops"].to_numpy(float)
    return np.geomspace(flops.min() / 1.5, flops.max() * 1.5, n)


def curve(result, grid: np.ndarray):
    """(grid, predicted score) along training compute; None where the law cannot place a run of
    compute C by itself (laws of N and D fitted at several TPRs, the gold law)."""
    try:
        X = result.fitted.covariates_at(grid, tpr=result.spec.tpr)
    except BenchcastError:
        return None
    return grid, result.fitted.score(X)


def plot_sweep(frame: pd.DataFrame, path: str | Path, success_mre: float = 10.0) -> Path:
    """MRE versus threshold, one panel per benchmark, one line per law."""
    benchmarks = list(dict.fromkeys(frame["benchmark"]))
    fig, axes = panel_grid(len(benchmarks))
    for ax, bench in zip(axes, benchmarks, strict=True):
        sub = frame[frame["benchmark"] == bench]
        for i, (law, rows) in enumerate(sub.groupby("law", sort=False)):
            ax.plot(rows["threshold"], rows["test_mre"], marker="o", ms=3, color=f"C{i}", label=law)
        ax.axhline(success_mre, color="0.6", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(bench, fontsize=9)
        ax.set_xlabel("threshold T (FLOPs)", fontsize=8)
        ax.set_ylabel("held-out MRE (%)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=7)
    return save_figure(fig, path)


def plot_cutoff(frame: pd.DataFrame, param_names: list[str], title: str, path: str | Path) -> Path:
    """Error and every parameter versus decades of extrapolation (cutoff backtest)."""
    fig, axes = panel_grid(len(param_names) + 1, 3.2, 2.6)
    x = frame["extrapolation_decades"]
    axes[0].plot(x, frame["mre"], marker="o", ms=3)
    axes[0].set_ylabel("MRE on targets (%)", fontsize=8)
    axes[0].set_yscale("log")
    for ax, name in zip(axes[1:], param_names, strict=True):
        ax.plot(x, frame[name], marker="o", ms=3, color="C1")
        ax.axhline(frame[name].iloc[-1], color="0.6", ls="--", lw=0.8)
        ax.set_ylabel(name, fontsize=8)
    for ax in axes:
        ax.set_xlabel("log10(target C / cutoff C)", fontsize=8)
        ax.invert_xaxis()
        ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def plot_reproduction_curves(
    backtests: dict, laws: list[tuple[str, str]], path: str | Path, benchmarks, threshold: float, proxy: str = ""
) -> Path:
    """One panel per benchmark: training and held-out runs and each law's fitted curve."""
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
        draw_backtest(ax, first.predictions, curves, f"{bench} ({metric})", threshold)
    axes[0].legend(fontsize=6)
    return save_figure(fig, path)


def plot_kscan(scan: pd.DataFrame, fits: list, param_names: list[str], title: str, path: str | Path) -> Path:
    """Left panels: each parameter versus k (log2 axis). Last panel: -log pass@k versus the
    law's covariate, one colour per k, points and fitted curves."""
    fig, axes = panel_grid(len(param_names) + 1, 3.2, 2.7)
    ok = scan.dropna(subset=[param_names[0]])
    for ax, name in zip(axes, param_names, strict=False):
        ax.errorbar(ok["k"], ok[name], yerr=ok.get(f"{name}_stderr"), marker="o", ms=3, capsize=2)
        ax.set_xscale("log", base=2)
        if (ok[name] > 0).all() and ok[name].max() / max(ok[name].min(), 1e-300) > 50:
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
