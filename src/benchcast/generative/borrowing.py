"""One distribution of per-problem success for every run of a benchmark, its parameters smooth in log compute.

A run where no problem was solved in n samples says only that p < ~1/n everywhere: alone it identifies no
distribution (:func:`benchcast.generative.success.fit_family` refuses it). Fitted with the benchmark's other
runs, each unconstrained parameter of a family linear in log10 compute, it gets the distribution its
neighbours in compute say it has; its forecast is marked ``borrowed``, and where it lies below every run that
solved something, that it is extrapolated in compute too.

A joint fit that does not converge, or puts a run's parameter on the family's limit, is not used: the other
family is tried, and where neither holds, borrowing refuses with the reason (it once printed pass@k = -1.5e111).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.families import get_family
from benchcast.generative.success import BOUND_TOL, _minimize, _on_bound, fit_family
from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable

JOINT_FAMILIES = ("beta", "zi_beta")  # beta_mix has 10 coefficients jointly: more than a short ladder places
MIN_SOLVED_RUNS = 2
COEFFICIENT_BOX = (-60.0, 60.0)
# A run's parameters may reach past the family's box (a run that solved nothing sits below it) up to this multiple
# of it; past that the closed forms lose their digits, which is how pass@k = -1.5e111 was once printed.
JOINT_REACH = 2.0


@dataclass
class BorrowedSuccess(ResultView):
    """pass@k of every run of one benchmark from the joint model.

    Parameters
    ----------
    family : str
        The family (least AIC among the :data:`JOINT_FAMILIES` whose joint fit holds).
    coefficients : ndarray (parameters, 2)
        Intercept and slope of each unconstrained parameter in standardised log10 compute.
    table : DataFrame
        One row per (run, k): ``flops``, ``k``, ``pass_at_k``, ``solved`` (problems the run solved),
        ``borrowed`` and ``note``.
    aic : dict of str to float
        Each joint family's AIC.
    rejected : dict of str to str
        Each family whose joint fit was not used, and why.
    """

    family: str
    coefficients: np.ndarray
    table: pd.DataFrame
    aic: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    _fit: tuple | None = None

    def to_dict(self) -> dict:
        """Family, AICs, the families set aside and the per-run rows."""
        out = {"family": self.family, "aic": self.aic, "rejected": self.rejected}
        return jsonable({**out, "rows": self.table.to_dict("records")})

    def to_frame(self) -> pd.DataFrame:
        """The per-run, per-k table."""
        return self.table

    @property
    def title(self) -> str:
        return f"pass@k of every run from one {self.family} distribution, smooth in log compute"

    @property
    def notes(self) -> list[str]:
        """Which runs borrowed, and which joint fits were set aside."""
        borrowed = sorted(set(self.table.loc[self.table["borrowed"], "run"]))
        notes = [f"borrowed (no problem solved in its own samples): {', '.join(borrowed)}"] if borrowed else []
        return notes + [f"{name} joint fit not used: {why}" for name, why in self.rejected.items()]


@dataclass(frozen=True)
class _Ladder:
    """A benchmark's counts as unique (run, n, c) cells with weights, and each run's standardised log compute."""

    runs: list
    run_index: np.ndarray
    n: np.ndarray
    c: np.ndarray
    weight: np.ndarray
    x_run: np.ndarray


def _standardised_log_compute(flops: Mapping[str, float], runs: list) -> np.ndarray:
    """Each run's log10 compute, centred and scaled over the runs."""
    log_c = np.log10(np.array([float(flops[r]) for r in runs]))
    return (log_c - log_c.mean()) / (log_c.std() or 1.0)


def _ladder(counts: pd.DataFrame, x_run: np.ndarray, runs: list) -> _Ladder:
    cells = counts.assign(run=counts["run"].astype(str)).groupby(["run", "n", "c"], sort=False).size().reset_index()
    index = cells["run"].map({r: i for i, r in enumerate(runs)}).to_numpy()
    return _Ladder(runs, index, cells["n"].to_numpy(float), cells["c"].to_numpy(float), cells[0].to_numpy(float),
                   x_run)  # fmt: skip


def _joint_fit(family: str, ladder: _Ladder, start: np.ndarray):
    """Maximum likelihood of the coefficients; returns (theta, nll, doubts)."""
    fam = get_family(family)
    m = len(fam.parameters)
    lows, highs = JOINT_REACH * np.array(fam.box).T
    x = ladder.x_run[ladder.run_index]

    def nll(theta):
        z = theta[:m, None] + theta[m:, None] * x[None, :]
        value = -float(np.sum(ladder.weight * fam.log_marginal(ladder.n, ladder.c, z)))
        return value if np.isfinite(value) else 1e300

    box = [COEFFICIENT_BOX] * (2 * m)
    start = start if len(start) == 2 * m else np.concatenate([start, np.zeros(m)])  # intercepts: slopes start flat
    best = _minimize(nll, [start], box)
    theta = np.asarray(best.x, float)
    z_runs = theta[:m, None] + theta[m:, None] * ladder.x_run[None, :]
    doubts = [] if best.success else ["did not converge"]
    if _on_bound(theta, box):
        doubts.append("a coefficient on its search limit")
    limit = (z_runs - lows[:, None] < BOUND_TOL) | (highs[:, None] - z_runs < BOUND_TOL)
    if (z_runs < lows[:, None]).any() or (z_runs > highs[:, None]).any() or limit.any():
        doubts.append("a run's parameter at or past the family's limit")
    return theta, float(best.fun), doubts


