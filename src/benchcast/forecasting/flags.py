"""The one place that decides which forecasts are refused (no number, the reason instead) and which are
flagged (the number, with what should make a reader doubt it). Every output that shows a forecast
(``predict``, ``forecast``, ``recommend``, ``backtest``, ``cutoff``, ``report``, ``bench``) asks these
rules; intervals are kept within [0, 1] (:func:`benchcast.forecasting.draws.score_interval`).

Refused, because a wrong number is worse than an error: a forecast outside [0, 1] (a score cannot be
there; a strategy that averages such a member's number in is refused with it), and so the 0 or 1 a law
that clips its forecasts (``Law.clip_scores``: the two-stage laws) gives in place of one; and a law of k's forecast
where the fitted law has pass@k fall as k grows (``Law.k_slope`` above 0: more attempts never solve fewer problems).

Flagged, because the number may be right but rests on less than it seems:

* a forecast above the law's own limit (:meth:`~benchcast.laws.questions.LawQuestions.limit`: the score
  the fitted law itself says it tends to): the curve overshoots its asymptote and falls back, which no
  training run does; the number is a score all the same (on DCLM the overshoot is often in the fourth
  decimal), so it is shown with the flag;
* a fit whose chance filter left out more than a third of the runs (the rest may not show the trend);
* a ladder whose largest runs (the top third by compute, at least ``NO_RISE_RUNS``) all score within chance +
  ``DEFAULT_MARGIN``: the data show no rise, so a forecast past them carries chance forward, whatever the target's
  scale would bring (:func:`fit_flags`);
* a fit with fewer than ``MIN_POINTS_PER_PARAMETER`` distinct points per free parameter (the rule of the fit's own
  note too, :func:`benchcast.fitting.diagnostics.few_points`; a fit with no more points than parameters is already
  refused by the fit itself);
* a parameter at a search limit (the data did not place it; an active constraint of the law, its own
  bound reached by the data, is information, not a flag: :func:`benchcast.fitting.diagnostics.bound_findings`);
* a forecast over ``MAX_DECADES_BEYOND`` decades beyond the largest fitted run, beyond the fitted k, across TPRs;
* an interval from few bootstrap replicates: more than ``MAX_FAILED_SHARE`` of the ``n_boot`` replicates asked for
  are missing from the draws it is read from (refits failed or did not converge; :func:`refit_flags`);
* a forecast that is no extrapolation: at a fitted run (the answer was fitted), below the smallest fitted run,
  or inside the fitted runs' compute and TPR (an interpolation; :func:`placement_flags`);
* an uninformative interval (:func:`uninformative`): a 90 % interval spanning more than ``UNINFORMATIVE_SHARE`` of
  the range from chance to 1, with the error term that makes it so; a plan's compute interval with an end more than
  ``PLAN_DECADES`` from its point (or none), with the one-sided answer it can give (:func:`plan_interval_flags`).
* a recipe's forecast from a joint fit (``compare``'s shared shape) that rests on runs of one size: its slope is
  the other recipes' (:func:`shared_shape_flags`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd

from benchcast.data.chance import DEFAULT_MARGIN
from benchcast.data.table import ROUNDING, TPR_RTOL
from benchcast.errors import BenchcastError
from benchcast.fitting.diagnostics import MIN_POINTS_PER_PARAMETER, few_points
from benchcast.forecasting.targets import (
    AT_FITTED_RUN,
    BELOW_DATA,
    BELOW_TOLERANCE,
    INTERPOLATION,
    NEAR_TPR_DECADES,
    Placement,
    PlannedRuns,
    fitted_k_max,
    place,
)

OUTSIDE_RANGE = "outside [0, 1]"
ABOVE_LIMIT = "above the law's limit"
FEW_POINTS = "few points per parameter"
SEARCH_LIMIT = "at search limit"
FAR_BEYOND = "far beyond the data"
OUTSIDE_TPR = "outside the fitted TPR"
NEAR_CHANCE = "near-chance runs dropped"
NO_RISE = "no rise above chance"
BORROWED_SLOPE = "slope borrowed"
BEYOND_K, ACROSS_TPRS = "beyond the fitted k", "across TPRs"
FALLS_WITH_K, ACROSS_K = "falls as k grows", "falls across k"
SKEWED = "outside its 50 % interval"
UNINFORMATIVE = "uninformative"
FEW_REPLICATES = "few bootstrap replicates"

# chosen on DCLM's cutoff backtests (TPR 20, 12 benchmarks, fit 3e18..cutoff, forecast the 3.8e22 run;
# 1245 cutoffs of power, power_floor and bnsl_monotone): median MRE (%) by decades beyond the largest run
#   decades        0-0.5  0.5-1  1-1.5  1.5-2  2-2.5  2.5-3
#   bnsl_monotone   1.0    4.0    4.7    7.2   20.9   35.3
#   power_floor     1.8    3.0    5.6    5.6    6.2    5.3   (90th percentile 10.2 at 0.5-1, 21.8 at 1.5-2)
# past 1.5 decades the default's members err 2-3 times as much as within one decade, and bnsl_monotone's
# error then explodes; the rolling origins that calibrate the intervals reach 1 decade
# (extrapolation.ORIGIN_DECADES), so beyond 1.5 the interval's growth is itself extrapolated by half again
MAX_DECADES_BEYOND = 1.5
NEAR_CHANCE_SHARE = 3  # flagged where the chance filter leaves out more than a third of the runs (issue #40)
# the largest runs a ladder must lift above chance + DEFAULT_MARGIN (the top third by compute, at least this many),
# read from the runs a fit kept: on the shared ladders it marks C4's GSM8K and MMLU at TPR 20 (bnsl_monotone, which
# keeps runs near chance) and no DCLM task; a law that filters at chance + 0.05 drops such runs and is flagged or
# refused for that instead (NEAR_CHANCE, too few points), as C4's code tasks and Pythia's LogiQA and WSC are
NO_RISE_RUNS = 3
# a law of compute alone on a ladder whose TPR goes with size reads the target at the ratio of the fitted runs near
# its compute (Placement.tpr_near): flagged where the target's own lies more than a factor 2 from theirs
TPR_FACTOR_DECADES = math.log10(2.0)
MAX_FAILED_SHARE = 0.25  # an interval with more than a quarter of its refits failed rests on too few replicates
LIMIT_TOLERANCE = 1e-6  # a forecast equal to the limit up to rounding is at it, not above it
# a 90 % interval wider than half the range from chance to 1 cannot tell a strong model from a weak one: on the
# development splits (benchmarks/error_model_coverage.md) the default's widest are 0.06-0.26 in score, under half of
# their range but on 2 of Pythia's 32 cells (PIQA, chance 0.5, width 0.248); the lab ladder of issue 50 gave 0 .. 1
UNINFORMATIVE_LEVEL = 0.9
UNINFORMATIVE_SHARE = 0.5
PLAN_DECADES = 1.0  # a plan's compute interval informs where both ends lie within a decade of its point


@dataclass(frozen=True)
class Flag:
    """One reason to refuse or doubt a forecast."""

    kind: str
    reason: str
    refuses: bool

    def __str__(self) -> str:
        return f"{'refused' if self.refuses else 'flagged'}: {self.reason}"

    def to_dict(self) -> dict:
        """The flag as JSON-ready values: ``kind``, ``reason``, ``refused``."""
        return {"kind": self.kind, "reason": self.reason, "refused": self.refuses}


def _no_rise(result) -> str:
    """Why the fitted runs show no rise to extrapolate ('' where the largest lift above chance + the margin)."""
    points = result.points
    if not len(points) or not {"run", "flops", "value"} <= set(points.columns):
        return ""  # an artifact saved without its points: nothing to judge
    # a run's best score (a law of k has a row per k): the largest runs by compute, not its rows
    by_run = points.groupby("run").agg(flops=("flops", "max"), value=("value", "max")).sort_values("flops")
    values = by_run["value"].to_numpy(float)
    top = values[-max(NO_RISE_RUNS, len(values) // 3) :]
    ceiling = float(result.spec.q_rand) + DEFAULT_MARGIN
    if len(values) < NO_RISE_RUNS or not np.all(top <= ceiling):
        return ""
    return (
        f"{result.law}: the {len(top)} largest fitted runs all score within chance + {DEFAULT_MARGIN:g} (at most "
        f"{ceiling:.3g}; best {np.max(values):.3g}): the data show no rise, so a forecast past them only carries "
        "chance forward"
    )


def fit_flags(result) -> tuple[Flag, ...]:
    """The flags a fit gives every forecast from it: few points, near-chance drops, TPRs, search limits."""
    law, d = result.law_object, result.diagnostics
    free, n_used = law.n_free, int(d.n_used)
    # replicate runs of one N and D are one point: the data identify the law by distinct points, not rows (an
    # artifact that recorded neither the count nor its points says only its rows)
    distinct = n_used if d.n_distinct is None else d.n_distinct
    out = []
    if few_points(free, distinct):
        why = f"fewer than {MIN_POINTS_PER_PARAMETER:g} per parameter): the data barely identify it"
        at = "" if distinct == n_used else f" at {distinct} distinct values"
        out.append((FEW_POINTS, f"{result.law} fits {free} parameters to {n_used} points{at} ({why}"))
    near = {why: n for why, n in d.dropped_reasons.items() if "chance" in why}
    if sum(near.values()) * NEAR_CHANCE_SHARE > d.n_used + d.n_dropped:  # a fit on what is left of the ladder
        reasons = ", ".join(f"{why}: {n}" for why, n in near.items())
        rows = "points (a run's every k)" if "k" in law.covariates else "runs"  # a law of k has a row per (run, k)
        left = f"left out {sum(near.values())} of {d.n_used + d.n_dropped} {rows} ({reasons}); --margin sets its margin"
        out.append((NEAR_CHANCE, f"{result.law}: the chance filter {left}"))
    if flat := _no_rise(result):
        out.append((NO_RISE, flat))
    if across := law.across_tprs(result.points):
        out.append((ACROSS_TPRS, across))
    if limits := result.bounds.at_search_limit:
        place = f"(the data do not place {'it' if len(limits) == 1 else 'them'})"
        out.append((SEARCH_LIMIT, f"{result.law}: {', '.join(limits)} at a search limit {place}"))
    return flagged(out)


def value_flags(law: str, value: float, limit: float | None = None, meaning: str = "") -> tuple[Flag, ...]:
    """The flags one forecast value earns: refused outside [0, 1], flagged above the law's own limit."""
    if math.isnan(value):  # no forecast: nothing to refuse (an infinite one is outside [0, 1] below)
        return ()
    if not 0.0 <= value <= 1.0:
        return (Flag(OUTSIDE_RANGE, f"{law} forecasts {value:.4g}, outside [0, 1]: not a score", True),)
    if limit is not None and math.isfinite(limit) and value > limit + LIMIT_TOLERANCE:
        why = f"above its own limit {limit:.4g} ({meaning}): the fitted curve falls back after this point"
        return flagged([(ABOVE_LIMIT, f"{law} forecasts {value:.4g}, {why}")])
    return ()


