"""What figures call things: metric labels and titles (no matplotlib here, so results can name
their metric without loading it)."""

from __future__ import annotations

from benchcast.data.table import TPR_RTOL


def metric_label(metric: str | None, k=None) -> str:
    """``pass@8`` for the pass@k metric at k = 8, else the metric."""
    if metric == "pass@k" and k is not None:
        return f"pass@{int(k)}"
    return metric or "score"


def figure_title(benchmark: str, metric: str | None = None, tpr: float | None = None, what: str = "") -> str:
    """A title naming the benchmark, its metric and the runs' tokens per parameter."""
    parts = [benchmark]
    if metric:
        parts.append(str(metric))
    parts.append(f"TPR {tpr:g}" if tpr is not None else "all TPR")
    return (f"{what}: " if what else "") + ", ".join(parts)


def curve_tpr_note(tpr: float | None, fitted: tuple[float, float], laws: list[str]) -> str:
    """What TPR a forecast curve of laws of N and D is drawn at, and whether it lies outside the fitted runs'."""
    if tpr is None or not laws:
        return ""
    lo, hi = fitted
    text = f"curve of {', '.join(laws)} at TPR {tpr:.3g}"
    if not (lo == lo and hi == hi):  # nan: the runs' TPR is unknown
        return text
    span = f"{lo:.3g}" if abs(hi - lo) <= TPR_RTOL * lo else f"{lo:.3g} .. {hi:.3g}"
    if lo / (1 + TPR_RTOL) <= tpr <= hi * (1 + TPR_RTOL):  # one ratio group, as data.table.tpr_level reads them
        return f"{text} (fitted runs' TPR {span})"
    return f"{text}: OUTSIDE the fitted runs' TPR {span}"
