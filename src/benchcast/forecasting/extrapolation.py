"""The extrapolation error: one rolling-origin loop, one error model, one pooling rule, one widening.

The bootstrap measures how much a fit moves when its runs are resampled, not how wrong the law is a decade
past its data; that is measured on the ladder itself:
1. :func:`rolling_origin`: cold refits of the fit's points up to an origin ``ORIGIN_DECADES`` below its
   largest run forecast the larger points (``axis='compute'``); a law of N and D fitted on ``MIN_TPR_LEVELS``
   or more TPRs is refitted without the largest (smallest) TPR and forecasts it (``axis='tpr'``). Every
   refit goes through :func:`_refits`, as rows of one batched solve.
2. :func:`estimate`: e = log(true / forecast) at d decades ~ tau d eps; tau from the NNLS fit of
   e^2 = s0^2 + tau^2 d^2, each origin weighted equally (s0, evaluation noise, is in the bootstrap). One
   pooling rule: log tau is the weighted mean of the benchmark's own (m origins, none below ``MIN_ORIGINS``)
   and the cross-ladder prior shipped in ``extrapolation_prior.json`` (``PRIOR_ORIGINS``); where the file
   cannot measure, the prior alone gives it and ``source`` says so. Along TPR (:func:`tpr_scale`) only forecasts
   at least ``MIN_TPR_DECADES`` from their origin's data count, pooled as a ratio of sums (never an error divided
   by one point's distance), and log tau_tpr is shrunk toward the prior's by the decades the origins reach against
   ``PRIOR_TPR_DECADES``. An own scale more than ``FINDING_FACTOR`` from the prior's is a finding the forecast
   states (:attr:`ErrorModel.findings`), not a silent multiplier. No drift and normal tails: the inner
   forecasts' drift (positive on every ladder) did not carry forward to held-out runs, and t tails cost WIS
   on DCLM; those designs, and pooling the file's other benchmarks, are studied in
   ``benchmarks/_extrapolation_cells.py`` (``benchmarks/extrapolation_designs.md``).
3. :func:`widen`: a bootstrap draw Q_b at D decades becomes Q_b exp(drift D + s eps), s the scale net of the
   bootstrap's own spread (:func:`benchcast.forecasting.draws.net_sd`), eps one per replicate, shared by the points,
   clipped to [0, 1]. The point forecast is not a draw: drift moves the interval only.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast._version import __version__
from benchcast.data.table import tpr_level
from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.fitting.api import fit_rows, prepare_fit
from benchcast.fitting.artifact import ROLLING_ORIGIN_COLUMNS, fingerprint
from benchcast.fitting.stages import fit_subsets
from benchcast.forecasting.draws import DRAWS, net_sd
from benchcast.laws import get_law
from benchcast.laws.linalg import distinct_points, nnls
from benchcast.utils.jsonable import jsonable
from benchcast.utils.streams import EPS_STREAM, common_rng

ORIGIN_DECADES = (0.2, 0.4, 0.6, 0.8, 1.0)  # inner origins: this far below the fit's largest run
AXES = ("compute", "tpr")
MIN_INNER_DECADES = 0.5  # an inner refit must span at least this much compute
MIN_ORIGINS = 3  # fewer origins leave the two terms (noise, tau) unchecked: the benchmark's own is not used
MIN_TPR_LEVELS = 3  # a TPR origin leaves out the largest (smallest) TPR: two others must remain to fit N and D
BENCH_ORIGINS = 5.0  # the file's other benchmarks' weight, in origins (studied in benchmarks/ only)
PRIOR_ORIGINS = 5.0  # the cross-ladder prior's weight, in origins
TAU_FLOOR = 1e-3  # a tau below this (an exact inner forecast) counts as it on the log scale
# along TPR, a forecast this near its origin's data measures noise, not an error per decade: a ladder whose ratios
# come in rounding-split groups (99.9 and 100.03) held out one half of a group at 1e-4 decades and measured 39-81 per
# decade against the prior's 0.13 (docs/methods/intervals.md); a ratio a quarter apart (0.1 decade) is the nearest
# a ladder designs on purpose
MIN_TPR_DECADES = 0.1
# the prior's weight along TPR, in decades of TPR reached by the origins: two origins one doubling out (0.3 decade
# each, DCLM's 10..160) weigh as much as the prior, measured on one ladder
PRIOR_TPR_DECADES = 0.6
# an own scale this far from the prior's (above or below) is stated: the prior's own benchmarks lie within a factor
# 4.3 of its TPR scale, and 27 of 30 within 10 of its compute scale
FINDING_FACTOR = 10.0
PRIOR_FILE = Path(__file__).with_name("extrapolation_prior.json")
COLUMNS = ROLLING_ORIGIN_COLUMNS


@dataclass(frozen=True)
class _Origin:
    """One rolling origin: the points refitted (``inner``) and those it forecasts (``ahead``), over a fit's points."""

    axis: str
    delta: float  # decades below the largest run (compute); NaN along TPR
    side: str  # 'above' or 'below' along TPR; '' along compute
    inner: np.ndarray
    ahead: np.ndarray
    edge: float  # the refit's largest compute (compute), or its TPR nearest the forecast points (TPR)
    max_flops: float | None  # the compute bound recorded in the refit's spec
    decades: np.ndarray | float
    tpr_decades: np.ndarray | float


