"""The question a forecast answers: the runs asked about and where each sits among the fitted runs.

Runs are given by their compute C alone, or as planned runs of N parameters trained on D tokens ("my 7B on 4T
tokens"). A planned run's compute is C = r(N) 6 N D, r the file's own FLOPs convention (FLOPs / (6 N D) of its
selected runs, log-linear in N; :class:`FlopsConvention`) or the caller's (``--flops-per-6nd``); its TPR = D / N.
A law of N and D is given N and D; a law of compute alone is given C, and the output says that it ignores the
allocation (:meth:`PlannedRuns.covariates`).

Every target is placed here, once per forecast, as one :class:`Placement` (:func:`place`) that ``Ensemble.predict``,
the flags and the widening read: what each member is given, the distances — decades of compute beyond the largest
fitted run, outside the fitted compute range either way (:func:`outside_decades`, what the interval widens with),
outside the fitted runs' TPR range (:func:`tpr_decades`) — and where each target sits (at a fitted run, below the
data, between the runs). :mod:`benchcast.forecasting.flags` owns every word said about them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from benchcast.data.table import TPR_RTOL, at_tpr, runs, within_compute
from benchcast.errors import BenchcastError
from benchcast.laws.questions import spans_tprs
from benchcast.validation import check_positive

SIX_ND = "C = 6 N D"  # a planned run's compute where no other convention is given


@dataclass(frozen=True)
class PlannedRuns:
    """Runs to forecast, with what is known of each: its compute, and N and D where known."""

    flops: np.ndarray
    params: np.ndarray
    tokens: np.ndarray
    sized: np.ndarray
    convention: str = ""
    rule: FlopsConvention | None = field(default=None, compare=False)  # what placed them: a curve is placed alike

    @property
    def tpr(self) -> np.ndarray:
        """Tokens per parameter D / N of each run (nan where unknown)."""
        return self.tokens / self.params

    @property
    def by_size(self) -> bool:
        """Whether some run was given by its parameters and tokens."""
        return bool(self.sized.any())

    def __len__(self) -> int:
        return len(self.flops)

    def take(self, which) -> PlannedRuns:
        """Some of the runs."""
        index = np.atleast_1d(np.arange(len(self))[which])
        return PlannedRuns(
            self.flops[index], self.params[index], self.tokens[index], self.sized[index], self.convention, self.rule
        )

    def by_compute(self) -> PlannedRuns:
        """The runs ordered by compute (a stable order: runs of equal compute keep theirs)."""
        return self.take(np.argsort(self.flops, kind="stable"))

    def join(self, other: PlannedRuns) -> PlannedRuns:
        """These runs, then ``other``'s."""
        fields = ("flops", "params", "tokens", "sized")
        convention = self.convention or other.convention
        rule = self.rule or other.rule
        return PlannedRuns(*(np.concatenate([getattr(self, f), getattr(other, f)]) for f in fields), convention, rule)

    def record(self, i: int) -> dict:
        """Run ``i`` as outputs show it: its run values, ``given`` and ``flops_convention``."""
        values = {"flops": self.flops[i], "params": self.params[i], "tokens": self.tokens[i], "tpr": self.tpr[i]}
        out = {name: float(v) if np.isfinite(v) else None for name, v in values.items()}
        placed = {"flops_convention": self.convention or SIX_ND} if self.sized[i] else {}
        return {**out, "given": "params_tokens" if self.sized[i] else "flops", **placed}

    def covariates(self, fitted, extra: dict) -> tuple[dict, str]:
        """What a fitted law is given for these runs and ``extra`` (``k``, ``gold``), and in words."""
        law = fitted.law
        extra = {name: value for name, value in extra.items() if name in law.covariates}
        k = 1.0 if "k" in extra else None  # each run's own k: extra's
        if not ({"flops", "params", "tokens"} & set(law.covariates)) or not np.isfinite(self.flops).all():
            return dict(extra), ", ".join(sorted(extra))
        if {"params", "tokens"} <= set(law.covariates):
            if not np.all(np.isfinite(self.params)):
                raise BenchcastError(
                    f"law {law.name!r} is a function of parameters and tokens: give the planned run as its parameters "
                    "and tokens (params=, tokens=; --params N --tokens D), or a tokens-per-parameter ratio (tpr) "
                    "splitting its compute C = 6 N D."
                )
            # the law's own k (where it has one) from covariates_at; N and D as given (or as the TPR split C)
            X = fitted.covariates_at(self.flops, tpr=1.0, k=k)
            X["params"], X["tokens"] = self.params.copy(), self.tokens.copy()
            split = "" if self.sized.all() else f"C split at TPR {self.tpr[~self.sized][0]:g}"
            return {**X, **extra}, f"N, D ({'given, or ' if self.by_size else ''}{split})" if split else "N, D"
        X, words = fitted.covariates_at(self.flops, k=k), "C"
        if "flops" in law.covariates and self.by_size:
            six_nd = not self.convention or self.convention.startswith(SIX_ND)
            words = f"C = {'6ND' if six_nd else 'r 6ND, the FLOPs convention'} (ignores tokens per parameter)"
        return {**X, **extra}, words


