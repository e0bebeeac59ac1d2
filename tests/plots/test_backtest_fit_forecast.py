"""The single-panel figures: a backtest of two laws, a fit, a forecast; each returns the Axes it
drew into, and the command's ``write`` saves the same drawing."""

from __future__ import annotations

import numpy as np
import pytest

import benchcast as bc
from benchcast import Uncertainty
from benchcast.plots import law_color
from tests.plots.figure_checks import (
    arc_backtests,
    close_all,
    ladder,
    legend_outside_axes,
    legend_texts,
    overlapping_tick_labels,
)


@pytest.fixture(autouse=True)
def _closed_figures():
    yield
    close_all()


def test_backtest_panel_colours_each_law_and_sets_their_intervals_apart():
    ax = arc_backtests().plot()
    labels = legend_texts(ax)
    assert "fitted runs (11)" in labels and "held-out runs (4)" in labels
    assert any(label.startswith("dropped (score <= chance") for label in labels)
    assert "power 90 % prediction interval, 20 replicates" in labels
    assert "power_floor 50 % prediction interval" in labels
    assert "fit/held-out split 2e+20 FLOPs" in labels
    bars = {c.get_label(): c for c in ax.collections if "prediction interval" in c.get_label()}
    x_power = bars["power 50 % prediction interval"].get_segments()[0][0][0]
    x_floor = bars["power_floor 50 % prediction interval"].get_segments()[0][0][0]
    assert x_power != x_floor and abs(np.log10(x_power / x_floor)) < 0.1  # side by side at one run
    curves = {line.get_label(): line for line in ax.lines}
    assert curves["power"].get_color() == law_color("power") != curves["power_floor"].get_color()
    title = ax.get_title()
    assert "arc_easy" in title and "acc_norm" in title and "TPR" in title
    assert ax.get_ylabel() == "acc_norm"
    assert legend_outside_axes(ax)
    assert not overlapping_tick_labels(ax.figure)


def test_backtest_plot_draws_into_the_axes_given():
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2)
    assert arc_backtests().backtests[0].plot(ax=right) is right
    assert right.lines and not left.lines and len(fig.axes) == 2


def test_fit_plot_shows_fitted_and_dropped_runs_and_the_curve():
    import matplotlib.pyplot as plt

    fit = bc.fit(ladder(), law="power", benchmark="gsm8k", metric="exact_match", max_flops=2e20)
    fig, ax = plt.subplots()
    assert fit.plot(ax=ax, lw=3) is ax
    labels = legend_texts(ax)
    assert "fitted runs (5)" in labels
    assert [label for label in labels if label.startswith("dropped (")] == ["dropped (score <= chance 0 + 0.05) (8)"]
    curve = next(line for line in ax.lines if line.get_label() == "power (fitted)")
    assert curve.get_linewidth() == 3  # the caller's style reaches the curve
    assert "gsm8k" in ax.get_title() and "exact_match" in ax.get_title() and ax.get_ylabel() == "exact_match"


def test_forecast_plot_draws_both_intervals_over_the_fit():
    fit = bc.fit(ladder(), law="power", benchmark="arc_easy", metric="acc_norm", max_flops=2e20)
    fc = bc.forecast(fit, flops=[1e21, 1e22], uncertainty=Uncertainty(n_boot=20, interval="bootstrap", levels=0.9))
    ax = fc.plot(fit=fit)
    labels = legend_texts(ax)
    assert "power forecast" in labels and "fitted runs (11)" in labels
    assert "90 % prediction interval (bootstrap, 20 replicates)" in labels
    assert "90 % confidence interval (mean curve)" in labels
    stars = next(c for c in ax.collections if c.get_label() == "power forecast")
    assert np.allclose(stars.get_offsets()[:, 0], [1e21, 1e22])
    assert ax.get_xlim()[1] > 1e22
    assert not overlapping_tick_labels(ax.figure)


@pytest.mark.parametrize("figure_format,magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_write_saves_the_figure_in_the_format_asked(tmp_path, figure_format, magic):
    arc_backtests().write(tmp_path, figure_format=figure_format, dpi=72)
    path = tmp_path / f"backtest-arc_easy.{figure_format}"
    assert path.read_bytes().startswith(magic)
    assert sorted(p.suffix for p in tmp_path.glob("backtest-*")) == sorted([".csv", f".{figure_format}"])


def test_strategy_forecast_plot_draws_the_targets_with_an_interval_and_names_the_others():
    from dataclasses import replace

    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.forecasting.forecast import make_forecast
    from benchcast.forecasting.targets import planned_runs

    runs = planned_runs(flops=np.array([1e21, 1e22, 1e23]))
    fc = make_forecast("arc_easy", "ensemble", runs, [0.61, 0.70, np.nan], [], Uncertainty(20, levels=(0.9,)))
    fc = replace(fc, points=fc.points.assign(lower90=[0.55, np.nan, np.nan], upper90=[0.66, np.nan, np.nan]))
    runs = bc.select(ladder(), "arc_easy", "acc_norm")
    ax = fc.plot(runs=runs)
    labels = legend_texts(ax)
    assert f"runs ({len(runs)})" in labels and "ensemble forecast" in labels
    assert "90 % prediction interval (extrapolation, 20 replicates)" in labels
    assert "no forecast at 1e+23" in labels  # named, not drawn at a made-up value
    stars = next(c for c in ax.collections if c.get_label() == "ensemble forecast")
    assert np.allclose(stars.get_offsets()[:, 0], [1e21, 1e22])
    assert ax.get_ylabel() == "acc_norm" and "arc_easy" in ax.get_title()
    assert stars.get_facecolor()[0][:3] == pytest.approx(matplotlib_rgb(law_color("ensemble")))
    assert legend_outside_axes(ax) and not overlapping_tick_labels(ax.figure)


def matplotlib_rgb(color):
    from matplotlib.colors import to_rgb

    return to_rgb(color)


def test_forecast_plot_draws_no_bar_and_no_label_for_an_interval_that_does_not_exist():
    from dataclasses import replace

    fit = bc.fit(ladder(), law="power", benchmark="arc_easy", metric="acc_norm", max_flops=2e20)
    fc = bc.forecast(fit, flops=[1e21, 1e22], uncertainty=Uncertainty(n_boot=20, interval="bootstrap", levels=0.9))
    lower, upper = fc.interval(0.9)
    points = fc.points.assign(lower90=[lower[0], np.nan], mean_lower90=np.nan, mean_upper90=np.nan)
    ax = replace(fc, points=points).plot()
    labels = legend_texts(ax)
    assert not any("confidence interval" in label for label in labels)  # no bound anywhere: nothing named
    bars = [c for c in ax.containers if "prediction interval" in str(c.get_label())]
    assert len(bars) == 1 and len(bars[0].lines[2][0].get_segments()) == 1  # the point with an interval only