def flagged(pairs) -> tuple[Flag, ...]:
    """Flags (not refusals) from the ``(kind, reason)`` pairs of a rule of :mod:`benchcast.forecasting.targets`."""
    return tuple(Flag(kind, reason, False) for kind, reason in pairs)


def distance_flags(decades: float, flops_max: float) -> tuple[Flag, ...]:
    """The flag of a forecast far beyond the fitted runs."""
    if not math.isfinite(decades) or decades <= MAX_DECADES_BEYOND:
        return ()
    words = f"beyond the largest fitted run ({flops_max:.3g} FLOPs; more than {MAX_DECADES_BEYOND:g})"
    return flagged([(FAR_BEYOND, f"{decades:.2f} decades of compute {words}")])


def _limit(result) -> tuple[float | None, str]:
    """The fitted law's limit in compute (at the fit's k for a law with k); None where it states none."""
    k = result.fitted.fixed.get("k", result.spec.k)
    try:
        return result.law_object.limit(result.theta, result.spec.q_rand, k=k)
    except (BenchcastError, TypeError):  # a law that states no limit (or none without a k) bounds nothing
        return None, ""


def _clipped(law: str, value: float) -> tuple[Flag, ...]:
    """A clipping law's exact 0 or 1 is a clipped forecast outside [0, 1]: refused."""
    if value not in (0.0, 1.0):
        return ()
    return (Flag(OUTSIDE_RANGE, f"{law} forecasts outside [0, 1] (clipped to {value:g}): not a score", True),)


