"""The report judges the forecaster it shows: its validation backtest and extrapolation profile are the
default strategy as bench backtests it (bench's ensemble rows and predictions for the same benchmark,
thresholds, seed and replicates, to 1e-12), the page says so, and the figure draws the blend.

The DCLM ladder, arc_easy acc_norm at TPR 20, 10 bootstrap replicates per law.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchcast import Uncertainty
from benchcast.evaluation.bench import Dataset, bench
from benchcast.forecasting.selection import DEFAULT_CANDIDATES
from benchcast.report.analysis import StrategyBacktest, analyse_benchmark

BENCHMARK, METRIC, TPR, N_BOOT = "arc_easy", "acc_norm", 20.0, 10
RTOL = 1e-12


@pytest.fixture(scope="module")
def report(arc_easy_report):
    return arc_easy_report  # the session's analyse_benchmark of BENCHMARK, METRIC at 1e23, TPR, N_BOOT


@pytest.fixture(scope="module")
def benched(apple, report):
    """bench's ensemble on the same runs at the report's thresholds (the validation's first)."""
    thresholds = tuple(sorted(report.profile["threshold"].unique()))
    assert report.validation.threshold in thresholds and len(thresholds) == 3
    data = Dataset("dclm", apple, ((BENCHMARK, METRIC),), thresholds, tpr=TPR)
    return bench(
        [data], ["ensemble"], laws=DEFAULT_CANDIDATES, uncertainty=Uncertainty(N_BOOT, seed=0), n_jobs=1, progress=False
    )


def test_validation_is_benchs_ensemble_cell(report, benched):
    validation = report.validation
    assert isinstance(validation, StrategyBacktest) and validation.strategy == "ensemble"
    assert set(validation.weights) == {"power_floor", "bnsl_monotone"}
    assert sum(validation.weights.values()) == pytest.approx(1.0)
    row = benched.rows[benched.rows["cutoff"] == validation.threshold].iloc[0]
    assert row["laws"] == ",".join(f"{law}:{w:.2f}" for law, w in validation.weights.items())  # bench's weights
    assert row["status"] == "ok"
    metrics = validation.metrics
    for ours, theirs in (("test_mae", "mae"), ("test_mre", "mre"), ("coverage50", "coverage50")):
        assert metrics[ours] == pytest.approx(row[theirs], rel=RTOL)
    for key in ("coverage90", "width90"):
        assert metrics[key] == pytest.approx(row[key], rel=RTOL)
    assert metrics["n_test"] == row["n_test"] > 5 and 0 < metrics["coverage90"] <= 1
    held = validation.predictions[validation.predictions["side"] == "test"].sort_values(["flops", "run"])
    points = benched.predictions[benched.predictions["cutoff"] == validation.threshold]
    assert list(held["run"]) == list(points["run"])
    for column in ("prediction", "lower50", "upper50", "lower90", "upper90"):
        np.testing.assert_allclose(held[column], points[column], rtol=RTOL)
    # the panel's runs: every run below the split fitted by a member, none above it
    assert validation.predictions.loc[validation.predictions["side"] == "test", "fitted"].sum() == 0
    assert validation.predictions["fitted"].sum() == (validation.predictions["side"] == "train").sum()


def test_profile_is_benchs_ensemble_at_every_threshold(report, benched):
    profile = report.profile.sort_values(["threshold", "flops", "run"])
    points = benched.predictions.sort_values(["cutoff", "flops", "run"])
    assert len(profile) == len(points)
    np.testing.assert_allclose(profile["threshold"], points["cutoff"], rtol=RTOL)
    for column in ("prediction", "true", "lower90", "upper90", "lower50", "upper50"):
        np.testing.assert_allclose(profile[column], points[column], rtol=RTOL)
    inside = (profile["true"] >= profile["lower90"]) & (profile["true"] <= profile["upper90"])
    assert (profile["covered90"] == inside).all()
    # distances from the largest run a member was fitted to, as the forecast table counts them
    assert (profile["decades"] > 0).all() and profile["decades"].max() > 2


def test_page_names_the_strategy_as_what_was_backtested(report):
    import re

    from benchcast.report.sections import benchmark_section, summary_section

    text = re.sub(r"<[^>]+>", "", benchmark_section(report))
    assert "Backtested: the ensemble, as bench backtests it" in text
    assert "Top right: the backtest of ensemble" in text
    assert "Backtest error and coverage of ensemble versus extrapolation" in text
    summary = summary_section([report], [1e23], N_BOOT)
    assert "the strategy as bench backtests it" in summary and "its member with the lowest error" not in summary


def test_figure_draws_the_blend_in_the_strategy_colour(report, monkeypatch):
    from matplotlib.colors import to_rgba

    from benchcast.plots.style import law_color
    from benchcast.report import figures
    from tests.plots.figure_checks import close_all, legend_texts, overlapping_tick_labels

    kept = []
    monkeypatch.setattr(figures, "data_uri", lambda fig, *args: kept.append(fig) or "data:image/png;base64,")
    figures.benchmark_figure(report)
    (fig,) = kept
    try:
        forecast, validation, error, coverage, width = fig.axes
        assert validation.get_title().startswith("backtest of the ensemble: members fitted below ")
        entries = legend_texts(validation)
        weights = sorted(report.validation.weights.items(), key=lambda item: -item[1])
        assert f"ensemble ({', '.join(f'{law} {w:.2f}' for law, w in weights)})" in entries
        assert {"power_floor (member)", "bnsl_monotone (member)"} <= set(entries)
        assert f"ensemble 90 % prediction interval, {N_BOOT} replicates" in entries
        colour = to_rgba(law_color("ensemble"))
        blend = next(line for line in validation.lines if line.get_label().startswith("ensemble ("))
        assert to_rgba(blend.get_color()) == colour
        bars = [c for c in validation.collections if c.get_label().startswith("ensemble 90 %")]
        assert bars and to_rgba(bars[0].get_colors()[0])[:3] == colour[:3]
        assert "backtests of ensemble" in error.get_title() and "ensemble coverage" in coverage.get_title()
        assert width.get_title() == "ensemble: interval width"
        assert all(to_rgba(line.get_color())[:3] == colour[:3] for line in coverage.lines[:2])
        assert "ensemble" in fig.get_suptitle() and "bnsl_monotone" not in fig.get_suptitle()
        assert not overlapping_tick_labels(fig)
    finally:
        close_all()


def test_a_threshold_where_a_member_lacks_support_is_backtested_with_the_other_named(apple):
    """gsm8k's power_floor has too few rolling origins below the validation threshold (its scores sit at
    chance for two decades): the ensemble forecasts there with bnsl_monotone alone, as bench does, and
    names it; the ladder's fallback (power) is fitted beside the candidates, unused."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-chance fits: their warnings are not under test
        report = analyse_benchmark(
            apple, "gsm8k_cot_llama", "exact_match", target_flops=[1e23], tpr=TPR, uncertainty=Uncertainty(N_BOOT)
        )
    validation = report.validation
    assert validation.status == "ok" and validation.weights == {"bnsl_monotone": 1.0}
    assert validation.row["laws"] == "bnsl_monotone:1.00" and set(validation.members) == {"bnsl_monotone"}
    assert set(validation.fits) == {"power_floor", "bnsl_monotone", "power"}
    assert np.isfinite(validation.metrics["test_mre"]) and not report.profile.empty
    assert (validation.predictions["fitted"] <= (validation.predictions["side"] == "train")).all()
