"""pass@k far past the samples drawn: candidates chosen by a backtest in k, an interval widened by the error it
measured, and every run answered or refused.

Candidates (:data:`CANDIDATES`):

* ``power_k``: the aggregate power law in k of Schaeffer et al. 2025, -log pass@k = a k^(-b), fitted by least
  squares of x = log(-log pass@k) on log k to the unbiased pass@k curve at k <= n; the simplest alternative.
* ``beta``, ``zi_beta``, ``beta_mix``: distributions of the per-problem success rate
  (:mod:`benchcast.generative.families`), fitted by likelihood with each problem's own n.

The backtest in k is a rolling origin inside each run's samples: thin every problem's samples to n/10
(hypergeometric, seeded) and forecast the unbiased pass@k at ten times the thinned n from the full counts; where
at least ``MIN_ORIGIN_SAMPLES`` remain, n/100 -> n/10 too. Both steps span one decade of k. Per benchmark, the
candidate of least mean absolute error over its runs' origins is chosen, ``power_k`` unless a family's error is
below :data:`FAMILY_MARGIN` times its own, and the chosen one's errors on the x scale give the error per decade
``tau`` (their RMS shrunk toward :data:`TAU_PRIOR` by :data:`PRIOR_WEIGHT` pseudo-origins, times :data:`REACH`).

The interval at k is the bootstrap over problems of the chosen candidate on the x scale, plus a normal error of
sd ``tau * log10(k / n)`` shared by every k of a replicate, mapped back by pass@k = exp(-exp(x)): every bound is a
probability. A chosen family on a bound or unconverged widens it to every candidate's forecast, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchcast.errors import DataError
from benchcast.generative.families import FAMILIES
from benchcast.generative.passk import pass_at_k_per_problem
from benchcast.generative.success import fit_family
from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable
from benchcast.validation import check_level, check_replicates

CANDIDATES = ("power_k", *FAMILIES)
MIN_ORIGIN_SAMPLES = 4  # a thinned run needs pass@1, @2, @4 for the power law's two parameters and one to spare
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
X_LIMIT = 10.0  # |log(-log p)| <= 10 spans p in [exp(-e^10), exp(-e^-10)]: 0 and 1 to any printed digit
FAMILY_REPLICATES = 100  # each family replicate is a likelihood refit; power_k's are one vectorised solve
BORROW_REPLICATES = 50  # each a joint refit across the ladder


def _to_x(p):
    """x = log(-log p): +inf at p = 0, -inf at p = 1."""
    with np.errstate(divide="ignore"):
        return np.log(-np.log(np.asarray(p, float)))


def _from_x(x):
    """pass@k = exp(-exp(x)), always in [0, 1]."""
    with np.errstate(over="ignore"):
        return np.exp(-np.exp(np.asarray(x, float)))


def _x_error(forecast: float, truth: float) -> float:
    """forecast - truth on the x scale, each clipped to +-X_LIMIT: a forecast of exactly 0 or 1 against a truth inside
    (0, 1) is a large error that tau must see, not an infinite one it would drop."""
    return float(np.clip(_to_x(forecast), -X_LIMIT, X_LIMIT) - np.clip(_to_x(truth), -X_LIMIT, X_LIMIT))


def _grid(n_min: int) -> np.ndarray:
    """The k of the unbiased curve the power law is fitted to: geometric in [1, n_min]."""
    return np.unique(np.geomspace(1, n_min, min(int(n_min), 16)).round().astype(int))


def _power_fit(log_k: np.ndarray, curves: np.ndarray):
    """Least squares of x on log k per row of ``curves`` (replicates x grid); points at pass@k 0 or 1 set aside."""
    x = _to_x(curves)
    usable = np.isfinite(x)
    w = usable.astype(float)
    count = w.sum(axis=1)
    xz = np.where(usable, x, 0.0)
    mean_k = (w * log_k).sum(axis=1) / np.maximum(count, 1)
    mean_x = xz.sum(axis=1) / np.maximum(count, 1)
    dk = (log_k[None, :] - mean_k[:, None]) * w
    denominator = (dk**2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(denominator > 0, (dk * (xz - mean_x[:, None])).sum(axis=1) / denominator, 0.0)
    intercept = mean_x - slope * mean_k
    intercept = np.where(count >= 2, intercept, np.nan)
    solved_all = curves[:, -1] >= 1  # pass@n = 1: every problem solved at least once, so pass@k = 1 past n
    intercept = np.where(solved_all, -np.inf, intercept)
    slope = np.where(solved_all, 0.0, slope)
    # a flat curve (every solved problem solved every time) has slope 0: pass@k stays where it is, rightly
    return intercept, np.minimum(slope, 0.0)


def _power_x(n, c, ks, picks=None) -> np.ndarray:
    """x of the power law in k at ``ks``, from the counts (rows: one per resample of problems in ``picks``)."""
    grid = _grid(int(np.min(n)))
    per_problem = pass_at_k_per_problem(n, c, grid)
    curves = per_problem.mean(axis=0)[None, :] if picks is None else per_problem[picks].mean(axis=1)
    intercept, slope = _power_fit(np.log(grid), curves)
    x = intercept[:, None] + slope[:, None] * np.log(np.asarray(ks, float))[None, :]
    nothing = ~(curves > 0).any(axis=1)  # a resample that solved nothing: pass@k = 0
    return np.where(nothing[:, None], np.inf, x)


@dataclass(frozen=True)
class CandidateFit:
    """One candidate's forecast from one run's counts: pass@k on the x scale and its doubts."""

    candidate: str
    x: np.ndarray
    doubts: tuple[str, ...] = ()
    family_z: np.ndarray | None = None


def fit_candidate(candidate: str, n, c, ks, *, n_est=None, c_est=None) -> CandidateFit:
    """One candidate fitted to one run's counts: its x = log(-log pass@k) at ``ks`` (the power law on the unbiased
    curve of ``n_est``, ``c_est``: the first round's where samples were drawn in rounds)."""
    if candidate not in CANDIDATES:
        raise DataError(f"unknown candidate {candidate!r}: expected one of {', '.join(CANDIDATES)} (or 'auto').")
    n, c = np.asarray(n, float), np.asarray(c, float)
    if candidate == "power_k":
        n_est, c_est = (n, c) if n_est is None else (np.asarray(n_est, float), np.asarray(c_est, float))
        if c.any() and not c_est.any():
            raise DataError(
                "the first round's samples solved nothing (later rounds did): the unbiased pass@k curve the power law "
                "in k is fitted to is 0 at every k; a family (--family beta) reads every round"
            )
        x = _power_x(n_est.astype(int), c_est.astype(int), ks)[0]
        if np.isnan(x).any():
            raise DataError("the unbiased pass@k curve has fewer than two points strictly between 0 and 1.")
        return CandidateFit(candidate, x)
    fitted = fit_family(candidate, n, c)
    doubts = ([] if fitted.converged else ["did not converge"]) + [f"{p} on its bound" for p in fitted.on_bound]
    x = _to_x(fitted.pass_at_k(ks))
    return CandidateFit(candidate, x, tuple(doubts), fitted.z)


