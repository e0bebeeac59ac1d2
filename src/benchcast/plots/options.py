"""Figure output options (format, resolution), checked before any work; no matplotlib here (the CLI checks them
first)."""

from __future__ import annotations

from benchcast.errors import BenchcastError, did_you_mean

FIGURE_FORMATS = ("png", "svg", "pdf")
DEFAULT_DPI = 200  # raster resolution of written PNG files: sharp when a figure is scaled onto a slide
MAX_DPI = 1200


def check_figure_format(figure_format: str) -> str:
    """A figure format benchcast writes: ``png``, ``svg`` or ``pdf`` (case-insensitive)."""
    name = str(figure_format).lower().lstrip(".")
    if name not in FIGURE_FORMATS:
        raise BenchcastError(
            f"figure format must be one of {', '.join(FIGURE_FORMATS)}, got {figure_format!r}."
            + did_you_mean(str(figure_format), FIGURE_FORMATS)
        )
    return name


def check_page_figure_format(figure_format: str) -> str:
    """A figure format an HTML page can show: ``png`` or ``svg`` (pdf is refused, not swapped for png)."""
    name = check_figure_format(figure_format)
    if name == "pdf":
        raise BenchcastError(
            "--figure-format pdf: a web page cannot show PDF figures; the report embeds svg (vector, for papers) "
            "or png (--dpi sets its resolution)."
        )
    return name


def check_dpi(dpi) -> int:
    """A raster resolution in dots per inch: a whole number from 10 to ``MAX_DPI`` (None: ``DEFAULT_DPI``)."""
    if dpi is None:
        return DEFAULT_DPI
    if isinstance(dpi, bool) or not isinstance(dpi, int) and not (isinstance(dpi, float) and dpi.is_integer()):
        raise BenchcastError(f"dpi must be a whole number of dots per inch (e.g. 200), got {dpi!r}.")
    if not 10 <= int(dpi) <= MAX_DPI:
        raise BenchcastError(f"dpi must lie between 10 and {MAX_DPI} dots per inch, got {dpi!r}.")
    return int(dpi)


def check_figure_options(figure_format: str = "png", dpi: int | None = None) -> tuple[str, int]:
    """Both figure options, checked."""
    return check_figure_format(figure_format), check_dpi(dpi)
