"""INTERIM: the extrapolation error behind the one pipeline (replaced by the error model of issue 30 §2)."""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.result import FitResult
from benchcast.forecasting.draws import combine
from benchcast.forecasting.targets import TPR_TOLERANCE

MIN_TPR_LEVELS = 3
_ORIGINS: dict = {}
ORIGIN_DECADES = (0.2, 0.4, 0.6, 0.8, 1.0)  # inner origins: this far below the fit's largest run
MIN_INNER_DECADES = 0.5  # an inner refit must span at least this much compute
MIN_ORIGINS = 3  # the spread has two parameters (s0, tau): fewer distances leave nothing to check it
POOL_ORIGINS = 0  # M0: weight of the pooled spread, in origins (0: pooled only where own is missing)
ERROR_COLUMNS = ("origin_decades", "origin", "run", "k", "flops", "decades", "true", "predicted", "converged")


def _compute_origins(result: FitResult, origin_decades=ORIGIN_DECADES) -> pd.DataFrame:
    """Pseudo-out-of-sample forecasts inside a fit's own points (one row per forecast point), each
    from a cold fit of the points up to its origin (column ``converged``: that fit's convergence).

    Parameters
    ----------
    result : FitResult
        The fit whose points are refitted.
    origin_decades : sequence of float
        Each origin's distance below the fit's largest run, in decades of compute.

    Returns
    -------
    DataFrame
        ``ERROR_COLUMNS``: the origin, each point ahead of it (``decades`` beyond the origin's largest
        run), its true and forecast score; empty where no origin has enough points.
    """
    points = result.points
    law = result.law_object
    flops = points["flops"].to_numpy(float)
    top = flops.max()
    records = []
    for delta in origin_decades:
        origin = top / 10**delta
        inner = flops <= origin * (1 + 1e-9)
        if inner.sum() < law.n_params + 2 or not (~inner).any():
            continue
        if np.log10(flops[inner].max() / flops[inner].min()) < MIN_INNER_DECADES:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                refit = fit_rows(
                    points[inner].reset_index(drop=True),
                    replace(result.spec, max_flops=float(origin)),
                    quiet=True,
                )
        except (BenchcastError, ValueError, np.linalg.LinAlgError):
            continue
        ahead = points[~inner].reset_index(drop=True)
        predicted = refit.predict_frame(ahead)
        frame = pd.DataFrame(
            {
                "origin_decades": delta,
                "origin": float(flops[inner].max()),
                "run": ahead["run"].to_numpy(),
                "k": ahead["k"].to_numpy(float),
                "flops": ahead["flops"].to_numpy(float),
                "decades": np.log10(ahead["flops"].to_numpy(float) / flops[inner].max()),
                "true": ahead["value"].to_numpy(float),
                "predicted": predicted,
                "converged": refit.converged,
            }
        )
        records.append(frame)
    return pd.concat(records, ignore_index=True) if records else pd.DataFrame(columns=list(ERROR_COLUMNS))


