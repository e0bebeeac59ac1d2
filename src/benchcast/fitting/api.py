"""The fitting front end: filter points, run the engine, explain (the spec and its resolution
against a table live in :mod:`benchcast.fitting.spec`).

``fit(table, law=..., benchmark=..., metric=...)`` returns a :class:`FitResult`;
:class:`Forecaster` wraps it as a scikit-learn style estimator.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import fields

import numpy as np
import pandas as pd

from benchcast.data.readers import load
from benchcast.data.table import is_score_metric
from benchcast.errors import DataError, FitWarning, InsufficientDataError, SelectionError
from benchcast.fitting.diagnostics import FitDiagnostics, bound_findings, plain_message
from benchcast.fitting.engine.search import minimize_law
from benchcast.fitting.metrics import r2, rmse
from benchcast.fitting.result import FitResult, fingerprint
from benchcast.fitting.spec import FitSpec, design
from benchcast.laws import Law, get_law, to_target

MIN_DECADES = 1.0  # less compute range than this is an interpolation, not a forecast


def _drop_reasons(law: Law, rows: pd.DataFrame, spec: FitSpec) -> np.ndarray:
    """Why each row is dropped ('' where it is fitted): the one account of dropped rows every fit gives."""
    value = rows["value"].to_numpy(float)
    reasons = law.point_filter(value, spec.q_rand, spec.margin or 0.0)
    # a row the file gives no score (design keeps it so that it is counted, not lost)
    reasons[np.isnan(value)] = f"{'score' if is_score_metric(str(spec.metric)) else 'value'} is NaN"
    for column in set(law.covariates) | set(law.fit_covariates):
        values = rows[column].to_numpy(float)
        bad = ~(np.isfinite(values) & (values > 0)) & (reasons == "")
        reasons[bad] = f"no positive {column} value"
    return reasons


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
    law = get_law(spec.law)
    reasons = _drop_reasons(law, rows, spec)
    used = rows[reasons == ""].reset_index(drop=True)
    dropped = [
        {"run": r.run, "flops": float(r.flops), "k": float(r.k), "value": float(r.value), "reason": why}
        for r, why in zip(rows.itertuples(), reasons, strict=True)
        if why
    ]
    if len(used) <= law.n_params - law.n_presolved:
        why = pd.Series([item["reason"] for item in dropped], dtype=object).value_counts(sort=False)
        reasons = "".join(f"; {reason}: {n}" for reason, n in why.items())
        raise InsufficientDataError(
            f"law {law.name!r} has {law.n_params} parameters but only {len(used)} usable points "
            f"for {spec.benchmark} ({len(dropped)} dropped{reasons}); a fit needs more points than "
            "parameters."
        )
    X = {c: used[c].to_numpy(float) for c in set(law.covariates) | set(law.fit_covariates)}
    y = to_target(law.target, used["value"].to_numpy(float), spec.q_rand)
    optimum = minimize_law(
        law,
        X,
        y,
        loss=spec.loss,
        huber_delta=spec.huber_delta,
        seed=spec.seed,
        with_stderr=not quiet,
    )
    predict_X = {c: X[c] for c in law.covariates}
    frozen = law.freeze(optimum.theta, spec.q_rand, k=spec.k)
    fitted = law.predict_score(frozen.vector, predict_X, spec.q_rand)
    observed = used["value"].to_numpy(float)
    flops = used["flops"].to_numpy(float)
    decades = float(np.log10(flops.max() / flops.min()))
    counts: dict[str, int] = {}
    for item in dropped:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
    diagnostics = FitDiagnostics(
        loss=float(optimum.loss),
        n_used=len(used),
        n_dropped=len(dropped),
        dropped_reasons=counts,
        converged=bool(optimum.converged),
        message=plain_message(str(optimum.message)),
        at_bound=tuple(optimum.at_bound),
        rmse=rmse(observed, fitted),
        r2=r2(observed, fitted),
        flops_min=float(flops.min()),
        flops_max=float(flops.max()),
        decades=decades,
        n_starts=int(optimum.n_starts),
        n_evaluations=int(optimum.n_evaluations),
    )
    notes = []
    if not optimum.converged:
        notes.append(f"the optimiser did not report convergence: {plain_message(str(optimum.message))}")
    # a law's own constraint reached is information (FitResult shows it), a search limit a warning
    notes.extend(bound_findings(law, frozen.params, optimum.at_bound).limits)
    free = law.n_params
    if len(used) < 2 * free + 3:
        notes.append(f"only {len(used)} points for {free} parameters: the fit is weakly constrained")
    if across := law.across_tprs(used):  # a law of compute alone reads several TPRs as one curve
        notes.append(across)
    if modelled := _modelled_note(used):
        notes.append(modelled)
    if decades < MIN_DECADES:
        notes.append(
            f"the fitted runs span only {decades:.2f} decades of compute: extrapolation from this fit is not a forecast"
        )
    for note in [] if quiet else notes:
        warnings.warn(f"{law.name} on {spec.benchmark}: {note}", FitWarning, stacklevel=3)
    keep = [c for c in ("run", "flops", "params", "tokens", "k", "gold", "proxy", "value") if c in used]
    points = used[keep].copy()
    points["fitted"] = fitted
    return FitResult(
        spec=spec,
        fitted=frozen,
        stderr=dict(zip(law.param_names, map(float, optimum.stderr), strict=True))
        if optimum.stderr is not None
        else {},
        diagnostics=diagnostics,
        points=points,
        dropped=dropped,
        warnings=notes,
        data_fingerprint="" if quiet else fingerprint(points),
    )


SELECTION_AND_SETTINGS = tuple(f.name for f in fields(FitSpec) if f.name not in ("law", "benchmark", "q_rand_source"))


def as_table(table: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """The table to fit: a DataFrame as it is, a path read as :func:`benchcast.load` reads it.

    Parameters
    ----------
    table : pandas.DataFrame or str or os.PathLike
        A table (as :func:`benchcast.load` returns) or the path of a data file.

    Returns
    -------
    pandas.DataFrame
        The table.
    """
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


def _modelled_note(rows) -> str:
    """A fit to pass@k rows that ``passk --extrapolate-to`` modelled past the samples drawn says so: those
    points are a distribution's tail (``source`` names its family), not measurements."""
    if "source" not in rows:
        return ""
    source = rows["source"].astype("string").fillna("")
    modelled = ~source.isin(["", "estimator"])
    if not modelled.any():
        return ""
    families = ", ".join(sorted(set(source[modelled])))
    where = (
        f" (k = {', '.join(f'{k:g}' for k in sorted(set(rows.loc[modelled, 'k'].astype(float))))})"
        if "k" in rows
        else ""
    )
    return (
        f"{int(modelled.sum())} of {len(rows)} points are pass@k modelled past the samples drawn{where} by a "
        f"{families} distribution of per-problem success (passk --extrapolate-to), not measured: they rest on that "
        "family's tail near p = 0"
    )
