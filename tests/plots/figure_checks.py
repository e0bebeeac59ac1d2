"""Shared data and checks of the figure tests (a conftest.py here would shadow the top-level one,
which other tests import by name): fast backtests on the bundled ladder and checks of what a
reader sees (legend entries, visible panels, labels that do not overlap)."""

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
        return compare_backtests(ladder(), specs, threshold=2e20, n_boot=20, interval="bootstrap")


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


def close_all() -> None:
    """Close every open figure (each test module calls it after each test)."""
    import matplotlib.pyplot as plt

    plt.close("all")