def ensemble_flags(fits: Mapping, predicted: Mapping, blend, placement: Placement, k=None) -> list[tuple[Flag, ...]]:
    """Every flag of an ensemble's forecasts, one tuple per point: members', blend's, placement's, k's."""
    blend = np.atleast_1d(np.asarray(blend, float))
    per_point: list[list[Flag]] = [[] for _ in blend]
    for law, fit in fits.items():
        limit, meaning = _limit(fit)
        common, clips = fit_flags(fit), bool(getattr(fit.law_object, "clip_scores", False))
        values = np.atleast_1d(np.asarray(predicted[law], float))
        at = placement.covariates.get(law, {}).get("flops", placement.runs.flops)  # what the member was given
        falls = falls_with_k(fit, np.broadcast_to(np.asarray(at, float), values.shape))
        for point, value, fall in zip(per_point, values, falls, strict=True):
            own = value_flags(fit.law, float(value), limit, meaning) or (_clipped(fit.law, value) if clips else ())
            point.extend(_ordered((*fall, *own, *common)))
    top = placement.flops_range[1]
    where, beyond_tpr = placement_flags(placement), target_flags(placement, fits)
    for i, point in enumerate(per_point):
        if len(fits) > 1 and not refused(point):  # a refused member already says why
            point.extend(value_flags("the blend", float(blend[i])))
        point.extend((*distance_flags(float(placement.compute_beyond[i]), top), *where[i]))
        if beyond_tpr[i]:  # a TPR outside the fitted runs': one flag among the others, not a second list
            point.append(Flag(OUTSIDE_TPR, beyond_tpr[i], False))
    if k is not None:  # a law of k asked beyond the k it was fitted at
        k_max = max(fitted_k_max(fit) for fit in fits.values())
        for point, value in zip(per_point, np.broadcast_to(np.asarray(k, float), blend.shape), strict=True):
            point.extend(flagged(beyond_k(value, k_max)))
    return [_ordered(point) for point in per_point]


