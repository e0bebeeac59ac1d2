"""The backtest panel: runs marked by what the fit did with them, fitted curves, interval bands."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.plots.style import law_color, law_linestyle, style_axes

RUN_STYLES = {
    "fitted": {"s": 14, "color": "0.2", "marker": "o", "zorder": 4},
    "held-out": {"s": 22, "color": "crimson", "marker": "D", "zorder": 5},
    "not used": {"s": 14, "color": "0.6", "marker": "x", "zorder": 3},
}
DROPPED_COLORS = ("darkorange", "purple", "teal", "olive")
INTERVAL_OFFSET = 0.035  # decades between two laws' intervals drawn at the same run


def run_status(predictions: pd.DataFrame, dropped: list[dict] | None = None) -> pd.Series:
    """Each backtest row's status: 'fitted', 'held-out', 'not used' or 'dropped: <reason>'."""
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


def draw_intervals(
    ax, frame: pd.DataFrame, n_boot: int | None = None, law: str = "", slot: int = 0, n_slots: int = 1
) -> None:
    """One law's 50 % and 90 % intervals at the held-out runs, shifted sideways by its ``slot``."""
    test = frame[frame["side"] == "test"]
    if "lower90" not in test or test["lower90"].isna().all():
        return
    shift = 10.0 ** (INTERVAL_OFFSET * (slot - (n_slots - 1) / 2))
    x = test["flops"].to_numpy(float) * shift
    color = law_color(law) if law else "crimson"
    reps = f", {n_boot} replicates" if n_boot else ""
    who = f"{law} " if law else ""
    for level, alpha, lw, note in ((90, 0.45, 1.0, reps), (50, 0.8, 3.0, "")):
        lo, hi, label = test[f"lower{level}"], test[f"upper{level}"], f"{who}{level} % prediction interval{note}"
        ax.vlines(x, lo, hi, color=color, alpha=alpha, lw=lw, zorder=2, label=label)


UNINFORMATIVE_LABEL = "uninformative: 90 % interval wider than half of chance .. 1 (not a result)"


def draw_band(ax, grid: np.ndarray, band: dict, color: str, label: str | None = "", faint=None) -> None:
    """Shade a law's 50 % and 90 % bands over ``grid``; where ``faint``, the 90 % band is only hatched."""
    faint = np.zeros(len(grid), bool) if faint is None else np.asarray(faint, bool)
    for level, alpha in ((0.9, 0.12), (0.5, 0.25)):
        if level in band:
            lo, hi = band[level]
            text = f"{label}{int(round(level * 100))} % interval" if label is not None and not faint.all() else None
            if not faint.all():
                ax.fill_between(grid, lo, hi, where=~faint, color=color, alpha=alpha, lw=0, label=text)
            if level == 0.9 and faint.any():
                hatched = UNINFORMATIVE_LABEL if UNINFORMATIVE_LABEL not in ax.get_legend_handles_labels()[1] else None
                ax.fill_between(
                    grid,
                    lo,
                    hi,
                    where=faint,
                    facecolor="none",
                    edgecolor=color,
                    hatch="//",
                    lw=0,
                    alpha=0.35,
                    label=hatched,
                )
            if level == 0.9:
                for edge in (lo, hi):
                    ax.plot(grid, np.where(faint, np.nan, edge), color=color, lw=0.5, alpha=0.6)


def uninformative_points(flags) -> np.ndarray:
    """Per point, whether its forecast is flagged uninformative (``flags``: a Forecast's, one tuple per point)."""
    return np.array([any(getattr(f, "kind", "") == "uninformative" for f in point) for point in flags], bool)


def draw_backtest(
    ax,
    predictions: pd.DataFrame | dict,
    curves: dict,
    title: str,
    threshold: float | None = None,
    ylabel: str = "score",
    bands: dict | None = None,
    dropped: list[dict] | None = None,
    n_boot: int | None = None,
) -> None:
    """One panel: the runs by status, one curve per law, optional bands and held-out intervals."""
    by_law = predictions if isinstance(predictions, dict) else {"": predictions}
    first = next(iter(by_law.values()))
    draw_runs(ax, first, run_status(first, dropped))
    for slot, (law, frame) in enumerate(by_law.items()):
        draw_intervals(ax, frame, n_boot if slot == 0 else None, law, slot, len(by_law))
    for name, (grid, values) in curves.items():
        color = law_color(name)
        ax.plot(grid, values, color=color, ls=law_linestyle(name), lw=1.5, label=name)
        if bands and name in bands:
            band = bands[name]
            draw_band(ax, grid, band if isinstance(band, dict) else {0.9: band}, color, f"{name} ")
    if threshold is not None:
        ax.axvline(threshold, color="0.5", ls="--", lw=0.8, label=f"fit/held-out split {threshold:.2g} FLOPs")
    style_axes(ax, "training compute C (FLOPs)", ylabel, title, xlog=True)


def flops_grid(predictions: pd.DataFrame, n: int = 200) -> np.ndarray:
    """A log-spaced compute grid reaching a little past the runs on both sides."""
    flops = predictions["flops"].to_numpy(float)
    return np.geomspace(flops.min() / 1.5, flops.max() * 1.5, n)


def curve(result, grid: np.ndarray):
    """(grid, predicted score) along compute; None where the law cannot place a run of compute C by itself."""
    try:
        X = result.fitted.covariates_at(grid, tpr=result.spec.tpr)
    except BenchcastError:
        return None
    return grid, result.fitted.score(X)
