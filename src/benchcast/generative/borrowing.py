"""One distribution of per-problem success for every run of a benchmark, its parameters smooth in log compute.

A run where no problem was solved in n samples says only that p < ~1/n everywhere: alone it identifies no
distribution (:func:`benchcast.generative.success.fit_family` refuses it). Fitted with the benchmark's other
runs, each unconstrained parameter of a family linear in log10 compute, it gets the distribution its
neighbours in compute say it has; its forecast is marked ``borrowed``, and where it lies below every run that
solved something, that it is extrapolated in compute too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.families import get_family
from benchcast.generative.success import _minimize, _on_bound, fit_family
from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable

JOINT_FAMILIES = ("beta", "zi_beta")  # beta_mix has 10 coefficients jointly: more than a short ladder places
MIN_SOLVED_RUNS = 2


@dataclass
class BorrowedSuccess(ResultView):
    """pass@k of every run of one benchmark from the joint model.

    Parameters
    ----------
    family : str
        The family (least AIC among :data:`JOINT_FAMILIES`).
    coefficients : ndarray (parameters, 2)
        Intercept and slope of each unconstrained parameter in standardised log10 compute.
    table : DataFrame
        One row per (run, k): ``flops``, ``k``, ``pass_at_k``, ``solved`` (problems the run solved),
        ``borrowed`` and ``note``.
    aic : dict of str to float
        Each joint family's AIC.
    """

    family: str
    coefficients: np.ndarray
    table: pd.DataFrame
    aic: dict = field(default_factory=dict)
    converged: bool = True
    on_bound: list = field(default_factory=list)

    def to_dict(self) -> dict:
        """Family, AICs, convergence and the per-run rows."""
        rows = self.table.to_dict("records")
        out = {"family": self.family, "aic": self.aic, "converged": self.converged, "on_bound": self.on_bound}
        return jsonable({**out, "rows": rows})

    def to_frame(self) -> pd.DataFrame:
        """The per-run, per-k table."""
        return self.table

    @property
    def title(self) -> str:
        return f"pass@k of every run from one {self.family} distribution, smooth in log compute"

    @property
    def notes(self) -> list[str]:
        """Which runs borrowed, and whether the joint fit converged."""
        borrowed = sorted(set(self.table.loc[self.table["borrowed"], "run"]))
        notes = [f"borrowed (no problem solved in its own samples): {', '.join(borrowed)}"] if borrowed else []
        if not self.converged:
            notes.append("the joint likelihood's optimiser did not report convergence")
        if self.on_bound:
            notes.append(f"coefficients on their bound: {', '.join(self.on_bound)}")
        return notes


def _joint_fit(family: str, n, c, x, start):
    fam = get_family(family)
    m = len(fam.parameters)
    box = [(-60.0, 60.0)] * m + [(-30.0, 30.0)] * m  # coefficients of standardised log compute

    def nll(theta):
        z = theta[:m, None] + theta[m:, None] * x[None, :]
        value = -float(np.sum(fam.log_marginal(n, c, z)))
        return value if np.isfinite(value) else 1e300

    best = _minimize(nll, [np.concatenate([start, np.zeros(m)])], box)
    names = [f"{p}:{t}" for t in ("intercept", "slope") for p in fam.parameters]
    return best, [names[i] for i in _on_bound(best.x, box)]


def borrow_across_runs(
    counts: pd.DataFrame, flops: Mapping[str, float], ks, *, family: str = "auto"
) -> BorrowedSuccess:
    """Fit one family to every run of a benchmark at once, its parameters linear in log10 compute, and give
    pass@k of each run, including runs that solved nothing.

    Parameters
    ----------
    counts : DataFrame
        Per-problem counts of one benchmark: ``run``, ``n``, ``c``.
    flops : mapping of str to float
        Each run's training compute (FLOPs).
    ks : array_like
        Attempts to give pass@k at.
    family : str
        ``'auto'`` (least AIC of :data:`JOINT_FAMILIES`) or one of them.

    Returns
    -------
    BorrowedSuccess
    """
    runs = list(dict.fromkeys(counts["run"].astype(str)))
    missing = [r for r in runs if r not in flops or not np.isfinite(flops[r]) or flops[r] <= 0]
    if missing:
        raise DataError(
            f"borrowing across runs places each run by its compute: no positive FLOPs for run(s) "
            f"{', '.join(missing[:5])}; give every run's size (params and tokens, or flops) in the run metadata."
        )
    solved = counts.groupby("run", sort=False)["c"].apply(lambda s: int((s > 0).sum()))
    solved.index = solved.index.astype(str)
    if int((solved > 0).sum()) < MIN_SOLVED_RUNS:
        raise DataError(
            f"borrowing needs at least {MIN_SOLVED_RUNS} runs that solved some problem, to say how the distribution "
            f"moves with compute; {int((solved > 0).sum())} of {len(runs)} did: no forecast for a run that solved "
            "nothing."
        )
    names = JOINT_FAMILIES if family == "auto" else (family,)
    if family != "auto" and family not in JOINT_FAMILIES:
        raise DataError(f"family {family!r} is not fitted jointly: expected one of {', '.join(JOINT_FAMILIES)}.")
    log_c = np.log10(counts["run"].astype(str).map(dict(flops)).to_numpy(float))
    centre, scale = log_c.mean(), log_c.std() or 1.0
    x = (log_c - centre) / scale
    n, c = counts["n"].to_numpy(float), counts["c"].to_numpy(float)
    fits = {}
    for name in names:
        pooled = fit_family(name, n, c)  # every run pooled: the intercepts' start
        best, bound = _joint_fit(name, n, c, x, pooled.z)
        fits[name] = (best, bound, 2 * len(best.x) + 2 * float(best.fun))
    chosen = min(fits, key=lambda k: fits[k][2])
    best, bound, _ = fits[chosen]
    fam, m = get_family(chosen), len(get_family(chosen).parameters)
    ks = np.atleast_1d(np.asarray(ks, float))
    lowest_solved = min(float(flops[r]) for r in runs if solved[r] > 0)
    rows = []
    for run in runs:
        xr = (np.log10(float(flops[run])) - centre) / scale
        z = best.x[:m] + best.x[m:] * xr
        borrowed = bool(solved[run] == 0)
        note = "borrowed" if borrowed else ""
        if borrowed and float(flops[run]) < lowest_solved:
            note = "borrowed, below every run that solved a problem (extrapolated in compute)"
        for k, value in zip(ks, -np.expm1(fam.log_miss(ks, z)), strict=True):
            rows.append(
                {"run": run, "flops": float(flops[run]), "k": float(k), "pass_at_k": float(value),
                 "solved": int(solved[run]), "borrowed": borrowed, "note": note}
            )  # fmt: skip
    aic = {name: fits[name][2] for name in fits}
    coefficients = np.column_stack([best.x[:m], best.x[m:]])
    return BorrowedSuccess(chosen, coefficients, pd.DataFrame(rows), aic, bool(best.success), bound)


def borrow_rows(
    table: pd.DataFrame, counts: pd.DataFrame, flops: Mapping[str, float], ks, extrapolate_to: int, *, family="auto"
) -> pd.DataFrame:
    """pass@k rows past each run's n from the joint model of its benchmark's runs (:func:`borrow_across_runs`),
    added to the estimator's rows of :func:`~benchcast.generative.passk.passk_table`: runs that solved nothing
    gain them too, marked ``borrowed``.

    Parameters
    ----------
    table : DataFrame
        ``passk_table``'s rows without extrapolation (the estimator's, up to each run's n).
    counts : DataFrame
        The per-problem counts it was computed from (``run``, ``benchmark``, ``problem_id``, ``n``, ``c``).
    flops : mapping of str to float
        Each run's compute.
    ks : array_like
        The k asked for.
    extrapolate_to : int
        The largest k (a geometric grid of k up to it is added, as ``passk_table`` does).
    family : str
        ``'auto'`` or one of :data:`JOINT_FAMILIES`.

    Returns
    -------
    DataFrame
        The estimator's rows as they were; past n, the joint model's point forecasts (``source`` the family
        and ``joint``, no interval), with ``extrapolation``, ``borrowed`` and ``note``.
    """
    kept = [table[table["source"] == "estimator"]]
    for bench, group in counts.groupby("benchmark", sort=False):
        estimated = "n_first" if "n_first" in group else "n"  # the estimator's rows reach the first round's n
        smallest = group.groupby("run", sort=False)[estimated].min().rename(index=str)
        grid = np.geomspace(max(smallest.min(), 1), extrapolate_to, 8).round()
        asked = np.unique(np.concatenate([np.asarray(ks, float), grid]))
        asked = asked[(asked > smallest.min()) & (asked <= extrapolate_to)]
        if not asked.size:
            continue
        joint = borrow_across_runs(group, flops, asked, family=family)
        rows = joint.table.assign(benchmark=bench, source=f"{joint.family} joint")
        doubts = ([] if joint.converged else ["did not converge"]) + [f"{p} on its bound" for p in joint.on_bound]
        rows["model_note"] = f"{joint.family} joint: {', '.join(doubts)}" if doubts else ""
        largest = group.groupby("run", sort=False)["n"].max().rename(index=str)
        rows = rows[rows["k"] > rows["run"].map(smallest).astype(float)].copy()
        rows["extrapolation"] = rows["k"] / rows["run"].map(largest).astype(float)
        rows["problems"] = rows["run"].map(group.groupby("run")["problem_id"].nunique().rename(index=str))
        kept.append(rows.drop(columns=["flops", "solved"]))
    return pd.concat(kept, ignore_index=True).sort_values(["run", "benchmark", "k"], kind="stable")