def falls_with_k(fit, flops) -> list[tuple[Flag, ...]]:
    """Per compute, the refusal of a law of k whose own slope in log k there has pass@k fall as k grows."""
    flops = np.atleast_1d(np.asarray(flops, float)).ravel()
    slope_of = getattr(fit.law_object, "k_slope", None)
    if slope_of is None:
        return [()] * len(flops)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.broadcast_to(
            np.asarray(slope_of(np.asarray(fit.theta, float), {"flops": flops}), float), flops.shape
        )
    words = "more attempts never solve fewer problems, so the fitted law does not hold there"
    return [
        (
            Flag(
                FALLS_WITH_K,
                f"{fit.law} has pass@k fall as k grows at {c:.3g} FLOPs (its slope in log k there is "
                f"{s:.3g}, above 0): {words}",
                True,
            ),
        )
        if s > 0
        else ()
        for c, s in zip(flops, slope, strict=True)
    ]


def falls_across_k(ks, predictions, needed: bool = False) -> list[list[tuple[Flag, ...]]]:
    """Per k of ``ks`` (``predictions``: a row per k, a column per run), the flag of each run where a larger k's lies
    below a smaller k's; ``needed``: the values are plans' compute, flagged where a larger k's is above."""
    # each k is fitted on its own and pass@k cannot fall as k grows (nor its compute for a score rise): one of them is
    # off, and which one the answers cannot tell, so both are flagged (not refused)
    ks, values = np.asarray(ks, float), np.atleast_2d(np.asarray(predictions, float))
    with np.errstate(divide="ignore", invalid="ignore"):  # a compute is compared in log, within a thousandth
        rising = -np.log10(values) if needed else values
    tolerance = 1e-3 * np.log10(np.e) if needed else ROUNDING
    shown = "{:.4g} FLOPs" if needed else "{:.4g}"
    out: list[list[tuple[Flag, ...]]] = [[() for _ in range(values.shape[1])] for _ in ks]
    for point in range(values.shape[1]):
        pairs = [
            (a, b)
            for a in range(len(ks))
            for b in range(len(ks))
            if ks[a] < ks[b] and rising[b, point] < rising[a, point] - tolerance
        ]
        for row in {i for pair in pairs for i in pair}:
            said = "; ".join(
                f"pass@{ks[b]:g} {shown.format(values[b, point])} {'>' if needed else '<'} pass@{ks[a]:g} "
                + shown.format(values[a, point])
                for a, b in pairs
                if row in (a, b)
            )
            what = "compute needed for the score rises" if needed else "forecasts at this run fall"
            why = "more attempts cannot need more compute for a score" if needed else "pass@k cannot"
            words = f"the per-k {what} as k grows ({said}): {why}, so one of them is off"
            out[row][point] = (Flag(ACROSS_K, words, False),)
    return out


