"""Figures that do not mislead (issue 32, item 9): ``result.plot(ax=)`` into a caller's 2 x 4 grid keeps
every legend off every panel and the panels their size; bench's legend entries look like its lines (a
dashed strategy reads dashed); the report's forecast panel says at which TPR its curve is drawn, and
when that lies outside the fitted runs'. Overlaps are measured on the drawn boxes (the renderer's)."""

from __future__ import annotations

import itertools
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast import Uncertainty
from tests.plots.figure_checks import arc_backtests, close_all, ladder


@pytest.fixture(autouse=True)
def _closed_figures():
    yield
    close_all()


@pytest.fixture(scope="module")
def fits():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            bc.fit(ladder(), law, bench, "acc_norm")
            for bench in ("arc_easy", "hellaswag")
            for law in ("power", "power_floor", "bnsl_monotone", "power")
        ]


def _boxes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [legend for ax in fig.axes if (legend := ax.get_legend()) is not None] + list(fig.legends)
    return (
        [ax.get_window_extent(renderer) for ax in fig.axes],
        [legend.get_window_extent(renderer) for legend in legends],
        renderer,
    )


def _check_grid(fig) -> None:
    """No legend over any panel or another legend; every panel at least 60 % of its cell's width."""
    axes, legends, renderer = _boxes(fig)
    assert legends, "the grid has no legend at all"
    for legend, ax in itertools.product(legends, axes):
        assert not legend.overlaps(ax), "a legend covers a panel"
    for a, b in itertools.combinations(legends, 2):
        assert not a.overlaps(b), "two legends overlap"
    cell = fig.get_window_extent().width / 4  # four columns
    assert min(ax.width for ax in axes) > 0.6 * cell, "a panel collapsed"
    for a, b in itertools.combinations(axes, 2):
        assert not a.overlaps(b), "two panels overlap"
    titles = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    for a, b in itertools.combinations(titles, 2):
        assert not a.overlaps(b), "two panel titles overlap"


@pytest.mark.parametrize("layout", [None, "constrained"])
def test_fit_plots_in_a_two_by_four_grid(fits, layout):
    fig, axes = plt.subplots(2, 4, figsize=(16, 7), layout=layout)
    for fit, ax in zip(fits, axes.flat, strict=True):
        assert fit.plot(ax=ax) is ax
    _check_grid(fig)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(fig.legends) == 1 and len(texts) == len(set(texts))  # one legend, each entry once
    assert {"power (fitted)", "power_floor (fitted)", "bnsl_monotone (fitted)"} <= set(texts)


def test_forecast_and_backtest_plots_in_a_two_by_four_grid(fits):
    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fit, ax in zip(fits[:4], axes[0], strict=True):
            bc.forecast(fit, flops=[1e22], uncertainty=Uncertainty(n_boot=20, interval="bootstrap", levels=0.9)).plot(
                ax=ax, fit=fit
            )
    for bt, ax in zip(arc_backtests().backtests * 2, axes[1], strict=True):
        bt.plot(ax=ax)
    _check_grid(fig)
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)


def test_a_plot_alone_keeps_its_legend_beside_it(fits):
    ax = fits[0].plot()
    _, (legend,), _ = _boxes(ax.figure)
    assert not legend.overlaps(ax.get_window_extent(ax.figure.canvas.get_renderer()))
    assert not ax.figure.legends


def _bench_predictions() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for strategy in ("power", "power[bootstrap]", "ensemble", "recommend[holdout]"):
        for decades in rng.uniform(0, 1.5, 30):
            true = 0.5 + rng.normal(0, 0.01)
            rows.append(
                {
                    "strategy": strategy,
                    "benchmark": "a",
                    "decades": decades,
                    "true": true,
                    "prediction": true + rng.normal(0, 0.02),
                    "lower50": true - 0.01,
                    "upper50": true + 0.01,
                    "lower90": true - 0.03,
                    "upper90": true + 0.03,
                }
            )
    return pd.DataFrame(rows)


