"""Interval coverage drawn with what it rests on: each point's count n, and the intervals' width beside it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.plots.style import FONT, style_axes

LEVEL_STYLES = {90: {"ls": "-", "marker": "o"}, 50: {"ls": "--", "marker": "s"}}
LEVEL_COLORS = {90: "#d62728", 50: "#2ca02c"}  # one colour per level when a single series is drawn
COUNT_LOOK = {"ha": "center", "fontsize": FONT["tick"] - 1, "color": "0.3"}  # an n= label


def coverage_table(frame: pd.DataFrame, x: str, edges: np.ndarray) -> pd.DataFrame:
    """Coverage, median interval width and count of held-out points in bins of ``x``."""
    values = frame[x].to_numpy(float)
    which = np.clip(np.digitize(values, edges) - 1, 0, len(edges) - 2)
    rows = []
    for b in np.unique(which):
        group = frame[which == b]
        row = {"x": float(np.mean(values[which == b]))}
        has = group["lower90"].notna() if "lower90" in group else pd.Series(False, index=group.index)
        row["n"] = int(has.sum())
        for pct in (50, 90):
            if f"lower{pct}" in group and has.any():
                lo, hi, true = group[f"lower{pct}"][has], group[f"upper{pct}"][has], group["true"][has]
                row[f"coverage{pct}"] = float(((true >= lo) & (true <= hi)).mean())
                row[f"width{pct}"] = float(np.median(hi - lo))
            else:
                row[f"coverage{pct}"] = row[f"width{pct}"] = np.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=["x", "n", "coverage50", "coverage90", "width50", "width90"])


def annotate_counts(ax, x, y, n, most: int = 8) -> None:
    """Write ``n=<count>`` along the top of the panel above at most ``most`` evenly spaced points."""
    x, y, n = np.asarray(x, float), np.asarray(y, float), np.asarray(n, int)
    for i in np.unique(np.linspace(0, len(x) - 1, min(len(x), most)).round().astype(int)) if len(x) else []:
        if np.isfinite(y[i]):
            ax.annotate(f"n={n[i]}", (x[i], 0.985), xycoords=("data", "axes fraction"), va="top", **COUNT_LOOK)


def draw_coverage(
    ax_coverage,
    ax_width,
    x,
    summary: pd.DataFrame,
    n,
    counts: str = "held-out points",
    replicates: str = "",
    name: str = "",
    color=None,
    label_n: bool = True,
) -> None:
    """50 % and 90 % coverage against ``x`` with the n behind each point, and the median width below."""
    x = np.asarray(x, float)
    n = np.asarray(n, int)
    for pct in (90, 50):
        c = color or LEVEL_COLORS[pct]
        style = LEVEL_STYLES[pct]
        label = "_nolegend_" if name else f"{pct} % interval"  # series of a name: the caller's legend names it
        ax_coverage.plot(x, summary[f"coverage{pct}"], color=c, ms=3, label=label, **style)
        if f"width{pct}" in summary:
            ax_width.plot(x, summary[f"width{pct}"], color=c, ms=3, label=label, **style)
    same = len(n) > 0 and (n == n[0]).all()
    if label_n:
        if not same:  # a few points carry their n, spaced so that the labels stay apart
            top = summary["coverage90"].to_numpy(float)
            for i in np.unique(np.linspace(0, len(x) - 1, min(len(x), 8)).round().astype(int)):
                if np.isfinite(top[i]):
                    ax_coverage.annotate(
                        f"n={n[i]}", (x[i], top[i]), xytext=(0, 4), textcoords="offset points", **COUNT_LOOK
                    )
        for pct in (90, 50):
            ax_coverage.axhline(pct / 100, color="0.5", ls=":" if pct == 50 else "-.", lw=0.8, label=f"nominal {pct} %")
        what = f"n = {n[0]} {counts}" if same else f"n: {counts}"
        ax_coverage.set_title(
            f"interval coverage ({what}" + (f"; {replicates})" if replicates else ")"), fontsize=FONT["title"]
        )
    ax_coverage.set_ylim(-0.05, 1.12)
    style_axes(ax_coverage, ylabel="share of held-out scores inside")
    style_axes(ax_width, ylabel="median interval width (score)", title="interval width")
