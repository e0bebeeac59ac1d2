"""The one law choice: which laws forecast a benchmark, and with what weights, from their rolling-origin
forecasts inside the runs.

Each candidate law is fitted to every run and refitted from origins below the largest run
(:func:`benchcast.forecasting.extrapolation.rolling_origin`) to forecast the runs above each origin. Laws
are compared on the inner points every candidate forecasts, by the mean (over origins, along compute and, for laws of N
and D, along TPR) of the mean squared log-ratio error; ``stack`` weights each law by the inverse of that error,
``select`` keeps the best one, and ``ensemble`` (the default) weights the laws with support equally unless their errors,
origin by origin, separate them (:func:`separated`), then as ``stack``; the choice's note says which. Equal weights
everywhere lost to it on 5 of 6 splits and won on DCLM at TPR 20 (benchmarks/member_designs.md). The error reported
for the choice is nested: at each origin the choice is made from the deeper origins' forecasts of runs below it only.

Which laws are candidates depends on the ladder (:func:`ladder_laws`): each law says whether it models
tokens per parameter (``Law.models_tpr``); runs that separate parameters from tokens get the laws of N and
D, any other ladder the laws of compute. A combination uses the candidates with support (at least
``extrapolation.MIN_ORIGINS`` inner origins with usable points, on points they share); where none has it,
the ladder's fallback law (``power``; ``nd`` across TPRs) forecasts alone. :func:`choose` is the one function
that decides; ``recommend``, ``forecast DATA``, ``plan``, ``report`` and ``bench`` all call it through
:class:`benchcast.forecasting.ensemble.Ensemble`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.metrics import squared_log_ratio
from benchcast.fitting.spec import FitSpec, default_proxy, design
from benchcast.forecasting import extrapolation as ext
from benchcast.forecasting.results import Recommendation
from benchcast.laws import available_laws, get_law
from benchcast.laws.questions import spans_tprs

SELECTION_RULES = ("ensemble", "stack", "select")
# Candidates of the default choice: the laws with a ceiling below a perfect score (chosen by
# `benchcast bench` on DCLM; README, "Which law should I use?"); each ladder takes those that fit its
# shape (Law.models_tpr): DEFAULT_CANDIDATES are the one-TPR ones.
DEFAULT_POOL = ("power_floor", "bnsl_monotone", "nd_floor", "power_floor_tpr", "two_stage_nd")
# Candidates that join the members only where their rolling-origin error beats every other candidate's, and only
# where the data holds their proxy loss: two_stage_nd (the task's own loss in N and D). On DCLM's multi-TPR protocol
# the default with it lowered the WIS on 3 of 12 benchmarks (arc_easy 1.51 -> 1.27, triviaqa, webqs) and raised it on
# none; as a plain member (equal weight everywhere) it raised sciq's and refused LBPP's (benchmarks/two_stage_nd.md).
CHALLENGERS = ("two_stage_nd",)
DEFAULT_CANDIDATES = ("power_floor", "bnsl_monotone")
# What forecasts where no candidate has support: the plain power law (its two parameters fit a short
# ladder; its rolling origins need the fewest runs), K4's nd across TPRs.
FALLBACK_POOL = ("power", "nd")
KEY = ["origin_decades", "run", "k"]


def applicable_laws(table: pd.DataFrame, spec: FitSpec) -> list[str]:
    """Every registered law that can be fitted to this selection (each law says what it needs)."""
    rows, resolved = design(table, spec)
    has_gold = bool(((table["benchmark"] == spec.benchmark) & (table["metric"] == resolved.gold_metric)).any())
    return [
        name for name in available_laws() if not get_law(name).applicable(rows, proxy=spec.proxy, has_gold=has_gold)
    ]


def candidates(table: pd.DataFrame, spec: FitSpec, rows: pd.DataFrame, laws=None) -> tuple[list, list, bool]:
    """The laws to fit for a choice on these runs: ``laws`` where given, else the ladder's that apply."""
    if laws:
        return list(laws), [], False
    usable = applicable_laws(table, spec)
    for name in CHALLENGERS:  # a challenger applies where the data holds its own proxy loss
        law = get_law(name)
        proxy = spec.proxy or default_proxy(law, spec, table)
        if proxy and not law.applicable(rows, proxy=proxy):
            usable.append(name)
    ladder, backup = ladder_laws(rows)
    return [law for law in ladder if law in usable], [law for law in backup if law in usable], True


