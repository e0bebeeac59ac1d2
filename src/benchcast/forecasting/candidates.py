"""Which laws the default strategy may use on a ladder, and the fits its choice is made from.

The candidates depend on the ladder, decided here only (:func:`ladder_laws`): each law says whether it
models tokens per parameter (``Law.models_tpr``), and runs that separate parameters from tokens get the
laws that do. Where a benchmark has too few rolling origins of its own, :func:`pooled_over_table`
gives it the spread of the same combination pooled over the table's other benchmarks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting import calibration as cal
from benchcast.forecasting.law_comparison import blend_errors, common_errors, pooled_spread
from benchcast.laws import get_law
from benchcast.laws.questions import spans_tprs
from benchcast.utils.progress import track

# Candidates of the default choice: the laws with a ceiling below a perfect score (chosen by
# `benchcast bench` on DCLM; README, "Which law should I use?"); add laws here by name. Each ladder
# takes those that fit its shape (Law.models_tpr): DEFAULT_CANDIDATES are the one-TPR ones.
DEFAULT_POOL = ("power_floor", "bnsl_monotone", "nd_floor", "power_floor_tpr")
DEFAULT_CANDIDATES = ("power_floor", "bnsl_monotone")
# What forecasts where no candidate has support: the plain power law (its two parameters fit a short
# ladder; its rolling origins need the fewest runs), K4's nd across TPRs.
FALLBACK_POOL = ("power", "nd")


def ladder_laws(rows: pd.DataFrame) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The default's candidate laws and fallback laws for these runs: laws of parameters and tokens where
    the runs separate them (several TPRs at one size), laws of compute otherwise.

    Parameters
    ----------
    rows : DataFrame
        The selected runs (columns ``params`` and ``tokens``, or ``tpr``).

    Returns
    -------
    candidates, fallbacks : tuple of str
        Law names, from ``DEFAULT_POOL`` and ``FALLBACK_POOL``.
    """
    several = spans_tprs(rows)
    return (
        tuple(law for law in DEFAULT_POOL if get_law(law).models_tpr == several),
        tuple(law for law in FALLBACK_POOL if get_law(law).models_tpr == several),
    )


def too_short(law: str, result) -> str:
    """Why a fitted law is no candidate of the default on these runs ('' when it is): the runs (used or
    dropped by its filter) span fewer decades of compute than the law declares it needs.

    Parameters
    ----------
    law : str
        The law's name.
    result : FitResult or None
        Its fit (None: nothing to judge, '').

    Returns
    -------
    str
        The reason, or ''.
    """
    need = get_law(law).min_ladder_decades
    if result is None or not need:
        return ""
    flops = [*result.points["flops"].to_numpy(float), *(float(d["flops"]) for d in result.dropped)]
    span = float(np.log10(max(flops) / min(flops)))
    if span >= need:
        return ""
    return f"{law}: the runs span {span:.2f} decades of compute; it needs {need:g} to be a candidate"


def across_tprs(rows: pd.DataFrame, law: str) -> str:
    """A warning where a law of compute alone is fitted to runs at several TPRs ('' otherwise).

    Parameters
    ----------
    rows : DataFrame
        The selected runs.
    law : str
        The law's name.

    Returns
    -------
    str
        The warning, or ''.
    """
    if get_law(law).models_tpr or not spans_tprs(rows):
        return ""
    return (
        f"{law}: a law of compute alone fitted across several tokens-per-parameter ratios reads them as one "
        "curve (give a TPR to fit one, or use a law of parameters and tokens)"
    )


def fit_laws(data: pd.DataFrame, base: FitSpec, laws, progress: bool = True) -> tuple[dict, dict, list[str]]:
    """Each law fitted to every run and its rolling-origin forecasts.

    Parameters
    ----------
    data : DataFrame
        The runs.
    base : FitSpec
        The benchmark, metric and selection (its law is replaced by each of ``laws``).
    laws : iterable of str
        The laws.
    progress : bool
        Show a progress bar.

    Returns
    -------
    errors : dict
        Law name to its rolling-origin forecasts (possibly empty).
    results : dict
        Law name to its fit to every run.
    failures : list of str
        Each law that could not be fitted, with the reason.
    """
    errors, results, failures = {}, {}, []
    laws = list(laws)
    for law in track(laws, f"recommend {base.benchmark}: laws fitted and backtested") if progress else laws:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows, resolved = design(data, base.replace(law=law))
                result = fit_rows(rows, resolved, quiet=True)
                inner = cal.rolling_origin(result)
        except BenchcastError as exc:
            failures.append(f"{law}: {exc}")
            continue
        errors[law], results[law] = inner, result
    return errors, results, failures


def ranking_record(law: str, inner: pd.DataFrame, result) -> dict:
    """A law's row of the ranking before it is scored.

    Parameters
    ----------
    law : str
        The law's name.
    inner : DataFrame
        Its rolling-origin forecasts.
    result : FitResult
        Its fit to every run.

    Returns
    -------
    dict
        ``law``, ``tau``, ``n_fit``, ``n_dropped`` (rows of the selection the fit left out, with their reasons:
        ``'1 (score is NaN: 1)'``), ``decades_fitted``, ``converged`` and the bound findings.
    """
    try:
        tau = cal.estimate_spread(inner).tau
    except BenchcastError:
        tau = float("nan")
    return {
        "law": law,
        "tau": tau,
        "n_fit": result.diagnostics.n_used,
        "n_dropped": result.diagnostics.dropped,
        "decades_fitted": result.diagnostics.decades,
        "converged": result.converged,
        # the law's own constraint active (information) apart from a search limit reached (a warning)
        **result.bounds.columns(),
    }


def pooled_over_table(data: pd.DataFrame, base: FitSpec, weights) -> tuple[cal.Spread | None, int]:
    """The extrapolation spread of the same combination of laws pooled over the table's other benchmarks
    (each at its default metric and the same selection), for a benchmark with too few origins of its own.
    Computed only then: it refits the members on every other benchmark (cheap for the fallback ``power``).

    Parameters
    ----------
    data : DataFrame
        The runs, every benchmark.
    base : FitSpec
        The benchmark without origins of its own, and the selection.
    weights : mapping of law name to float
        The combination.

    Returns
    -------
    spread : Spread or None
        None where the others have too few origins too.
    n_benchmarks : int
        How many other benchmarks contributed forecasts.
    """
    frames = []
    for other in sorted(set(data["benchmark"].unique()) - {base.benchmark}):
        spec = base.replace(benchmark=str(other), metric=None, k=None, proxy=None)
        errors, _, failures = fit_laws(data, spec, [law for law, w in weights.items() if w > 0], progress=False)
        if failures or not errors:
            continue
        wide = common_errors(errors)
        if len(wide):
            frames.append(blend_errors(wide, pd.Series(dict(weights))).assign(benchmark=str(other)))
    return pooled_spread(frames), len(frames)