def _enough(points: pd.DataFrame, law, inner: np.ndarray) -> bool:
    """Whether ``points[inner]`` hold ``law.n_params + 2`` distinct covariate points (replicate runs are one)."""
    X = {c: points[c].to_numpy(float)[inner] for c in {*law.covariates, *law.fit_covariates}}
    return distinct_points(X) >= law.n_params + 2


def _origins(points: pd.DataFrame, law, spec, axes, origin_decades) -> list[_Origin]:
    """The rolling origins of a fit's points along compute and TPR that leave enough points to refit."""
    flops = points["flops"].to_numpy(float)
    out = []
    if "compute" in axes:
        for delta in origin_decades:
            origin = flops.max() / 10**delta
            inner = flops <= origin * (1 + 1e-9)
            if inner.all() or not _enough(points, law, inner) or np.ptp(np.log10(flops[inner])) < MIN_INNER_DECADES:
                continue
            top = float(flops[inner].max())
            out.append(
                _Origin("compute", delta, "", inner, ~inner, top, float(origin), np.log10(flops[~inner] / top), 0.0)
            )
    if "tpr" in axes and law.models_tpr and {"params", "tokens"} <= set(points.columns):
        tpr = (points["tokens"] / points["params"]).to_numpy(float)
        level = tpr_level(tpr)
        levels = np.unique(level[np.isfinite(level)])
        for side, held in (("above", levels[-1:]), ("below", levels[:1])) if len(levels) >= MIN_TPR_LEVELS else ():
            ahead, inner = level == held[0], np.isfinite(level) & (level != held[0])
            if _enough(points, law, inner):
                edge = tpr[inner].max() if side == "above" else tpr[inner].min()
                beyond = np.abs(np.log10(tpr[ahead] / edge))
                out.append(_Origin("tpr", np.nan, side, inner, ahead, float(edge), spec.max_flops, 0.0, beyond))
    return out


def _refits(rows: pd.DataFrame, spec, masks: list, tops: list) -> list:
    """Cold fits of ``rows[mask]`` per mask, batched (one by one where the batch fails); None: failed."""
    if not masks:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            made = fit_subsets(rows.reset_index(drop=True), spec, masks, max_flops=tops, quiet=True)
        except (BenchcastError, ValueError, np.linalg.LinAlgError):
            made = []
            for mask, top in zip(masks, tops, strict=True):
                try:
                    made.append(fit_rows(rows[mask].reset_index(drop=True), replace(spec, max_flops=top), quiet=True))
                except (BenchcastError, ValueError, np.linalg.LinAlgError) as error:
                    made.append(error)
    return [None if isinstance(fit, Exception) else fit for fit in made]


def _table(points: pd.DataFrame, origins: list[_Origin], refits: list) -> pd.DataFrame:
    frames = [
        _frame(o.axis, o.delta, o.side, refit, points[o.ahead], o.edge, o.decades, o.tpr_decades)
        for o, refit in zip(origins, refits, strict=True)
        if refit is not None
    ]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))


