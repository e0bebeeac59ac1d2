"""How far a forecast point lies beyond the runs a law was fitted to: the distance its extrapolation
error grows with (:meth:`benchcast.forecasting.draws.ScoreDraws.widen`).

Decades of compute beyond the largest fitted run, and, for a point outside the fitted runs' range of
tokens per parameter, its decades of TPR outside that range. Computed here only: every command's
strategy forecast (:func:`benchcast.forecasting.strategy.blend_forecast`: ``bench``, ``recommend``,
``forecast``, ``report``) reads it from :func:`members_decades`.

The error per decade of TPR (``Spread.tau_tpr``) is estimated like the error per decade of compute, by
rolling origins inside the fitted runs, here in TPR (:func:`rolling_origin_tpr`): a law of N and D fitted
on runs at three or more TPRs is refitted without the runs at the largest TPR and forecasts them, and
likewise for the smallest. A point's extrapolation sd is then sqrt((tau dC)^2 + (tau_tpr dTPR)^2); where
no TPR origin is possible (a law of compute alone, fewer than three TPRs), tau_tpr is tau.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.api import fit_rows
from benchcast.forecasting.extent import below_data, fitted_flops_min, outside_decades
from benchcast.forecasting.targets import TPR_TOLERANCE, fitted_tpr_range

MIN_TPR_LEVELS = 3  # a TPR origin leaves out the largest (smallest) TPR: two others must remain to fit N and D
_ORIGINS: dict = {}  # id(FitResult) -> (weak reference, its TPR origins): bench asks once per strategy


def tpr_decades(tpr, fitted_tpr) -> np.ndarray:
    """Each point's distance outside the fitted runs' tokens-per-parameter range, in decades of TPR.

    Parameters
    ----------
    tpr : array_like (points,)
        Tokens per parameter of each point (nan where unknown).
    fitted_tpr : (float, float)
        The smallest and largest TPR of the fitted runs (nan: unknown).

    Returns
    -------
    ndarray (points,)
        log10(TPR / largest) above the range, log10(smallest / TPR) below it, 0 inside it (within
        ``TPR_TOLERANCE``: the data's TPRs are ratios of rounded sizes) or where unknown.
    """
    tpr = np.atleast_1d(np.asarray(tpr, float))
    lo, hi = (float(v) for v in fitted_tpr)
    out = np.zeros(len(tpr))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        above, below = tpr > hi * (1 + TPR_TOLERANCE), tpr < lo / (1 + TPR_TOLERANCE)
        out[above] = np.log10(tpr[above] / hi)
        out[below] = np.log10(lo / tpr[below])
    return out


def members_decades(members, flops, tpr=None) -> tuple[np.ndarray, np.ndarray]:
    """Each point's distance beyond the runs some laws were fitted to, in compute and in TPR.

    Parameters
    ----------
    members : sequence
        The laws' forecasts: objects with ``flops_max`` (their largest fitted run) and ``fit`` (the
        FitResult, whose points give the fitted TPR range; None: compute alone).
    flops : array_like (points,)
        Compute of each point.
    tpr : array_like (points,), optional
        Tokens per parameter of each point (None: compute alone).

    Returns
    -------
    (decades, tpr_decades) : ndarrays (points,)
        log10(C / largest fitted C), and :func:`tpr_decades` (0 where inside or unknown).
    """
    top = max(float(member.flops_max) for member in members)
    decades = np.log10(np.atleast_1d(np.asarray(flops, float)) / top)
    fits = [member.fit for member in members if getattr(member, "fit", None) is not None]
    if tpr is None or not fits:
        return decades, np.zeros(len(decades))
    return decades, tpr_decades(tpr, fitted_tpr_range(fits))


SAME_RUN_RTOL = 0.01  # a target within 1 % of a fitted run's compute (and TPR, where both are known) is that run


def placements(fits, flops, tpr=None, params=None) -> list[tuple[str, str]]:
    """Where each point lies relative to the runs some fits were fitted to, where that is not beyond them: at a
    fitted run, below the smallest, or inside their compute and TPR ranges (an interpolation). The flags of
    :mod:`benchcast.forecasting.flags` are made from these.

    Parameters
    ----------
    fits : iterable of FitResult
        The fits (their points: ``run``, ``flops``, and ``params`` and ``tokens`` where known).
    flops : array_like (points,)
        Compute of each point.
    tpr : array_like (points,), optional
        Tokens per parameter of each point (nan or None: unknown; compute alone decides).
    params : array_like (points,), optional
        Parameters N of each point (nan or None: unknown). A point with the N and TPR of a fitted run (within
        ``SAME_RUN_RTOL``) is that run whatever its compute: a file's FLOPs vary around its convention
        (1.15 .. 1.67 x 6 N D on a public ladder), so a planned run placed at the convention misses its own
        run's FLOPs by more than 1 %.

    Returns
    -------
    list of (str, str)
        Per point ``(where, reason)``: ``where`` is ``'at a fitted run'``, ``'below the data'``,
        ``'interpolation'`` or ``''`` (beyond the runs, or unknown), ``reason`` the words with the numbers.
    """
    fits = [fit for fit in fits if fit is not None and len(fit.points)]
    flops = np.atleast_1d(np.asarray(flops, float))
    tpr = np.full(len(flops), np.nan) if tpr is None else np.broadcast_to(np.asarray(tpr, float), flops.shape)
    size = np.full(len(flops), np.nan) if params is None else np.broadcast_to(np.asarray(params, float), flops.shape)
    if not fits:
        return [("", "")] * len(flops)
    points = pd.concat([fit.points for fit in fits], ignore_index=True)
    names, fitted = points["run"].astype(str).to_numpy(), points["flops"].to_numpy(float)
    sizes = {"params", "tokens"} <= set(points)
    fitted_tpr = (points["tokens"] / points["params"]).to_numpy(float) if sizes else np.full(len(points), np.nan)
    fitted_n = points["params"].to_numpy(float) if sizes else np.full(len(points), np.nan)
    lo, hi, (tpr_lo, tpr_hi) = fitted.min(), fitted.max(), fitted_tpr_range(fits)
    out = []
    for c, t, n in zip(flops, tpr, size, strict=True):
        same = np.isclose(fitted, c, rtol=SAME_RUN_RTOL, atol=0.0)
        if np.isfinite(t):  # a run of the same compute at another TPR is another run
            same &= ~np.isfinite(fitted_tpr) | np.isclose(fitted_tpr, t, rtol=SAME_RUN_RTOL)
            if np.isfinite(n):  # the same N and D is the same run, whatever FLOPs each was counted at
                same |= np.isclose(fitted_n, n, rtol=SAME_RUN_RTOL) & np.isclose(fitted_tpr, t, rtol=SAME_RUN_RTOL)
        inside_tpr = tpr_decades([t], (tpr_lo, tpr_hi))[0] == 0
        if same.any():
            where = f"the target is fitted run {names[same][0]!r} ({fitted[same][0]:.3g} FLOPs)"
            out.append(
                (
                    "at a fitted run",
                    f"{where}: the fit's own value there, not a forecast (--max-flops leaves the run out)",
                )
            )
        elif below := below_data(float(c), float(lo)):
            out.append(below[0])
        elif c <= hi and inside_tpr:
            out.append(
                (
                    "interpolation",
                    f"inside the fitted runs ({lo:.3g} .. {hi:.3g} FLOPs): an interpolation, "
                    "not a forecast (its interval is calibrated on extrapolations)",
                )
            )
        else:
            out.append(("", ""))
    return out


def members_outside(members, flops) -> np.ndarray:
    """Each point's distance outside the compute the members were fitted on, in either direction
    (:func:`~benchcast.forecasting.extent.outside_decades`): the distance a strategy's interval is widened by.

    Parameters
    ----------
    members : sequence
        Objects with ``flops_max`` and ``fit`` (a FitResult, whose smallest fitted run bounds the data below;
        None: above only).
    flops : array_like (points,)
        Compute of each point.

    Returns
    -------
    ndarray (points,)
    """
    top = max(float(member.flops_max) for member in members)
    fits = [member.fit for member in members if getattr(member, "fit", None) is not None]
    bottom = min((fitted_flops_min(fit) for fit in fits), default=np.nan)
    return outside_decades(flops, bottom, top)


def rolling_origin_tpr(result) -> pd.DataFrame:
    """Forecasts in TPR inside a fit's own points: a law of N and D fitted on runs at ``MIN_TPR_LEVELS`` or
    more TPRs, refitted cold without the runs at the largest TPR, forecasts them (``side`` 'above'), and
    without those at the smallest, forecasts those ('below'). Cached per fit.

    Parameters
    ----------
    result : FitResult
        The fit.

    Returns
    -------
    DataFrame
        ``side``, ``run``, ``k``, ``tpr_decades`` (beyond the refit's TPR range), ``true``, ``predicted``;
        empty for a law of compute alone or fewer TPRs.
    """
    cached = _ORIGINS.get(id(result))
    if cached is not None and cached[0]() is result:
        return cached[1]
    out = _tpr_origins(result)
    _ORIGINS[id(result)] = (weakref.ref(result), out)
    return out


def _tpr_origins(result) -> pd.DataFrame:
    columns = ["side", "run", "k", "tpr_decades", "true", "predicted"]
    points = result.points
    if not result.law_object.models_tpr or not {"params", "tokens"} <= set(points.columns):
        return pd.DataFrame(columns=columns)
    tpr = (points["tokens"] / points["params"]).to_numpy(float)
    level = np.round(np.log10(tpr) / np.log10(1 + TPR_TOLERANCE))  # TPRs within the tolerance are one level
    levels = np.unique(level[np.isfinite(level)])
    frames = []
    for side, held_level in (("above", levels[-1]), ("below", levels[0])):
        ahead = level == held_level
        inner = np.isfinite(level) & ~ahead
        if len(levels) < MIN_TPR_LEVELS or inner.sum() < result.law_object.n_params + 2:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                refit = fit_rows(points[inner].reset_index(drop=True), result.spec, quiet=True)
                predicted = refit.predict_frame(points[ahead].reset_index(drop=True))
        except (BenchcastError, ValueError, np.linalg.LinAlgError):
            continue
        edge = tpr[inner].max() if side == "above" else tpr[inner].min()
        frames.append(
            pd.DataFrame(
                {
                    "side": side,
                    "run": points.loc[ahead, "run"].to_numpy(),
                    "k": points.loc[ahead, "k"].to_numpy(float),
                    "tpr_decades": np.abs(np.log10(tpr[ahead] / edge)),
                    "true": points.loc[ahead, "value"].to_numpy(float),
                    "predicted": predicted,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def tpr_error(members, weights) -> float | None:
    """The blend's error per decade of TPR from its members' TPR origins (:func:`rolling_origin_tpr`):
    sqrt of the mean over the two origins of the mean of (e / dTPR)^2, e the blend's log-ratio error.

    Parameters
    ----------
    members : mapping of law name to member forecast
        Objects with ``fit`` (FitResult or None).
    weights : mapping of law name to float
        The blend's positive weights.

    Returns
    -------
    float or None
        None where a member has no fit or no TPR origin (a law of compute alone, fewer than three TPRs).
    """
    frames = {}
    for law in weights:
        fit = getattr(members[law], "fit", None)
        frame = rolling_origin_tpr(fit) if fit is not None else None
        if frame is None or frame.empty:
            return None
        frames[law] = frame.set_index(["side", "run", "k"])
    first = next(iter(frames.values()))
    wide = pd.concat([frame["predicted"].rename(law) for law, frame in frames.items()], axis=1, join="inner")
    wide = wide.join(first[["tpr_decades", "true"]])
    blend = sum(w * wide[law].to_numpy(float) for law, w in weights.items())
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = (np.log(wide["true"].to_numpy(float)) - np.log(blend)) / wide["tpr_decades"].to_numpy(float)
    keep = np.isfinite(scaled)
    if not keep.any():
        return None
    by_side = pd.Series(scaled[keep] ** 2).groupby(wide.index.get_level_values("side")[keep]).mean()
    return float(np.sqrt(by_side.mean()))