def _thin(n, c, step: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Each problem's samples thinned to n // step without replacement (hypergeometric)."""
    m = n // step
    return m, rng.hypergeometric(c, n - c, m)


def backtest_in_k(n, c, *, candidates=CANDIDATES, seed: int = 0) -> pd.DataFrame:
    """The rolling origin in k inside one run's counts: per origin (n/10, n/100) and candidate, the forecast one decade
    of k past the thinned n against the full counts' unbiased pass@k there (``error``, and ``error_x`` on the x
    scale); an origin with too few samples, or whose thinned counts solved nothing, is left out."""
    n, c = np.asarray(n, np.int64), np.asarray(c, np.int64)
    rng = np.random.default_rng(seed)
    rows = []
    for step in (10, 100):
        m, thinned = _thin(n, c, step, rng)
        if m.min() < MIN_ORIGIN_SAMPLES:
            break
        if not thinned.any():
            continue
        k = 10 * int(m.min())
        truth = float(pass_at_k_per_problem(n, c, [k]).mean())
        for name in candidates:
            try:
                forecast = float(_from_x(fit_candidate(name, m, thinned, [k]).x[0]))
            except DataError:
                continue
            rows.append(
                {"origin_n": int(m.min()), "k": k, "candidate": name, "forecast": forecast, "truth": truth,
                 "error": forecast - truth, "error_x": _x_error(forecast, truth)}
            )  # fmt: skip
    return pd.DataFrame(rows, columns=["origin_n", "k", "candidate", "forecast", "truth", "error", "error_x"])


def _solved_text(n, c) -> str:
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

    Attributes
    ----------
    backtest_ : DataFrame
        Every origin of every run (:func:`backtest_in_k`), with ``run``.
    scores_ : DataFrame
        Per candidate: origins judged, MAE and bias of the forecast at one decade past the origin.
    chosen_ : str
        The candidate of least MAE; ``power_k`` unless a family's is below :data:`FAMILY_MARGIN` times its own, and
        without origins.
    tau_ : float
        The chosen candidate's error per decade of k on the x scale, shrunk toward :data:`TAU_PRIOR` and scaled
        by :data:`REACH` (a forecast reaches further than the origins).
    """

    candidates: tuple[str, ...] | str = "auto"
    level: float = 0.9
    n_boot: int = 200
    seed: int = 0
    backtest_: pd.DataFrame = field(default_factory=pd.DataFrame)
    scores_: pd.DataFrame = field(default_factory=pd.DataFrame)
    chosen_: str = ""
    tau_: float = float("nan")
    benchmark_: str = ""
    _counts: pd.DataFrame | None = None

    def _names(self) -> tuple[str, ...]:
        names = CANDIDATES if self.candidates == "auto" else (
            (self.candidates,) if isinstance(self.candidates, str) else tuple(self.candidates))  # fmt: skip
        unknown = [c for c in names if c not in CANDIDATES]
        if unknown or not names:
            raise DataError(f"unknown candidate {unknown[0] if unknown else ''!r}: expected one of "
                            f"{', '.join(CANDIDATES)} (or 'auto').")  # fmt: skip
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
        frames = []
        for i, (run, group) in enumerate(counts.groupby("run", sort=False)):
            n, c = _estimator_counts(group)
            origins = backtest_in_k(n, c, candidates=names, seed=self.seed + i)
            frames.append(origins.assign(run=run))
        self.backtest_ = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        judged = self.backtest_
        if len(names) > 1 and not judged.empty:  # compare on the origins every candidate answered
            answered = judged.groupby(["run", "origin_n"])["candidate"].transform("nunique") == len(names)
            judged = judged[answered]
        if judged.empty:
            self.scores_ = pd.DataFrame(columns=["candidate", "origins", "mae", "bias"])
        else:
            self.scores_ = (
                judged.groupby("candidate", sort=False)["error"]
                .agg(origins="size", mae=lambda e: float(np.abs(e).mean()), bias="mean")
                .reset_index()
            )
        mae = dict(zip(self.scores_["candidate"], self.scores_["mae"], strict=True))
        default = "power_k" if "power_k" in names else names[0]
        best = min(mae, key=mae.get) if mae else default
        margin = FAMILY_MARGIN if default == "power_k" else 1.0
        self.chosen_ = best if default not in mae or mae[best] < margin * mae[default] else default
        own = judged.loc[judged["candidate"] == self.chosen_, "error_x"].to_numpy(float) if len(judged) else np.zeros(0)
        own = own[np.isfinite(own)]
        pooled = np.sqrt((np.sum(own**2) + PRIOR_WEIGHT * TAU_PRIOR**2) / (len(own) + PRIOR_WEIGHT))
        self.tau_ = float(REACH * pooled)
        return self

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
        rows = []
        for i, (run, group) in enumerate(self._counts.groupby("run", sort=False)):
            n_est, c_est = _estimator_counts(group)
            beyond = ks[ks > n_est.min()]
            if not beyond.size:
                continue
            try:
                frame = self._run_rows(group, beyond, seed=self.seed + i)
            except DataError as exc:
                frame = pd.DataFrame([{"k": beyond.max(), "source": "refused", "note": str(exc)}])
            rows.append(frame.assign(run=run, problems=len(group)))
        return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()

    def _run_rows(self, group: pd.DataFrame, ks: np.ndarray, *, seed: int) -> pd.DataFrame:
        """One run's rows past n: the chosen candidate's point, the widened bootstrap interval, its notes."""
        n, c = group["n"].to_numpy(np.int64), group["c"].to_numpy(np.int64)
        n_est, c_est = _estimator_counts(group)
        reach = float(n_est.min())
        if not c.any():
            raise DataError(
                f"{_solved_text(n, c)}: pass@{ks.max():.0f} is not identifiable from this run alone (the "
                "counts say only that p is below about 1/n on every problem); --borrow uses the benchmark's other "
                "runs"
            )
        chosen = fit_candidate(self.chosen_, n, c, ks, n_est=n_est, c_est=c_est)
        decades = np.log10(ks / reach)
        out = pd.DataFrame({"k": ks, "pass_at_k": _from_x(chosen.x), "source": self.chosen_})
        out["extrapolation"], out["tau"] = ks / reach, self.tau_
        notes = [f"{self.chosen_}: {', '.join(chosen.doubts)}"] if chosen.doubts else []
        if self.n_boot:
            rng = np.random.default_rng(seed)
            draws = self._draws(chosen, n, c, n_est, c_est, ks, rng)
            errors = rng.standard_normal(len(draws))[:, None] * self.tau_ * decades[None, :]
            out["lower"], out["upper"], out["replicates"] = _band(draws + errors, self.level)
            if not out["replicates"].iloc[0]:
                notes.append("no bootstrap replicate could be refitted: no interval")
            if chosen.doubts:  # as wide as the candidates disagree
                others = [_from_x(fit.x) for name in self._names() if name != self.chosen_
                          if (fit := _try_candidate(name, n, c, ks, n_est, c_est)) is not None]  # fmt: skip
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

    def _draws(self, chosen: CandidateFit, n, c, n_est, c_est, ks, rng) -> np.ndarray:
        """x of the chosen candidate refitted on problems resampled with replacement (replicates x ks)."""
        replicates = self.n_boot if chosen.candidate == "power_k" else min(self.n_boot, FAMILY_REPLICATES)
        picks = rng.integers(0, len(n), size=(replicates, len(n)))
        if chosen.candidate == "power_k":
            x = _power_x(n_est, c_est, ks, picks)
            return x  # NaN: a resample with one usable point, which _band sets aside
        draws = np.full((replicates, len(ks)), np.inf)  # a resample that solved nothing: pass@k = 0
        for i, pick in enumerate(picks):
            if c[pick].any():
                refit = fit_family(chosen.candidate, n[pick], c[pick], starts=[chosen.family_z])
                draws[i] = _to_x(refit.pass_at_k(ks))  # NaN where the refit failed: set aside by _band
        return draws

    def to_dict(self) -> dict:
        """The choice, the error per decade and the backtest's scores."""
        return jsonable({"benchmark": self.benchmark_, "chosen": self.chosen_, "tau_per_decade": self.tau_,
                         "scores": self.scores_.to_dict("records")})  # fmt: skip

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
        return (
            f"{self.benchmark_ or 'benchmark'}: {self.chosen_} (least MAE one decade of k past {judged} thinned "
            f"origins; a family only below {FAMILY_MARGIN:g} x power_k's); error per decade of k {self.tau_:.3f} on "
            "log(-log pass@k) "
            f"({REACH:g} x the origins' RMS shrunk toward {TAU_PRIOR} by {PRIOR_WEIGHT:g} origins), added to the "
            "bootstrap over problems"
        )


def _try_candidate(name: str, n, c, ks, n_est, c_est) -> CandidateFit | None:
    """A candidate's fit, or None where these counts do not identify it."""
    try:
        return fit_candidate(name, n, c, ks, n_est=n_est, c_est=c_est)
    except DataError:
        return None


def _band(x: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Equal-tailed pass@k bounds of draws on the x scale (replicates x ks), replicates with a NaN set aside, and how
    many were used (none: NaN bounds). Larger x is smaller pass@k, so the lower bound is the upper quantile."""
    x = x[~np.isnan(x).any(axis=1)]
    if not len(x):
        return np.full(x.shape[1], np.nan), np.full(x.shape[1], np.nan), 0
    tail = (1 - level) / 2
    lower = _from_x(np.quantile(x, 1 - tail, axis=0, method="inverted_cdf"))
    return lower, _from_x(np.quantile(x, tail, axis=0, method="inverted_cdf")), len(x)


def _estimator_counts(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The counts of the unbiased estimator: the first round's where samples were drawn in rounds."""
    if "n_first" in group:
        return group["n_first"].to_numpy(np.int64), group["c_first"].to_numpy(np.int64)
    return group["n"].to_numpy(np.int64), group["c"].to_numpy(np.int64)


def _require_probabilities(frame: pd.DataFrame) -> None:
    """The last guard: a value that is not a probability is an error, never a printed number (a bound may be NaN: no
    interval, which the row's note says)."""
    for column in ("pass_at_k", "lower", "upper"):
        if column in frame:
            values = frame[column].to_numpy(float)
            allowed = np.isfinite(values) | (np.isnan(values) & (column != "pass_at_k"))
            if not np.all(allowed & ~(values < 0) & ~(values > 1)):
                raise DataError(f"the model gave {column} = {values[~((values >= 0) & (values <= 1))][0]!r}, not a "
                                "probability: no forecast rather than a wrong one")  # fmt: skip


def passk_table(
    counts: pd.DataFrame,
    ks,
    *,
    n_boot: int = 1000,
    level: float = 0.9,
    seed: int = 0,
    extrapolate_to: int | None = None,
    family: str = "auto",
    borrow: dict | None = None,
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
    n_boot : int
        Bootstrap replicates over problems (0: no interval).
    level : float
        Interval level, in (0, 1).
    seed : int
        Seed of the resampling, the thinning and the extrapolation error.
    extrapolate_to : int, optional
        Largest k forecast past n (adds a geometric grid of k up to it).
    family : str
        ``'auto'`` (chosen by the backtest in k) or one of :data:`CANDIDATES`.
    borrow : dict of str to float, optional
        Each run's compute: a run that solved nothing borrows from its benchmark's other runs
        (:func:`benchcast.generative.borrowing.borrow_across_runs`) instead of being refused.

    Returns
    -------
    DataFrame
        One row per (run, benchmark, k): ``pass_at_k`` in [0, 1] with ``lower``/``upper``, ``source``
        (``estimator``, the candidate, ``<family> joint`` when borrowed, or ``refused``), ``problems``, and past n
        ``extrapolation`` (k / n), ``tau`` and ``note``.
    """
    from benchcast.generative.passk import bootstrap_pass_at_k

    if extrapolate_to is not None and (int(extrapolate_to) != extrapolate_to or extrapolate_to < 1):
        raise DataError(f"extrapolate_to must be a number of attempts k >= 1, got {extrapolate_to!r}.")
    check_level(level)
    ks = np.unique(np.asarray(ks, int))
    frames, rules = [], []
    for (run, bench), group in counts.groupby(["run", "benchmark"], sort=False):
        n_est, c_est = _estimator_counts(group)
        sampled = ks[ks <= n_est.min()]
        if sampled.size:
            frame = bootstrap_pass_at_k(n_est, c_est, sampled, n_boot=n_boot, level=level, seed=seed)
            frames.append(frame.assign(run=run, benchmark=bench, source="estimator", problems=len(group)))
    for bench, group in counts.groupby("benchmark", sort=False):
        reach = group.groupby("run", sort=False).apply(lambda g: int(_estimator_counts(g)[0].min()))
        asked = ks[ks > reach.min()].astype(float)
        if extrapolate_to:
            grid = np.geomspace(max(reach.min(), 1), extrapolate_to, 8).round()
            asked = np.unique(np.concatenate([asked, grid]))
            asked = asked[(asked > reach.min()) & (asked <= max(extrapolate_to, ks.max()))]
        if not asked.size:
            continue
        model = PassKPastN(family, level, n_boot, seed).fit(group, str(bench))
        rules.append(model.rule())
        past = model.predict(asked)
        if borrow is not None:
            past = _with_borrowed(past, group, borrow, asked, model)
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


def _with_borrowed(past: pd.DataFrame, group: pd.DataFrame, flops: dict, ks, model: PassKPastN) -> pd.DataFrame:
    """The refused runs that solved nothing, answered by the joint model across the benchmark's runs."""
    from benchcast.generative.borrowing import require_flops

    require_flops(group, flops)  # a missing size is the user's to fix, not a refusal
    nothing = [str(r) for r, g in group.groupby("run", sort=False) if not g["c"].any()]
    refused = past["source"] == "refused"
    targets = [r for r in nothing if r in set(past.loc[refused, "run"].astype(str))]
    if not targets:
        return past
    try:
        return _borrowed(past, group, flops, ks, model, targets)
    except DataError as exc:  # the runs stay refused, with borrowing's reason beside their own
        past = past.copy()
        theirs = refused & past["run"].astype(str).isin(targets)
        past.loc[theirs, "note"] = past.loc[theirs, "note"] + f"; borrowing across runs: {exc}"
        return past


def _borrowed(past: pd.DataFrame, group: pd.DataFrame, flops: dict, ks, model: PassKPastN, targets: list):
    """``past`` with the ``targets``' refusals replaced by the joint model's rows and their interval."""
    from benchcast.generative.borrowing import JOINT_FAMILIES, borrow_across_runs, borrowed_draws

    family = model.candidates if model.candidates in JOINT_FAMILIES else "auto"
    joint = borrow_across_runs(group, flops, ks, family=family)
    rows = joint.table[joint.table["run"].isin(targets)].copy()
    reach = pd.Series({str(r): int(_estimator_counts(g)[0].min()) for r, g in group.groupby("run", sort=False)})
    rows["extrapolation"] = rows["k"] / rows["run"].map(reach)
    rows = rows[rows["extrapolation"] > 1]
    problems = group.groupby(group["run"].astype(str)).size()  # one row per problem, as in predict
    rows["source"], rows["tau"], rows["problems"] = f"{joint.family} joint", model.tau_, rows["run"].map(problems)
    if model.n_boot:
        replicates = min(model.n_boot, BORROW_REPLICATES)
        draws = borrowed_draws(joint, targets, ks, replicates=replicates, seed=model.seed)
        rng = np.random.default_rng(model.seed)
        for i, run in enumerate(targets):
            mine = rows["run"] == run
            k = rows.loc[mine, "k"].to_numpy(float)
            x = _to_x(draws[:, i, :][:, np.isin(ks, k)])
            x = x + rng.standard_normal(len(x))[:, None] * model.tau_ * np.log10(k / reach[run])[None, :]
            lower, upper, used = _band(x, model.level)
            rows.loc[mine, "lower"], rows.loc[mine, "upper"], rows.loc[mine, "replicates"] = lower, upper, used
            if not used:
                rows.loc[mine, "note"] += "; no joint refit held: no interval"
    rows["note"] = rows["note"] + "; no problem solved in its own samples"
    _require_probabilities(rows)
    kept = past[~((past["source"] == "refused") & past["run"].astype(str).isin(targets))]
    return pd.concat([kept, rows.drop(columns=["flops", "solved", "borrowed"])], ignore_index=True)
