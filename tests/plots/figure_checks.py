"""Shared data and checks of the figure tests (a conftest.py here would shadow the top-level one,
which other tests import by name): fast backtests on the bundled ladder and checks of what a
reader sees (legend entries, visible panels, labels and panels that do not overlap)."""

from __future__ import annotations

import functools
import itertools
import warnings

import pandas as pd

import benchcast as bc
from benchcast.data.example import load_example


@functools.cache
def ladder() -> pd.DataFrame:
    """The bundled synthetic ladder (read once)."""
    return load_example()


@functools.cache
def arc_backtests():
    """power and power_floor on the ladder's arc_easy, split at 2e20, with bootstrap intervals (made once)."""
    from benchcast.evaluation.backtest import compare_backtests

    specs = [bc.FitSpec(law, "arc_easy", "acc_norm") for law in ("power", "power_floor")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few fitted points: warnings about support are not under test
        return compare_backtests(ladder(), specs, threshold=2e20, uncertainty=bc.Uncertainty(20, interval="bootstrap"))


def legend_texts(owner) -> list[str]:
    """The entries of an Axes' legend, or of every legend of a Figure."""
    legends = [owner.get_legend()] if hasattr(owner, "get_legend") else list(owner.legends)
    legends += [ax.get_legend() for ax in getattr(owner, "axes", [])] if not hasattr(owner, "get_legend") else []
    return [t.get_text() for legend in legends if legend is not None for t in legend.get_texts()]


def visible_axes(fig) -> list:
    """Panels a reader sees: visible Axes that draw something (lines, points, bars or text)."""
    return [
        ax
        for ax in fig.axes
        if ax.get_visible() and (ax.lines or ax.collections or ax.patches or ax.texts or ax.images)
    ]


def overlapping_tick_labels(fig) -> list[tuple[str, str]]:
    """Pairs of tick labels on one axis whose drawn boxes overlap (after a draw)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
            for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
                if box_a.overlaps(box_b):
                    found.append((a, b))
    return found


def legend_outside_axes(ax) -> bool:
    """The Axes' legend lies wholly outside its data area."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    return not legend.overlaps(ax.get_window_extent(renderer))


def _owner(ax):
    """The panel a colour bar belongs to (itself for a panel)."""
    bar = getattr(ax, "_colorbar", None)
    mappable = getattr(bar, "mappable", None)
    return getattr(mappable, "axes", None) or ax


def overlaps(fig, pad: float = 0.5) -> list[str]:
    """Each pair of panels whose tight extents (their legend, colour bar label, title and tick labels included)
    intersect by more than ``pad`` pixels, and each panel or legend that reaches outside the figure, in words."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [a for a in fig.axes if a.get_visible()]
    boxes = {a: a.get_tightbbox(renderer) for a in axes}
    out = []
    for i, a in enumerate(axes):
        for b in axes[i + 1 :]:
            if _owner(a) is b or _owner(b) is a or _owner(a) is _owner(b):
                continue  # a colour bar beside its own panel
            one, two = boxes[a], boxes[b]
            width = min(one.x1, two.x1) - max(one.x0, two.x0)
            height = min(one.y1, two.y1) - max(one.y0, two.y0)
            if width > pad and height > pad:
                out.append(f"{_name(a)} and {_name(b)} overlap by {width:.0f} x {height:.0f} px")
    page = fig.bbox
    for a in axes:
        box = boxes[a]
        if box.x0 < page.x0 - pad or box.y0 < page.y0 - pad or box.x1 > page.x1 + pad or box.y1 > page.y1 + pad:
            out.append(f"{_name(a)} reaches outside the figure")
    return out


def _name(ax) -> str:
    return repr(ax.get_title() or ax.get_ylabel() or ax.get_xlabel() or "a panel")


def close_all() -> None:
    """Close every open figure (each test module calls it after each test)."""
    import matplotlib.pyplot as plt

    plt.close("all")
