"""The report's benchmark figure: five panels (forecast, backtest, error, coverage with n, width),
none empty, a title naming benchmark, metric and TPR, readable ticks; embedded as SVG when asked."""

from __future__ import annotations

import warnings

import pytest

from benchcast import Uncertainty
from tests.plots.figure_checks import close_all, ladder, legend_texts, overlapping_tick_labels, visible_axes


@pytest.fixture(autouse=True)
def _closed_figures():
    yield
    close_all()


@pytest.fixture(scope="module")
def arc_report():
    from benchcast.report.analysis import analyse_benchmark

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small synthetic ladder: support warnings are not under test
        return analyse_benchmark(
            ladder(), "arc_easy", "acc_norm", target_flops=[1e22], law="power", uncertainty=Uncertainty(10)
        )


def test_benchmark_figure_has_five_full_panels(arc_report, monkeypatch):
    from benchcast.report import figures

    kept = []
    monkeypatch.setattr(figures, "data_uri", lambda fig, *args: kept.append(fig) or "data:image/png;base64,")
    figures.benchmark_figure(arc_report)
    (fig,) = kept
    panels = visible_axes(fig)
    assert len(fig.axes) == len(panels) == 5
    forecast, backtest, error, coverage, width = panels
    assert forecast.get_ylabel() == backtest.get_ylabel() == "acc_norm"
    assert "arc_easy" in fig.get_suptitle() and "acc_norm" in fig.get_suptitle() and "TPR" in fig.get_suptitle()
    assert "held-out points per 0.25 decade" in coverage.get_title() and "10 replicates" in coverage.get_title()
    assert width.get_ylabel() == "median interval width (score)" and width.lines
    assert "power (fitted on all runs)" in legend_texts(forecast)
    assert {"90 % interval", "50 % interval", "nominal 90 %"} <= set(legend_texts(coverage))
    assert not overlapping_tick_labels(fig)


def test_report_embeds_svg_or_png_at_the_dpi_asked(tmp_path):
    from benchcast.report import build_report, parse_targets

    targets = parse_targets(["arc_easy:acc_norm"], None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(
            ladder(),
            targets,
            [1e22],
            out=tmp_path / "svg.html",
            law="power",
            figure_format="svg",
            uncertainty=Uncertainty(n_boot=10),
        )
        build_report(
            ladder(),
            targets,
            [1e22],
            out=tmp_path / "png.html",
            law="power",
            dpi=40,
            uncertainty=Uncertainty(n_boot=10),
        )
    svg, png = (tmp_path / "svg.html").read_text(), (tmp_path / "png.html").read_text()
    assert "data:image/svg+xml;base64," in svg and "data:image/png" not in svg
    assert "data:image/png;base64," in png and "data:image/svg" not in png