def fitted_tpr_range(results) -> tuple[float, float]:
    """The smallest and largest TPR (D / N) among the runs some laws were fitted to."""
    values = [
        (r.points["tokens"] / r.points["params"]).to_numpy(float)
        for r in results
        if {"params", "tokens"} <= set(r.points.columns)
    ]
    values = np.concatenate(values) if values else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    return (float(values.min()), float(values.max())) if len(values) else (np.nan, np.nan)


def describe_run(record: dict) -> str:
    """A run in words: ``'7e+09 parameters on 4e+12 tokens (C = ..., TPR 571)'`` or ``'1e+23 FLOPs'``."""
    if record.get("given") == "params_tokens":
        return (
            f"{record['params']:.3g} parameters on {record['tokens']:.3g} tokens "
            f"(C = {record['flops']:.3g} FLOPs, TPR {record['tpr']:.3g})"
        )
    return f"{record['flops']:.3g} FLOPs"


def planned_runs(
    flops=None, params=None, tokens=None, *, tpr: float | None = None, convention: FlopsConvention | None = None
) -> PlannedRuns:
    """Runs to forecast by compute (``flops``) or N and D, placed by one FLOPs convention."""
    tpr = check_positive("tpr", tpr)
    has_size = params is not None or tokens is not None
    if flops is not None and has_size:
        raise BenchcastError(
            "give the runs to forecast either by their compute (flops; --flops C) or by their parameters and tokens "
            "(params and tokens; --params N --tokens D, compute C = 6 N D), not both."
        )
    if has_size and (params is None or tokens is None):
        given, missing = ("params", "tokens") if tokens is None else ("tokens", "params")
        raise BenchcastError(
            f"a planned run given by its size needs both its parameters and its tokens: {given} was given without "
            f"{missing} (--params N --tokens D, e.g. --params 7e9 --tokens 4e12)."
        )
    if flops is None and not has_size:
        raise BenchcastError("give the runs to forecast: their compute (flops; --flops C), or params and tokens.")
    arrays = {"flops": flops} if flops is not None else {"params": params, "tokens": tokens}
    arrays = {name: np.atleast_1d(np.asarray(value, float)).ravel() for name, value in arrays.items()}
    for name, values in arrays.items():
        if not len(values) or not np.all(np.isfinite(values) & (values > 0)):
            raise BenchcastError(f"{name} must be positive and finite, got {values.tolist()!r}.")
    convention = convention or FlopsConvention()
    if flops is None:
        n, d = arrays["params"], arrays["tokens"]
        if len(n) != len(d):
            raise BenchcastError(
                f"give one tokens value per params value (paired in order): got {len(n)} params and {len(d)} tokens."
            )
        return PlannedRuns(convention.flops(n, d), n, d, np.ones(len(n), bool), convention.at(n), convention)
    c = arrays["flops"]
    if tpr is None:
        return PlannedRuns(c, np.full(len(c), np.nan), np.full(len(c), np.nan), np.zeros(len(c), bool))
    n = convention.split(c, tpr)  # 6 N D: as FittedLaw.covariates_at splits C
    return PlannedRuns(c, n, tpr * n, np.zeros(len(c), bool), rule=convention)