def _visible_gap(handle, length: float) -> float:
    """The widest gap of a dashed legend line (points) that its marker, drawn at the middle, leaves visible."""
    offset, pattern = handle._dash_pattern  # scaled by the line width, as drawn
    marker = handle.get_markersize() if handle.get_marker() not in (None, "None", "") else 0.0
    hidden = (length / 2 - marker / 2, length / 2 + marker / 2)
    widest, x, on = 0.0, -offset, True
    while x < length:
        for step in pattern:
            if not on:
                lo, hi = max(x, 0.0), min(x + step, length)
                pieces = [(lo, min(hi, hidden[0])), (max(lo, hidden[1]), hi)]
                widest = max(widest, *(b - a for a, b in pieces))
            x, on = x + step, not on
    return widest


def test_bench_legend_draws_dashed_strategies_dashed():
    from benchcast.plots.results import plot_bench

    fig = plot_bench(_bench_predictions())
    (legend,) = fig.legends
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    length = legend.handlelength * legend.prop.get_size_in_points()
    for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
        name = text.get_text()
        if name not in lines:
            continue
        assert handle.get_linestyle() == lines[name].get_linestyle()
        if name.endswith("]"):  # a variant: dashed in the panels, and a gap of it must show beside the marker
            assert lines[name].get_linestyle() == "--"
            assert _visible_gap(handle, length) >= 1.0, f"{name}'s legend entry reads as a solid line"


def test_bench_plot_in_a_callers_figure():
    from benchcast.plots.results import plot_bench

    fig, axes = plt.subplots(2, 4, figsize=(16, 7))
    plot_bench(_bench_predictions(), ax=list(axes[0]))
    for ax in axes[1]:
        ax.plot([0, 1], [0, 1])
    _check_grid(fig)


def test_report_forecast_panel_names_the_curve_tpr(apple, monkeypatch):
    """DCLM runs at TPR 10 .. 160, a 7B planned on 4T tokens (TPR 571): the curve of the law of N and D is
    drawn at 571, below every fitted run; the panel's title and the page's warnings say so."""
    from benchcast.report import figures
    from benchcast.report.analysis import analyse_benchmark

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = analyse_benchmark(
            apple,
            "arc_easy",
            "acc_norm",
            target_params=[7e9],
            target_tokens=[4e12],
            law="nd",
            uncertainty=Uncertainty(10),
        )
    assert report.curve_note == "curve of nd at TPR 571: OUTSIDE the fitted runs' TPR 10 .. 160"
    assert any("OUTSIDE the fitted runs' TPR 10 .. 160" in w for w in report.warnings)
    fig, ax = plt.subplots()
    figures.draw_forecast(ax, report)
    assert "TPR 571: OUTSIDE the fitted runs' TPR 10 .. 160" in ax.get_title()
    plt.close(fig)
    # the band's hatching is decided with the forecast's own chance (the one its flags were), not the fit spec's
    assert report.forecast.chance == pytest.approx(float(report.fit.spec.q_rand))
    from dataclasses import replace

    seen, rule = [], figures._uninformative
    other = replace(report, forecast=replace(report.forecast, chance=0.6))
    monkeypatch.setattr(figures, "_uninformative", lambda bands, chance: seen.append(chance) or rule(bands, chance))
    fig, ax = plt.subplots()
    figures.draw_forecast(ax, other)
    plt.close(fig)
    assert seen and set(seen) == {0.6}


def test_curve_tpr_note_inside_and_for_compute_laws():
    from benchcast.plots.labels import curve_tpr_note

    assert curve_tpr_note(20.0, (10.0, 160.0), ["nd"]) == "curve of nd at TPR 20 (fitted runs' TPR 10 .. 160)"
    assert curve_tpr_note(20.0, (10.0, 160.0), []) == ""  # laws of compute alone: the curve has no TPR
    assert "OUTSIDE" in curve_tpr_note(5.0, (20.0, 20.0), ["nd_floor"])
