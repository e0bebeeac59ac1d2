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


def panel_grid(n: int, width: float = 3.6, height: float = 2.9, max_cols: int = 4):
    cols = min(n, max_cols)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


RUN_STYLES = {
    "fitted": {"s": 14, "color": "0.2", "marker": "o", "zorder": 4},
    "held-out": {"s": 22, "color": "crimson", "marker": "D", "zorder": 5},
    "not used": {"s": 14, "color": "0.6", "marker": "x", "zorder": 3},
}
DROPPED_COLORS = ("darkorange", "purple", "teal", "olive")


def run_status(predictions: pd.DataFrame, dropped: list[dict] | None = None) -> pd.Series:
    """What happened to each row of a backtest frame: 'fitted', 'held-out', 'not used' (outside
    the selected compute range) or 'dropped: <reason>' (selected for the fit, removed by the law's
    filter; the reason comes from the fit's ``dropped`` list)."""
    reasons = {(d["run"], float(d["k"])): d["reason"] for d in dropped or []}
    side = predictions["side"].to_numpy()
    fitted = predictions["fitted"].to_numpy(bool) if "fitted" in predictions else side == "train"
    ks = predictions["k"].to_numpy(float) if "k" in predictions else np.ones(len(predictions))
    status = []
    for run, k, s, f in zip(predictions["run"], ks, side, fitted, strict=True):
        if s == "test":
            status.append("held-out")
        elif s == "train" and f:
            status.append("fitted")
        elif s == "train":
            status.append(f"dropped: {reasons.get((run, float(k)), 'filtered by the law')}")
        else:
            status.append("not used")
    return pd.Series(status, index=predictions.index)


def draw_runs(ax, frame: pd.DataFrame, status: pd.Series, y: str = "true") -> None:
    """Scatter runs by status, each with its own marker and a legend entry with its count."""
    for name in ("fitted", "held-out", "not used"):
        rows = frame[status == name]
        if len(rows):
            ax.scatter(rows["flops"], rows[y], label=f"{name} runs ({len(rows)})", **RUN_STYLES[name])
    dropped = sorted({s for s in status if s.startswith("dropped")})
    for i, name in enumerate(dropped):
        rows = frame[status == name]
        color = DROPPED_COLORS[i % len(DROPPED_COLORS)]
        label = f"{name.replace('dropped: ', 'dropped (')}) ({len(rows)})"
        ax.scatter(rows["flops"], rows[y], s=18, facecolors="none", edgecolors=color, lw=0.9, label=label, zorder=3)


def draw_intervals(ax, frame: pd.DataFrame, n_boot: int | None = None) -> None:
    """50 % (thick) and 90 % (thin) prediction intervals at held-out runs, when the frame has them."""
    test = frame[frame["side"] == "test"]
    if "lower90" not in test or test["lower90"].isna().all():
        return
    reps = f", {n_boot} replicates" if n_boot else ""
    ax.vlines(
        test["flops"],
        test["lower90"],
        test["upper90"],
        color="crimson",
        alpha=0.35,
        lw=1.0,
        label=f"90 % prediction interval{reps}",
        zorder=2,
    )
    ax.vlines(
        test["flops"],
        test["lower50"],
        test["upper50"],
        color="crimson",
        alpha=0.6,
        lw=3.0,
        label="50 % prediction interval",
        zorder=2,
    )


def draw_band(ax, grid: np.ndarray, band: dict, color: str, label: str = "") -> None:
    """Shade interval bands: ``band`` maps a level (0.5, 0.9) to (lower, upper) over ``grid``."""
    for level, alpha in ((0.9, 0.15), (0.5, 0.3)):
        if level in band:
            lo, hi = band[level]
            text = f"{label}{int(round(level * 100))} % interval" if label is not None else None
            ax.fill_between(grid, lo, hi, color=color, alpha=alpha, lw=0, label=text)