def _ordered(flags: Iterable[Flag]) -> tuple[Flag, ...]:
    unique = list(dict.fromkeys(flags))
    return tuple(sorted(unique, key=lambda f: not f.refuses))


def refused(flags: Iterable[Flag]) -> bool:
    """Whether any of ``flags`` refuses the forecast."""
    return any(f.refuses for f in flags)


def withhold(values, flags: list[tuple[Flag, ...]]) -> np.ndarray:
    """``values`` with NaN where the point's forecast is refused."""
    out = np.array(np.atleast_1d(values), float, copy=True)
    out[[refused(point) for point in flags]] = np.nan
    return out


def cell_flags(points: list[tuple[Flag, ...]], premise: tuple[str, ...] = ()) -> dict:
    """A bench cell's ``flagged``, ``flags`` and ``refused`` (and ``status`` where refused); a flag of the split's own
    ``premise`` (a held-out TPR lies outside the fitted ones by construction) is not counted, and listed as such."""
    texts = list(dict.fromkeys(describe(point, premise) for point in points if point))
    refusals = [f.reason for point in points for f in point if f.refuses]
    counted = any(f.kind not in premise for point in points for f in point)
    out = {"flagged": counted, "flags": "; ".join(texts), "refused": bool(refusals)}
    if refusals:
        out["status"] = f"refused: {refusals[0]}"
    return out


def describe(flags: Iterable[Flag], premise: tuple[str, ...] = ()) -> str:
    """The flags of one point as one cell of text (``''`` when there is none), a flag of a split's ``premise`` last,
    named as such."""
    flags = list(flags)
    given = [f"the split's premise, not a flag: {f.reason}" for f in flags if f.kind in premise]
    return "; ".join([str(f) for f in flags if f.kind not in premise] + given)


def short(flags: Iterable[Flag]) -> str:
    """The flags of one point as a table's short cell (``'refused: outside [0, 1]'``; '' when none)."""
    flags = list(flags)
    kinds = ", ".join(dict.fromkeys(f.kind for f in flags))
    if not flags:
        return ""
    return f"{'refused' if refused(flags) else 'flagged'}: {kinds}"


# -- where a point sits, in words (the distances are targets.py's) ------------------------------------------


def below_data(flops: float, flops_min: float) -> list[tuple[str, str]]:
    """The flag of a forecast below the smallest fitted run, with its distance in decades of compute."""
    if not (math.isfinite(flops) and math.isfinite(flops_min) and flops > 0 and flops_min > 0):
        return []
    below = math.log10(flops_min / flops)
    if below <= BELOW_TOLERANCE:
        return []
    return [
        (
            BELOW_DATA,
            f"{below:.2f} decades of compute below the smallest fitted run ({flops_min:.3g} FLOPs): the law was "
            "fitted above it and never checked going down; intervals there are widened by the error per decade "
            "measured upward",
        )
    ]


def beyond_k(k, k_max: float) -> list[tuple[str, str]]:
    """The flag of a forecast (or plan) at a k above the largest fitted k, with the factor beyond it."""
    if k is None or not (math.isfinite(float(k)) and math.isfinite(k_max) and k_max > 0):
        return []
    factor = float(k) / k_max
    if factor <= 1.0 + 1e-9:
        return []
    return [
        (
            BEYOND_K,
            f"k = {float(k):.4g} is {factor:.3g} times the largest fitted k ({k_max:g}): an extrapolation in k that no "
            "backtest measured, and that the interval does not widen for",
        )
    ]


