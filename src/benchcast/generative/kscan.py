"""k as a control lever (Schaeffer et al. 2025): fit a per-k law at every k and collect each
parameter as a function of k."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.table import parse_metric, select
from benchcast.errors import BenchcastError, SelectionError
from benchcast.fitting.api import fit
from benchcast.fitting.result import FitResult
from benchcast.laws import get_law


def available_ks(table: pd.DataFrame, benchmark: str, metric: str = "pass@k") -> list[int]:
    rows = select(table, benchmark, metric)
    ks = sorted(int(k) for k in rows["k"].dropna().unique())
    return ks or [1]


def kscan(
    table: pd.DataFrame,
    law: str,
    benchmark: str,
    ks: list[int] | None = None,
    *,
    metric: str | None = None,
    **fit_kwargs,
) -> tuple[pd.DataFrame, list[FitResult]]:
    """Fit ``law`` separately at each k; one row per k with every parameter and fit diagnostic.

    For metrics without k (e.g. exact_match with the gold law) the scan has the single k = 1.
    """
    law_obj = get_law(law)
    if not law_obj.per_k:
        raise SelectionError(f"law {law!r} is not fitted per k; kscan needs compute, params_tokens or gold.")
    metric = metric or law_obj.default_metric or "pass@k"
    base, _ = parse_metric(metric)
    scan = ks or (available_ks(table, benchmark, base) if base == "pass@k" else [None])
    rows, fits = [], []
    for k in scan:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = fit(table, law, benchmark, base, k if base == "pass@k" else None, **fit_kwargs)
        except BenchcastError as exc:
            rows.append({"k": k or 1, "error": str(exc)})
            continue
        fits.append(result)
        d = result.diagnostics
        rows.append(
            {
                "k": k or 1,
                **result.params,
                **{f"{n}_stderr": v for n, v in result.stderr.items()},
                "n_used": d["n_used"],
                "rmse": d["rmse"],
                "r2": d["r2"],
                "converged": d["converged"],
                "at_bound": ",".join(d["at_bound"]),
                "warnings": len(caught),
            }
        )
    return pd.DataFrame(rows), fits


def trend(scan: pd.DataFrame, parameter: str) -> float:
    """Slope of a parameter against log2 k (how it moves per doubling of k)."""
    ok = scan.dropna(subset=[parameter]) if parameter in scan else scan.iloc[0:0]
    if len(ok) < 2:
        return float("nan")
    return float(np.polyfit(np.log2(ok["k"].astype(float)), ok[parameter].astype(float), 1)[0])


def kscan_summary(
    table: pd.DataFrame,
    law: str,
    benchmark: str,
    ks: list[int] | None = None,
    *,
    metric: str | None = None,
    **fit_kwargs,
) -> dict:
    """The k-scan of ``law`` on ``benchmark`` with each parameter's trend per doubling of k.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs (as :func:`benchcast.load` returns them).
    law : str
        A law fitted per k (compute, params_tokens or gold).
    benchmark : str
        The benchmark.
    ks : list of int, optional
        The k to fit (default: every k in the data).
    metric : str, optional
        The metric (default: the law's).
    **fit_kwargs
        Selection and settings passed to :func:`benchcast.fit` (``tpr``, ``max_flops``...).

    Returns
    -------
    dict
        ``law``, ``benchmark``, ``scan`` (one row per k), ``fits`` (the FitResults),
        ``parameters`` (the law's parameter names) and ``trend_per_doubling`` (slope of each
        parameter against log2 k).
    """
    scan, fits = kscan(table, law, benchmark, ks, metric=metric, **fit_kwargs)
    if not fits:
        raise BenchcastError(f"no k could be fitted for {benchmark}: {scan.get('error', pd.Series()).tolist()}")
    names = get_law(law).param_names
    trends = {name: trend(scan, name) for name in names}
    return {
        "law": law,
        "benchmark": benchmark,
        "scan": scan,
        "fits": fits,
        "parameters": names,
        "trend_per_doubling": trends,
    }


def kscan_rows(summary: dict) -> tuple[list[str], list[list]]:
    """The k-scan as shown: one row per k with every parameter, the points used, R2 and bounds hit.

    Parameters
    ----------
    summary : dict
        :func:`kscan_summary`'s result.

    Returns
    -------
    tuple of (list of str, list of list)
        The column names and the rows.
    """
    names = summary["parameters"]
    rows = [
        [int(r["k"])]
        + [r.get(n, np.nan) for n in names]
        + [r.get("n_used", ""), r.get("r2", np.nan), r.get("at_bound", "")]
        for r in summary["scan"].to_dict("records")
    ]
    return ["k", *names, "points", "R2", "at bound"], rows


def write_kscan(summary: dict, folder: str | Path) -> list[Path]:
    """Write the scan's table (CSV) and figure (PNG) into ``folder``.

    Parameters
    ----------
    summary : dict
        :func:`kscan_summary`'s result.
    folder : Path
        An existing folder (e.g. the one :func:`benchcast.utils.io.output_folder` yields).

    Returns
    -------
    list of Path
        The files written.
    """
    from benchcast.plots.figures import plot_kscan  # matplotlib loads only when a figure is drawn
    from benchcast.utils.io import atomic_write_text

    law, benchmark = summary["law"], summary["benchmark"]
    stem = f"kscan-{law}-{benchmark}"
    table = atomic_write_text(Path(folder) / f"{stem}.csv", summary["scan"].to_csv(index=False))
    title = f"{law} on {benchmark}: parameters versus k"
    figure = plot_kscan(summary["scan"], summary["fits"], summary["parameters"], title, Path(folder) / f"{stem}.png")
    return [table, figure]