def _frame(axis, delta, side, refit, ahead: pd.DataFrame, origin: float, decades, tpr_decades) -> pd.DataFrame:
    try:
        predicted = refit.predict_frame(ahead.reset_index(drop=True))
    except (BenchcastError, ValueError, np.linalg.LinAlgError):
        return pd.DataFrame(columns=list(COLUMNS))
    n, column = len(ahead), lambda name: ahead[name].to_numpy(float)
    values = (
        axis,
        delta,
        side,
        origin,
        ahead["run"].to_numpy(),
        column("k"),
        column("flops"),
        np.broadcast_to(decades, n),
        np.broadcast_to(tpr_decades, n),
        column("value"),
        predicted,
        bool(refit.converged),
    )
    return pd.DataFrame(dict(zip(COLUMNS, values, strict=True)))


def rolling_origin(result, axes=AXES, origin_decades=ORIGIN_DECADES) -> pd.DataFrame:
    """Forecasts inside a fit's points, each from a cold refit of the points on its origin's near side."""
    stored = getattr(result, "rolling_origins", None)
    if stored is not None and stored.get("made_for") == _made_for(result, axes, origin_decades):
        return stored["table"].copy()
    points = result.points
    origins = _origins(points, result.law_object, result.spec, axes, origin_decades)
    refits = _refits(points, result.spec, [o.inner for o in origins], [o.max_flops for o in origins])
    return _table(points, origins, refits)


def fit_with_rolling_origins(rows: pd.DataFrame, spec):
    """The fit of ``rows`` and its origins' refits in one batched solve, holding their forecasts."""
    _, used, _, _, _, kept = prepare_fit(rows, spec)  # the fit's points: its origins are placed among them
    origins = _origins(used, get_law(spec.law), spec, AXES, ORIGIN_DECADES)
    positions = np.flatnonzero(kept)  # each used point's row
    masks = [np.ones(len(rows), bool)]  # the full fit sees every row, and counts those it drops
    for o in origins:
        mask = np.zeros(len(rows), bool)
        mask[positions[o.inner]] = True
        masks.append(mask)
    made = _refits(rows, spec, masks, [spec.max_flops, *(o.max_flops for o in origins)])
    # the full fit failed in the batch: alone it says why (or, where the two disagree, fits)
    result = made[0] if made[0] is not None else fit_rows(rows, spec, quiet=True)
    return _holding(result, _table(result.points, origins, made[1:]))


def with_rolling_origins(result):
    """The fit holding its rolling-origin forecasts (what ``benchcast fit --out`` saves)."""
    return _holding(result, rolling_origin(result))  # a table it holds already (made for it) is read, not remade


def _made_for(result, axes=AXES, origin_decades=ORIGIN_DECADES) -> str:
    """A hash of what a fit's rolling origins depend on: points, settings, law, origins, version."""
    what = {
        "points": fingerprint(result.points),
        "spec": result.spec.to_dict(),
        "law": result.law,
        "origin_decades": list(origin_decades),
        "axes": list(axes),
        "benchcast": __version__,
    }
    return "sha256:" + hashlib.sha256(json.dumps(jsonable(what), sort_keys=True).encode()).hexdigest()[:32]


def _holding(result, table: pd.DataFrame):
    origins = {
        "origin_decades": list(ORIGIN_DECADES),
        "axes": list(AXES),
        "made_for": _made_for(result),
        "table": table,
    }
    return replace(result, rolling_origins=origins)


def log_errors(errors: pd.DataFrame, axis: str = "compute") -> pd.DataFrame:
    """The forecasts along ``axis`` with finite ``e`` = log(true / forecast) and ``d`` decades ahead."""
    rows = pd.DataFrame(columns=list(COLUMNS)) if errors is None else errors
    rows = rows[rows["axis"] == axis] if "axis" in rows else rows.iloc[: len(rows) * (axis == "compute")]
    if not len(rows):
        return pd.DataFrame(columns=[*COLUMNS, "e", "d"])
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log(rows["true"].to_numpy(float)) - np.log(rows["predicted"].to_numpy(float))
    d = rows["decades" if axis == "compute" else "tpr_decades"].to_numpy(float)
    keep = np.isfinite(e) & (d > 0)
    out = rows[keep].copy()
    out["e"], out["d"] = e[keep], d[keep]
    return out


