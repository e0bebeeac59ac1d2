"""Figures show what was done: fitted, dropped (and why) and held-out runs drawn apart; interval
bands; log axes and bound marks for scale parameters; labelled reference lines; bound-aware error
bars. Each test writes its figure (copied to benchcast-out/figures/ to look at) and inspects the
matplotlib objects behind it."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.data.example import load_example
from benchcast.evaluation.backtest import backtest
from benchcast.plots import figures
from benchcast.utils import progress

OUT = Path(__file__).resolve().parents[2] / "benchcast-out" / "figures"


@pytest.fixture
def captured(monkeypatch):
    """Keep every figure the plotting code saves, so its artists can be inspected."""
    kept = []

    def save(fig, path):
        kept.append(fig)
        fig.savefig(path, dpi=110)
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, OUT / Path(path).name)
        return Path(path)

    monkeypatch.setattr(figures, "save_figure", save)
    yield kept
    import matplotlib.pyplot as plt

    for fig in kept:
        plt.close(fig)


def legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def test_backtest_panel_separates_fitted_dropped_and_held_out(tmp_path, captured):
    """gsm8k of the bundled ladder: 5 runs fitted, 8 dropped near chance, 4 held out."""
    table = load_example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # five fitted runs are too few to calibrate extrapolation: the bootstrap-only interval is drawn
        bt = backtest(
            table, bc.FitSpec("power", "gsm8k", "exact_match"), threshold=2e20, n_boot=40, interval="bootstrap"
        )
    fig, axes = figures.panel_grid(1, 5, 3.6)
    grid = figures.flops_grid(bt.predictions)
    figures.draw_backtest(
        axes[0],
        bt.predictions,
        {"power": figures.curve(bt.fit, grid)},
        "gsm8k",
        2e20,
        dropped=bt.fit.dropped,
        n_boot=40,
    )
    axes[0].legend(fontsize=6)
    figures.save_figure(fig, tmp_path / "backtest-gsm8k.png")
    labels = legend_texts(captured[0].axes[0])
    assert bt.fit.diagnostics.n_used == 5
    assert "fitted runs (5)" in labels and "held-out runs (4)" in labels
    dropped = [label for label in labels if label.startswith("dropped (")]
    assert len(dropped) == 1 and dropped[0].endswith("(8)") and "chance" in dropped[0]
    assert "fit/held-out split 2e+20 FLOPs" in labels
    assert "90 % prediction interval, 40 replicates" in labels and "50 % prediction interval" in labels


def test_run_status_reads_reasons_from_the_fit():
    frame = pd.DataFrame(
        {"run": ["a", "b", "c", "d"], "k": [1.0] * 4, "side": ["train", "train", "test", "unused"],
         "fitted": [True, False, False, False]}
    )  # fmt: skip
    status = figures.run_status(frame, [{"run": "b", "k": 1.0, "reason": "score <= chance"}])
    assert list(status) == ["fitted", "dropped: score <= chance", "held-out", "not used"]


def test_cutoff_figure_uses_log_axes_for_scales_and_marks_bounds(tmp_path, captured):
    """One early fit with C0 at its upper bound (1e80) must not flatten the others."""
    frame = pd.DataFrame(
        {
            "extrapolation_decades": [3.0, 2.0, 1.0, 0.5],
            "mre": [40.0, 12.0, 5.0, 3.0],
            "coverage50": [0.0, 0.0, 1.0, 1.0],
            "coverage90": [0.0, 1.0, 1.0, 1.0],
            "n_boot": 30,
            "E0": [0.0, 0.1, 0.12, 0.11],
            "C0": [1e80, 3e6, 2e6, 2.5e6],
            "alpha": [2.0, 0.31, 0.3, 0.3],
        }
    )
    figures.plot_cutoff(frame, ["E0", "C0", "alpha"], "compute on synthetic", tmp_path / "cutoff.png", law="compute")
    axes = captured[0].axes
    by_label = {ax.get_ylabel(): ax for ax in axes}
    assert by_label["C0"].get_yscale() == "log" and by_label["alpha"].get_yscale() == "linear"
    assert "at a bound" in legend_texts(by_label["E0"])  # E0 = 0 sits on its lower bound
    assert "final fit (most data)" in legend_texts(by_label["E0"])
    marks = [c for c in by_label["C0"].collections if c.get_label() == "at a bound"]
    assert len(marks) == 1 and marks[0].get_offsets()[0][1] == pytest.approx(1e80)
    assert "nominal 90 %" in legend_texts(by_label["coverage of the targets"])
    assert figures.bound_hits("compute", "C0", [1e80, 1e6]).tolist() == [True, False]


def test_sweep_figure_labels_success_line_and_critical_threshold(tmp_path, captured):
    thresholds = np.geomspace(1e20, 1e22, 6)
    frame = pd.DataFrame(
        {"threshold": thresholds, "test_mre": [30, 20, 12, 8, 5, 4], "benchmark": "arc_easy", "law": "power"}
    )
    from benchcast.evaluation.sweep import critical_threshold

    t = critical_threshold(frame["threshold"], frame["test_mre"] < 10)
    figures.plot_sweep(
        frame, tmp_path / "sweep.png", [{"benchmark": "arc_easy", "law": "power", "critical_threshold": t}]
    )
    labels = legend_texts(captured[0].axes[0])
    assert "success: MRE < 10 %" in labels
    critical = [label for label in labels if label.startswith("power critical T")]
    assert len(critical) == 1
    t_crit = float(critical[0].split("= ")[1])
    assert thresholds[2] < t_crit < thresholds[3]  # between the last failure and the first success


def test_kscan_error_bars_respect_the_bound_at_zero(apple, tmp_path, captured):
    from benchcast.generative.kscan import kscan

    scan, fits = kscan(apple, "compute", "humaneval-py", [1, 16, 128], tpr=20)
    names = bc.get_law("compute").param_names
    figures.plot_kscan(scan, fits, names, "compute on humaneval-py", tmp_path / "kscan.png")
    e0_axis = next(ax for ax in captured[0].axes if ax.get_ylabel() == "E0")
    lowest = min(
        segment[:, 1].min()
        for collection in e0_axis.collections
        for segment in getattr(collection, "get_segments", list)()
    )
    assert lowest >= 0.0
    bars = figures.param_errorbars("compute", "E0", np.array([0.01, 0.5]), np.array([0.05, 0.05]))
    assert bars.tolist() == [[0.01, 0.05], [0.05, 0.05]]  # one-sided at the bound, symmetric inside


def test_progress_lines_when_piped(capsys, monkeypatch):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)  # a step shows itself after DELAY_S: here at once
    progress.report_when_piped(True)
    try:
        assert list(progress.track(range(3), "work")) == [0, 1, 2]
    finally:
        progress.report_when_piped(False)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "work: 1/3, 0 s" and err[-1].startswith("work: 3/3 done in ")
    assert list(progress.track(range(2), "quiet")) == [0, 1]  # library use: silent unless asked
    assert capsys.readouterr().err == ""