def choose(members: dict, rule: str, *, fallbacks=(), judge_length: bool = True, rows=None) -> Recommendation:
    """Members and weights from the laws' rolling-origin forecasts: the one law choice."""
    fitted = {law: m for law, m in members.items() if m.fit is not None}
    failures = [f"{law}: {m.error}" for law, m in members.items() if m.fit is None]
    if rule not in SELECTION_RULES:  # one law, chosen by the caller
        if rule not in fitted:
            reason = members[rule].error if rule in members else "not fitted"
            return _unsupported(rule, f"{rule} could not be fitted: {reason}", failures)
        weights = {rule: 1.0}  # no ranking: one law, its rolling origins made only where an interval needs them
        return Recommendation(
            str(fitted[rule].fit.spec.benchmark),
            rule,
            True,
            "",
            pd.DataFrame(),
            weights,
            rule,
            np.nan,
            0,
            0.0,
            failures,
        )
    pool = {law: m for law, m in fitted.items() if law not in fallbacks}
    warned = [w for w in (across_tprs(rows, law) for law in pool) if w] if rows is not None else []
    if judge_length:
        short = {law: reason for law, m in pool.items() if (reason := too_short(law, m.fit))}
        failures += list(short.values())
        pool = {law: m for law, m in pool.items() if law not in short}
    supported = members_with_support({law: _compute_rows(m.errors) for law, m in pool.items()})
    supported, lost = _challengers_that_win(pool, supported)
    failures += [
        f"{law}: fewer than {ext.MIN_ORIGINS} inner origins with usable points (shared with the other laws)"
        for law in pool
        if law not in supported and law not in lost
    ]
    failures += list(lost.values())
    if not supported and fallbacks:
        backup = [law for law in fallbacks if law in fitted]
        if not backup and any(law not in members for law in fallbacks):
            return _unsupported(rule, "no candidate has support", warned + failures, needs_fallback=True)
        if backup:
            failures.append(f"no candidate has support: the fallback {backup[0]} forecasts alone")
            return _recommendation({backup[0]: fitted[backup[0]]}, [backup[0]], rule, warned + failures)
    if not supported:
        reason = (
            f"no law has support: no candidate has {ext.MIN_ORIGINS} rolling origins with usable points inside "
            f"the runs, and no fallback law fits (scores too close to chance, or too few runs). "
            f"{'; '.join(warned + failures)}"
        )
        return _unsupported(rule, reason, warned + failures)
    return _recommendation(pool, supported, rule, warned + failures)


def _challengers_that_win(pool: dict, supported: list) -> tuple[list, dict[str, str]]:
    """``supported`` without each challenger whose rolling-origin error does not beat every other member's (why)."""
    others = [law for law in supported if law not in CHALLENGERS]
    if not others:
        return supported, {}
    kept, lost = list(supported), {}
    for law in [c for c in CHALLENGERS if c in supported]:
        wide = common_errors({m: _compute_rows(pool[m].errors) for m in [*others, law]})
        scores = _scores(pool, wide, [*others, law]).mean() if len(wide) else None
        if scores is None or not scores[law] < scores[others].min():
            kept.remove(law)
            best = scores[others].idxmin() if scores is not None else others[0]
            lost[law] = (
                f"{law}: its rolling-origin error does not beat {best}'s (it joins the default only where it wins)"
            )
    return kept, lost


