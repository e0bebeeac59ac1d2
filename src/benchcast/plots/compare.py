"""The figure of a comparison of recipes: each recipe's curve and 90 % band to the planned run (marked), where the
curves cross, and the matrix of the pairs' probabilities."""

from __future__ import annotations

import os

import numpy as np

from benchcast.plots.style import LAW_PALETTE, plt, readable_log_axis, style_axes

SHOWN = 3.0  # the curves are drawn to this multiple of the planned compute
FIGURE_RECIPES = 10  # recipes drawn at most: the best-ranked (every one stays in the tables and the JSON)


def plot_comparison(comparison, benchmark: str | None = None, axes=None):
    """Curves, bands and runs per recipe (left), P(row beats column) at the planned run (right); the figure."""
    recipes = comparison.recipes
    benchmark = benchmark or str(recipes["benchmark"].iloc[0])
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(13.5, 5.6), layout="constrained", width_ratios=[1.5, 1])
    curve_ax, matrix_ax = axes
    fig = curve_ax.figure
    mine = recipes[recipes["benchmark"] == benchmark]
    names, total = mine["recipe"].tolist(), len(mine)
    if total > FIGURE_RECIPES:  # more curves and cells than a reader can tell apart: the best-ranked, said so
        best = set(mine.sort_values("rank", kind="stable")["recipe"].head(FIGURE_RECIPES))
        names = [name for name in names if name in best]
    legend = unique_labels(names, 32)
    planned = comparison.target.get("planned_flops")
    for i, name in enumerate(names):
        curve = comparison.curves.get((benchmark, name))
        if curve is None:
            continue
        color = LAW_PALETTE[i % len(LAW_PALETTE)]
        shown = curve["flops"] <= (planned or np.inf) * SHOWN
        runs = curve["runs"]
        curve_ax.scatter(runs["flops"], runs["value"], s=14, color=color, alpha=0.7)
        curve_ax.plot(curve["flops"][shown], curve["prediction"][shown], color=color, label=legend[i])
        lower, upper = curve["lower"][shown], curve["upper"][shown]
        curve_ax.fill_between(curve["flops"][shown], lower, upper, color=color, alpha=0.06, lw=0)
    row = recipes[recipes["benchmark"] == benchmark]
    if planned is not None:
        curve_ax.axvline(planned, color="0.3", ls="--", lw=1)
        curve_ax.text(planned, 0.02, " planned run", transform=curve_ax.get_xaxis_transform(), fontsize=8)
    pairs = comparison.pairs[comparison.pairs["benchmark"] == benchmark]
    pairs = pairs[pairs["a"].isin(names) & pairs["b"].isin(names)]
    for x in pairs["crosses_at"].dropna():
        curve_ax.axvline(x, color="0.6", ls=":", lw=1)
    has_metric = "metric" in row and row["metric"].notna().any()
    ylabel = f"{benchmark} ({row['metric'].dropna().iloc[0]})" if has_metric else benchmark
    title = "forecast per recipe (90 % band); dotted: curves cross"
    if len(names) < total:
        title = f"the {len(names)} best-ranked of {total} recipes: " + title
    style_axes(curve_ax, "training compute C (FLOPs)", ylabel, title, xlog=True)
    readable_log_axis(curve_ax)
    curve_ax.legend(fontsize=7, loc="lower right", framealpha=0.8)
    _matrix(matrix_ax, names, pairs, comparison.decide)
    return fig


def unique_labels(names: list, width: int) -> list[str]:
    """Each name as a label of lines of at most ``width`` characters, cut only where it stays unique."""
    texts = [str(name) for name in names]
    out = []
    for i, text in enumerate(texts):
        shared = max((len(os.path.commonprefix([text, other])) for j, other in enumerate(texts) if j != i), default=0)
        keep = max(width, shared + 1)
        cut = text[:keep]
        lines = "\n".join(cut[k : k + width] for k in range(0, len(cut), width))
        out.append(lines + ("…" if keep < len(text) else ""))
    return out


def _matrix(ax, names: list, pairs, decide: float) -> None:
    """P(row recipe scores higher than column recipe) at the planned run, decided cells in bold."""
    n = len(names)
    grid = np.full((n, n), np.nan)
    index = {name: i for i, name in enumerate(names)}
    for r in pairs.itertuples():
        i, j = index[r.a], index[r.b]
        grid[i, j], grid[j, i] = r.p_a_better, 1 - r.p_a_better
    ax.imshow(grid, vmin=0, vmax=1, cmap="RdBu_r")
    for i in range(n):
        for j in range(n):
            if np.isfinite(grid[i, j]):
                weight = "bold" if grid[i, j] >= decide or grid[i, j] <= 1 - decide else "normal"
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8, fontweight=weight)
    labels = unique_labels(names, 24)
    ax.set_xticks(range(n), labels, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(n), labels, fontsize=7)
    ax.set_title(f"P(row beats column) at the planned run; bold: decided (p >= {decide:g})", fontsize=9)