@dataclass(frozen=True)
class ErrorModel:
    """The log-ratio error of a forecast D decades beyond its data: ~ drift D + tau D t_df."""

    tau: float
    drift: float = 0.0
    df: float = float("inf")
    tau_tpr: float | None = None
    source: str = "own"
    n_origins: int = 0
    n_forecasts: int = 0
    n_unconverged: int = 0
    own_tau: float | None = None
    own_tau_tpr: float | None = None
    findings: tuple = ()

    @property
    def floor_note(self) -> str:
        """Where the floor binds, in words ('' where it does not): an own tau below it counts as it."""
        if self.own_tau is None or not self.own_tau < TAU_FLOOR:
            return ""
        # an exact 0: the NNLS put the origins' whole squared error in its constant (noise at every distance)
        grows = ": its origins' errors do not grow with the distance" if self.own_tau == 0 else ""
        return (
            f"the benchmark's own extrapolation error ({self.own_tau:.2g} per decade{grows}) is below the floor "
            f"{TAU_FLOOR:g} and counts as {TAU_FLOOR:g}"
            + (f" before pooling ({self.source})" if "+" in self.source else "")
        )

    def to_dict(self) -> dict:
        """The model as JSON-ready numbers."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {
            **out,
            "findings": list(self.findings),
            "df": None if self.df == np.inf else self.df,
            **({"floor": self.floor_note} if self.floor_note else {}),
        }


@dataclass(frozen=True)
class Prior:
    """The cross-ladder prior: mean log tau and mean drift per decade over the ladders measured."""

    log_tau: float
    drift: float
    tau_tpr: float | None
    ladders: tuple
    log_tau_nodrift: float | None = None


def load_prior(path=None, exclude=(), ladders=None) -> Prior:
    """The cross-ladder prior shipped with the package: the mean of its ladders' entries."""
    path = Path(path) if path is not None else PRIOR_FILE
    try:
        ladders = json.loads(path.read_text())["ladders"] if ladders is None else ladders
    except (OSError, ValueError, KeyError) as exc:
        raise BenchcastError(f"{path}: not an extrapolation prior ({exc}).") from exc
    kept = {k: v for k, v in ladders.items() if k not in set(exclude) and v.get("log_tau") is not None}
    if not kept:
        raise BenchcastError(f"no ladder left in the extrapolation prior after leaving out {list(exclude)}.")
    tpr = [v["tau_tpr"] for v in kept.values() if v.get("tau_tpr") is not None]
    mean = lambda key: float(np.mean([v.get(key, v["log_tau"]) for v in kept.values()]))  # noqa: E731
    return Prior(
        mean("log_tau"),
        mean("drift"),
        float(np.exp(np.mean(np.log(tpr)))) if tpr else None,
        tuple(kept),
        mean("log_tau_nodrift"),
    )


def _tau(residual, d, w) -> float:
    residual, d, root = np.asarray(residual, float), np.asarray(d, float), np.sqrt(w)
    _, tau2 = nnls(np.column_stack([np.ones(len(d)), d**2]) * root[:, None], residual**2 * root)
    return float(np.sqrt(tau2))


def estimate(
    errors: pd.DataFrame | None, prior: Prior | None = None, *, prior_origins: float = PRIOR_ORIGINS
) -> ErrorModel:
    """The one pooling rule: log tau the mean of the own (weight: its origins) and the prior's."""
    rows = log_errors(errors)
    n_own = int(rows["origin_decades"].nunique()) if len(rows) else 0
    parts, source, unconverged, tau = [], [], 0, None  # (weight, log tau)
    if n_own >= MIN_ORIGINS:
        tau = _tau(rows["e"], rows["d"], _weights(rows))
        parts.append((float(n_own), np.log(max(tau, TAU_FLOOR))))
        source.append("own")
        unconverged = int((~rows.groupby("origin_decades")["converged"].all().astype(bool)).sum())
    if prior is not None and prior_origins > 0:
        parts.append((prior_origins, prior.log_tau if prior.log_tau_nodrift is None else prior.log_tau_nodrift))
        source.append(f"prior ({len(prior.ladders)} ladder{'s' * (len(prior.ladders) != 1)})")
    if not parts:
        raise InsufficientDataError(
            f"only {n_own} inner forecast origin(s) with usable points and no prior to pool: the extrapolation "
            "error cannot be estimated (the bootstrap-only interval is interval='bootstrap')."
        )
    weight = np.array([p[0] for p in parts]) / sum(p[0] for p in parts)
    own_tpr, reach = tpr_scale(errors)
    prior_tpr = None if prior is None else prior.tau_tpr
    tau_tpr = _shrunk(own_tpr, reach, prior_tpr)
    own = tau is not None
    pooled = float(np.exp(np.dot(weight, [p[1] for p in parts])))
    prior_tau = None if prior is None else float(np.exp(parts[-1][1]))
    findings = (
        *_finding("compute", tau if own else None, prior_tau, pooled, f"{n_own} origins"),
        *_finding("TPR", own_tpr, prior_tpr, tau_tpr, f"origins reaching {reach:.2g} decades of TPR"),
    )
    return ErrorModel(
        pooled,
        0.0,
        np.inf,
        tau_tpr,
        "+".join(source),
        n_own if own else 0,
        int(len(rows)) if own else 0,
        unconverged,
        float(tau) if own else None,
        own_tpr,
        findings,
    )


