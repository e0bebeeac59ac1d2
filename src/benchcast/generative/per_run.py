"""The per-run candidates of the pass@k-past-n forecaster: the aggregate power law in k on the unbiased curve, and
the success-rate families, each fitted to one run's counts and anchored at its measured pass@n past n; and the
rolling origin in k inside one run's counts (:func:`backtest_in_k`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.families import FAMILIES
from benchcast.generative.passk import pass_at_k_per_problem
from benchcast.generative.success import fit_family
from benchcast.generative.xscale import anchor as _anchor
from benchcast.generative.xscale import from_x as _from_x
from benchcast.generative.xscale import model_at_n_reason, thinned_origins
from benchcast.generative.xscale import to_x as _to_x
from benchcast.generative.xscale import x_error as _x_error

PER_RUN = ("power_k", *FAMILIES)
ORIGINS = ("n/10", "n/100")
BACKTEST_COLUMNS = ["origin", "origin_n", "k", "candidate", "forecast", "truth", "error", "error_x"]
MIN_ORIGIN_SAMPLES = 4  # a thinned run needs pass@1, @2, @4 for the power law's two parameters and one to spare


def _grid(n_min: int) -> np.ndarray:
    """The k of the unbiased curve the power law is fitted to: geometric in [1, n_min]."""
    return np.unique(np.geomspace(1, n_min, min(int(n_min), 16)).round().astype(int))


def _power_fit(log_k: np.ndarray, curves: np.ndarray):
    """Least squares of x on log k per row of ``curves`` (replicates x grid); points at pass@k 0 or 1 set aside."""
    x = _to_x(curves)
    usable = np.isfinite(x)
    w = usable.astype(float)
    count = w.sum(axis=1)
    xz = np.where(usable, x, 0.0)
    mean_k = (w * log_k).sum(axis=1) / np.maximum(count, 1)
    mean_x = xz.sum(axis=1) / np.maximum(count, 1)
    dk = (log_k[None, :] - mean_k[:, None]) * w
    denominator = (dk**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(denominator > 0, (dk * (xz - mean_x[:, None])).sum(axis=1) / denominator, 0.0)
    intercept = mean_x - slope * mean_k
    intercept = np.where(count >= 2, intercept, np.nan)
    solved_all = curves[:, -1] >= 1  # pass@n = 1: every problem solved at least once, so pass@k = 1 past n
    intercept = np.where(solved_all, -np.inf, intercept)
    slope = np.where(solved_all, 0.0, slope)
    # a flat curve (every solved problem solved every time) has slope 0: pass@k stays where it is, rightly
    return intercept, np.minimum(slope, 0.0)


def _power_x(n, c, ks, picks=None) -> tuple[np.ndarray, np.ndarray]:
    """x of the power law in k at ``ks`` (a row per resample in ``picks``) anchored past n, and the measured x."""
    grid = _grid(int(np.min(n)))
    per_problem = pass_at_k_per_problem(n, c, grid)
    curves = per_problem.mean(axis=0)[None, :] if picks is None else per_problem[picks].mean(axis=1)
    intercept, slope = _power_fit(np.log(grid), curves)
    log_ks = np.log(np.asarray(ks, float))
    x = intercept[:, None] + slope[:, None] * log_ks[None, :]
    measured = _to_x(curves[:, -1])
    past = np.asarray(ks, float) > grid[-1]
    if past.any():
        with np.errstate(invalid="ignore"):
            at_n = intercept + slope * np.log(grid[-1])
        x[:, past] = _anchor(x[:, past], at_n, measured)
    nothing = ~(curves > 0).any(axis=1)  # a resample that solved nothing: pass@k = 0
    return np.where(nothing[:, None], np.inf, x), measured


def _anchored_family(fitted, ks, n_est, c_est, reach=None) -> np.ndarray:
    """x of a fitted family at ``ks``, anchored past ``reach`` (the estimator's n) to the measured pass@n there."""
    reach = float(np.min(n_est)) if reach is None else reach
    ks = np.asarray(ks, float)
    x = _to_x(fitted.pass_at_k(ks))
    past = ks > reach
    if past.any():
        at_n = _to_x(fitted.pass_at_k([reach]))
        measured = _to_x(pass_at_k_per_problem(n_est, c_est, [int(reach)]).mean())
        x[past] = _anchor(x[past], at_n, measured)[0]
        reason = model_at_n_reason(at_n) if np.isfinite(measured) and np.isnan(x[past]).any() else ""
        if reason:
            raise DataError(reason)
    return x


@dataclass(frozen=True)
class CandidateFit:
    """One candidate's forecast from one run's counts: pass@k on the x scale and its doubts."""

    candidate: str
    x: np.ndarray
    doubts: tuple[str, ...] = ()
    family_z: np.ndarray | None = None


def fit_candidate(candidate: str, n, c, ks, *, n_est=None, c_est=None) -> CandidateFit:
    """One candidate fitted to one run's counts: x at ``ks`` (the power law on the estimator's ``n_est``, ``c_est``)."""
    if candidate not in PER_RUN:
        raise DataError(
            f"unknown candidate {candidate!r}: expected one of {', '.join(PER_RUN)} (the joint model is "
            "fitted to every run at once, by PassKPastN)."
        )
    n, c = np.asarray(n, float), np.asarray(c, float)
    n_est, c_est = (n, c) if n_est is None else (np.asarray(n_est, float), np.asarray(c_est, float))
    if candidate == "power_k":
        if c.any() and not c_est.any():
            raise DataError(
                "the first round's samples solved nothing (later rounds did): the unbiased pass@k curve the power law "
                "in k is fitted to is 0 at every k; a family (--family beta) reads every round"
            )
        x = _power_x(n_est.astype(int), c_est.astype(int), ks)[0][0]
        if np.isnan(x).any():
            raise DataError("the unbiased pass@k curve has fewer than two points strictly between 0 and 1.")
        return CandidateFit(candidate, x)
    fitted = fit_family(candidate, n, c)
    doubts = ([] if fitted.converged else ["did not converge"]) + [f"{p} on its bound" for p in fitted.on_bound]
    x = _anchored_family(fitted, ks, n_est.astype(int), c_est.astype(int))
    return CandidateFit(candidate, x, tuple(doubts), fitted.z)


def backtest_in_k(n, c, *, candidates=PER_RUN, seed: int = 0) -> pd.DataFrame:
    """The rolling origin in k inside one run: per origin and candidate, the error one decade of k past it."""
    n, c = np.asarray(n, np.int64), np.asarray(c, np.int64)
    rows = []
    for origin, (m, thinned) in zip(ORIGINS, thinned_origins(n, c, seed, MIN_ORIGIN_SAMPLES), strict=False):
        if not thinned.any():
            continue
        k = 10 * int(m.min())
        truth = float(pass_at_k_per_problem(n, c, [k]).mean())
        for name in candidates:
            try:
                forecast = float(_from_x(fit_candidate(name, m, thinned, [k]).x[0]))
            except DataError:
                continue
            rows.append(
                {
                    "origin": origin,
                    "origin_n": int(m.min()),
                    "k": k,
                    "candidate": name,
                    "forecast": forecast,
                    "truth": truth,
                    "error": forecast - truth,
                    "error_x": _x_error(forecast, truth),
                }
            )
    return pd.DataFrame(rows, columns=BACKTEST_COLUMNS)
