"""The fitting front end: filter points, run the engine, explain (the spec and its resolution
against a table live in :mod:`benchcast.fitting.spec`).

``fit(table, law=..., benchmark=..., metric=...)`` returns a :class:`FitResult`;
:class:`Forecaster` wraps it as a scikit-learn style estimator.
"""

from __future__ import annotations

import os
from dataclasses import fields

import numpy as np
import pandas as pd

from benchcast.data.readers import load
from benchcast.errors import DataError, SelectionError
from benchcast.fitting.engine.search import minimize_law
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.fitting.stages import MIN_DECADES, finish_fit, fit_subsets, prepare_fit  # noqa: F401 (re-exported)


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


def as_table(table: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """The table to fit: a DataFrame as it is, a path read as :func:`benchcast.load` reads it."""
    if isinstance(table, (str, os.PathLike)):
        return load(table)
    if not isinstance(table, pd.DataFrame):
        raise DataError(
            f"expected a table (a pandas DataFrame, e.g. from benchcast.load) or the path of a data file, "
            f"got {type(table).__name__}."
        )
    return table


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
    table = as_table(table)
    spec = FitSpec(law=law, benchmark=benchmark, metric=metric, k=k, **selection_and_settings)
    rows, resolved = design(table, spec)
    return fit_rows(rows, resolved)


class Forecaster:
    """scikit-learn style estimator: ``Forecaster(law, benchmark, metric).fit(table).predict(...)``.

    Its constructor arguments are the fields of :class:`FitSpec`; ``get_params``/``set_params``
    follow scikit-learn's conventions, so ``sklearn.base.clone`` works.
    """

    def __init__(
        self,
        law: str = "power",
        benchmark: str | None = None,
        metric: str | None = None,
        k: int | None = None,
        *,
        min_flops: float | None = None,
        max_flops: float | None = None,
        tpr: float | None = None,
        runs: tuple[str, ...] | None = None,
        max_k: int | None = None,
        q_rand: float | None = None,
        margin: float | None = None,
        proxy: str | None = None,
        gold_metric: str = "loglikelihood",
        loss: str | None = None,
        huber_delta: float | None = None,
        seed: int = 0,
    ):
        self.law, self.benchmark, self.metric, self.k = law, benchmark, metric, k
        self.min_flops, self.max_flops, self.tpr, self.runs, self.max_k = min_flops, max_flops, tpr, runs, max_k
        self.q_rand, self.margin, self.proxy, self.gold_metric = q_rand, margin, proxy, gold_metric
        self.loss, self.huber_delta, self.seed = loss, huber_delta, seed

    @classmethod
    def _get_param_names(cls) -> list[str]:
        return ["law", "benchmark", "metric", "k", *SELECTION_AND_SETTINGS[2:]]

    def get_params(self, deep: bool = True) -> dict:
        """The estimator's settings, as scikit-learn's ``get_params``.

        Parameters
        ----------
        deep : bool
            Accepted for scikit-learn; there are no nested estimators.

        Returns
        -------
        dict
            Each constructor argument by name.
        """
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params) -> Forecaster:
        """Change settings, as scikit-learn's ``set_params``.

        Parameters
        ----------
        **params
            Constructor arguments by name.

        Returns
        -------
        Forecaster
            This estimator.
        """
        for name, value in params.items():
            if name not in self._get_param_names():
                raise ValueError(f"invalid parameter {name!r} for Forecaster; valid: {self._get_param_names()}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.get_params().items() if v != type(self)().get_params()[k] or k == "law"}
        return f"Forecaster({', '.join(f'{k}={v!r}' for k, v in changed.items())})"

    def fit(self, table: pd.DataFrame | str | os.PathLike) -> Forecaster:
        """Fit the law to ``table``.

        Parameters
        ----------
        table : pandas.DataFrame or str or os.PathLike
            A table as :func:`benchcast.load` returns it, or the path of a data file.

        Returns
        -------
        Forecaster
            This estimator, fitted (``result_``, ``params_``, ``spec_``).
        """
        if self.benchmark is None:
            raise SelectionError("Forecaster needs a benchmark.")
        params = self.get_params()
        self.result_ = fit(
            table, params.pop("law"), params.pop("benchmark"), params.pop("metric"), params.pop("k"), **params
        )
        self.params_ = dict(self.result_.params)
        self.spec_ = self.result_.spec
        return self

    def predict(self, flops=None, params=None, tokens=None, k=None, gold=None) -> np.ndarray:
        """Forecast scores of the fitted law (see :meth:`FitResult.predict`).

        Parameters
        ----------
        flops : array_like, optional
            Training compute, in FLOPs (derived as 6 N D from ``params`` and ``tokens`` when the law
            needs it and it is not given).
        params : array_like, optional
            Model parameters N.
        tokens : array_like, optional
            Training tokens D.
        k : array_like, optional
            Number of attempts, for a pass@k law (must be the fitted k for a per-k fit).
        gold : array_like, optional
            Gold-reference negative log-likelihoods, for a law in them.

        Returns
        -------
        ndarray
            Predicted scores, in the covariates' broadcast shape.
        """
        if not hasattr(self, "result_"):
            raise SelectionError("this Forecaster is not fitted yet; call fit(table) first.")
        return self.result_.predict(flops=flops, params=params, tokens=tokens, k=k, gold=gold)