def _shrunk(own: float | None, reach: float, prior: float | None) -> float | None:
    """log tau_tpr: the own and prior's weighted mean (weights: reach, ``PRIOR_TPR_DECADES``)."""
    if own is None:
        return prior
    if prior is None:
        return max(own, TAU_FLOOR)
    log = (reach * np.log(max(own, TAU_FLOOR)) + PRIOR_TPR_DECADES * np.log(prior)) / (reach + PRIOR_TPR_DECADES)
    return float(np.exp(log))


def _finding(axis: str, own: float | None, prior: float | None, used: float | None, evidence: str) -> tuple[str, ...]:
    """The finding of an own scale more than ``FINDING_FACTOR`` from the prior's (none where either is missing)."""
    # an own scale below TAU_FLOOR is stated by ErrorModel.floor_note
    if (
        own is None
        or prior is None
        or not (prior > 0 and own >= TAU_FLOOR)
        or 1 / FINDING_FACTOR <= own / prior <= FINDING_FACTOR
    ):
        return ()
    side = "above" if own > prior else "below"
    return (
        f"the {axis} extrapolation error measured on this ladder ({own:.3g} per decade, {evidence}) lies more than "
        f"{FINDING_FACTOR:g} times {side} the cross-ladder prior's ({prior:.3g}); the interval uses {used:.3g}, "
        "the two pooled by their evidence",
    )


def _weights(rows: pd.DataFrame) -> np.ndarray:
    # 1 / its origin's forecasts: each origin weighs the same
    return 1.0 / rows.groupby("origin_decades")["e"].transform("size").to_numpy(float)


def tpr_scale(errors) -> tuple[float | None, float]:
    """The own error per decade of TPR (sqrt of a ratio of weighted sums) and the decades reached."""
    rows = log_errors(errors, "tpr")
    rows = rows[rows["d"] >= MIN_TPR_DECADES]
    if not len(rows):
        return None, 0.0
    w = 1.0 / rows.groupby("side")["e"].transform("size").to_numpy(float)
    e, d = rows["e"].to_numpy(float), rows["d"].to_numpy(float)
    return float(np.sqrt(np.sum(w * e**2) / np.sum(w * d**2))), float(np.sum(w * d))


def widen(boot_draws, decades, model: ErrorModel, seed: int = 0, tpr_decades=None, reference=None) -> np.ndarray:
    """Bootstrap score draws turned into forecast draws: Q_b exp(drift D + s eps), clipped to [0, 1]."""
    boot = np.asarray(boot_draws, float)
    if boot.ndim != 2 or not len(boot) or not np.isfinite(boot).any():
        raise BenchcastError("no bootstrap draws to widen by the extrapolation error.")
    boot = np.where(np.isfinite(boot), boot, np.nan)
    base = np.tile(boot, (int(np.ceil(DRAWS / len(boot))), 1))
    decades = np.maximum(np.asarray(decades, float), 0.0)
    per = model.tau if model.tau_tpr is None else model.tau_tpr
    scale = np.hypot(model.tau * decades, per * (0.0 if tpr_decades is None else np.asarray(tpr_decades, float)))
    rng = common_rng(seed, EPS_STREAM)  # one draw per replicate, shared by every point (common random numbers)
    common = rng.standard_normal(len(base))
    if np.isfinite(model.df):  # t = z / sqrt(chi2_df / df), from the same stream
        common /= np.sqrt(rng.chisquare(model.df, len(base)) / model.df)
    eps = np.broadcast_to(common[:, None], (len(base), len(decades)))
    with np.errstate(divide="ignore"):
        log_draws = (
            np.log(np.clip(base, 1e-12, None))
            + model.drift * decades
            + eps * net_sd(boot if reference is None else reference, scale)
        )
    return np.clip(np.exp(log_draws), 0.0, 1.0)
