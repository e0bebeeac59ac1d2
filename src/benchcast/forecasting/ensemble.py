"""The one forecaster: members chosen -> fitted -> bootstrapped -> blended -> widened by the extrapolation
error -> flagged -> one :class:`~benchcast.forecasting.forecast.Forecast`.

An :class:`Ensemble` is an estimator in the manner of scikit-learn's ``VotingRegressor``: ``fit(table,
spec)`` fits the candidate laws, their rolling-origin forecasts inside the runs, chooses members and
weights (:func:`benchcast.forecasting.selection.choose`) and estimates the blend's extrapolation error
(:func:`benchcast.forecasting.extrapolation.estimate`); ``predict(runs, uncertainty)`` answers. A single law
is a one-member ensemble (:meth:`Ensemble.of_fit`). Every command that shows a forecast — ``forecast``
(artifact or data), ``recommend``, ``plan``, ``report``, ``bench``, ``backtest``, ``sweep``, ``cutoff`` —
gets it from :meth:`Ensemble.predict`, with the settings of one :class:`Uncertainty`, so one question has
one answer whichever command asks it. Nothing else blends, widens or clips a draw.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.result import FitResult
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting import extrapolation as ext
from benchcast.forecasting import selection
from benchcast.forecasting.bootstrap import Bootstrap, Uncertainty, bootstrap
from benchcast.forecasting.draws import ScoreDraws
from benchcast.forecasting.flags import ensemble_flags, refit_flags, withhold
from benchcast.forecasting.forecast import Forecast, ForecastMeta, make_forecast
from benchcast.forecasting.targets import Placement, as_runs, place
from benchcast.plots.labels import metric_label
from benchcast.utils.progress import track

NO_COMPUTE = (
    "no interval: the extrapolation error grows with the distance in compute, and these points give no compute "
    "(flops, or params and tokens); --interval bootstrap gives the bootstrap alone"
)


@dataclass(eq=False)
class Member:
    """One law fitted to every run the forecaster may see, with its rolling-origin forecasts inside them."""

    law: str
    fit: FitResult | None
    inner: pd.DataFrame | None = None
    error: str = ""
    boot: Bootstrap | None = None

    @property
    def errors(self) -> pd.DataFrame:
        """The rolling-origin forecasts, read from the fit or made on first use."""
        if self.inner is None:
            self.inner = ext.rolling_origin(self.fit) if self.fit is not None else pd.DataFrame()
        return self.inner


def fit_member(rows: pd.DataFrame, spec: FitSpec, *, uncertainty: Uncertainty | None = None) -> Member:
    """Fit one law to design rows and forecast inside them from rolling origins (the expensive part)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = ext.fit_with_rolling_origins(rows, spec)  # the fit and its origins: one batched solve
            boot = None
            if uncertainty is not None and uncertainty.n_boot:
                boot = bootstrap(result, uncertainty, n_jobs=1, progress=False)
    except (BenchcastError, ValueError, np.linalg.LinAlgError) as exc:
        return Member(spec.law, None, error=str(exc))
    return Member(spec.law, result, boot=boot)  # its errors: the table the fit holds, read on first use


def fit_members(
    table: pd.DataFrame, base: FitSpec, laws, *, progress: bool = True, uncertainty: Uncertainty | None = None
) -> dict[str, Member]:
    """Each law fitted to the selection of ``base`` in ``table`` (:func:`fit_member`)."""
    laws = list(laws)
    out = {}
    for law in track(laws, f"{base.benchmark}: laws fitted and backtested") if progress else laws:
        try:
            rows, resolved = design(table, base.replace(law=law))
        except (BenchcastError, ValueError) as exc:
            out[law] = Member(law, None, error=str(exc))
            continue
        out[law] = fit_member(rows, resolved, uncertainty=uncertainty)
    return out


@functools.cache
def _prior():
    return ext.load_prior()