def _pass_at_k(family: str, theta: np.ndarray, x_runs: np.ndarray, ks) -> np.ndarray:
    """pass@k (runs x ks) of the joint model."""
    fam = get_family(family)
    m = len(fam.parameters)
    out = np.empty((len(x_runs), len(ks)))
    for i, xr in enumerate(x_runs):
        out[i] = -np.expm1(fam.log_miss(np.asarray(ks, float), theta[:m] + theta[m:] * xr))
    return out


def require_flops(counts: pd.DataFrame, flops: Mapping[str, float]) -> list[str]:
    """The runs of ``counts``, each with a positive compute in ``flops``, or a DataError naming those without."""
    runs = list(dict.fromkeys(counts["run"].astype(str)))
    missing = [r for r in runs if r not in flops or not np.isfinite(flops[r]) or flops[r] <= 0]
    if missing:
        raise DataError(
            f"borrowing across runs places each run by its compute: no positive FLOPs for run(s) "
            f"{', '.join(missing[:5])}; give every run's size (params and tokens, or flops) in the run metadata."
        )
    return runs


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
        ``'auto'`` (least AIC of the :data:`JOINT_FAMILIES` whose fit holds) or one of them.

    Returns
    -------
    BorrowedSuccess

    Raises
    ------
    DataError
        Without run compute, with fewer than two runs that solved something, or when no joint fit holds
        (not converged, or a run's parameter at the family's limit): the message says which and why.
    """
    runs = require_flops(counts, flops)
    solved = counts.groupby(counts["run"].astype(str), sort=False)["c"].apply(lambda s: int((s > 0).sum()))
    if int((solved > 0).sum()) < MIN_SOLVED_RUNS:
        raise DataError(
            f"borrowing needs at least {MIN_SOLVED_RUNS} runs that solved some problem, to say how the distribution "
            f"moves with compute; {int((solved > 0).sum())} of {len(runs)} did: no forecast for a run that solved "
            "nothing."
        )
    if family != "auto" and family not in JOINT_FAMILIES:
        raise DataError(f"family {family!r} is not fitted jointly: expected one of {', '.join(JOINT_FAMILIES)}.")
    ladder = _ladder(counts, _standardised_log_compute(flops, runs), runs)
    ks = np.atleast_1d(np.asarray(ks, float))
    fits, rejected = {}, {}
    for name in JOINT_FAMILIES if family == "auto" else (family,):
        pooled = fit_family(name, counts["n"].to_numpy(float), counts["c"].to_numpy(float))
        theta, nll, doubts = _joint_fit(name, ladder, pooled.z)
        values = _pass_at_k(name, theta, ladder.x_run, ks)
        if not np.all(np.isfinite(values) & (values >= 0) & (values <= 1)):
            doubts.append("pass@k outside [0, 1]")
        if doubts:
            rejected[name] = ", ".join(doubts)
        else:
            fits[name] = (theta, 2 * len(theta) + 2 * nll, values)
    if not fits:
        raise DataError(
            "no joint fit across runs holds ("
            + "; ".join(f"{name}: {why}" for name, why in rejected.items())
            + "): no borrowed forecast for a run that solved nothing."
        )
    chosen = min(fits, key=lambda k: fits[k][1])
    theta, _, values = fits[chosen]
    lowest_solved = min(float(flops[r]) for r in runs if solved[r] > 0)
    rows = []
    for i, run in enumerate(runs):
        borrowed = bool(solved[run] == 0)
        note = "borrowed" if borrowed else ""
        if borrowed and float(flops[run]) < lowest_solved:
            note = "borrowed, below every run that solved a problem (extrapolated in compute)"
        for k, value in zip(ks, values[i], strict=True):
            rows.append(
                {"run": run, "flops": float(flops[run]), "k": float(k), "pass_at_k": float(value),
                 "solved": int(solved[run]), "borrowed": borrowed, "note": note}
            )  # fmt: skip
    m = len(get_family(chosen).parameters)
    aic = {name: fits[name][1] for name in fits}
    return BorrowedSuccess(chosen, np.column_stack([theta[:m], theta[m:]]), pd.DataFrame(rows), aic, rejected,
                           (counts, ladder, theta))  # fmt: skip


def borrowed_draws(result: BorrowedSuccess, runs: list, ks, *, replicates: int, seed: int) -> np.ndarray:
    """pass@k (replicates x runs x ks) of the joint model refitted on problems resampled within each run; NaN where a
    refit puts a run's parameter at the family's limit."""
    counts, ladder, theta = result._fit
    rng = np.random.default_rng(seed)
    counts = counts.assign(run=counts["run"].astype(str))
    groups = [g for _, g in counts.groupby("run", sort=False)]
    x_runs = ladder.x_run[[ladder.runs.index(r) for r in runs]]
    out = np.full((replicates, len(runs), len(np.atleast_1d(ks))), np.nan)
    for b in range(replicates):
        resampled = pd.concat([g.iloc[rng.integers(0, len(g), len(g))] for g in groups], ignore_index=True)
        refit, _, doubts = _joint_fit(result.family, _ladder(resampled, ladder.x_run, ladder.runs), theta)
        values = _pass_at_k(result.family, refit, x_runs, ks)
        if set(doubts) <= {"did not converge"} and np.all((values >= 0) & (values <= 1)):  # limits are not noise
            out[b] = values
    return out
