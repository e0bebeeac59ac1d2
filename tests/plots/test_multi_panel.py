"""The multi-panel figures: cutoff, sweep, bench, k-scan (its gold panel with G spanning under a
decade), the reproduction curves. Each: the panels a reader sees (none empty), labels naming the
metric, titles naming benchmark, metric and TPR, legend entries, no colliding tick labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.evaluation.cutoff import CutoffResult
from benchcast.plots import bound_hits, param_errorbars, plot_bench, plot_sweep, readable_log_axis
from tests.plots.figure_checks import arc_backtests, close_all, legend_texts, overlapping_tick_labels, visible_axes


@pytest.fixture(autouse=True)
def _closed_figures():
    yield
    close_all()


def cutoff_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "extrapolation_decades": [3.0, 2.0, 1.0, 0.5],
            "mre": [40.0, 12.0, 5.0, 3.0],
            "n_target_runs": 2,
            "coverage50": [0.0, 0.5, 1.0, 1.0],
            "coverage90": [0.0, 1.0, 1.0, 1.0],
            "width50": [0.02, 0.03, 0.05, 0.04],
            "width90": [0.05, 0.08, 0.12, 0.1],
            "E0": [0.0, 0.1, 0.12, 0.11],
            "C0": [1e80, 3e6, 2e6, 2.5e6],
            "alpha": [2.0, 0.31, 0.3, 0.3],
        }
    )


def test_cutoff_figure_has_no_empty_panel_and_one_x_range():
    result = CutoffResult("compute", "humaneval-py", cutoff_frame(), n_boot=30, metric="pass@1", tpr=20.0)
    fig = result.plot()
    panels = visible_axes(fig)
    assert len(fig.axes) == len(panels) == 6  # error, coverage, width, E0, C0, alpha
    assert len({tuple(np.round(ax.get_xlim(), 6)) for ax in panels}) == 1  # the same x range everywhere
    by_label = {ax.get_ylabel(): ax for ax in panels}
    assert by_label["C0"].get_yscale() == "log" and by_label["alpha"].get_yscale() == "linear"
    coverage = by_label["share of held-out scores inside"]
    # what each coverage rests on: the same n everywhere is said once, in the title
    assert "n = 2 target runs per cutoff" in coverage.get_title() and "30 replicates" in coverage.get_title()
    assert not coverage.texts
    assert "median interval width (score)" in by_label
    labels = legend_texts(fig)
    expected = {"at a search limit", "constraint active", "final fit (most data)", "nominal 90 %", "90 % interval"}
    assert expected | {"50 % interval"} <= set(labels) and "at a bound" not in labels
    # C0 = 1e80 is the edge of the search (a warning); E0 = 0 is the law's own constraint E0 >= 0 (information)
    marks = [c for c in by_label["C0"].collections if c.get_label() == "at a search limit"]
    assert len(marks) == 1 and marks[0].get_offsets()[0][1] == pytest.approx(1e80)
    assert not [c for c in by_label["C0"].collections if c.get_label() == "constraint active"]
    marks = [c for c in by_label["E0"].collections if c.get_label() == "constraint active"]
    assert len(marks) == 1 and marks[0].get_offsets()[0][1] == 0.0
    assert not [c for c in by_label["E0"].collections if c.get_label() == "at a search limit"]
    title = fig.get_suptitle()
    assert "humaneval-py" in title and "pass@1" in title and "TPR 20" in title
    assert not overlapping_tick_labels(fig)
    assert bound_hits("compute", "C0", [1e80, 1e6]).tolist() == [True, False]


def test_sweep_figure_labels_success_line_and_critical_threshold():
    from benchcast.evaluation.sweep import critical_threshold

    thresholds = np.geomspace(1e20, 1e22, 6)
    frame = pd.DataFrame(
        {"threshold": thresholds, "test_mre": [30, 20, 12, 8, 5, 4], "benchmark": "arc_easy", "law": "power"}
    )
    t = critical_threshold(frame["threshold"], frame["test_mre"] < 10)
    critical = [{"benchmark": "arc_easy", "law": "power", "critical_threshold": t}]
    fig = plot_sweep(frame, critical, titles={"arc_easy": "arc_easy, acc_norm, TPR 20"})
    (ax,) = visible_axes(fig)
    labels = legend_texts(ax)
    assert "success: MRE < 10 %" in labels and "power" in labels
    t_crit = float(next(label for label in labels if label.startswith("power critical T")).split("= ")[1])
    assert thresholds[2] < t_crit < thresholds[3]  # between the last failure and the first success
    assert ax.get_title() == "arc_easy, acc_norm, TPR 20" and ax.get_ylabel() == "held-out MRE (%)"
    assert not overlapping_tick_labels(fig)


def test_bench_figure_draws_error_coverage_with_n_and_width_per_strategy():
    rng = np.random.default_rng(0)
    rows = []
    for strategy in ("power", "ensemble"):
        for d in np.linspace(0.1, 1.4, 30):
            true = 0.6 + rng.normal(0, 0.01)
            rows.append(
                {
                    "strategy": strategy,
                    "benchmark": "arc_easy",
                    "decades": d,
                    "true": true,
                    "prediction": true + rng.normal(0, 0.02),
                    "lower50": true - 0.01,
                    "upper50": true + 0.01,
                    "lower90": true - 0.05,
                    "upper90": true + 0.05,
                }
            )
    fig = plot_bench(pd.DataFrame(rows), bins=3)
    panels = visible_axes(fig)
    assert len(fig.axes) == len(panels) == 4
    assert [ax.get_ylabel() for ax in panels] == [
        "mean relative error (%)",
        "share of held-out scores inside",
        "share of held-out scores inside",
        "median 90 % interval width (score)",
    ]
    assert [ax.get_title() for ax in panels[1:3]] == ["90 % interval coverage", "50 % interval coverage"]
    for coverage in panels[1:3]:
        counts = [int(t.get_text().removeprefix("n=")) for t in coverage.texts]
        assert len(counts) == 3 and sum(counts) == 30  # one strategy's points, each bin labelled once
    labels = legend_texts(fig)
    assert {"power", "ensemble", "nominal 90 %", "nominal 50 %"} <= set(labels)
    lines = {line.get_label(): line for line in panels[0].lines}
    assert lines["ensemble"].get_color() == "black"  # the default strategy's own colour, in every figure
    assert "arc_easy" in fig.get_suptitle()
    assert not overlapping_tick_labels(fig)


@pytest.mark.parametrize("low,high", [(1.2, 1.8), (0.9, 1.05), (3e18, 4e21), (1e-5, 1e40), (2.0, 80.0)])
def test_log_axes_keep_a_few_readable_labels_over_any_span(low, high):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.2, 2.7), layout="constrained")
    ax.plot([low, high], [1, 2])
    readable_log_axis(ax, "x")
    ax.set_xlim(low, high)
    fig.canvas.draw()
    shown = [t.get_text() for t in ax.xaxis.get_ticklabels(which="both") if t.get_text()]
    assert 2 <= len(shown) <= 6, shown
    assert not overlapping_tick_labels(fig)


def test_matplotlibs_own_log_axis_collides_under_a_decade():
    """What the check above guards against (the gold k-scan panel before): without the locator,
    minor-tick labels of an axis spanning 1.2 to 1.8 run into each other at this size."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2.2, 2.0), layout="constrained")
    ax.plot([1.2, 1.8], [1, 2])
    ax.set_xscale("log")
    ax.tick_params(labelsize=9)
    assert overlapping_tick_labels(fig)


