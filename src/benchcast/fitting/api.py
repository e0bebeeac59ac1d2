"""The fitting front end: filter points, run the engine, explain (the spec and its resolution
against a table live in :mod:`benchcast.fitting.spec`).

``fit(table, law=..., benchmark=..., metric=...)`` returns a :class:`FitResult`;
:class:`benchcast.Ensemble` is the estimator that wraps laws.
"""

from __future__ import annotations

import os
from dataclasses import fields

import pandas as pd

from benchcast.data.readers import load
from benchcast.errors import DataError
from benchcast.fitting.engine.search import minimize_law
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.fitting.stages import finish_fit, prepare_fit


def fit_rows(rows: pd.DataFrame, spec: FitSpec, *, quiet: bool = False) -> FitResult:
    """Fit ``spec`` (resolved by :func:`design`) on prepared rows: the engine plus every diagnostic.

    Parameters
    ----------
    rows : pandas.DataFrame
        The design rows (one per run and k, with every covariate the law needs), as :func:`design`
        returns them.
    spec : FitSpec
        The resolved spec.
    quiet : bool
        A light refit (inner and bootstrap fits): no FitWarnings, no standard errors, no data
        fingerprint.

    Returns
    -------
    FitResult
        The fitted parameters, the points used and dropped, and the fit's diagnostics.
    """
    law, used, dropped, X, y, _ = prepare_fit(rows, spec)
    optimum = minimize_law(
        law,
        X,
        y,
        loss=spec.loss,
        huber_delta=spec.huber_delta,
        seed=spec.seed,
        with_stderr=not quiet,
    )
    return finish_fit(law, spec, used, dropped, X, optimum, quiet)


SELECTION_AND_SETTINGS = tuple(f.name for f in fields(FitSpec) if f.name not in ("law", "benchmark", "q_rand_source"))


def fit(
    table: pd.DataFrame | str | os.PathLike,
    law: str,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    **selection_and_settings,
) -> FitResult:
    """Fit ``law`` to one benchmark and metric of ``table``.

    Parameters
    ----------
    table : pandas.DataFrame or str or os.PathLike
        The runs: a table as :func:`benchcast.load` returns it, or the path of a data file (read
        by :func:`benchcast.load`).
    law : str
        Registry name of the law (:func:`benchcast.available_laws`).
    benchmark : str
        The benchmark to fit.
    metric : str, optional
        Its metric (required when the benchmark has several score metrics).
    k : int, optional
        The k of a pass@k metric, for per-k laws.
    **selection_and_settings
        Fields of :class:`FitSpec`: the selection (``min_flops``, ``max_flops``, ``tpr``,
        ``runs``, ``max_k``) and the settings (``q_rand``, ``margin``, ``proxy``,
        ``gold_metric``, ``loss``, ``huber_delta``, ``seed``).

    Returns
    -------
    FitResult
        The fitted law, its diagnostics and the points it was fitted to.
    """
    unknown = sorted(set(selection_and_settings) - set(SELECTION_AND_SETTINGS))
    if unknown:
        raise TypeError(f"fit() got unexpected keyword argument(s) {unknown}; allowed: {SELECTION_AND_SETTINGS}")
    if isinstance(table, (str, os.PathLike)):
        table = load(table)
    elif not isinstance(table, pd.DataFrame):
        raise DataError(
            f"expected a table (a pandas DataFrame, e.g. from benchcast.load) or the path of a data file, "
            f"got {type(table).__name__}."
        )
    spec = FitSpec(law=law, benchmark=benchmark, metric=metric, k=k, **selection_and_settings)
    rows, resolved = design(table, spec)
    return fit_rows(rows, resolved)