def placement_flags(placement: Placement) -> list[tuple[Flag, ...]]:
    """Per point, its flag where it is no extrapolation: at a fitted run, below them, or between them."""
    lo, hi = placement.flops_range
    out = []
    for kind, run, c in zip(placement.kind, placement.run, placement.runs.flops, strict=True):
        if kind == AT_FITTED_RUN:
            where = f"the target is fitted run {run[0]!r} ({run[1]:.3g} FLOPs): the fit's own value there, not a "
            out.append(
                ((kind, where + "forecast (a fit below it leaves the run out: --max-flops, backtest's --threshold)"),)
            )
        elif kind == BELOW_DATA:
            out.append(tuple(below_data(float(c), lo)))
        elif kind == INTERPOLATION:
            words = f"inside the fitted runs ({lo:.3g} .. {hi:.3g} FLOPs): an interpolation, not a forecast (its "
            out.append(((kind, words + "interval is calibrated on extrapolations)"),))
        else:
            out.append(())
    return [flagged(pairs) for pairs in out]


def target_flags(placement: Placement, results: Mapping, joint: str = "") -> list[str]:
    """A flag per run whose TPR lies outside the fitted runs' ('' inside), naming the laws it affects."""
    compute_only = [joint] if joint else [law for law, r in results.items() if "flops" in r.law_object.covariates]
    in_size = [law for law, r in results.items() if {"params", "tokens"} <= set(r.law_object.covariates)]
    lo, hi = placement.tpr_range
    near = _tpr_near(placement, [law for law in compute_only if law in results])
    out = []
    for i, (value, outside) in enumerate(zip(placement.runs.tpr, placement.tpr_outside, strict=True)):
        if not outside > 0:
            out.append(near[i])
            continue
        span = f"{lo:.3g}" if np.isclose(lo, hi, rtol=TPR_RTOL) else f"{lo:.3g} .. {hi:.3g}"
        text = f"target TPR {value:.3g} lies outside the fitted runs' TPR ({span})"
        if compute_only:
            text += f"; {', '.join(compute_only)} (compute only) ignore(s) the allocation"
        if in_size:
            text += f"; {', '.join(in_size)} extrapolate(s) in TPR"
        out.append(text)
    return out


def _tpr_near(placement: Placement, compute_only: list[str]) -> list[str]:
    """Per target inside the fitted TPR range, why a law of compute alone misreads it ('' where it does not): the
    runs near its compute were trained at another ratio (``Placement.tpr_near``), and the law forecasts theirs."""
    out = [""] * len(placement.runs.flops)
    for i, (value, near) in enumerate(zip(placement.runs.tpr, placement.tpr_near, strict=True)):
        if near is None or not compute_only:
            continue
        a, b, reference = near
        gap = max(np.log10(value / b), np.log10(a / value))
        if gap > TPR_FACTOR_DECADES:
            span = f"{a:.3g}" if np.isclose(a, b, rtol=TPR_RTOL) else f"{a:.3g} .. {b:.3g}"
            laws = ", ".join(compute_only)
            out[i] = (
                f"target TPR {value:.3g} lies {10**gap:.3g}x from the TPR of the fitted runs nearest its compute "
                f"({span} within {NEAR_TPR_DECADES:g} decade of {reference:.3g} FLOPs): the ladder's TPR goes with its "
                f"size, so {laws} (compute only) forecast(s) a run at their ratio, not this allocation"
            )
    return out


def shared_shape_flags(runs: pd.DataFrame, flops: float, tpr=None, params=None) -> tuple[Flag, ...]:
    """The flags of a recipe's forecast from ``compare``'s joint fit, as a fit's own (and one size's)."""
    n = np.nan if params is None else float(params)
    target = PlannedRuns(
        np.array([flops], float), np.array([n]), np.array([n * (np.nan if tpr is None else tpr)]), np.zeros(1, bool)
    )
    placement = place(target, {"runs": SimpleNamespace(points=runs.reset_index(drop=True))})  # runs for a fit
    (where,) = placement_flags(placement)
    out = [*distance_flags(float(placement.compute_beyond[0]), placement.flops_range[1]), *where]
    (words,) = target_flags(placement, {}, "the shared shape")
    out += [Flag(OUTSIDE_TPR, words, False)] if words else []
    sizes = np.unique(np.round(np.log10(runs["flops"].to_numpy(float)), 3))
    if len(sizes) < 2:
        what = f"one run size ({len(runs)} run(s) at {10 ** sizes[0]:.3g} FLOPs)"
        own = "the other recipes (the shared shape's exponent); only the level is this recipe's own"
        out += flagged([(BORROWED_SLOPE, f"{what}: the slope is borrowed from {own}")])
    return _ordered(out)


