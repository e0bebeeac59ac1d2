"""k as a control lever (Schaeffer et al. 2025): fit a per-k law at every k and collect each
parameter as a function of k."""

from __future__ import annotations

import warnings

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
