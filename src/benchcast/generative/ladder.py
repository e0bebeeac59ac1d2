"""One model of a benchmark's whole ladder of runs (docs/guide/passk.md, "The joint model of the ladder"): problem j
of run i is solved with probability sigmoid(eta_i - d_j), the difficulties drawn from one distribution integrated
out on :data:`GRID`, each ability a normal prior around a line in log compute; fitted by generalised EM."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.passk import pass_at_k_per_problem
from benchcast.generative.xscale import (
    anchor,
    band,
    estimator_counts,
    from_x,
    model_at_n_reason,
    monotone,
    thinned_origins,
    to_x,
    x_error,
)

GRID = np.arange(-20.0, 30.01, 0.5)  # difficulty on the logit scale: p from sigmoid(+-8) at abilities +-8 .. 1e-16
DISTRIBUTIONS = ("normal", "normal_mix")
SPREAD_FLOOR = 0.25  # the sd of an ability around its compute line, at least (a line through two runs is exact)
SD_FLOOR = 0.5  # a difficulty component's sd, at least the grid's step
MAX_ITER = 3000
TOL = 1e-6  # EM stops when the objective moves less than this per problem (pass@k moves in the 4th digit)
ABILITY_LIMIT = 15.0  # |eta| beyond this leaves the grid no room: the fit has not converged
MAX_STEP = 1.0  # an ability moves at most one logit per Newton step
JOINT_REPLICATES = 40  # bootstrap refits of the whole ladder (each warm-started from the fit, at most REFIT_ITER)
REFIT_ITER = 150
ACROSS_SHARE = 1 / 3  # the across-runs origin thins the largest third of the runs (by compute) to n/10


def _log_sig(z):
    """log sigmoid(z), without overflow."""
    return -np.logaddexp(0.0, -z)


def _log_miss_one(z):
    """log(1 - sigmoid(z)), without overflow."""
    return -np.logaddexp(0.0, z)


@dataclass(frozen=True)
class LadderFit:
    """A fitted ladder model (see the module's docstring); ``posterior``: (problems, grid + 1), the atom last."""

    runs: list  # in the order of eta
    eta: np.ndarray  # each run's ability (logit scale)
    trend: tuple  # intercept, slope (per sd of log10 compute) and spread of the abilities' prior
    x: np.ndarray  # each run's standardised log10 compute (NaN: unknown)
    distribution: str  # one of DISTRIBUTIONS
    components: np.ndarray  # (components, 3): weight, mean and sd of each normal of the difficulties
    never: float  # the share of problems never solvable
    posterior: np.ndarray
    log_likelihood: float  # marginal, binomial coefficients left out
    converged: bool
    iterations: int
    present: np.ndarray | None = None  # (problems, runs): which problems each run has

    @property
    def n_parameters(self) -> int:
        """Free parameters: abilities, the line and its spread, the distribution's."""
        return len(self.eta) + 3 + 1 + 3 * len(self.components) - 1

    def bic(self, problems: int) -> float:
        """-2 log L + parameters x log(problems)."""
        return -2 * self.log_likelihood + self.n_parameters * np.log(max(problems, 2))

    def pass_at_k(self, ks, eta=None) -> np.ndarray:
        """pass@k (runs x ks) at abilities ``eta`` (default: the fitted), averaged over the problems' posteriors."""
        eta = self.eta if eta is None else np.asarray(eta, float)
        ks = np.atleast_1d(np.asarray(ks, float))
        present = np.ones((len(self.posterior), len(eta)), bool) if self.present is None else self.present
        # each run's mean over its own problems of the posterior on the grid (the atom's problems are never solved)
        weight = (present.T @ self.posterior[:, :-1]) / np.maximum(present.sum(axis=0), 1)[:, None]
        log_miss = _log_miss_one(eta[:, None] - GRID[None, :])[:, :, None] * ks[None, None, :]
        return np.clip(np.einsum("rg,rgk->rk", weight, -np.expm1(log_miss)), 0.0, 1.0)


def _densities(components: np.ndarray) -> np.ndarray:
    """Each normal's weighted density on the grid (components x grid), unnormalised."""
    w, mu, sd = components.T
    return w[:, None] / sd[:, None] * np.exp(-0.5 * ((GRID[None, :] - mu[:, None]) / sd[:, None]) ** 2)


def _grid_log_weights(components: np.ndarray, never: float) -> np.ndarray:
    """log prior weight of each grid point (the normals, normalised on the grid) and of the atom."""
    density = _densities(components).sum(0)
    density = density / density.sum()
    with np.errstate(divide="ignore"):
        return np.concatenate([np.log1p(-never) + np.log(np.maximum(density, 1e-300)), [np.log(never)]])


def _e_step(n, c, eta, log_w, unsolved):
    """Each problem's posterior over the grid and the atom, and the marginal log-likelihood."""
    z = eta[:, None] - GRID[None, :]
    log_joint = np.empty((n.shape[0], len(GRID) + 1))
    log_joint[:, :-1] = c @ _log_sig(z) + (n - c) @ _log_miss_one(z)
    log_joint[:, -1] = np.where(unsolved, 0.0, -np.inf)
    log_joint += log_w[None, :]
    top = log_joint.max(axis=1, keepdims=True)
    log_marginal = top[:, 0] + np.log(np.exp(log_joint - top).sum(axis=1))
    return np.exp(log_joint - log_marginal[:, None]), float(log_marginal.sum())


def _m_components(mass: np.ndarray, components: np.ndarray) -> np.ndarray:
    """The normals' weights, means and sds from the posterior mass on the grid (one EM step of the mixture)."""
    density = _densities(components)
    share = density / np.maximum(density.sum(0, keepdims=True), 1e-300) * mass[None, :]
    total = np.maximum(share.sum(1), 1e-12)
    mu = (share * GRID).sum(1) / total
    sd = np.maximum(np.sqrt((share * (GRID[None, :] - mu[:, None]) ** 2).sum(1) / total), SD_FLOOR)
    return np.column_stack([total / total.sum(), mu, sd])


def _trend(eta, x):
    """The abilities' line in compute (least squares over runs of known compute) and its spread."""
    known = np.isfinite(x)
    if known.sum() >= 2 and np.ptp(x[known]) > 0:
        slope, intercept = np.polyfit(x[known], eta[known], 1)
    else:
        slope, intercept = 0.0, float(np.mean(eta))
    centre = np.where(known, intercept + slope * np.nan_to_num(x), intercept)
    spread = max(float(np.sqrt(np.mean((eta - centre) ** 2))), SPREAD_FLOOR)
    return centre, (float(intercept), float(slope), spread)


def _fit(n, c, x, distribution: str, start: LadderFit | None = None, max_iter: int | None = None) -> LadderFit:
    """Generalised EM of the ladder model on (problems x runs) counts ``n``, ``c``; abilities' prior from ``x``."""
    from benchcast.fitting.engine.search import single_threaded_blas

    with single_threaded_blas():  # (problems x runs) @ (runs x grid) is small: BLAS threads only spin on a busy machine
        unsolved = ~(c > 0).any(axis=1)
        if start is not None:
            eta, components, never = start.eta.copy(), start.components.copy(), start.never
        else:
            rate = np.clip(c.sum(0) / np.maximum(n.sum(0), 1), 1e-5, 1 - 1e-5)
            eta = np.log(rate / (1 - rate))
            eta -= eta.mean()
            spread = 3.0
            components = (
                np.array([[1.0, 2.0, spread]])
                if distribution == "normal"
                else np.array([[0.5, -1.0, spread], [0.5, 6.0, spread]])
            )
            never = float(np.clip(0.5 * unsolved.mean(), 1e-6, 0.5))
        previous, converged, iteration = -np.inf, False, 0
        limit = MAX_ITER if max_iter is None else max_iter
        for iteration in range(1, limit + 1):  # noqa: B007  (how many it took is part of the fit)
            centre, trend = _trend(eta, x)
            posterior, log_likelihood = _e_step(n, c, eta, _grid_log_weights(components, never), unsolved)
            objective = log_likelihood - 0.5 * np.sum((eta - centre) ** 2) / trend[2] ** 2
            if not np.isfinite(objective) or np.abs(eta).max() > ABILITY_LIMIT:
                break  # an ability past the grid's reach: the counts push it to infinity (all or nothing solved)
            if abs(objective - previous) < TOL * len(n):
                converged = True
                break
            previous = objective
            mass = posterior.sum(0)
            never = float(np.clip(mass[-1] / len(n), 1e-8, 1 - 1e-8))
            components = _m_components(mass[:-1], components)
            z = eta[:, None] - GRID[None, :]
            s = np.exp(_log_sig(z))
            trials, wins = n.T @ posterior[:, :-1], c.T @ posterior[:, :-1]
            precision = 1.0 / trend[2] ** 2
            gradient = (wins - trials * s).sum(1) - precision * (eta - centre)
            curvature = (trials * s * (1 - s)).sum(1) + precision
            eta = eta + np.clip(gradient / curvature, -MAX_STEP, MAX_STEP)
            shift = eta.mean()  # abilities and difficulties move together: hold the abilities' mean at 0
            eta, components[:, 1] = eta - shift, components[:, 1] - shift
        centre, trend = _trend(eta, x)
        posterior, log_likelihood = _e_step(n, c, eta, _grid_log_weights(components, never), unsolved)
        return LadderFit(
            [],
            eta,
            trend,
            x,
            distribution,
            components,
            never,
            posterior,
            log_likelihood,
            converged and np.isfinite(log_likelihood),
            iteration,
            n > 0,
        )


def ladder_matrix(counts: pd.DataFrame, runs: list) -> tuple[np.ndarray, np.ndarray]:
    """(problems x runs) n and c from per-problem counts (0 where a run lacks a problem)."""
    frame = counts.assign(run=counts["run"].astype(str), problem_id=counts["problem_id"].astype(str))
    if frame.duplicated(["run", "problem_id"]).any():
        raise DataError("a run lists one problem twice: the ladder model needs one (n, c) per run and problem.")
    n = frame.pivot(index="problem_id", columns="run", values="n").reindex(columns=runs).fillna(0.0)
    c = frame.pivot(index="problem_id", columns="run", values="c").reindex(columns=runs).fillna(0.0)
    return n.to_numpy(float), c.to_numpy(float)


def standardised_log_compute(compute: dict | None, runs: list) -> np.ndarray:
    """Each run's log10 compute, centred and scaled over the runs that have one (NaN where unknown)."""
    compute = compute or {}
    values = np.array([float(compute.get(r, np.nan)) for r in runs])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_c = np.where(values > 0, np.log10(values), np.nan)
    known = np.isfinite(log_c)
    if not known.any():
        return log_c
    return (log_c - log_c[known].mean()) / (log_c[known].std() or 1.0)


def fit_ladder(n, c, x, *, distribution: str = "auto", max_iter: int | None = None) -> LadderFit:
    """Fit the ladder model to every run's counts at once.

    Parameters
    ----------
    n, c : ndarray (problems, runs)
        Samples and successes per problem and run (n = 0 where a run lacks the problem).
    x : ndarray (runs,)
        Each run's standardised log compute (NaN: unknown; the abilities' prior is then their mean).
    distribution : str
        ``'auto'`` (least BIC of :data:`DISTRIBUTIONS`) or one of them.
    max_iter : int, optional
        EM iterations at most (default :data:`MAX_ITER`).

    Returns
    -------
    LadderFit

    Raises
    ------
    DataError
        Where no problem was solved by any run: nothing places the difficulties.
    """
    n, c = np.asarray(n, float), np.asarray(c, float)
    if not (c > 0).any():
        raise DataError("no run solved any problem: the ladder places no difficulty.")
    names = DISTRIBUTIONS if distribution == "auto" else (distribution,)
    fits = [_fit(n, c, np.asarray(x, float), name, max_iter=max_iter) for name in names]
    held = [f for f in fits if f.converged] or fits
    return min(held, key=lambda f: f.bic(len(n)))


def bootstrap_ladder(fit: LadderFit, n, c, ks, *, replicates: int, rng, borrowed=None) -> np.ndarray:
    """pass@k (replicates x runs x ks; NaN: failed) of refits on resampled problems; ``borrowed`` runs draw eta too."""
    n, c = np.asarray(n, float), np.asarray(c, float)
    borrowed = np.zeros(len(fit.eta), bool) if borrowed is None else np.asarray(borrowed, bool)
    out = np.full((replicates, len(fit.eta), len(np.atleast_1d(ks))), np.nan)
    for b in range(replicates):
        pick = rng.integers(0, len(n), len(n))
        if not (c[pick] > 0).any():
            out[b] = 0.0
            continue
        again = _fit(n[pick], c[pick], fit.x, fit.distribution, start=fit, max_iter=REFIT_ITER)
        eta = again.eta + borrowed * again.trend[2] * rng.standard_normal(len(fit.eta))
        if np.all(np.isfinite(eta)):
            out[b] = again.pass_at_k(ks, eta)
    return out


def _runs(counts: pd.DataFrame) -> list:
    """The runs of ``counts`` as strings, in order of appearance."""
    return list(dict.fromkeys(counts["run"].astype(str)))


def _origin_rows(frames: dict, full: dict, x_of: dict, judged: list, origin: str, distribution: str) -> list[dict]:
    """The ladder fitted to thinned ``frames``, each run of ``judged`` judged one decade of k past its thinned n."""
    runs = list(frames)
    n, c = ladder_matrix(pd.concat([f.assign(run=r) for r, f in frames.items()], ignore_index=True), runs)
    if not (c > 0).any():
        return []
    fit = fit_ladder(n, c, np.array([x_of[r] for r in runs]), distribution=distribution)
    if not fit.converged:
        return []
    rows = []
    for run in judged:
        m = int(frames[run]["n"].min())
        k = 10 * m
        truth = float(pass_at_k_per_problem(*full[run], [k]).mean())
        model = fit.pass_at_k([m, k])[runs.index(run)]
        thinned = frames[run]["n"].to_numpy(np.int64), frames[run]["c"].to_numpy(np.int64)
        forecast = float(model[1])
        if thinned[1].any():  # anchored at the thinned counts' measured pass@m, as the forecasts past n are
            measured = pass_at_k_per_problem(*thinned, [m]).mean()
            forecast = float(from_x(anchor(to_x(model[1:]), to_x(model[0]), to_x(measured))[0, 0]))
            if np.isnan(forecast):  # the model's pass@m is 0 or 1: no step to k, no forecast to judge
                continue
        rows.append(
            {
                "origin": origin,
                "origin_n": m,
                "k": k,
                "candidate": "joint",
                "forecast": forecast,
                "truth": truth,
                "error": forecast - truth,
                "error_x": x_error(forecast, truth),
                "run": run,
            }
        )
    return rows


def joint_backtest(
    counts: pd.DataFrame, compute: dict | None, seed: int, min_samples: int, distribution: str = "auto"
) -> pd.DataFrame:
    """The ladder's backtest in k: each run thinned as the per-run candidates, and the largest third across runs."""
    runs = _runs(counts)
    groups = {str(r): g for r, g in counts.groupby(counts["run"].astype(str), sort=False)}
    full = {r: estimator_counts(groups[r]) for r in runs}
    origins = {r: thinned_origins(*full[r], seed + i, min_samples) for i, r in enumerate(runs)}
    x = standardised_log_compute(compute, runs)
    x_of = dict(zip(runs, x, strict=True))

    def thinned(run, step):
        m, c = origins[run][step]
        return pd.DataFrame({"problem_id": groups[run]["problem_id"].to_numpy(), "n": m, "c": c})

    rows = []
    for step, origin in enumerate(("n/10", "n/100")):
        keep = [r for r in runs if len(origins[r]) > step]
        if keep:
            rows += _origin_rows({r: thinned(r, step) for r in keep}, full, x_of, keep, origin, distribution)
    known = [r for r in runs if np.isfinite(x_of[r])]
    held = sorted(known, key=x_of.get)[-max(1, int(round(ACROSS_SHARE * len(known)))) :] if len(known) >= 3 else []
    held = [r for r in held if origins[r]]
    if held:
        frames = {
            r: thinned(r, 0)
            if r in held
            else pd.DataFrame({"problem_id": groups[r]["problem_id"].to_numpy(), "n": full[r][0], "c": full[r][1]})
            for r in runs
        }
        rows += _origin_rows(frames, full, x_of, held, "across runs", distribution)
    return pd.DataFrame(rows)


@dataclass
class JointForecast:
    """The ladder model fitted to a benchmark's full counts, and what it can answer."""

    fit: LadderFit | None  # None where the model could not be fitted (doubt says why)
    runs: list  # the runs in the fit (one that solved nothing and has no compute is left out)
    log_compute: dict  # run -> log10 compute (NaN: unknown)
    solved: dict  # run -> problems solved at least once
    doubt: str = ""  # why the model is not used (empty: it is)
    _matrix: tuple | None = None

    @property
    def usable(self) -> bool:
        """Fitted and converged."""
        return self.fit is not None and not self.doubt

    def refusal(self, run: str) -> str:
        """Why the ladder cannot answer ``run`` (empty: it can): one that solved nothing needs a compute in range."""
        if not self.usable:
            return self.doubt
        if self.solved.get(run, 0):
            return ""
        log_c = self.log_compute.get(run, np.nan)
        if not np.isfinite(log_c):
            return "it solved nothing and its compute is unknown (give run sizes: params and tokens, or flops)"
        placed = np.array([v for r, v in self.log_compute.items() if self.solved.get(r, 0) and np.isfinite(v)])
        if len(np.unique(placed)) < 2:
            return "fewer than two runs that solved something have a known, distinct compute: no line to place it on"
        low, high = placed.min(), placed.max()
        span = high - low
        if not low - span <= log_c <= high + span:
            return (
                f"its compute (log10 C = {log_c:.2f}) lies outside the ladder's range [{low - span:.2f}, "
                f"{high + span:.2f}] (the runs that solved something, extended by their span)"
            )
        return ""

    def draws(self, ks, replicates: int, seed: int) -> np.ndarray:
        """Bootstrap pass@k (replicates x runs x ks), runs that solved nothing drawing their ability too."""
        n, c = self._matrix
        borrowed = np.array([not self.solved.get(r, 0) for r in self.runs])
        return bootstrap_ladder(
            self.fit, n, c, ks, replicates=replicates, rng=np.random.default_rng(seed), borrowed=borrowed
        )

    def rows(
        self,
        run: str,
        ks,
        reach: float,
        *,
        tau: float,
        draws,
        level: float,
        all_ks,
        seed: int,
        measured: float | None = None,
    ) -> pd.DataFrame:
        """One run's rows past its n: the point anchored to its ``measured`` pass@n, the interval of ``draws``."""
        i = self.runs.index(run)
        ks = np.asarray(ks, float)
        x_point = to_x(self.fit.pass_at_k(ks)[i])
        shift = 0.0
        floor = np.inf  # no floor: a run not anchored (it solved nothing, or no measured value was given)
        if measured is not None and self.solved.get(run, 0):
            at_n = to_x(self.fit.pass_at_k([reach])[i, 0])
            floor = float(to_x(measured))
            anchored = anchor(x_point, at_n, floor)[0]
            reason = model_at_n_reason(at_n) if np.isfinite(floor) else ""
            if reason:
                raise DataError(f"joint: {reason}")
            with np.errstate(invalid="ignore"):
                shift = np.where(np.isfinite(anchored) & np.isfinite(x_point), anchored - x_point, 0.0)
            x_point = anchored
        out = pd.DataFrame({"k": ks, "pass_at_k": from_x(monotone(x_point)[0]), "source": "joint"})
        out["extrapolation"], out["tau"] = ks / reach, tau
        notes = []
        if not self.solved.get(run, 0):
            notes.append("no problem solved in its own samples: placed on the ladder by its compute")
        if draws is not None:
            x = to_x(draws[:, i, np.searchsorted(np.asarray(all_ks, float), ks)])
            z = np.random.default_rng(seed).standard_normal(len(x))
            x = x + shift + z[:, None] * tau * np.log10(ks / reach)[None, :]
            x = monotone(np.column_stack([np.full(len(x), floor), x]))[:, 1:]
            out["lower"], out["upper"], out["replicates"] = band(x, level)
            if not out["replicates"].iloc[0]:
                notes.append("no bootstrap refit of the ladder held: no interval")
        out["note"] = "; ".join(notes)
        return out

    def describe(self) -> str:
        """The model in one clause."""
        if self.fit is None:
            return f"joint: {self.doubt}"
        f = self.fit
        placed = np.isfinite(np.asarray(f.x, float)).sum() >= 2
        line = (
            f"abilities on a line in log compute (slope {f.trend[1]:.2f} per sd, spread {f.trend[2]:.2f})"
            if placed
            else f"abilities around their mean (spread {f.trend[2]:.2f}; no compute for two runs)"
        )
        return (
            f"joint: logistic link, difficulties {f.distribution} + {100 * f.never:.0f} % never solvable, "
            + line
            + (f"; {self.doubt}" if self.doubt else "")
        )


def fit_joint(counts: pd.DataFrame, compute: dict | None) -> JointForecast:
    """The ladder model on a benchmark's counts and its runs' compute (FLOPs; may be partial), with its doubt."""
    runs = _runs(counts)
    compute = compute or {}
    log_compute = {r: float(np.log10(compute[r])) if float(compute.get(r, 0) or 0) > 0 else np.nan for r in runs}
    solved = counts.groupby(counts["run"].astype(str), sort=False)["c"].apply(lambda s: int((s > 0).sum())).to_dict()
    if "problem_id" not in counts:
        return JointForecast(None, runs, log_compute, solved, "no problem_id: problems cannot be matched across runs")
    fitted = [r for r in runs if solved[r] or np.isfinite(log_compute[r])]
    if not any(solved[r] for r in fitted):
        return JointForecast(None, fitted, log_compute, solved, "no run solved any problem")
    n, c = ladder_matrix(counts[counts["run"].astype(str).isin(fitted)], fitted)
    fit = replace(fit_ladder(n, c, standardised_log_compute(compute, fitted)), runs=list(fitted))
    doubt = "" if fit.converged else f"the joint fit across runs did not converge in {fit.iterations} iterations"
    return JointForecast(fit, fitted, log_compute, solved, doubt, (n, c))