def draw_backtest(
    ax,
    predictions: pd.DataFrame,
    curves: dict,
    title: str,
    threshold: float | None = None,
    ylabel: str = "score",
    bands: dict | None = None,
    dropped: list[dict] | None = None,
    n_boot: int | None = None,
) -> None:
    """One panel: fitted, dropped (with why), held-out and unused runs; one curve per law
    (flops -> score); optional bands (law -> {level: (lower, upper)}) and held-out intervals."""
    draw_runs(ax, predictions, run_status(predictions, dropped))
    draw_intervals(ax, predictions, n_boot)
    for i, (name, (grid, values)) in enumerate(curves.items()):
        color = f"C{i}"
        ax.plot(grid, values, color=color, lw=1.5, label=name)
        if bands and name in bands:
            band = bands[name]
            draw_band(ax, grid, band if isinstance(band, dict) else {0.9: band}, color, f"{name} ")
    if threshold is not None:
        ax.axvline(threshold, color="0.5", ls="--", lw=0.8, label=f"fit/held-out split {threshold:.2g} FLOPs")
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


def plot_sweep(
    frame: pd.DataFrame, path: str | Path, success_mre: float = 10.0, critical: list[dict] | None = None
) -> Path:
    """MRE versus threshold, one panel per benchmark, one line per law; the success line and
    each law's critical threshold (computed from the frame's successes when not given)."""
    from benchcast.evaluation.sweep import critical_threshold

    found = {(c["benchmark"], c["law"]): c["critical_threshold"] for c in critical or []}
    benchmarks = list(dict.fromkeys(frame["benchmark"]))
    fig, axes = panel_grid(len(benchmarks))
    for ax, bench in zip(axes, benchmarks, strict=True):
        sub = frame[frame["benchmark"] == bench]
        for i, (law, rows) in enumerate(sub.groupby("law", sort=False)):
            ax.plot(rows["threshold"], rows["test_mre"], marker="o", ms=3, color=f"C{i}", label=law)
            if (bench, law) in found:
                t_crit = found[(bench, law)]
            else:
                ok = rows.dropna(subset=["test_mre"])
                t_crit = critical_threshold(ok["threshold"], ok["test_mre"] < success_mre) if len(ok) else None
            if t_crit:
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


def bound_hits(law_name: str, name: str, values) -> np.ndarray:
    """Which values of a parameter sit on a bound of its range (the engine's tolerance, in the
    space the optimiser sees: log for scale parameters)."""
    param = next(p for p in get_law(law_name).parameters if p.name == name)
    values = np.asarray(values, float)
    to_internal = np.log if param.log else (lambda v: v)
    with np.errstate(divide="ignore", invalid="ignore"):
        u, lo, hi = to_internal(values), to_internal(param.lower), to_internal(param.upper)
    span = hi - lo if np.isfinite(hi - lo) else 1.0
    tol = 1e-6 * max(span, 1.0)
    return (np.isfinite(lo) & (u <= lo + tol)) | (np.isfinite(hi) & (u >= hi - tol))


def use_log_axis(law_name: str, name: str, values) -> bool:
    """Scale parameters (declared log by the law), or positive values spanning over two decades."""
    param = next((p for p in get_law(law_name).parameters if p.name == name), None)
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    if not values.size or (values <= 0).any():
        return False
    return bool((param is not None and param.log) or values.max() / values.min() > 100)


def plot_cutoff(
    frame: pd.DataFrame, param_names: list[str], title: str, path: str | Path, law: str | None = None
) -> Path:
    """Error (and interval coverage, when bootstrapped) and every parameter versus decades of
    extrapolation (cutoff backtest). Scale parameters are on log axes; fits at a bound are marked."""
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
        draw_backtest(ax, first.predictions, curves, f"{bench} ({metric})", threshold, dropped=first.fit.dropped)
        ax.legend(fontsize=5)
    return save_figure(fig, path)


def param_errorbars(law_name: str, name: str, values: np.ndarray, stderr) -> np.ndarray | None:
    """(2, n) error bars of ±1 s.e., cut at the parameter's bounds: a parameter that cannot be
    negative gets a one-sided bar at 0, never one reaching below it."""
    if stderr is None:
        return None
    err = np.nan_to_num(np.asarray(stderr, float), nan=0.0)
    param = next(p for p in get_law(law_name).parameters if p.name == name)
    lower = np.clip(np.minimum(err, values - param.lower), 0.0, None)
    upper = np.clip(np.minimum(err, param.upper - values), 0.0, None)
    return np.vstack([lower, upper])


def plot_kscan(scan: pd.DataFrame, fits: list, param_names: list[str], title: str, path: str | Path) -> Path:
    """Left panels: each parameter versus k (log2 axis). Last panel: -log pass@k versus the
    law's covariate, one colour per k, points and fitted curves."""
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
