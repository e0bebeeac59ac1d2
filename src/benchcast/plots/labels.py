"""What figures call things: metric labels and titles (no matplotlib here, so results can name
their metric without loading it)."""

from __future__ import annotations


def metric_label(metric: str | None, k=None) -> str:
    """``pass@8`` for the pass@k metric at k = 8, else the metric.

    Parameters
    ----------
    metric : str or None
        The metric.
    k : int, optional
        Its k.

    Returns
    -------
    str
        The label the figures use.
    """
    if metric == "pass@k" and k is not None:
        return f"pass@{int(k)}"
    return metric or "score"


def figure_title(benchmark: str, metric: str | None = None, tpr: float | None = None, what: str = "") -> str:
    """A title naming the benchmark, its metric and the runs' tokens per parameter.

    Parameters
    ----------
    benchmark : str
        The benchmark.
    metric : str, optional
        Its metric (``pass@k`` with a k reads as ``pass@8``).
    tpr : float, optional
        Tokens per parameter of the runs (None: all runs).
    what : str
        What the figure shows, put first (``"backtest at 6e21 FLOPs"``).

    Returns
    -------
    str
        E.g. ``"backtest at 6e+21 FLOPs: arc_easy, acc_norm, TPR 20"``.
    """
    parts = [benchmark]
    if metric:
        parts.append(str(metric))
    parts.append(f"TPR {tpr:g}" if tpr is not None else "all TPR")
    return (f"{what}: " if what else "") + ", ".join(parts)
