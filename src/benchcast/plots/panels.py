"""The backtest panel: runs marked by what the fit did with them, fitted curves, interval bands."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError

RUN_STYLES = {
    "fitted": {"s": 14, "color": "0.2", "marker": "o", "zorder": 4},
    "held-out": {"s": 22, "color": "crimson", "marker": "D", "zorder": 5},
    "not used": {"s": 14, "color": "0.6", "marker": "x", "zorder": 3},
}
DROPPED_COLORS = ("darkorange", "purple", "teal", "olive")


def run_status(predictions: pd.DataFrame, dropped: list[dict] | None = None) -> pd.Series:
    """What happened to each row of a backtest frame: 'fitted', 'held-out', 'not used' (outside
    the selected compute range) or 'dropped: <reason>' (selected for the fit, removed by the law's
    filter; the reason comes from the fit's ``dropped`` list).

    Parameters
    ----------
    predictions : pandas.DataFrame
        A backtest's predictions: columns ``run`` and ``side`` ('train', 'test' or other), optionally
        ``fitted`` (bool) and ``k``.
    dropped : list of dict, optional
        The fit's dropped rows, each with ``run``, ``k`` and ``reason``.

    Returns
    -------
    pandas.Series
        One status string per row, on the frame's index.
    """
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
    """Scatter runs by status, each with its own marker and a legend entry with its count.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel to draw on.
    frame : pandas.DataFrame
        Runs with a ``flops`` column and the ``y`` column.
    status : pandas.Series
        Each row's status, from :func:`run_status`.
    y : str
        Column drawn on the vertical axis.
    """
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
    """50 % (thick) and 90 % (thin) prediction intervals at held-out runs, when the frame has them.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel to draw on.
    frame : pandas.DataFrame
        Backtest predictions: ``side``, ``flops`` and, when intervals were made, ``lower50``,
        ``upper50``, ``lower90``, ``upper90``.
    n_boot : int, optional
        Bootstrap replicates behind the intervals, named in the legend.
    """
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
    """Shade interval bands: ``band`` maps a level (0.5, 0.9) to (lower, upper) over ``grid``.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel to draw on.
    grid : numpy.ndarray
        Training compute (FLOPs) along the band.
    band : dict
        Level -> (lower, upper) arrays over ``grid``.
    color : str
        Matplotlib colour of the band.
    label : str
        Legend prefix; None leaves the band out of the legend.
    """
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
    (flops -> score); optional bands (law -> {level: (lower, upper)}) and held-out intervals.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The panel to draw on.
    predictions : pandas.DataFrame
        A backtest's predictions (``run``, ``side``, ``flops``, ``true`` and optional interval columns).
    curves : dict
        Law name -> (grid, predicted score), as from :func:`curve`.
    title : str
        Panel title.
    threshold : float, optional
        The fit/held-out split in FLOPs, drawn as a vertical line.
    ylabel : str
        Vertical axis label.
    bands : dict, optional
        Law name -> {level: (lower, upper)} (or a bare (lower, upper) pair, taken as 90 %).
    dropped : list of dict, optional
        The fit's dropped rows (``run``, ``k``, ``reason``).
    n_boot : int, optional
        Bootstrap replicates behind the intervals, named in the legend.
    """
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
    """A log-spaced compute grid reaching a little past the runs on both sides.

    Parameters
    ----------
    predictions : pandas.DataFrame
        Runs with a ``flops`` column.
    n : int
        Number of grid points.

    Returns
    -------
    numpy.ndarray
        ``n`` training-compute values (FLOPs).
    """
    flops = predictions["flops"].to_numpy(float)
    return np.geomspace(flops.min() / 1.5, flops.max() * 1.5, n)


def curve(result, grid: np.ndarray):
    """(grid, predicted score) along training compute; None where the law cannot place a run of
    compute C by itself (laws of N and D fitted at several TPRs, the gold law).

    Parameters
    ----------
    result : FitResult
        A fitted law (``fitted`` and ``spec``).
    grid : numpy.ndarray
        Training compute (FLOPs) to predict at.
    """
    try:
        X = result.fitted.covariates_at(grid, tpr=result.spec.tpr)
    except BenchcastError:
        return None
    return grid, result.fitted.score(X)