def log_errors(errors: pd.DataFrame) -> pd.DataFrame:
    """Rows with a finite log-ratio error, with columns ``e`` (log true/forecast) and ``d``.

    Parameters
    ----------
    errors : DataFrame
        Rolling-origin forecasts (:func:`rolling_origin`).

    Returns
    -------
    DataFrame
        The rows ahead of their origin (``decades`` > 0) with a finite ``e``; ``d`` is ``decades``.
    """
    true, predicted = errors["true"].to_numpy(float), errors["predicted"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log(true) - np.log(predicted)
    keep = np.isfinite(e) & (errors["decades"].to_numpy(float) > 0)
    out = errors[keep].copy()
    out["e"], out["d"] = e[keep], out["decades"].to_numpy(float)
    return out


@dataclass(frozen=True)
class Spread:
    """Extrapolation error of a law: sd of log(Q_true / Q_forecast) is ``tau`` per decade."""

    tau: float
    noise: float  # s0: the part that does not grow with distance (reported, not added)
    n_origins: int
    n_forecasts: int
    source: str  # 'own', 'pooled', 'own+pooled' or 'own+benchmarks' (tau_pooling)
    n_unconverged: int = 0  # inner origins whose refit did not converge (their forecasts are kept)
    n_pooled: int = 0  # other benchmarks its log tau was shrunk towards (benchcast.forecasting.tau_pooling)
    tau_tpr: float | None = None  # per decade of TPR outside the fitted runs' (None: tau; forecasting.distance)

    def sd(self, decades, tpr_decades=None) -> np.ndarray:
        """The sd of the log-ratio error at a distance.

        Parameters
        ----------
        decades : array_like
            Distance beyond the largest fitted run, in decades of compute (negative counts as 0).
        tpr_decades : array_like, optional
            Distance outside the fitted runs' TPR range, in decades of TPR (0: inside).

        Returns
        -------
        ndarray
            ``tau * decades``; sqrt((tau decades)^2 + (tau_tpr tpr_decades)^2) outside the TPR range.
        """
        compute = self.tau * np.maximum(np.asarray(decades, float), 0.0)
        if tpr_decades is None:
            return compute
        beyond = np.asarray(tpr_decades, float)
        per = self.tau if self.tau_tpr is None else self.tau_tpr
        return np.where(beyond > 0, np.hypot(compute, per * beyond), compute)

    def to_dict(self) -> dict:
        """The spread as JSON-ready numbers.

        Returns
        -------
        dict
            The fields by name.
        """
        return {
            "tau": self.tau,
            "noise": self.noise,
            "n_origins": self.n_origins,
            "n_forecasts": self.n_forecasts,
            "source": self.source,
            "n_unconverged": self.n_unconverged,
            "n_pooled": self.n_pooled,
            **({} if self.tau_tpr is None else {"tau_tpr": self.tau_tpr}),
        }


def estimate_spread(errors: pd.DataFrame, *, group: tuple[str, ...] = ("origin_decades",)) -> Spread:
    """NNLS of e^2 on [1, d^2], each origin (each ``group``) weighted equally.

    Parameters
    ----------
    errors : DataFrame
        Rolling-origin forecasts (:func:`rolling_origin`).
    group : tuple of str
        Columns that name one origin (add ``benchmark`` to pool several benchmarks).

    Returns
    -------
    Spread
        ``tau`` (per decade) and ``noise`` (s0), source ``'own'``.

    Raises
    ------
    InsufficientDataError
        With fewer than ``MIN_ORIGINS`` origins.
    """
    rows = log_errors(errors)
    keys = [c for c in group if c in rows]
    n_origins = int(rows.groupby(keys).ngroups) if len(rows) else 0
    if n_origins < MIN_ORIGINS:
        raise InsufficientDataError(
            f"only {n_origins} inner forecast origin(s) with usable points: the extrapolation error cannot be "
            "estimated (the bootstrap-only interval is --interval bootstrap, interval='bootstrap' in Python; or pool "
            "with other benchmarks)."
        )
    weight = 1.0 / rows.groupby(keys)["e"].transform("size").to_numpy(float)
    root = np.sqrt(weight)
    design = np.column_stack([np.ones(len(rows)), rows["d"].to_numpy(float) ** 2]) * root[:, None]
    from scipy.optimize import nnls  # here: scipy.optimize costs 0.3 s to import

    (noise2, tau2), _ = nnls(design, rows["e"].to_numpy(float) ** 2 * root)
    unconverged = 0
    if "converged" in rows:
        unconverged = int((~rows.groupby(keys)["converged"].all().astype(bool)).sum())
    return Spread(float(np.sqrt(tau2)), float(np.sqrt(noise2)), n_origins, int(len(rows)), "own", unconverged)




def rolling_origin(result) -> pd.DataFrame:
    compute = _compute_origins(result).assign(axis="compute")
    tpr = rolling_origin_tpr(result)
    if not len(tpr):
        return compute
    tpr = pd.DataFrame(
        {
            "origin_decades": np.where(tpr["side"] == "above", 1.0, -1.0),
            "origin": np.nan,
            "run": tpr["run"],
            "k": tpr["k"],
            "flops": np.nan,
            "decades": tpr["tpr_decades"],
            "true": tpr["true"],
            "predicted": tpr["predicted"],
            "converged": True,
            "axis": "tpr",
        }
    )
    return pd.concat([compute, tpr], ignore_index=True)


@dataclass(frozen=True)
class ErrorModel:
    spread: Spread

    @property
    def tau(self):
        return self.spread.tau

    def to_dict(self):
        return self.spread.to_dict()


def _split(errors):
    if errors is None or not len(errors):
        return pd.DataFrame(), pd.DataFrame()
    if "axis" not in errors:
        return errors, pd.DataFrame()
    return errors[errors["axis"] == "compute"], errors[errors["axis"] == "tpr"]


def own_scale(errors) -> float:
    if errors is None or not len(errors):
        return float("nan")
    try:
        return estimate_spread(_split(errors)[0]).tau
    except BenchcastError:
        return float("nan")


def estimate(errors, prior=None, others=None, **_) -> ErrorModel:
    compute, tpr = _split(errors)
    spread = estimate_spread(compute) if len(compute) else None
    if spread is None:
        raise BenchcastError("no rolling-origin forecasts inside the runs")
    if len(tpr):
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = (np.log(tpr["true"].to_numpy(float)) - np.log(tpr["predicted"].to_numpy(float))) / tpr[
                "decades"
            ].to_numpy(float)
        keep = np.isfinite(scaled)
        if keep.any():
            by = pd.Series(scaled[keep] ** 2).groupby(tpr["origin_decades"].to_numpy()[keep]).mean()
            spread = replace(spread, tau_tpr=float(np.sqrt(by.mean())))
    return ErrorModel(spread)


def widen(values, decades, model, seed, tpr_decades=None, reference=None):
    return combine(values, decades, model.spread, seed=seed, reference=reference, tpr_decades=tpr_decades)


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