def _recommendation(pool: dict, laws: list, rule: str, failures: list) -> Recommendation:
    """The ranking, weights and blended inner forecasts of ``laws`` (weight 1 for one law)."""
    benchmark = str(pool[laws[0]].fit.spec.benchmark)
    wide = common_errors({law: _compute_rows(pool[law].errors) for law in laws})
    per_origin = _scores(pool, wide, laws) if len(wide) else pd.DataFrame(columns=laws)
    scores = per_origin.mean() if len(wide) else pd.Series(np.nan, index=laws)
    if len(laws) == 1:
        weights = pd.Series({laws[0]: 1.0})
    else:
        weights = weights_for(rule, scores, per_origin) if len(wide) else pd.Series(1.0 / len(laws), index=laws)
        failures = [*failures, evidence_words(rule, per_origin)]
    ranking = pd.DataFrame([_ranking_record(law, pool[law].errors, pool[law].fit) for law in laws]).set_index("law")
    ranking["inner_msle"] = scores
    ranking["inner_mre"] = [
        float(np.mean(np.abs(wide[law] - wide["true"]) / wide["true"]) * 100) if len(wide) else np.nan
        for law in ranking.index
    ]
    ranking["weight"] = weights
    ranking = ranking.sort_values("inner_msle").reset_index()
    nested = _nested_error(wide, laws, rule) if len(wide) else {"mre": np.nan, "n_origins": 0}
    order = sorted(((law, float(w)) for law, w in weights.items() if w > 0), key=lambda item: -item[1])
    return Recommendation(
        benchmark,
        rule,
        True,
        "",
        ranking,
        dict(order),
        str(ranking["law"].iloc[0]),
        nested["mre"],
        nested["n_origins"],
        float(wide["decades"].max()) if len(wide) else 0.0,
        failures,
        errors=_blended(pool, weights, wide),
    )


def _blended(pool: dict, weights: pd.Series, wide: pd.DataFrame) -> pd.DataFrame:
    """The blend's rolling-origin forecasts, along compute and (where the runs span TPRs) along TPR, weighted."""
    frames = []
    if len(weights) == 1:
        return pd.DataFrame()  # one law: its own (Ensemble.errors_)
    if len(wide):
        frames.append(blend_errors(wide, weights).assign(axis="compute", side="", tpr_decades=0.0))
    tpr = {law: _compute_rows(pool[law].errors, "tpr") for law in weights.index if weights[law] > 0}
    if all(len(frame) for frame in tpr.values()):  # along TPR: the points every member forecast, blended
        first, wide = _along_tpr(tpr)
        if len(wide):
            out = first.loc[wide.index].copy()
            out["predicted"] = sum(w * wide[law].to_numpy(float) for law, w in weights.items() if w > 0)
            frames.append(out.reset_index())
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _unsupported(rule: str, reason: str, failures: list, needs_fallback: bool = False) -> Recommendation:
    """No recommendation, and why."""
    return Recommendation(
        "",
        rule,
        False,
        reason,
        pd.DataFrame(),
        {},
        None,
        np.nan,
        0,
        0.0,
        failures,
        None,
        pd.DataFrame(),
        needs_fallback,
    )