class Ensemble:
    """Laws weighted into one forecast, with the interval of the blend.

    Parameters
    ----------
    rule : {'ensemble', 'stack', 'select'} or a law's name
        ``'ensemble'`` (the default) weights the candidates with support equally unless their rolling-origin errors
        separate them (then as ``'stack'``); ``'stack'`` by the inverse of their rolling-origin error; ``'select'``
        keeps the best; a law's name fits that law alone.
    laws : sequence of str, optional
        The candidates (default: the ladder's, :func:`benchcast.forecasting.selection.ladder_laws`).

    Attributes
    ----------
    members_ : dict of str to Member
        Every law fitted (candidates, and the fallback where one was needed).
    weights_ : dict of str to float
        The members with a positive weight, heaviest first.
    choice_ : Recommendation
        The choice (:func:`benchcast.forecasting.selection.choose`): ranking, weights, nested error, and the
        reasons laws were left out.
    errors_ : DataFrame
        The blend's rolling-origin forecasts inside the runs.
    error_model_ : ErrorModel or None
        The blend's extrapolation error (None: none could be estimated; :attr:`interval_note` says why).
    """

    def __init__(self, rule: str = "ensemble", laws=None):
        self.rule = rule
        self.laws = tuple(laws) if laws else None

    def __repr__(self) -> str:
        weights = getattr(self, "weights_", None)
        fitted = "" if weights is None else f", weights_={ {law: round(w, 3) for law, w in weights.items()} }"
        return f"Ensemble(rule={self.rule!r}{', laws=' + repr(list(self.laws)) if self.laws else ''}{fitted})"

    # -- fitting ------------------------------------------------------------------------------

    def fit(self, table: pd.DataFrame, spec: FitSpec, *, progress: bool = True) -> Ensemble:
        """Fit the candidates to the selection of ``spec`` in ``table``, choose members and weights and estimate
        the blend's extrapolation error.

        Parameters
        ----------
        table : DataFrame
            The runs.
        spec : FitSpec
            The benchmark, metric and selection (its law is ignored unless ``rule`` names a law).
        progress : bool
            Show a progress bar.

        Returns
        -------
        Ensemble
            Fitted (``ok`` False where no law fits: :meth:`predict` then refuses, saying why).
        """
        rows, _ = design(table, spec)
        if self.rule in selection.SELECTION_RULES:
            candidates, fallbacks, usable = selection.candidates(table, spec, rows, self.laws)
        else:
            candidates, fallbacks, usable = [self.rule], [], True
        members = fit_members(table, spec, candidates, progress=progress)
        choice = selection.choose(members, self.rule, fallbacks=fallbacks, judge_length=usable, rows=rows)
        if choice.needs_fallback:
            members.update(fit_members(table, spec, fallbacks, progress=False))
            choice = selection.choose(members, self.rule, fallbacks=fallbacks, judge_length=usable, rows=rows)
        return self._set(spec.benchmark, members, choice)

    @classmethod
    def of_members(cls, benchmark: str, members: dict, rule: str = "ensemble", *, fallbacks=(), rows=None) -> Ensemble:
        """An ensemble of members already fitted (``bench`` fits them in its workers).

        Parameters
        ----------
        benchmark : str
            The benchmark.
        members : dict of str to Member
            The laws fitted.
        rule : str
            The rule, or a law's name (that law alone).
        fallbacks : tuple of str
            Laws used alone, the first fitted, where no candidate has support.
        rows : DataFrame, optional
            The runs (a warning where a law of compute alone reads several TPRs as one curve).

        Returns
        -------
        Ensemble
        """
        out = cls(rule)
        choice = selection.choose(members, rule, fallbacks=fallbacks, judge_length=bool(fallbacks), rows=rows)
        return out._set(benchmark, members, choice)

    @classmethod
    def of_fit(cls, result: FitResult, errors: pd.DataFrame | None = None) -> Ensemble:
        """One law alone (weight 1), its interval calibrated on its own rolling-origin forecasts.

        Parameters
        ----------
        result : FitResult
            The law fitted to every run.
        errors : DataFrame, optional
            Its rolling-origin forecasts, where already made.

        Returns
        -------
        Ensemble
        """
        member = Member(result.law, result, errors)
        return cls.of_members(str(result.spec.benchmark), {result.law: member}, result.law)

    def _set(self, benchmark: str, members: dict, choice) -> Ensemble:
        self.benchmark = benchmark
        self.members_, self.choice_ = members, replace(choice, benchmark=benchmark)
        self.weights_ = dict(choice.weights)
        return self

    @property
    def errors_(self) -> pd.DataFrame:
        """The blend's rolling-origin forecasts inside the runs (one law's: its own, made on first use)."""
        if len(self.weights_) == 1 and not len(self.choice_.errors):
            return self.members_[next(iter(self.weights_))].errors
        return self.choice_.errors

    @property
    def error_model_(self):
        """The blend's extrapolation error (None where it cannot be estimated: :attr:`interval_note` says why)."""
        if "_error_model" not in self.__dict__:
            self._error_model, self.interval_note = None, ""
            try:
                # the one pooling rule: own error shrunk toward the cross-ladder prior shipped with the package
                self._error_model = ext.estimate(self.errors_, prior=_prior())
            except BenchcastError as exc:
                self.interval_note = f"no interval: {exc}"
        return self._error_model

    @property
    def ok(self) -> bool:
        """Whether some law forecasts (a member with a positive weight)."""
        return bool(self.weights_)

    @property
    def fits(self) -> dict[str, FitResult]:
        """Each weighted member's fit, heaviest first."""
        return {law: self.members_[law].fit for law in self.weights_}

    # -- forecasting ----------------------------------------------------------------------------

    def predict(
        self,
        runs,
        uncertainty: Uncertainty | None = None,
        *,
        n_jobs: int | None = None,
        ray_address: str | None = None,
        tpr: float | None = None,
        confidence: bool = False,
        extra: dict | None = None,
        query: dict | None = None,
        shape: tuple = (),
        remarks=(),
        error_model: ext.ErrorModel | None = None,
    ) -> Forecast:
        """The ensemble's forecast of ``runs``, with its intervals and flags.

        Parameters
        ----------
        runs : array_like or PlannedRuns
            Compute of each point, or the points as runs (a law of N and D is given N and D, a law of compute C).
        uncertainty : Uncertainty, optional
            Replicates, seed, interval kind and levels (default: :class:`Uncertainty`'s, the same in every command).
        n_jobs, ray_address : optional
            Where the members' bootstraps run: worker processes, or a Ray cluster.
        tpr : float, optional
            Tokens per parameter placing runs given by compute (laws of N and D); not with PlannedRuns.
        confidence : bool
            Also the interval of the mean (the law's curve) at each level.
        extra : dict, optional
            Further covariates of every point (``k``, ``gold``), one value per run.
        query, shape, remarks : optional
            The question as asked (a fit's forecast), its shape, and notes on where the runs were placed.
        error_model : ErrorModel, optional
            The extrapolation error that widens an ``'extrapolation'`` interval (default: the ensemble's own,
            :attr:`error_model_`), as statsforecast takes its interval method as a value.

        Returns
        -------
        Forecast
        """
        if not self.ok:
            raise BenchcastError(f"nothing was forecast for {self.benchmark}: {self.choice_.reason}")
        unc = uncertainty or Uncertainty()
        for law in (law for law, w in self.weights_.items() if w > 0 and unc.n_boot):  # made where the call says
            self._boot(law, unc, n_jobs, ray_address)
        extra = {name: value for name, value in (extra or {}).items() if value is not None}
        fits = self.fits
        # the targets placed once: what each member is given, every distance the flags and the widening read
        placement = place(as_runs(runs, tpr), fits, extra)
        predicted = {
            law: np.atleast_1d(np.asarray(fit.predict(**placement.covariates[law]), float)).ravel()
            for law, fit in fits.items()
        }
        blend = sum(w * predicted[law] for law, w in self.weights_.items())
        has_k = any("k" in fit.law_object.covariates for fit in fits.values())
        flags = ensemble_flags(fits, predicted, blend, placement, k=extra.get("k") if has_k else None)
        prediction = withhold(blend, flags)
        draws, model, note, spread = self._interval_draws(placement, unc, prediction, confidence, error_model)
        boots = {law: self._boot(law, unc) for law, w in self.weights_.items() if w > 0} if draws else {}
        # an interval resting on few replicates says so, at every point: a blended replicate needs every member's, so
        # the interval rests on the usable share of the member with the least, of the replicates it made (the draws
        # themselves repeat each usable replicate, so their rows do not count replicates)
        shares = [(len(b.failed), len(b.failed) - b.n_failed - b.n_dropped) for b in boots.values()]
        made, left = min(shares, key=lambda pair: pair[1] / pair[0], default=(0, 0))
        lost = refit_flags(made, left, {law: (b.n_failed, b.n_dropped) for law, b in boots.items()}) if draws else ()
        flags = [(*point, *lost) for point in flags]
        meta = ForecastMeta(
            dict(self.weights_),
            placement.given,
            {law: fit.diagnostics.dropped for law, fit in fits.items()},
            None if model is None else model.to_dict(),
            note,
            sum(b.n_failed for b in boots.values()),
            sum(b.n_dropped for b in boots.values()),
        )
        return make_forecast(
            self.benchmark,
            self.rule,
            placement.runs,
            prediction,
            flags,
            unc,
            decades=placement.compute_beyond,
            members=predicted,
            meta=meta,
            draws=draws,
            remarks=[*remarks, *self.choice_.failures],
            query=query,
            # pass@8, not pass@k: forecasts of one benchmark at several k are told apart by their k
            metric=next((metric_label(fit.spec.metric, fit.spec.k) for fit in fits.values() if fit.spec.metric), ""),
            shape=shape,
            chance=max(float(fit.spec.q_rand) for fit in fits.values()),
            spread=spread,
        )

    def _interval_draws(self, placement: Placement, unc: Uncertainty, prediction, confidence, given=None):
        """The (widened) draws behind the intervals, the error model, why none, and the error terms."""
        if not unc.n_boot:
            return (), None, "no interval: none asked for (0 bootstrap replicates)", {}
        covariates, decades = placement.covariates, placement.compute_outside
        draws = self._draws(covariates, unc, "prediction")
        if draws is None:
            boots = [self._boot(law, unc) for law in self.weights_]
            failed, dropped = sum(b.n_failed for b in boots), sum(b.n_dropped for b in boots)
            note = f"no interval: no bootstrap refit is usable ({failed} failed, {dropped} did not converge)"
            return (), None, note, {}
        model = None
        if unc.interval == "extrapolation":
            model = given if given is not None else self.error_model_
            if model is None:
                return (), None, self.interval_note or "no interval: the extrapolation error could not be estimated", {}
        out, spread = [], {}
        kinds = [("prediction", None)] + ([("confidence", draws)] if confidence else [])
        for kind, reference in kinds:
            sample = draws if kind == "prediction" else self._draws(covariates, unc, "confidence")
            ok = np.isfinite(sample.values).all(axis=0) & np.isfinite(prediction)
            if model is not None:
                ok &= np.isfinite(decades)  # no compute, no distance: no extrapolation-aware interval there
            if not ok.any() and kind == "confidence":  # no interval of the curve: the run's still stands
                continue
            if not ok.any():
                no_compute = model is not None and not np.isfinite(decades).any()
                return (), model, NO_COMPUTE if no_compute else "no interval: no finite bootstrap draw", {}
            taken = sample.take(ok)
            if kind == "prediction":
                spread = _spread(taken.values, np.flatnonzero(ok), model, placement)
            if model is not None:
                ref = None if reference is None else reference.take(ok).values
                taken = ScoreDraws(
                    ext.widen(
                        taken.values, decades[ok], model, unc.seed, tpr_decades=placement.tpr_outside[ok], reference=ref
                    ),
                    taken.points,
                )
            out.append((kind, np.flatnonzero(ok), taken))
        return tuple(out), model, "", spread

    def _boot(self, law: str, unc: Uncertainty, n_jobs=None, ray_address=None) -> Bootstrap:
        """The member's bootstrap with these settings, made once."""
        member = self.members_[law]
        cache = self.__dict__.setdefault("_boots", {})
        key = (law, unc.n_boot, unc.seed)
        if key not in cache:
            made = member.boot
            if made is None or len(made.failed) != unc.n_boot or made.seed != unc.seed:
                made = bootstrap(member.fit, unc, n_jobs=n_jobs, progress=None, ray_address=ray_address)
            cache[key] = made
        return cache[key]

    def _draws(self, covariates: dict, unc: Uncertainty, kind: str) -> ScoreDraws | None:
        """The members' bootstrap draws at the placed runs, mixed replicate by replicate with the weights."""
        parts = {}
        for law in (law for law, w in self.weights_.items() if w > 0):  # the blend leaves the others out
            boot = self._boot(law, unc)
            if not boot.usable.any():
                return None
            parts[law] = boot.draws(kind, **covariates[law])
        return ScoreDraws.blend(parts, self.weights_)


def _spread(boot: np.ndarray, index: np.ndarray, model, placement: Placement) -> dict:
    """Per point: the interval's error terms on the log score (bootstrap, compute, TPR), with words."""
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.nanstd(np.log(np.clip(boot, 1e-12, None)), axis=0)
    out = {}
    for j, i in enumerate(index):
        terms = {"bootstrap": (float(sd[j]), f"{sd[j]:.2g}")}
        if model is not None:
            d, t = max(float(placement.compute_outside[i]), 0.0), float(placement.tpr_outside[i])
            per = model.tau if model.tau_tpr is None else model.tau_tpr
            terms["compute-extrapolation"] = (model.tau * d, f"{model.tau:.3g}/decade x {d:.2f} = {model.tau * d:.2g}")
            if t > 0:
                terms["TPR-extrapolation"] = (per * t, f"{per:.3g}/decade of TPR x {t:.2f} = {per * t:.2g}")
        out[int(i)] = terms
    return out
