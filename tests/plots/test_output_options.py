"""Figure files: format by magic bytes, resolution by pixel size, clear errors for bad options,
SVG or PNG embedded in the report, and matplotlib left unloaded by ``import benchcast``."""

from __future__ import annotations

import struct
import subprocess
import sys

import pandas as pd
import pytest
from conftest import run_cli

from benchcast.errors import BenchcastError
from benchcast.plots import check_figure_options, panel_grid, save_figure
from tests.plots.figure_checks import arc_backtests, close_all


@pytest.fixture(autouse=True)
def _closed_figures():
    yield
    close_all()


def png_size(path) -> tuple[int, int]:
    return struct.unpack(">II", path.read_bytes()[16:24])


def small_figure():
    fig, axes = panel_grid(1, 2.0, 1.5)
    axes[0].plot([1, 2], [3, 4])
    return fig


@pytest.mark.parametrize("figure_format,magic", [("png", b"\x89PNG\r\n"), ("svg", b"<?xml"), ("pdf", b"%PDF-")])
def test_each_format_writes_its_own_kind_of_file(tmp_path, figure_format, magic):
    path = save_figure(small_figure(), tmp_path / "f.png", figure_format)
    assert path.suffix == f".{figure_format}" and path.read_bytes().startswith(magic)


def test_dpi_sets_the_pixel_size_of_a_png(tmp_path):
    low = png_size(save_figure(small_figure(), tmp_path / "low.png", dpi=50))
    high = png_size(save_figure(small_figure(), tmp_path / "high.png", dpi=200))
    assert low == (100, 75) and high == (400, 300)


@pytest.mark.parametrize(
    "figure_format,dpi,words",
    [
        ("jpeg", None, "figure format must be one of png, svg, pdf"),
        ("png", 0, "dpi must lie between"),
        ("svg", 2.5, "whole number"),
        ("SVG", "high", "whole number"),
    ],
)
def test_bad_options_are_refused_by_name(figure_format, dpi, words):
    with pytest.raises(BenchcastError, match=words):
        check_figure_options(figure_format, dpi)


def test_options_are_normalised():
    assert check_figure_options("SVG", None) == ("svg", 200) and check_figure_options("pdf", 300) == ("pdf", 300)


def test_report_from_outputs_embeds_svg_when_asked(tmp_path):
    from benchcast.report.outputs import build_from_outputs

    arc_backtests().write(tmp_path / "out", figure_format="svg")
    build_from_outputs(tmp_path / "out", tmp_path / "page-svg.html", figure_format="svg")
    build_from_outputs(tmp_path / "out", tmp_path / "page-png.html", dpi=60)
    svg, png = (tmp_path / "page-svg.html").read_text(), (tmp_path / "page-png.html").read_text()
    assert "data:image/svg+xml;base64," in svg and "data:image/png" not in svg  # the drawn and the copied figure
    assert "data:image/png;base64," in png
    with pytest.raises(BenchcastError, match="figure format"):
        build_from_outputs(tmp_path / "out", tmp_path / "x.html", figure_format="gif")


def test_importing_benchcast_and_its_options_leaves_matplotlib_unloaded():
    """A new process: what importing loads is a property of a fresh interpreter (kept a subprocess)."""
    code = (
        "import sys, benchcast, benchcast.cli, benchcast.plots, benchcast.plots.options; "
        "print(any(m.startswith('matplotlib') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_cli_refuses_a_bad_figure_format_before_any_work(tmp_path):
    run = run_cli("example", "--out", tmp_path / "ex", "--figure-format", "jpg")
    assert run.returncode == 2 and "figure format must be one of png, svg, pdf" in run.stdout + run.stderr
    assert not (tmp_path / "ex").exists()


def test_cli_refuses_figure_options_without_out(tmp_path):
    frame = pd.DataFrame({"a": [1]})
    frame.to_csv(tmp_path / "x.csv")
    run = run_cli("kscan", tmp_path / "x.csv", "-b", "x", "--dpi", "300")
    assert run.returncode == 2 and "--dpi" in run.stdout + run.stderr and "--out" in run.stdout + run.stderr


def test_the_report_refuses_pdf_rather_than_embedding_png(tmp_path):
    from benchcast.report.outputs import build_from_outputs
    from benchcast.report.page import Target, build_report
    from tests.plots.figure_checks import ladder

    with pytest.raises(BenchcastError, match="cannot show PDF"):
        build_report(ladder(), [Target("arc_easy", "acc_norm")], [1e22], out=tmp_path / "r.html", figure_format="pdf")
    with pytest.raises(BenchcastError, match="cannot show PDF"):
        build_from_outputs(tmp_path, tmp_path / "r.html", figure_format="pdf")
    assert not (tmp_path / "r.html").exists()