def skewed(point: float, lower: float, upper: float, median: float) -> Flag:
    """A point outside its own 50 % interval (kept: benchmarks/point_or_median.md), with the median."""
    return Flag(
        SKEWED,
        f"the forecast {point:.4g} lies outside its own 50 % interval ({lower:.4g} .. {upper:.4g}): the bootstrap "
        f"is skewed; the draws' median is {median:.4g}",
        False,
    )


def uninformative(lower: float, upper: float, chance: float, terms: Mapping | None = None) -> Flag | None:
    """The flag of a 90 % interval wider than ``UNINFORMATIVE_SHARE`` of chance..1 (None: it informs)."""
    known = math.isfinite(float(chance))
    chance = float(chance) if known else 0.0
    span = 1.0 - min(max(chance, 0.0), 0.99)
    if not (math.isfinite(lower) and math.isfinite(upper)) or upper - lower <= UNINFORMATIVE_SHARE * span:
        return None
    ranked = sorted((terms or {}).items(), key=lambda item: -item[1][0])
    cause = "; ".join(f"{name} {words}" for name, (_, words) in ranked)
    extreme = " (it touches 0 and 1)" if lower <= 1e-6 and upper >= 1 - 1e-6 else ""
    share = (upper - lower) / span
    return Flag(
        UNINFORMATIVE,
        f"uninformative: the {UNINFORMATIVE_LEVEL * 100:g} % interval {lower:.3g} .. {upper:.3g} is "
        + ("wider than" if share >= 1 else f"{share * 100:.0f} % of")
        + f" the range from chance ({f'{chance:g}' if known else 'chance unknown, taken as 0'}) to 1"
        + f"{extreme}, more than {UNINFORMATIVE_SHARE * 100:g} %"
        + (f"; mostly the {ranked[0][0]} error (log-score spread: {cause})" if ranked else ""),
        False,
    )


def plan_interval_flags(needed: float, lower: float | None, upper: float | None, level: float) -> tuple[Flag, ...]:
    """The flag of a plan's compute interval with an end over ``PLAN_DECADES`` from its point."""
    if lower is None or upper is None or not (math.isfinite(needed) and needed > 0):
        return ()
    far = lambda end: not (math.isfinite(end) and end > 0 and abs(math.log10(end / needed)) <= PLAN_DECADES)  # noqa: E731
    low_far, up_far = far(lower), far(upper)
    if not (low_far or up_far):
        return ()
    pct, one = f"{level * 100:g} %", f"{(1 + level) * 50:g} % one-sided bound"
    can = "the one-sided answer it can give:"
    if not math.isfinite(upper):
        answer = f"{can} at least {lower:.3g} FLOPs ({one}); no upper bound"
    elif up_far and not low_far:
        answer = f"{can} at least {lower:.3g} FLOPs ({one})"
    elif low_far and not up_far:
        answer = f"{can} at most {upper:.3g} FLOPs ({one})"
    else:
        answer = f"at least {lower:.3g} and at most {upper:.3g} FLOPs ({one} each), neither within a decade"
    ends = f"{lower:.3g} .. " + (f"{upper:.3g}" if math.isfinite(upper) else "not within 1e40") + " FLOPs"
    reach = f"reaches more than {PLAN_DECADES:g} decade from the plan's {needed:.3g} FLOPs; {answer}"
    return flagged([(UNINFORMATIVE, f"uninformative: the {pct} compute interval {ends} {reach}")])


def refit_flags(n_boot: int, n_left: int, failures: Mapping[str, tuple[int, int]] | None = None) -> tuple[Flag, ...]:
    """The flag of an interval from ``n_left`` of ``n_boot`` replicates, over ``MAX_FAILED_SHARE`` lost."""
    if n_boot <= 0 or n_boot - n_left <= MAX_FAILED_SHARE * n_boot:
        return ()
    parts = []
    for name, (failed, dropped) in (failures or {}).items():
        words = ", ".join(
            ([f"{failed} refits failed"] if failed else []) + ([f"{dropped} did not converge"] if dropped else [])
        )
        if words:
            parts.append(words if len(failures) == 1 else f"{name}: {words}")
    why = "; ".join(parts) or f"{n_boot - n_left} replicates lost"
    return (Flag(FEW_REPLICATES, f"interval from {n_left} of {n_boot} replicates: {why}", False),)