def fitted_k_max(result) -> float:
    """The largest k a fit of a law of k saw (NaN for a law without k as a covariate)."""
    if "k" not in result.law_object.covariates or "k" not in result.points:
        return math.nan
    return float(np.nanmax(result.points["k"].to_numpy(float)))


BELOW_TOLERANCE = 0.01  # decades: a point within 2 % of the smallest run's compute is at it (rounded sizes)


def outside_decades(flops, flops_min: float, flops_max: float) -> np.ndarray:
    """Each point's decades outside the fitted compute range, above it (negative inside) or below."""
    flops = np.atleast_1d(np.asarray(flops, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        above = np.log10(flops / flops_max)
        below = np.log10(flops_min / flops) if math.isfinite(flops_min) else np.full(len(flops), -np.inf)
    return np.where(below > BELOW_TOLERANCE, below, above)


CONVENTION_RTOL = 1e-3  # FLOPs within this of 6 N D are 6 N D (rounding of sizes written to a file)


@dataclass(frozen=True)
class FlopsConvention:
    """How a file's FLOPs relate to its runs' 6 N D: FLOPs / (6 N D) = r(N) = exp(a + b ln N)."""

    log_ratio: float = 0.0  # a
    slope: float = 0.0  # b, per ln N
    words: str = SIX_ND
    params_range: tuple = (math.nan, math.nan)  # the sizes it was fitted on

    def ratio(self, params) -> np.ndarray:
        """r(N) at each N."""
        return np.exp(self.log_ratio + self.slope * np.log(np.asarray(params, float)))

    def flops(self, params, tokens) -> np.ndarray:
        """C = r(N) 6 N D."""
        params = np.asarray(params, float)
        return self.ratio(params) * 6.0 * params * np.asarray(tokens, float)

    def split(self, flops, tpr: float) -> np.ndarray:
        """N of a run of compute C at tokens per parameter T: C = exp(a) N^b 6 T N^2 solved for N."""
        return (np.asarray(flops, float) / (6.0 * tpr * np.exp(self.log_ratio))) ** (1.0 / (2.0 + self.slope))

    def at(self, params) -> str:
        """The ratio at the planned runs' sizes, and how far they lie outside the fitted sizes, in words."""
        if not self.slope:
            return self.words
        params = np.atleast_1d(np.asarray(params, float))
        lo, hi = self.params_range
        beyond = np.maximum(np.log10(params / hi), np.log10(lo / params))
        # a trend extrapolated below 6 N D and below itself at every fitted size is no count of a run's FLOPs
        floor = min(1.0, *self.ratio(self.params_range)) * (1 - 1e-9)
        implausible = (
            " - below 6 N D and the trend at every fitted size, which no FLOPs count gives: --flops-per-6nd R sets it"
        )
        parts = [
            f"r = {r:.3g} at N = {n:.3g}"
            + (f" (extrapolated {d:.2f} decades in N)" if d > 0.005 else "")
            + (implausible if r < floor else "")
            for n, r, d in zip(params, self.ratio(params), beyond, strict=True)
        ]
        return f"{self.words}; {', '.join(dict.fromkeys(parts))}"


def flops_convention(table, *, tpr: float | None = None, min_flops=None, max_flops=None, given=None):
    """The file's :class:`FlopsConvention`, fitted on the selected runs, or ``given``."""
    if given is not None:
        return _given(given)
    by_run = runs(within_compute(table, min_flops, max_flops))
    if tpr is not None:
        by_run = by_run[at_tpr(by_run["tpr"], tpr)]
    return _measured(by_run, "the file's own convention", "selected runs")


def _given(given: float) -> FlopsConvention:
    ratio = check_positive("flops_per_6nd", given)
    return FlopsConvention(math.log(ratio), 0.0, f"C = {ratio:.4g} x 6 N D (given: --flops-per-6nd)")


def _measured(frame, whose: str, what: str) -> FlopsConvention:
    """FLOPs / (6 N D) of a frame's runs as a log-linear trend in N (one ratio where it can)."""
    frame = frame.drop_duplicates("run") if "run" in frame else frame
    n = frame["params"].to_numpy(float)
    ratios = (frame["flops"] / (6.0 * frame["params"] * frame["tokens"])).to_numpy(float)
    ok = np.isfinite(ratios) & (ratios > 0) & np.isfinite(n) & (n > 0)
    ratios, n = ratios[ok], n[ok]
    if not len(ratios) or np.allclose(ratios, 1.0, rtol=CONVENTION_RTOL, atol=0.0):
        return FlopsConvention(words=f"{SIX_ND} (the {what}' FLOPs are 6 N D)")
    sizes = (float(n.min()), float(n.max()))
    if np.unique(np.round(np.log(n), 6)).size < 2 or np.allclose(ratios, ratios[0], rtol=CONVENTION_RTOL, atol=0.0):
        ratio = float(np.median(ratios))
        words = f"C = {ratio:.4g} x 6 N D: {whose}, the FLOPs / (6 N D) of its {len(ratios)} {what}"
        return FlopsConvention(math.log(ratio), 0.0, words + " (--flops-per-6nd R gives another)", sizes)
    slope, log_ratio = np.polyfit(np.log(n), np.log(ratios), 1)
    trend = FlopsConvention(float(log_ratio), float(slope), "", sizes)
    lo, hi = trend.ratio([sizes[0], sizes[1]])
    words = (
        f"C = r(N) x 6 N D: {whose}, FLOPs / (6 N D) log-linear in N over its {len(ratios)} {what} "
        f"(r = {lo:.3g} at N = {sizes[0]:.3g} .. {hi:.3g} at {sizes[1]:.3g}; --flops-per-6nd R gives one ratio)"
    )
    return FlopsConvention(float(log_ratio), float(slope), words, sizes)


def _fit_convention(result, given: float | None = None) -> FlopsConvention:
    """The FLOPs convention of a fit's points, as :func:`flops_convention` measures a table's."""
    if given is not None:
        return _given(given)
    points = result.points.drop_duplicates("run")
    if not {"params", "tokens"} <= set(points.columns):
        return FlopsConvention()
    return _measured(points, "the fit's runs' convention", "fitted runs")


def placed_query(result, covariates: dict, given: float | None = None) -> tuple[dict, FlopsConvention | None]:
    """A forecast's query as the law is given it: a planned run placed at the fit's convention."""
    sized = covariates.get("params") is not None and covariates.get("tokens") is not None
    if not sized or covariates.get("flops") is not None:
        if given is not None:
            raise BenchcastError(_NOT_PLANNED)
        return covariates, None
    convention = _fit_convention(result, given)
    if "flops" not in result.law_object.covariates:
        return covariates, convention
    placed = {name: value for name, value in covariates.items() if name not in ("params", "tokens")}
    placed["flops"] = convention.flops(covariates["params"], covariates["tokens"])
    return placed, convention


_NOT_PLANNED = (
    "--flops-per-6nd (flops_per_6nd) places a planned run given by its size (--params N --tokens D) at C = r 6 N D; "
    "a run given by its compute has no N and D to place: drop it, or give the run as --params N --tokens D."
)


def table_runs(
    table, flops=None, params=None, tokens=None, *, tpr=None, min_flops=None, max_flops=None, given=None
) -> PlannedRuns:
    """The runs to forecast from a table: as :func:`planned_runs`, at the file's own FLOPs convention."""
    sized = params is not None or tokens is not None
    if given is not None and not sized:
        raise BenchcastError(_NOT_PLANNED)
    selection = {"tpr": tpr, "min_flops": min_flops, "max_flops": max_flops}
    convention = flops_convention(table, **selection, given=given) if sized or tpr is not None else None
    return planned_runs(flops, params, tokens, tpr=None if sized else tpr, convention=convention)


def tpr_decades(tpr, fitted_tpr) -> np.ndarray:
    """Each point's distance outside the fitted runs' tokens-per-parameter range, in decades of TPR."""
    tpr = np.atleast_1d(np.asarray(tpr, float))
    lo, hi = (float(v) for v in fitted_tpr)
    out = np.zeros(len(tpr))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        # the data's TPRs are ratios of rounded sizes: within TPR_RTOL of the range is in it (one ratio group)
        above, below = tpr > hi * (1 + TPR_RTOL), tpr < lo / (1 + TPR_RTOL)
        out[above] = np.log10(tpr[above] / hi)
        out[below] = np.log10(lo / tpr[below])
    return out


def as_runs(runs, tpr: float | None = None) -> PlannedRuns:
    """``runs`` as PlannedRuns: compute given as an array is placed at ``tpr`` (where given)."""
    if isinstance(runs, PlannedRuns):
        if tpr is not None:
            raise BenchcastError("planned runs carry their own N and D: give tpr to planned_runs, not here.")
        return runs
    return planned_runs(flops=runs, tpr=tpr)


AT_FITTED_RUN, BELOW_DATA, INTERPOLATION = "at a fitted run", "below the data", "interpolation"  # where a target sits
SAME_RUN_RTOL = 0.01  # a target within 1 % of a fitted run's compute (or of its N, at its TPR) is that run
NEAR_TPR_DECADES = 0.5  # the fitted runs within this of a target's compute stand for it in a law of compute alone


@dataclass(frozen=True)
class Placement:
    """Where a forecast's targets sit among the runs its laws were fitted to: made once per forecast (:func:`place`),
    read by the prediction (each member's ``covariates``, ``given``: in words), the flags and the widening.

    Each distance is in decades, one per run: ``compute_beyond`` = log10(C / the largest fitted run) (negative inside:
    the forecast's ``decades``, what "far beyond" reads), ``compute_outside`` outside the fitted compute range above
    or below it (:func:`outside_decades`, what the interval widens with), ``tpr_outside`` outside the fitted TPR range
    (:func:`tpr_decades`, the widening along TPR). ``kind``: ``AT_FITTED_RUN`` (``run``: its name and compute),
    ``BELOW_DATA``, ``INTERPOLATION`` (inside the fitted compute and TPR), or '' (an extrapolation). ``tpr_near``:
    on a ladder whose TPR goes with its size (Pythia), per run the (lowest, highest) TPR of the fitted runs within
    ``NEAR_TPR_DECADES`` of its compute (of the largest run's, beyond them) and that compute, which a law of compute
    alone reads the run at; None elsewhere (one TPR, TPRs varying at a size, or no TPR given)."""

    runs: PlannedRuns
    flops_range: tuple[float, float]
    tpr_range: tuple[float, float]
    compute_beyond: np.ndarray
    compute_outside: np.ndarray
    tpr_outside: np.ndarray
    kind: tuple[str, ...]
    run: tuple
    covariates: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)
    tpr_near: tuple = ()


def _tpr_near(points, runs: PlannedRuns) -> tuple:
    """Per run, the TPR span of the fitted runs near its compute and that compute, where TPR goes with size."""
    if points is None or not {"params", "tokens", "flops"} <= set(points.columns) or spans_tprs(points):
        return (None,) * len(runs)  # one TPR (the range says it), or TPRs varying at a size (flagged across TPRs)
    flops = points["flops"].to_numpy(float)
    tpr = (points["tokens"] / points["params"]).to_numpy(float)
    out = []
    for c, value in zip(runs.flops, runs.tpr, strict=True):
        reference = min(float(c), float(flops.max())) if np.isfinite(c) and c > 0 else math.nan
        close = np.abs(np.log10(flops / reference)) <= NEAR_TPR_DECADES
        ok = np.isfinite(value) and value > 0 and close.any()  # far below the runs: flagged as below them
        out.append((float(tpr[close].min()), float(tpr[close].max()), reference) if ok else None)
    return tuple(out)


def place(runs: PlannedRuns, fits: Mapping, extra: dict | None = None) -> Placement:
    """``runs`` placed among the runs ``fits`` were fitted to: the one place distances are computed."""
    shown = [fit.points for fit in fits.values() if fit is not None and len(fit.points)]
    points = pd.concat(shown, ignore_index=True) if shown else None
    if points is not None:
        lo, hi = float(points["flops"].min()), float(points["flops"].max())
    else:  # a fit that kept no points (an artifact) still records its compute range
        lo = min(float(getattr(fit.diagnostics, "flops_min", math.nan)) for fit in fits.values())
        hi = max(float(fit.diagnostics.flops_max) for fit in fits.values())
    flops, tpr_range = runs.flops, fitted_tpr_range(fits.values())
    tpr_outside = tpr_decades(runs.tpr, tpr_range)
    with np.errstate(divide="ignore", invalid="ignore"):
        beyond, below = np.log10(flops / hi), np.log10(lo / flops) > BELOW_TOLERANCE
    kind, run = _kinds(points, runs, below, flops <= hi, tpr_outside == 0)
    out = Placement(runs, (lo, hi), tpr_range, beyond, outside_decades(flops, lo, hi), tpr_outside, kind, run)
    out = replace(out, tpr_near=_tpr_near(points, runs))
    if extra is None:
        return out
    placed = {law: runs.covariates(fit.fitted, extra) for law, fit in fits.items()}
    covariates, given = ({law: v[i] for law, v in placed.items()} for i in (0, 1))
    return replace(out, covariates=covariates, given=given)


def _kinds(points, runs: PlannedRuns, below, inside, inside_tpr) -> tuple[tuple, tuple]:
    """Per run, where it sits (``AT_FITTED_RUN``, ``BELOW_DATA``, ``INTERPOLATION`` or '') and the fitted run it is."""
    if points is None:
        return ("",) * len(runs), (None,) * len(runs)
    names, fitted = points["run"].astype(str).to_numpy(), points["flops"].to_numpy(float)
    sized = points if {"params", "tokens"} <= set(points) else pd.DataFrame({"params": np.nan, "tokens": np.nan}, names)
    fitted_tpr, fitted_n = (sized["tokens"] / sized["params"]).to_numpy(float), sized["params"].to_numpy(float)
    kind, run = [], []
    for c, t, n, low, within, in_tpr in zip(runs.flops, runs.tpr, runs.params, below, inside, inside_tpr, strict=True):
        same = np.isclose(fitted, c, rtol=SAME_RUN_RTOL, atol=0.0)
        if np.isfinite(t):  # a run of the same compute at another TPR is another run
            same &= ~np.isfinite(fitted_tpr) | np.isclose(fitted_tpr, t, rtol=TPR_RTOL)
            if np.isfinite(n):  # the same N and D is the same run, whatever FLOPs each was counted at
                same |= np.isclose(fitted_n, n, rtol=SAME_RUN_RTOL) & np.isclose(fitted_tpr, t, rtol=TPR_RTOL)
        found = (str(names[same][0]), float(fitted[same][0])) if same.any() else None
        run.append(found)
        kind.append(AT_FITTED_RUN if found else BELOW_DATA if low else INTERPOLATION if within and in_tpr else "")
    return tuple(kind), tuple(run)


def frame_runs(frame: pd.DataFrame) -> tuple[PlannedRuns, dict]:
    """Rows of a table (held-out runs) as runs to forecast, and their other covariates (``k``, ``gold``)."""
    size = len(frame)
    missing = np.full(size, np.nan)
    flops = frame["flops"].to_numpy(float)
    params = frame["params"].to_numpy(float) if "params" in frame else missing
    tokens = frame["tokens"].to_numpy(float) if "tokens" in frame else missing
    runs = PlannedRuns(flops, params, tokens, np.isfinite(params) & np.isfinite(tokens))
    extra = {name: frame[name].to_numpy(float) for name in ("k", "gold") if name in frame}
    return runs, extra