def test_kscan_figure_on_the_gold_law_stays_readable(apple):
    from benchcast.generative.kscan import kscan

    scan = kscan(apple, "gold", "triviaqa_1shot", metric="exact_match")
    fig = scan.plot()
    panels = visible_axes(fig)
    assert len(fig.axes) == len(panels) == 4  # xi0, K0, kappa, the curves
    curves = panels[-1]
    assert curves.get_xlabel() == "G = -log GoldProb" and curves.get_ylabel() == "-log pass@k"
    low, high = curves.get_xlim()
    assert high / low < 10  # the span that made the labels collide
    assert not overlapping_tick_labels(fig)
    assert "triviaqa_1shot" in fig.get_suptitle() and "exact_match" in fig.get_suptitle()


def test_kscan_error_bars_respect_the_bound_at_zero(apple):
    from benchcast.generative.kscan import kscan

    scan = kscan(apple, "compute", "humaneval-py", [1, 16, 128], tpr=20)
    fig = scan.plot()
    e0_axis = next(ax for ax in fig.axes if ax.get_ylabel() == "E0")
    lowest = min(
        segment[:, 1].min()
        for collection in e0_axis.collections
        for segment in getattr(collection, "get_segments", list)()
    )
    assert lowest >= 0.0
    assert [t.get_text() for t in fig.axes[-1].get_legend().get_texts()] == ["k=1", "k=16", "k=128"]
    assert "TPR 20" in fig.get_suptitle() and not overlapping_tick_labels(fig)
    bars = param_errorbars("compute", "E0", np.array([0.01, 0.5]), np.array([0.05, 0.05]))
    assert bars.tolist() == [[0.01, 0.05], [0.05, 0.05]]  # one-sided at the bound, symmetric inside


def test_reproduction_curves_leave_out_benchmarks_without_backtests():
    from benchcast.plots import plot_reproduction_curves

    done = {("direct", bt.law, "arc_easy", ""): bt for bt in arc_backtests().backtests}
    pairs = [("direct", "power"), ("direct", "power_floor")]
    fig = plot_reproduction_curves(done, pairs, [("arc_easy", "acc_norm"), ("sciq", "acc_norm")], 2e20)
    (ax,) = visible_axes(fig)
    assert len(fig.axes) == 1 and ax.get_ylabel() == "acc_norm"
    assert {"power", "power_floor"} <= set(legend_texts(ax))


def test_run_status_reads_reasons_from_the_fit():
    frame = pd.DataFrame(
        {
            "run": ["a", "b", "c", "d"],
            "k": [1.0] * 4,
            "side": ["train", "train", "test", "unused"],
            "fitted": [True, False, False, False],
        }
    )
    status = bc.plots.run_status(frame, [{"run": "b", "k": 1.0, "reason": "score <= chance"}])
    assert list(status) == ["fitted", "dropped: score <= chance", "held-out", "not used"]