def _along_tpr(tpr: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first law's TPR rows by (side, run, k), and each law's forecasts (a column) on the points every one has."""
    key = ["side", "run", "k"]
    first = next(iter(tpr.values())).drop_duplicates(key).set_index(key)
    columns = [frame.drop_duplicates(key).set_index(key)["predicted"].rename(law) for law, frame in tpr.items()]
    return first, pd.concat(columns, axis=1, join="inner")


def _compute_rows(errors: pd.DataFrame, axis: str = "compute") -> pd.DataFrame:
    """The rows along ``axis`` of rolling-origin forecasts (a table without axes is along compute; else empty)."""
    if errors is None or not len(errors) or "axis" not in errors:
        return errors if axis == "compute" else pd.DataFrame()
    return errors[errors["axis"] == axis].reset_index(drop=True)


def ladder_laws(rows: pd.DataFrame) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The default's candidate and fallback laws: of N and D where the runs span TPRs, of compute otherwise."""
    several = spans_tprs(rows)
    return (
        tuple(law for law in DEFAULT_POOL if get_law(law).models_tpr == several),
        tuple(law for law in FALLBACK_POOL if get_law(law).models_tpr == several),
    )


def too_short(law: str, result) -> str:
    """Why a fitted law is no candidate ('' when it is): its runs span fewer decades of compute than it needs."""
    need = get_law(law).min_ladder_decades
    if result is None or not need:
        return ""
    flops = [*result.points["flops"].to_numpy(float), *(float(d["flops"]) for d in result.dropped)]
    span = float(np.log10(max(flops) / min(flops)))
    if span >= need:
        return ""
    return f"{law}: the runs span {span:.2f} decades of compute; it needs {need:g} to be a candidate"


def across_tprs(rows: pd.DataFrame, law: str) -> str:
    """A warning where a law of compute alone is fitted to runs at several TPRs ('' otherwise)."""
    if get_law(law).models_tpr or not spans_tprs(rows):
        return ""
    return (
        f"{law}: a law of compute alone fitted across several tokens-per-parameter ratios reads them as one "
        "curve (give a TPR to fit one, or use a law of parameters and tokens)"
    )


def _ranking_record(law: str, inner: pd.DataFrame, result) -> dict:
    """A law's row of the ranking before it is scored."""
    try:  # as measured (below TAU_FLOOR too); NaN with fewer than MIN_ORIGINS
        tau = float(ext.estimate(inner).own_tau)
    except BenchcastError:
        tau = float("nan")
    d = result.diagnostics  # bounds: the law's own constraint active (information) apart from a search limit reached
    return {
        "law": law,
        "tau": tau,
        "n_fit": d.n_used,
        "n_dropped": d.dropped,
        "decades_fitted": d.decades,
        "converged": result.converged,
        **result.bounds.columns(),
    }


def common_errors(errors: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every law's rolling-origin forecasts (a column each) on the points all forecast, ``converged``."""
    if not errors or any(e is None or e.empty for e in errors.values()):
        return pd.DataFrame()
    columns = [frame.set_index(KEY)["predicted"].rename(law) for law, frame in errors.items()]
    base = next(iter(errors.values())).set_index(KEY)[["origin", "flops", "decades", "true"]]
    base = base[~base.index.duplicated()]
    converged = [
        frame.set_index(KEY)["converged"].astype(bool).rename(f"converged {law}")
        for law, frame in errors.items()
        if "converged" in frame
    ]
    wide = pd.concat([base, *columns, *converged], axis=1, join="inner")
    if converged:
        flags = [c.name for c in converged]
        wide["converged"] = wide[flags].all(axis=1)
        wide = wide.drop(columns=flags)
    wide = wide[np.isfinite(wide[list(errors)]).all(axis=1) & (wide["true"] > 0)]
    return wide.reset_index()


def _scores(pool: dict, wide: pd.DataFrame, laws: list[str]) -> pd.DataFrame:
    """Per origin (compute, and TPR where every law has it) and law: the mean squared log-ratio error."""
    per_origin = [_per_origin(wide, laws)]
    tpr = {law: _compute_rows(pool[law].errors, "tpr") for law in laws}
    if all(len(frame) for frame in tpr.values()):
        first, wide_tpr = _along_tpr(tpr)
        along = pd.concat([first[["true"]], wide_tpr], axis=1, join="inner").reset_index()
        along = along[np.isfinite(along[laws]).all(axis=1) & (along["true"] > 0)]
        if len(along):
            per_origin.append(_per_origin(along.rename(columns={"side": "origin_decades"}), laws))
    return pd.concat(per_origin)


def _per_origin(wide: pd.DataFrame, laws: list[str]) -> pd.DataFrame:
    """Each origin's mean squared log-ratio error per law (a row per origin)."""
    true = wide["true"].to_numpy(float)
    squared = {law: squared_log_ratio(true, wide[law].to_numpy(float)) for law in laws}
    return pd.DataFrame(squared).groupby(wide["origin_decades"].to_numpy()).mean()


def weights_for(rule: str, scores: pd.Series, per_origin: pd.DataFrame | None = None) -> pd.Series:
    """The weights of a rule: equal (or as ``stack`` where separated), 1/score, or the best alone."""
    if rule == "ensemble" and (per_origin is None or not separated(per_origin)):
        return pd.Series(1.0 / len(scores), index=scores.index)
    if rule == "select":
        best = scores == scores.min()
        return best.astype(float) / float(best.sum())
    inverse = 1.0 / np.maximum(scores, 1e-12)
    return inverse / inverse.sum()


def separated(per_origin: pd.DataFrame) -> bool:
    """Whether the best law's log error beats another's by two standard errors over the origins."""
    logs = np.log(np.maximum(per_origin.to_numpy(float), 1e-12))
    logs = logs[np.isfinite(logs).all(axis=1)]
    if len(logs) < ext.MIN_ORIGINS or logs.shape[1] < 2:
        return False
    best = int(np.argmin(logs.mean(axis=0)))
    gaps = np.delete(logs, best, axis=1) - logs[:, [best]]
    return bool((gaps.mean(axis=0) > 2 * gaps.std(axis=0, ddof=1) / np.sqrt(len(logs))).any())


def evidence_words(rule: str, per_origin: pd.DataFrame) -> str:
    """What the origins say about the members' weights (a note of the choice)."""
    along_tpr = int(sum(isinstance(origin, str) for origin in per_origin.index))  # TPR origins are named by side
    where = f"{len(per_origin) - along_tpr} along compute" + (f", {along_tpr} along TPR" if along_tpr else "")
    how = "separate" if separated(per_origin) else "cannot separate"
    then = {
        "ensemble": "weights by inverse error" if how == "separate" else "equal weights",
        "stack": "weights by inverse error",
        "select": "the best alone",
    }[rule]
    return f"the rolling-origin errors at {len(per_origin)} origins ({where}) {how} the members: {then}"


def blend_errors(wide: pd.DataFrame, weights: pd.Series) -> pd.DataFrame:
    """The rolling-origin forecasts of a weighted combination of laws (what its extrapolation error is measured on)."""
    out = wide[[c for c in ext.COLUMNS if c in wide and c != "predicted"]].copy()
    out["predicted"] = sum(w * wide[law].to_numpy(float) for law, w in weights.items() if w > 0)
    return out


def _nested_error(wide: pd.DataFrame, laws: list[str], rule: str) -> dict:
    """The choice's own out-of-sample MRE: made at each origin from the deeper origins only."""
    records = []
    for delta, group in wide.groupby("origin_decades"):
        origin = float(group["origin"].iloc[0])
        seen = wide[(wide["origin_decades"] > delta) & (wide["flops"] <= origin * (1 + 1e-9))]
        if seen["origin_decades"].nunique() < ext.MIN_ORIGINS:
            continue
        per_origin = _per_origin(seen, laws)
        weights = weights_for(rule, per_origin.mean(), per_origin)
        predicted = sum(w * group[law].to_numpy(float) for law, w in weights.items() if w > 0)
        true = group["true"].to_numpy(float)
        records.append(float(np.mean(np.abs(predicted - true) / true) * 100))
    return {"mre": float(np.mean(records)) if records else float("nan"), "n_origins": len(records)}


def members_with_support(errors: dict[str, pd.DataFrame]) -> list[str]:
    """The laws with ``MIN_ORIGINS`` origins, kept in order while their shared points keep that many."""
    own = [
        law
        for law, frame in errors.items()
        if frame is not None
        and not frame.empty
        and ext.log_errors(frame)["origin_decades"].nunique() >= ext.MIN_ORIGINS
    ]
    members: list[str] = []
    for law in own:
        wide = common_errors({name: errors[name] for name in (*members, law)})
        if len(wide) and wide["origin_decades"].nunique() >= ext.MIN_ORIGINS:
            members.append(law)
    return members
