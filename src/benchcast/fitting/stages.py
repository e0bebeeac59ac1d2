"""A fit of design rows in its two halves around the engine, and cold fits of several subsets of
the same rows solved together.

:func:`prepare_fit` drops the rows a law cannot use (each with why) and gives the covariates and
targets the engine fits; :func:`finish_fit` turns the engine's optimum into a :class:`FitResult`.
:func:`benchcast.fitting.api.fit_rows` is the two around :func:`minimize_law`;
:func:`fit_subsets` (rolling origins) the two around one batched engine call for all subsets.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast.data.table import INCONSISTENT_K, is_score_metric
from benchcast.errors import BenchcastError, DataError, FitWarning, InsufficientDataError
from benchcast.fitting.artifact import fingerprint
from benchcast.fitting.diagnostics import FitDiagnostics, bound_findings, few_points, plain_message
from benchcast.fitting.engine.batch import minimize_subsets
from benchcast.fitting.engine.search import Optimum
from benchcast.fitting.metrics import r2, rmse
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec
from benchcast.laws import Law, get_law, to_target
from benchcast.laws.linalg import distinct_points

MIN_DECADES = 1.0  # less compute range than this is an interpolation, not a forecast


def _drop_reasons(law: Law, rows: pd.DataFrame, spec: FitSpec) -> np.ndarray:
    """Why each row is dropped ('' where it is fitted): the one account of dropped rows every fit gives."""
    value = rows["value"].to_numpy(float)
    reasons = law.point_filter(value, spec.q_rand, spec.margin or 0.0)
    reasons = np.where(reasons == "", law.row_filter(rows), reasons)
    if "inconsistent" in rows:  # design's judgement of a pass@k row beside its run's other k
        reasons[rows["inconsistent"].to_numpy(bool)] = INCONSISTENT_K
    # a row the file gives no score (design keeps it so that it is counted, not lost)
    reasons[np.isnan(value)] = f"{'score' if is_score_metric(str(spec.metric)) else 'value'} is NaN"
    for column in set(law.covariates) | set(law.fit_covariates):
        values = rows[column].to_numpy(float)
        bad = ~(np.isfinite(values) & (values > 0)) & (reasons == "")
        reasons[bad] = f"no positive {column} value"
    return reasons


def fit_subsets(rows: pd.DataFrame, spec: FitSpec, masks, *, max_flops=None, quiet: bool = True) -> list:
    """Cold fits of ``spec`` to several subsets of ``rows`` (rolling origins), solved as one batch."""
    flops = rows["flops"].to_numpy(float)
    masks = [np.asarray(mask) for mask in masks]
    for i, mask in enumerate(masks):
        if mask.dtype != bool or mask.shape != flops.shape:
            raise DataError(f"mask {i} must be a boolean array of one value per row ({len(flops)}), got {mask!r}.")
    tops = [flops[mask].max() if mask.any() else spec.max_flops for mask in masks] if max_flops is None else max_flops
    if len(tops) != len(masks):
        raise DataError(f"max_flops has {len(tops)} values for {len(masks)} masks.")
    out, prepared = [], []
    for mask, top in zip(masks, tops, strict=True):
        sub = replace(spec, max_flops=None if top is None else float(top))
        try:
            prepared.append((sub, *prepare_fit(rows[mask].reset_index(drop=True), sub)))
            out.append(None)
        except BenchcastError as error:
            out.append(error)
    ready = [i for i, o in enumerate(out) if o is None]
    # subsets of the same runs (two origins between the same compute levels of a ladder) are solved once
    first: dict[bytes, int] = {}
    same = [first.setdefault(masks[i].tobytes(), k) for k, i in enumerate(ready)]
    unique = sorted(set(same))
    solved = minimize_subsets(
        get_law(spec.law),
        [prepared[k][4] for k in unique],
        [prepared[k][5] for k in unique],
        [np.flatnonzero(masks[ready[k]])[prepared[k][6]] for k in unique],
        loss=spec.loss,
        huber_delta=spec.huber_delta,
        seed=spec.seed,
        with_stderr=not quiet,
    )
    optima = [solved[unique.index(k)] for k in same]
    for i, (sub, law, used, dropped, X, _, _), optimum in zip(ready, prepared, optima, strict=True):
        if isinstance(optimum, Exception) and not isinstance(optimum, BenchcastError):
            raise optimum
        try:
            out[i] = (
                optimum
                if isinstance(optimum, BenchcastError)
                else finish_fit(law, sub, used, dropped, X, optimum, quiet)
            )
        except BenchcastError as error:
            out[i] = error
    return out


def prepare_fit(rows: pd.DataFrame, spec: FitSpec) -> tuple:
    """What a fit of ``rows`` solves: the rows a law cannot use dropped, each with why."""
    law = get_law(spec.law)
    reasons = _drop_reasons(law, rows, spec)
    used = rows[reasons == ""].reset_index(drop=True)
    dropped = [
        {"run": r.run, "flops": float(r.flops), "k": float(r.k), "value": float(r.value), "reason": why}
        for r, why in zip(rows.itertuples(), reasons, strict=True)
        if why
    ]
    X = {c: used[c].to_numpy(float) for c in set(law.covariates) | set(law.fit_covariates)}
    distinct = distinct_points(X)
    if distinct <= law.n_free:
        why = pd.Series([item["reason"] for item in dropped], dtype=object).value_counts(sort=False)
        reasons = "".join(f"; {reason}: {n}" for reason, n in why.items())
        at = "" if distinct == len(used) else f" at {distinct} distinct {'/'.join(sorted(X))} value(s)"
        raise InsufficientDataError(
            f"law {law.name!r} has {law.n_free} free parameters but only {len(used)} usable points{at} "
            f"for {spec.benchmark} ({len(dropped)} dropped{reasons}); a fit needs more distinct points than "
            "free parameters."
        )
    y = to_target(law.target, used["value"].to_numpy(float), spec.q_rand)
    return law, used, dropped, X, y, reasons == ""


def finish_fit(
    law: Law, spec: FitSpec, used: pd.DataFrame, dropped: list, X: dict, optimum: Optimum, quiet: bool
) -> FitResult:
    """The FitResult of an engine optimum: predictions, diagnostics and notes (warned unless quiet)."""
    predict_X = {c: X[c] for c in law.covariates}
    frozen = law.freeze(optimum.theta, spec.q_rand, k=spec.k)
    fitted = law.predict_score(frozen.vector, predict_X, spec.q_rand)
    observed = used["value"].to_numpy(float)
    flops = used["flops"].to_numpy(float)
    decades = float(np.log10(flops.max() / flops.min()))
    counts = dict(Counter(item["reason"] for item in dropped))
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
        n_distinct=distinct_points(X),
    )
    notes = []
    if not optimum.converged:
        notes.append(f"the optimiser did not report convergence: {plain_message(str(optimum.message))}")
    # a law's own constraint reached is information (FitResult shows it), a search limit a warning
    notes.extend(bound_findings(law, frozen.params, optimum.at_bound).limits)
    if few_points(law.n_free, distinct := diagnostics.n_distinct):
        at = "" if distinct == len(used) else f" at {distinct} distinct values"
        notes.append(f"only {len(used)} points{at} for {law.n_free} free parameters: the fit is weakly constrained")
    if across := law.across_tprs(used):  # a law of compute alone reads several TPRs as one curve
        notes.append(across)
    if modelled := _modelled_note(used):
        notes.append(modelled)
    if decades < MIN_DECADES:
        notes.append(
            f"the fitted runs span only {decades:.2f} decades of compute: extrapolation from this fit is not a forecast"
        )
    for note in [] if quiet else notes:
        warnings.warn(f"{law.name} on {spec.benchmark}: {note}", FitWarning, stacklevel=4)
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


def _modelled_note(rows) -> str:
    """A note where pass@k rows were modelled past the samples drawn (``passk --extrapolate-to``)."""
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
