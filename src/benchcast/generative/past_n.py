"""pass@k far past the samples drawn: candidates (:data:`CANDIDATES`: ``power_k``, the success-rate families, the
``joint`` ladder model) chosen by a backtest in k inside each run's samples, an interval widened by the error per
decade of k it measured, and every run answered or refused (the method: docs/guide/passk.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.families import FAMILIES
from benchcast.generative.ladder import JOINT_REPLICATES, JointForecast, fit_joint, joint_backtest
from benchcast.generative.passk import pass_at_k_per_problem
from benchcast.generative.per_run import (  # noqa: F401 (re-exported: the per-run candidates' names)
    BACKTEST_COLUMNS,
    MIN_ORIGIN_SAMPLES,
    ORIGINS,
    PER_RUN,
    CandidateFit,
    _anchored_family,
    _power_fit,
    _power_x,
    backtest_in_k,
    fit_candidate,
)
from benchcast.generative.success import fit_family
from benchcast.generative.xscale import band, estimator_counts, monotone, to_x
from benchcast.generative.xscale import from_x as _from_x
from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable
from benchcast.validation import check_level, check_replicates

CANDIDATES = (*PER_RUN, "joint")  # joint: the ladder model of every run at once (benchcast.generative.ladder)
# Study 4 of benchmarks/passk_past_n.py (the simulated benchmarks of study 1, 3 replicates) sets these constants.
# TAU_PRIOR: the error per decade of k on x = log(-log pass@k) that a benchmark's origins are shrunk toward; the
# origins' own RMS there was 0.15-0.39 across distributions and n, median 0.23. PRIOR_WEIGHT is a choice: two
# pseudo-origins, so that a benchmark of one run with one origin is not trusted alone.
TAU_PRIOR = 0.25
PRIOR_WEIGHT = 2.0
# The origins step from n/10 to n; a forecast steps on from n and erred more per decade: the power law's 90 %
# intervals covered 0.83 at 10 n and 0.77 at 100 n with the shrunk error, 0.93 and 0.88 with 1.5 times it.
REACH = 1.5
# A family replaces the power law in k only where its backtest error is below this share of the power law's: the
# one-decade origins judge the families poorly, and auto lost to power_k on 5, 4, 3 and 1 of 12 distribution x n
# cells at margins 1, 0.8, 0.67 and 0.5; on none at 0.4 (where it chose power_k on every cell).
FAMILY_MARGIN = 0.4
# The joint model replaces the power law in k only where the evidence separates them: its absolute errors below
# power_k's on the same origins by more than JOINT_Z standard errors of the paired difference.
JOINT_Z = 2.0
FAMILY_REPLICATES = 100  # each family replicate is a likelihood refit; power_k's are one vectorised solve


def _solved_text(n, c) -> str:
    """'S of P problems solved in N samples'."""
    solved = int((np.asarray(c) > 0).sum())
    return f"{solved} of {len(c)} problems solved in {int(np.min(n))} samples"


@dataclass
class PassKPastN(ResultView):
    """pass@k past the samples drawn for the runs of one benchmark: candidates judged by a backtest in k.

    Parameters
    ----------
    candidates : 'auto' or str or sequence of str
        ``'auto'`` judges every one of :data:`CANDIDATES`; a name (or several) restricts the choice.
    level : float
        Interval level.
    n_boot : int
        Bootstrap replicates over problems (0: no interval); a family refits at most
        :data:`FAMILY_REPLICATES` of them.
    seed : int
        Seed of the thinning, the resampling and the extrapolation error.
    compute : dict of str to float, optional
        Each run's training compute (FLOPs), which places the runs on the joint model's line of ability.

    Attributes
    ----------
    backtest_ : DataFrame
        Every origin of every run (:func:`backtest_in_k`), with ``run``.
    scores_ : DataFrame
        Per candidate: origins judged, MAE and bias of the forecast at one decade past the origin.
    chosen_ : str
        The candidate of least MAE; ``power_k`` unless a family's is below :data:`FAMILY_MARGIN` times its own or
        the joint model's paired errors beat it by :data:`JOINT_Z` standard errors, and without origins.
    joint_ : JointForecast or None
        The joint model on the full counts (:func:`benchcast.generative.ladder.fit_joint`).
    evidence_ : str
        The joint model against ``power_k`` in the backtest, in one sentence.
    tau_ : float
        The chosen candidate's error per decade of k on the x scale, shrunk toward :data:`TAU_PRIOR` and scaled
        by :data:`REACH` (a forecast reaches further than the origins).
    """

    candidates: tuple[str, ...] | str = "auto"
    level: float = 0.9
    n_boot: int = 200
    seed: int = 0
    compute: dict | None = None
    backtest_: pd.DataFrame = field(default_factory=pd.DataFrame)
    scores_: pd.DataFrame = field(default_factory=pd.DataFrame)
    chosen_: str = ""
    tau_: float = float("nan")
    benchmark_: str = ""
    joint_: JointForecast | None = None
    evidence_: str = ""
    joint_tau_: float = float("nan")
    fallback_: str = ""
    _counts: pd.DataFrame | None = None

    def _names(self) -> tuple[str, ...]:
        names = (
            CANDIDATES
            if self.candidates == "auto"
            else ((self.candidates,) if isinstance(self.candidates, str) else tuple(self.candidates))
        )
        unknown = [c for c in names if c not in CANDIDATES]
        if unknown or not names:
            raise DataError(
                f"unknown candidate {unknown[0] if unknown else ''!r}: expected one of "
                f"{', '.join(CANDIDATES)} (or 'auto')."
            )
        return names

    def fit(self, counts: pd.DataFrame, benchmark: str = "") -> PassKPastN:
        """Backtest every candidate in k on each run, choose one, and measure its error per decade.

        Parameters
        ----------
        counts : DataFrame
            Per-problem counts of one benchmark: ``run``, ``n``, ``c`` (and ``n_first``, ``c_first`` when samples
            were drawn in rounds).
        benchmark : str
            Its name, for the output.

        Returns
        -------
        PassKPastN
            This forecaster, fitted.
        """
        check_level(self.level)
        check_replicates(self.n_boot, allow_zero=True)
        names = self._names()
        self._counts, self.benchmark_ = counts, benchmark
        per_run = tuple(name for name in names if name != "joint")
        frames = []
        for i, (run, group) in enumerate(counts.groupby("run", sort=False)):
            if per_run:
                n, c = estimator_counts(group)
                frames.append(backtest_in_k(n, c, candidates=per_run, seed=self.seed + i).assign(run=str(run)))
        nothing = any(not estimator_counts(g)[1].any() for _, g in counts.groupby("run", sort=False))
        if "joint" in names or nothing:  # the joint model answers the runs a per-run candidate cannot
            self.joint_ = fit_joint(counts, self.compute)
            if "joint" in names and self.joint_.usable:
                joint = joint_backtest(
                    counts, self.compute, self.seed, MIN_ORIGIN_SAMPLES, self.joint_.fit.distribution
                )
                across = set(joint["run"][joint["origin"] == "across runs"]) if len(joint) else set()
                mine = [f[f["run"].isin(across) & (f["origin"] == "n/10")].assign(origin="across runs") for f in frames]
                frames += [*mine, joint]
        frames = [f for f in frames if len(f)]
        empty = pd.DataFrame(columns=[*BACKTEST_COLUMNS, "run"])
        self.backtest_ = pd.concat(frames, ignore_index=True) if frames else empty
        judged = self.backtest_
        if len(names) > 1 and not judged.empty:  # compare on the origins every candidate answered
            answered = judged.groupby(["run", "origin"])["candidate"].transform("nunique") == len(names)
            judged = judged[answered]
        self.scores_ = (
            pd.DataFrame(columns=["candidate", "origins", "mae", "bias"])
            if judged.empty
            else (
                judged.groupby("candidate", sort=False)["error"]
                .agg(origins="size", mae=lambda e: float(np.abs(e).mean()), bias="mean")
                .reset_index()
            )
        )
        self.chosen_ = self._choose(judged, names)
        if self.chosen_ == "joint" and not self.joint_.usable:
            self.fallback_ = f"{self.joint_.doubt}: the per-run forecaster instead"
            self.chosen_ = self._choose(judged[judged["candidate"] != "joint"], per_run or ("power_k",))
        self.tau_ = _tau(judged, self.chosen_)
        self.joint_tau_ = _tau(self.backtest_, "joint")
        return self

    def _choose(self, judged: pd.DataFrame, names: tuple) -> str:
        """The rule: least MAE, ``power_k`` unless a family beats it by the margin or the joint model by JOINT_Z."""
        mae = {k: v for k, v in zip(self.scores_["candidate"], self.scores_["mae"], strict=True) if k in names}
        default = "power_k" if "power_k" in names else names[0]
        if default != "power_k" or default not in mae:
            return min(mae, key=mae.get) if mae and default != "power_k" else default
        qualified = [default] + [f for f in FAMILIES if f in mae and mae[f] < FAMILY_MARGIN * mae[default]]
        if "joint" in mae:
            wide = judged.pivot_table(index=["run", "origin"], columns="candidate", values="error", aggfunc="first")
            gain = (wide[default].abs() - wide["joint"].abs()).dropna().to_numpy(float)
            z = gain.mean() / (gain.std(ddof=1) / np.sqrt(len(gain))) if len(gain) > 1 and gain.std() > 0 else 0.0
            separated = mae["joint"] < mae[default] and z > JOINT_Z
            # z > 0: the joint model's absolute errors are the smaller; |z| > JOINT_Z: the two are separated
            if separated:
                verdict = f"the joint model's errors smaller by {z:.1f} standard errors: the joint model chosen"
            elif z < -JOINT_Z:
                verdict = f"power_k's errors smaller by {-z:.1f} standard errors: the power law in k stays"
            else:
                verdict = f"not separated by {JOINT_Z:g} standard errors, the power law in k stays"
            self.evidence_ = (
                f"joint MAE {mae['joint']:.3f} vs power_k {mae[default]:.3f} on {len(gain)} origins (paired z = "
                f"{z:+.1f}, > 0 where the joint model's errors are smaller): {verdict}"
            )
            qualified += ["joint"] if separated else []
        return min(qualified, key=mae.get)

    def predict(self, ks) -> pd.DataFrame:
        """pass@k past each run's n, with its interval; a run that cannot be forecast gets a refusal row.

        Parameters
        ----------
        ks : array_like
            Attempts (those at or below a run's n are the estimator's, and skipped here).

        Returns
        -------
        DataFrame
            One row per (run, k > n): ``pass_at_k``, ``lower``, ``upper`` (all in [0, 1]), ``source`` (the
            candidate), ``extrapolation`` (k / n), ``tau`` and ``note``; a refused run has one row with
            ``source`` = ``'refused'``, no value, and the reason in ``note``.
        """
        if self._counts is None:
            raise DataError("the forecaster is not fitted: call fit(counts) first.")
        ks = np.unique(np.asarray(ks, float))
        rows, cache = [], {}
        for i, (run, group) in enumerate(self._counts.groupby("run", sort=False)):
            n_est, c_est = estimator_counts(group)
            beyond = ks[ks > n_est.min()]
            if not beyond.size:
                continue
            try:
                if self.chosen_ == "joint":
                    frame = self._joint_rows(str(run), beyond, float(n_est.min()), ks, cache, seed=self.seed + i)
                else:
                    frame = self._run_rows(group, beyond, seed=self.seed + i)
            except DataError as exc:
                frame = self._from_ladder(str(run), beyond, float(n_est.min()), ks, cache, str(exc), self.seed + i)
            if self.fallback_:
                frame["note"] = [f"{note}; {self.fallback_}" if note else self.fallback_ for note in frame["note"]]
            rows.append(frame.assign(run=run, problems=len(group)))
        return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()

    def _joint_rows(self, run: str, ks, reach: float, all_ks, cache: dict, *, seed: int) -> pd.DataFrame:
        """One run's rows from the joint model, its bootstrap drawn once for every run (kept in ``cache``)."""
        reason = self.joint_.refusal(run)
        if reason:
            raise DataError(f"the ladder cannot answer it: {reason}")
        if self.n_boot and "draws" not in cache:
            cache["draws"] = self.joint_.draws(all_ks, min(self.n_boot, JOINT_REPLICATES), self.seed)
        tau = self.tau_ if self.chosen_ == "joint" else self.joint_tau_
        group = self._counts[self._counts["run"].astype(str) == run]
        n_est, c_est = estimator_counts(group)
        measured = float(pass_at_k_per_problem(n_est, c_est, [int(reach)]).mean()) if len(group) else None
        out = self.joint_.rows(
            run,
            ks,
            reach,
            tau=tau,
            draws=cache.get("draws"),
            level=self.level,
            all_ks=all_ks,
            seed=seed,
            measured=measured,
        )
        _require_probabilities(out)
        return out

    def _from_ladder(self, run: str, ks, reach: float, all_ks, cache: dict, why: str, seed: int) -> pd.DataFrame:
        """A run the chosen candidate refused: answered by the joint model where it can, else refused (both reasons)."""
        if self.joint_ is not None and self.chosen_ != "joint":
            try:
                out = self._joint_rows(run, ks, reach, all_ks, cache, seed=seed)
                if self.joint_.solved.get(run, 0):  # (a run that solved nothing: its note says so)
                    out["note"] = [
                        f"{self.chosen_} refused ({why})" + (f"; {note}" if note else "") for note in out["note"]
                    ]
                return out
            except DataError as exc:
                why = f"{why}; {exc}"
        return pd.DataFrame([{"k": ks.max(), "pass_at_k": np.nan, "source": "refused", "note": why}])

    def _run_rows(self, group: pd.DataFrame, ks: np.ndarray, *, seed: int) -> pd.DataFrame:
        """One run's rows past n: the chosen candidate's point, the widened bootstrap interval, its notes."""
        n, c = group["n"].to_numpy(np.int64), group["c"].to_numpy(np.int64)
        n_est, c_est = estimator_counts(group)
        reach = float(n_est.min())
        if not c.any():
            raise DataError(
                f"{_solved_text(n, c)}: pass@{ks.max():.0f} is not identifiable from this run alone (the "
                "counts say only that p is below about 1/n on every problem)"
            )
        chosen = fit_candidate(self.chosen_, n, c, ks, n_est=n_est, c_est=c_est)
        decades = np.log10(ks / reach)
        out = pd.DataFrame({"k": ks, "pass_at_k": _from_x(chosen.x), "source": self.chosen_})
        out["extrapolation"], out["tau"] = ks / reach, self.tau_
        notes = [f"{self.chosen_}: {', '.join(chosen.doubts)}"] if chosen.doubts else []
        if self.n_boot:
            rng = np.random.default_rng(seed)
            draws, measured = self._draws(chosen, n, c, n_est, c_est, ks, rng)
            errors = rng.standard_normal(len(draws))[:, None] * self.tau_ * decades[None, :]
            # each replicate from its own measured pass@n on: never below it, and non-decreasing in k (an error
            # of the sign that lowers pass@k cannot take it below what that replicate's problems measured)
            paths = monotone(np.column_stack([measured, draws + errors]))[:, 1:]
            out["lower"], out["upper"], out["replicates"] = band(paths, self.level)
            if not out["replicates"].iloc[0]:
                notes.append("no bootstrap replicate could be refitted: no interval")
            if chosen.doubts:  # as wide as the candidates disagree
                others = [
                    _from_x(fit.x)
                    for name in self._names()
                    if name != self.chosen_
                    if (fit := _try_candidate(name, n, c, ks, n_est, c_est)) is not None
                ]
                if others:
                    stack = np.vstack([out["pass_at_k"].to_numpy(), *others])
                    out["lower"] = np.minimum(out["lower"], stack.min(axis=0))
                    out["upper"] = np.maximum(out["upper"], stack.max(axis=0))
                    notes.append("the interval spans every candidate's forecast")
        if int((c > 0).sum()) == 1:
            notes.append(f"{_solved_text(n, c)}: the forecast rests on one problem")
        out["note"] = "; ".join(notes)
        _require_probabilities(out)
        return out

    def _draws(self, chosen: CandidateFit, n, c, n_est, c_est, ks, rng) -> tuple[np.ndarray, np.ndarray]:
        """x of the chosen candidate refitted on resampled problems (replicates x ks), and each one's measured x."""
        replicates = self.n_boot if chosen.candidate == "power_k" else min(self.n_boot, FAMILY_REPLICATES)
        picks = rng.integers(0, len(n), size=(replicates, len(n)))
        if chosen.candidate == "power_k":
            return _power_x(n_est, c_est, ks, picks)  # NaN: a resample with one usable point, which band sets aside
        reach = float(n_est.min())
        measured = to_x(pass_at_k_per_problem(n_est, c_est, [int(reach)])[picks, 0].mean(axis=1))
        draws = np.full((replicates, len(ks)), np.inf)  # a resample that solved nothing: pass@k = 0
        for i, pick in enumerate(picks):
            if c[pick].any():
                refit = fit_family(chosen.candidate, n[pick], c[pick], starts=[chosen.family_z])
                # NaN where the refit failed or its pass@n is 0 or 1 (no step from n to k): set aside by band
                try:
                    draws[i] = _anchored_family(refit, ks, n_est[pick], c_est[pick], reach)
                except DataError:
                    draws[i] = np.nan
        return draws, measured

    def to_dict(self) -> dict:
        """The choice, the error per decade and the backtest's scores."""
        return jsonable(
            {
                "benchmark": self.benchmark_,
                "chosen": self.chosen_,
                "tau_per_decade": self.tau_,
                "scores": self.scores_.to_dict("records"),
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """Per candidate: the origins it was judged on, its MAE and bias one decade of k past them."""
        return self.scores_.assign(chosen=self.scores_["candidate"] == self.chosen_)

    @property
    def title(self) -> str:
        return f"pass@k past n on {self.benchmark_ or 'one benchmark'}: {self.chosen_} chosen by a backtest in k"

    @property
    def notes(self) -> list[str]:
        """The rule, the error per decade, and whether the backtest had origins to judge by."""
        notes = [self.rule()]
        if self.scores_.empty:
            notes.append("no run left an origin (n >= 40 and something solved in n/10 samples): power_k by default")
        return notes

    def rule(self) -> str:
        """The choice and the interval in one sentence, as the command prints it.

        Returns
        -------
        str
        """
        judged = int(self.scores_["origins"].max()) if not self.scores_.empty else 0
        parts = () if self.joint_ is None else (self.joint_.describe(), self.evidence_, self.fallback_)
        how = (
            f"least MAE one decade of k past {judged} thinned origins; a family only below {FAMILY_MARGIN:g} x "
            "power_k's"
            if judged
            else "by default: no thinned origin to judge by"
        )
        tau = (
            f"{REACH:g} x the origins' RMS shrunk toward {TAU_PRIOR} by {PRIOR_WEIGHT:g} origins"
            if judged
            else f"{REACH:g} x the prior {TAU_PRIOR}: no origin measured it"
        )
        return (
            f"{self.benchmark_ or 'benchmark'}: {self.chosen_} ({how}); error per decade of k {self.tau_:.3f} on "
            f"log(-log pass@k) ({tau}), added to the bootstrap over problems" + "".join(f"; {p}" for p in parts if p)
        )


def _tau(judged: pd.DataFrame, candidate: str) -> float:
    """A candidate's error per decade of k: its origins' RMS on the x scale shrunk toward TAU_PRIOR, times REACH."""
    inside = (judged["candidate"] == candidate) & (judged["truth"] > 0) & (judged["truth"] < 1) if len(judged) else []
    own = judged.loc[inside, "error_x"].to_numpy(float) if len(judged) else np.zeros(0)  # x is infinite at 0 and 1
    own = own[np.isfinite(own)]
    return float(REACH * np.sqrt((np.sum(own**2) + PRIOR_WEIGHT * TAU_PRIOR**2) / (len(own) + PRIOR_WEIGHT)))


def _try_candidate(name: str, n, c, ks, n_est, c_est) -> CandidateFit | None:
    """A candidate's fit, or None where these counts do not identify it."""
    try:
        return fit_candidate(name, n, c, ks, n_est=n_est, c_est=c_est)
    except DataError:
        return None


def _require_probabilities(frame: pd.DataFrame) -> None:
    """The last guard: a value that is not a probability is an error, never a printed number (a bound may be NaN)."""
    for column in ("pass_at_k", "lower", "upper"):
        if column in frame:
            values = frame[column].to_numpy(float)
            allowed = np.isfinite(values) | (np.isnan(values) & (column != "pass_at_k"))
            if not np.all(allowed & ~(values < 0) & ~(values > 1)):
                raise DataError(
                    f"the model gave {column} = {values[~((values >= 0) & (values <= 1))][0]!r}, not a "
                    "probability: no forecast rather than a wrong one"
                )


def passk_table(
    counts: pd.DataFrame,
    ks,
    *,
    uncertainty=None,
    extrapolate_to: int | None = None,
    family: str = "auto",
    compute: dict | None = None,
) -> pd.DataFrame:
    """pass@k per (run, benchmark): the unbiased estimator with its bootstrap interval up to each run's n, and past
    it (the asked k, and a geometric grid up to ``extrapolate_to``) the forecaster of :class:`PassKPastN`, fitted
    per benchmark; a run it cannot answer gets a ``refused`` row that says why.

    Parameters
    ----------
    counts : DataFrame
        Per-problem counts (``run``, ``benchmark``, ``n``, ``c``; see
        :func:`benchcast.generative.samples.read_counts`).
    ks : array_like of int
        The k values.
    uncertainty : Uncertainty, optional
        Bootstrap replicates over problems (0: no interval), the interval level (the first) and the seed of the
        resampling, the thinning and the extrapolation error (default: 1000 replicates, 90 %, seed 0; the interval
        method is not read).
    extrapolate_to : int, optional
        Largest k forecast past n (adds a geometric grid of k up to it).
    family : str
        ``'auto'`` (chosen by the backtest in k) or one of :data:`CANDIDATES`.
    compute : dict of str to float, optional
        Each run's training compute (FLOPs): the joint model's line of ability (a run that solved nothing is placed
        on it; without it such a run is refused).

    Returns
    -------
    DataFrame
        One row per (run, benchmark, k): ``pass_at_k`` in [0, 1] with ``lower``/``upper``, ``source``
        (``estimator``, the candidate, ``joint``, or ``refused``), ``problems``, and past n
        ``extrapolation`` (k / n), ``tau`` and ``note``.
    """
    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.generative.passk import bootstrap_pass_at_k

    unc = uncertainty or Uncertainty(1000, levels=0.9)
    n_boot, level, seed = unc.n_boot, unc.level, unc.seed
    if extrapolate_to is not None and (int(extrapolate_to) != extrapolate_to or extrapolate_to < 1):
        raise DataError(f"extrapolate_to must be a number of attempts k >= 1, got {extrapolate_to!r}.")
    ks = np.unique(np.asarray(ks, int))
    frames, rules = [], []
    for (run, bench), group in counts.groupby(["run", "benchmark"], sort=False):
        n_est, c_est = estimator_counts(group)
        sampled = ks[ks <= n_est.min()]
        if sampled.size:
            frame = bootstrap_pass_at_k(n_est, c_est, sampled, uncertainty=unc)
            frames.append(frame.assign(run=run, benchmark=bench, source="estimator", problems=len(group)))
    for bench, group in counts.groupby("benchmark", sort=False):
        reach = group.groupby("run", sort=False).apply(lambda g: int(estimator_counts(g)[0].min()))
        asked = ks[ks > reach.min()].astype(float)
        if extrapolate_to:
            grid = np.geomspace(max(reach.min(), 1), extrapolate_to, 8).round()
            asked = np.unique(np.concatenate([asked, grid]))
            asked = asked[(asked > reach.min()) & (asked <= max(extrapolate_to, ks.max()))]
        if not asked.size:
            continue
        model = PassKPastN(family, level, n_boot, seed, compute).fit(group, str(bench))
        rules.append(model.rule())
        past = model.predict(asked)
        frames.append(past.assign(benchmark=bench))
    if not frames:
        raise DataError("no (run, benchmark) group has enough samples for the requested k.")
    columns = ["run", "benchmark", "k", "pass_at_k", "stderr", "lower", "upper", "source", "problems"]
    out = pd.concat(frames, ignore_index=True)
    extra = ["extrapolation", "replicates", "tau", "note"]
    out = out[[c for c in columns + extra if c in out.columns]]
    out["k"] = out["k"].astype(int)  # the asked k and the grid are whole attempts
    out = out.sort_values(["run", "benchmark", "k"], kind="stable", ignore_index=True)
    out.attrs["rules"] = rules  # how each benchmark's runs were forecast past n, as the command prints it
    return out
