"""One evaluation harness, in the manner of scikit-learn's ``cross_validate(estimator, X, y, cv=splitter)``:
:func:`evaluate` fits a forecaster on the training side of each split a splitter makes and returns the forecast
table (:meth:`benchcast.Forecast.to_frame`) of every run with its truth. The splitters are small values: a
compute threshold (SPEC protocol 1), a threshold or the largest TPR (2), a threshold and the largest k (3), the
largest runs, the larger models, a TPR, a grid of thresholds (4) and moving cutoffs below the largest runs (5)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.data.table import at_tpr, tpr_level
from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.metrics import usable_points
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.targets import frame_runs
from benchcast.laws.linalg import distinct_points
from benchcast.utils.progress import track
from benchcast.validation import check_positive

MIN_TRAINING_RUNGS = 3  # a law of three parameters needs at least three computes to be fitted below the cutoff


@dataclass(frozen=True, eq=False)
class Split:
    """One split of the rows a splitter was given: its label, its two sides and the training side's compute cap."""

    label: float  # what names the split in a table (its split or cutoff column): a compute, a TPR, a size
    train: np.ndarray  # bool: the training rows (a row on neither side is unused)
    test: np.ndarray  # bool: the held-out rows
    top_flops: float | None = None  # the training side's largest compute (a fixed law's fit range); None: not by C

    def within(self, flops: np.ndarray, min_flops: float | None = None, max_flops: float | None = None) -> Split:
        """The one compute-range rule: the training side keeps the rows (of compute ``flops``) within the range."""
        train = self.train
        train = train & (flops >= min_flops) if min_flops is not None else train
        train = train & (flops <= max_flops) if max_flops is not None else train
        return replace(self, train=train)


class Splitter:
    """What every splitter is: a value with one method, :meth:`split` (the harness never asks a splitter's type)."""

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """The splits of the design rows.

        Parameters
        ----------
        rows : pandas.DataFrame
            Design rows (``run``, ``flops``, ``tpr``, ``value``...), one per run (and k).

        Returns
        -------
        list of Split
            Each split's label, training and held-out rows.
        """
        raise NotImplementedError


def _by_compute(cut: float, flops: np.ndarray) -> Split:
    """Fit the rows at or below ``cut`` FLOPs, forecast those above."""
    return Split(float(cut), flops <= cut, flops > cut, float(cut))


@dataclass(frozen=True)
class Threshold(Splitter):
    """Fit the runs at or below ``threshold`` FLOPs, forecast those above (SPEC protocol 1)."""

    threshold: float

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split at the threshold."""
        return [_by_compute(self.threshold, rows["flops"].to_numpy(float))]


@dataclass(frozen=True)
class ThresholdOrTPR(Splitter):
    """Forecast the runs above ``threshold`` and those at ``tpr`` (default: the largest TPR), fit the rest (SPEC
    protocol 2)."""

    threshold: float
    tpr: float | None = None

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split: above the threshold or at the TPR held out."""
        tpr = rows["tpr"].to_numpy(float)
        test = (rows["flops"].to_numpy(float) > self.threshold) | at_tpr(
            tpr, tpr.max() if self.tpr is None else self.tpr
        )
        return [Split(self.threshold, ~test, test)]


@dataclass(frozen=True)
class ThresholdAndK(Splitter):
    """Fit the runs below ``threshold`` with k <= ``max_k``, forecast the rest (SPEC protocol 3, pass@k)."""

    threshold: float
    max_k: int = 32

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split: below the threshold and within k held in."""
        train = (rows["flops"].to_numpy(float) < self.threshold) & (rows["k"].to_numpy(float) <= self.max_k)
        return [Split(self.threshold, train, ~train, self.threshold)]


@dataclass(frozen=True)
class LargestRuns(Splitter):
    """Forecast the ``n`` largest rungs of the ladder (its ``n`` largest distinct computes; runs of one compute, such
    as seeds, are one rung), fit the rest; the rungs are counted at or above ``min_flops`` (the fit's floor)."""

    n: int
    min_flops: float | None = None

    def rungs(self, rows: pd.DataFrame) -> tuple[float, tuple[float, ...]]:
        """The cutoff (the geometric mean of the ``n``-th and ``n+1``-th largest rungs) and the rungs held out.

        Parameters
        ----------
        rows : pandas.DataFrame
            Design rows; those with no score (``value`` NaN) are not counted.

        Returns
        -------
        (float, tuple of float)
            The cutoff and the computes of the rungs held out.
        """
        scored = rows[rows["value"].notna()] if "value" in rows else rows
        flops = scored["flops"].to_numpy(float)
        keep = np.isfinite(flops) & (flops > 0) & (flops >= (self.min_flops or 0.0))
        found = np.unique(np.round(np.log10(flops[keep]), 6))[::-1]  # one rung per compute, to 1 ppm
        where = "" if self.min_flops is None else f" with C >= {self.min_flops:.3g}"
        if self.n < 1 or self.n > len(found) - MIN_TRAINING_RUNGS:
            raise BenchcastError(
                f"--holdout-largest {self.n}: the ladder{where} has {len(found)} rungs (distinct computes), and "
                f"holding out K of them must leave at least {MIN_TRAINING_RUNGS} to fit on: give K from 1 to "
                f"{max(len(found) - MIN_TRAINING_RUNGS, 0)}."
            )
        return float(10 ** (0.5 * (found[self.n - 1] + found[self.n]))), tuple(float(10**r) for r in found[: self.n])

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split below the ``n`` largest rungs."""
        return [_by_compute(self.rungs(rows)[0], rows["flops"].to_numpy(float))]


@dataclass(frozen=True)
class LargerModels(Splitter):
    """Fit the runs with fewer than ``params`` parameters, forecast the rest ("fit up to 1B, forecast 3B")."""

    params: float

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split by size (both sides must hold runs)."""
        if "params" not in rows or rows["params"].isna().any():
            raise BenchcastError("a split by model size needs every run's parameters (column 'params').")
        n = rows["params"].to_numpy(float)
        if not (n < self.params).any() or not (n >= self.params).any():
            raise BenchcastError(
                f"--holdout-params {self.params:.3g} must leave runs on both sides: the runs' sizes are "
                f"{', '.join(f'{v:.3g}' for v in np.unique(n))}."
            )
        return [Split(self.params, n < self.params, n >= self.params)]


@dataclass(frozen=True)
class AtTPR(Splitter):
    """Forecast the runs at tokens per parameter ``tpr``, fit the others."""

    tpr: float

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split: the runs at the TPR held out."""
        test = at_tpr(rows["tpr"].to_numpy(float), self.tpr)
        return [Split(self.tpr, ~test, test)]


@dataclass(frozen=True)
class Thresholds(Splitter):
    """One :class:`Threshold` split per compute of a grid (SPEC protocol 4, the sweep)."""

    thresholds: tuple

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """A split per threshold."""
        return [_by_compute(float(t), rows["flops"].to_numpy(float)) for t in self.thresholds]


@dataclass(frozen=True)
class Combined(Splitter):
    """Hold out what any splitter holds out: each split of ``first`` with the one split of each of ``rest``."""

    first: object
    rest: tuple = ()

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """The first splitter's splits, each narrowed by the others'."""
        others = [other.split(rows) for other in self.rest]
        if any(len(made) != 1 for made in others):
            raise BenchcastError("a combined splitter holds out with splitters of one split each.")
        out = []
        for split in self.first.split(rows):
            train, test = split.train, split.test
            for (other,) in others:
                train, test = train & other.train, test | other.test
            out.append(replace(split, train=train, test=test))
        return out


@dataclass(frozen=True)
class Cutoffs(Splitter):
    """Forecast the ``n_targets`` most expensive runs (and their replicates at the same compute) from every cutoff
    below them with at least ``min_points`` runs at or below it (SPEC protocol 5)."""

    n_targets: int = 1
    min_points: int = 2

    def targets(self, rows: pd.DataFrame) -> tuple[pd.Series, np.ndarray]:
        """The scored runs' compute, cheapest first, and which of them are targets.

        Parameters
        ----------
        rows : pandas.DataFrame
            Design rows (``run``, ``flops``, ``value``).

        Returns
        -------
        (pandas.Series, ndarray of bool)
            Compute by run, and the targets among them (the largest runs, their replicates included).
        """
        by_run = rows[rows["value"].notna()].groupby("run")["flops"].first().sort_values(kind="stable")
        if self.n_targets < 1 or self.n_targets >= len(by_run):
            raise BenchcastError(f"n_targets must lie in 1..{len(by_run) - 1}, got {self.n_targets}.")
        chosen = by_run.to_numpy(float)[-self.n_targets :]
        return by_run, np.isclose(by_run.to_numpy(float)[:, None], chosen[None, :], rtol=1e-9, atol=0).any(axis=1)

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """A split per cutoff below the targets."""
        by_run, replicate = self.targets(rows)
        pool = by_run[~replicate].to_numpy(float)
        test = rows["run"].isin(list(by_run.index[replicate])).to_numpy()
        flops = rows["flops"].to_numpy(float)
        cutoffs = [c for c in np.unique(pool) if int((pool <= c).sum()) >= self.min_points]
        return [Split(float(c), ~test & (flops <= c), test, float(c)) for c in cutoffs]


@dataclass(frozen=True)
class LikeTarget(Splitter):
    """Hold out the largest runs and the highest TPRs so that the backtest reaches as far beyond its training runs, in
    decades of compute and of TPR, as the asked target (``flops``, ``tpr``) lies beyond the whole ladder, as far as the
    ladder allows while ``min_train`` runs of distinct N and D stay to fit (:meth:`reach` says how far short it
    falls)."""

    flops: float
    tpr: float
    min_train: int = 6
    min_flops: float | None = None  # runs below it are not fitted (the spec's range): they do not count to min_train
    placed: str = ""  # how a planned run's compute was placed, where a FLOPs trend placed it (reach says it)

    @classmethod
    def of_run(cls, params: float, tokens: float, convention, *, min_flops: float | None = None) -> LikeTarget:
        """The split like a planned run of N parameters on D tokens, placed by ``convention``, as ``bench`` and
        ``backtest`` ask it.

        Parameters
        ----------
        params, tokens : float
            The planned run's N and D (positive).
        convention : FlopsConvention
            The file's FLOPs per 6 N D (:func:`benchcast.forecasting.targets.flops_convention`).
        min_flops : float, optional
            The fit's compute floor: runs below it do not count to ``min_train``.

        Returns
        -------
        LikeTarget
        """
        params, tokens = check_positive("like-target N", params), check_positive("like-target D", tokens)
        placed = f"the target placed at {convention.at(params)}" if convention.slope else ""
        return cls(float(convention.flops(params, tokens)), tokens / params, min_flops=min_flops, placed=placed)

    def cuts(self, rows: pd.DataFrame) -> tuple[float, float]:
        """The compute and the TPR the training side stops at.

        Parameters
        ----------
        rows : pandas.DataFrame
            Design rows (``flops``, ``tpr``).

        Returns
        -------
        (float, float)
            The largest compute and the largest TPR fitted.
        """
        flops, tpr = rows["flops"].to_numpy(float), rows["tpr"].to_numpy(float)
        if not len(tpr) or not np.isfinite(tpr).all():
            raise BenchcastError(
                f"a split like a target needs every run's parameters and tokens; {int((~np.isfinite(tpr)).sum())} of "
                f"{len(tpr)} runs have no tokens per parameter (give params and tokens, or split by --threshold)."
            )
        want_c = max(np.log10(self.flops / flops.max()), 0.0)
        want_t = max(np.log10(self.tpr / tpr.max()), 0.0)
        levels = np.unique([float(np.max(tpr[tpr_level(tpr) == lv])) for lv in np.unique(tpr_level(tpr))])
        t_cut = float(levels[-1])
        if want_t > 0 and len(levels) > 1:  # the ratio held out nearest the asked distance in TPR (one at least)
            lower = levels[:-1]
            t_cut = float(lower[np.argmin(np.abs(np.log10(levels[-1] / lower) - want_t))])
        at_ratio = tpr <= t_cut * (1 + 1e-6)
        computes = np.sort(np.unique(flops[at_ratio]))[::-1]
        c_cut = flops[at_ratio].max() / 10**want_c
        fitted = at_ratio & (flops >= (self.min_flops or 0.0))
        # replicate runs of one N and D (and a run's several k) are one point to fit
        sizes = {c: rows[c].to_numpy(float) for c in ("params", "tokens")}
        kept = [distinct_points({c: v[fitted & (flops <= cut)] for c, v in sizes.items()}) for cut in computes]
        enough = [cut for cut, n in zip(computes, kept, strict=True) if n >= self.min_train]
        if not enough:
            raise BenchcastError(
                f"a split like the target keeps at least {self.min_train} runs of distinct N and D to fit; the "
                f"ladder has {max(kept, default=0)} at TPR <= {t_cut:.3g}."
            )
        c_cut = min(max(c_cut, min(enough)), computes[0])
        return float(c_cut), t_cut

    def reach(self, rows: pd.DataFrame) -> str:
        """How far the backtest reaches beyond its training runs, against how far the target lies, in words.

        Parameters
        ----------
        rows : pandas.DataFrame
            Design rows.

        Returns
        -------
        str
        """
        flops, tpr = rows["flops"].to_numpy(float), rows["tpr"].to_numpy(float)
        (split,) = self.split(rows)
        train = split.train
        got_c, got_t = np.log10(flops.max() / flops[train].max()), np.log10(tpr.max() / tpr[train].max())
        want_c, want_t = np.log10(self.flops / flops.max()), np.log10(self.tpr / tpr.max())
        short = [
            f"{w - g:.2f} decades of {what} short"
            for w, g, what in ((want_c, got_c, "compute"), (want_t, got_t, "TPR"))
            if w - g > 0.01
        ]
        return (
            f"the backtest reaches {got_c:.2f} decades of compute and {got_t:.2f} of TPR beyond its fitted runs; the "
            f"target lies {want_c:.2f} and {max(want_t, 0.0):.2f} beyond the ladder"
            + (f" (the nearest the ladder's runs and ratios allow: {', '.join(short)})" if short else "")
            + (f"; {self.placed}" if self.placed else "")
        )

    def split(self, rows: pd.DataFrame) -> list[Split]:
        """One split: the runs above the compute cut or the TPR cut held out."""
        c_cut, t_cut = self.cuts(rows)
        flops, tpr = rows["flops"].to_numpy(float), rows["tpr"].to_numpy(float)
        train = (flops <= c_cut) & (tpr <= t_cut * (1 + 1e-6))
        return [Split(c_cut, train, ~train, c_cut)]


PROTOCOL_SPLITTERS = {"threshold": Threshold, "nd": ThresholdOrTPR, "passk": ThresholdAndK}


def evaluate(
    spec: FitSpec,
    table: pd.DataFrame,
    splitter,
    *,
    forecaster: Ensemble | None = None,
    uncertainty: Uncertainty | None = None,
    n_jobs: int | None = None,
    confidence: bool = False,
    return_models: bool = False,
    skip_failed: bool = False,
    progress: bool | None = False,
    cache=None,
):
    """Fit a forecaster on the training side of each split and forecast every run of the selection.

    Parameters
    ----------
    spec : FitSpec
        The law (a fixed law's forecast; ignored with ``forecaster``) and the selection (benchmark, metric, TPR; its
        ``min_flops`` and ``max_flops`` limit the training side only, ``max_k`` with :class:`ThresholdAndK`).
    table : pandas.DataFrame
        The runs.
    splitter : splitter
        A value with one method, ``split(rows) -> list[Split]`` over the design rows: :class:`Threshold`,
        :class:`ThresholdOrTPR`, :class:`ThresholdAndK`, :class:`LargestRuns`, :class:`LargerModels`, :class:`AtTPR`,
        :class:`Thresholds`, :class:`Cutoffs`, :class:`LikeTarget`, :class:`Combined`, or one of your own.
    forecaster : Ensemble, optional
        An unfitted ensemble (``Ensemble()``: the default strategy) fitted afresh on each training side; default:
        ``spec``'s law alone.
    uncertainty : Uncertainty, optional
        Replicates, seed, interval method and levels (default: no interval).
    n_jobs : int, optional
        Worker processes of each forecast's bootstrap.
    confidence : bool
        Also the interval of the law's curve.
    return_models : bool
        Also return each split's fitted ensemble and what its forecast rests on (its
        :class:`~benchcast.forecasting.forecast.ForecastMeta`).
    skip_failed : bool
        Leave out a split whose fit fails (default: raise its error).
    progress : bool, optional
        A progress bar over the splits (None: on a terminal).
    cache : FitCache, optional
        The fits of one command, made once up front in one pool (:class:`benchcast.evaluation.bench.FitCache`): the
        splits are the cache's cells of this table, splitter and selection, ``forecaster`` a strategy value
        (:mod:`benchcast.evaluation.strategies`) made from each cell's fitted laws, and the held-out runs are
        forecast (``status`` says why a cell made no forecast); ``return_models`` gives each cell's
        ``(cell, ensemble, forecast)``.

    Returns
    -------
    pandas.DataFrame
        The forecast table of every run (:meth:`~benchcast.Forecast.to_frame`), one block per split, with ``split``
        (its label), ``run``, ``k``, ``true``, ``side`` (``'train'``, ``'test'``, ``'unused'``), ``fitted`` and
        ``usable`` (far enough above chance for a relative error); with ``return_models``, also the lists of fitted
        ensembles and of their forecasts' metas.
    """
    unc = uncertainty or Uncertainty(n_boot=0)
    if cache is not None:
        out, made = _from_cache(cache.cells_of(spec, table, splitter), forecaster, unc)
        return (out, made) if return_models else out
    rows, resolved = design(table, replace(spec, max_k=None, min_flops=None, max_flops=None))
    frames, models, metas = [], [], []
    flops = rows["flops"].to_numpy(float)
    for split in track(splitter.split(rows), f"evaluate {spec.benchmark}", enabled=progress):
        split = split.within(flops, spec.min_flops, spec.max_flops)  # the spec's range limits the training side only
        if not split.train.any():
            raise InsufficientDataError(
                f"{spec.benchmark}: no runs on the training side of the split at {split.label:.3g}."
            )
        if not split.test.any():
            raise InsufficientDataError(f"{spec.benchmark}: no held-out runs at {split.label:.3g}.")
        try:
            model = _fit(forecaster, spec, resolved, table, rows, split)
        except BenchcastError:
            if not skip_failed:
                raise
            continue
        runs, extra = frame_runs(rows)
        made = model.predict(runs, unc, n_jobs=n_jobs, confidence=confidence, extra=extra)
        frames.append(_with_truth(made.to_frame(), rows, split, model))
        models.append(model)
        metas.append(made.meta)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return (out, models, metas) if return_models else out


def _fit(forecaster, spec: FitSpec, resolved: FitSpec, table, rows, split: Split) -> Ensemble:
    """The forecaster fitted to the training side of one split."""
    if forecaster is None:
        training = replace(resolved, max_k=spec.max_k, min_flops=spec.min_flops, max_flops=split.top_flops)
        return Ensemble.of_fit(fit_rows(rows[split.train].reset_index(drop=True), training))
    seen = table[table["run"].isin(set(rows["run"][split.train]))]
    if spec.max_k is not None and "k" in seen:  # k above max_k is held out, never fitted
        seen = seen[~(seen["k"].to_numpy(float) > spec.max_k)]
    return Ensemble(forecaster.rule, forecaster.laws).fit(seen, replace(spec, law="power"), progress=False)


def _from_cache(cells, strategy, unc: Uncertainty) -> tuple[pd.DataFrame, list]:
    """Each cached cell's held-out runs forecast by the strategy's forecaster of the cell's fitted laws."""
    frames, made = [], []
    for cell in cells:
        held = cell.held
        true = held["value"].to_numpy(float)
        truth = {"run": held["run"].to_numpy(), "split": cell.split, "cutoff": cell.cutoff, "true": true}
        truth["decades"] = np.log10(held["flops"].to_numpy(float) / float(cell.train["flops"].max()))
        try:
            model = strategy.make(cell)
        except BenchcastError as why:  # the strategy made no forecaster here: its status says why
            frames.append(pd.DataFrame({**truth, "flops": held["flops"].to_numpy(float), "status": why.status}))
            made.append((cell, None, None))
            continue
        runs, extra = frame_runs(held)
        forecast = model.predict(runs, unc, extra=extra)
        q_rand = float(next(iter(model.fits.values())).spec.q_rand)
        frame = forecast.to_frame().assign(**truth, side="test", status="ok", flags=list(forecast.flags))
        frames.append(frame.assign(usable=usable_points(true, q_rand, cell.benchmark)))
        made.append((cell, model, forecast))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), made


def _with_truth(frame: pd.DataFrame, rows: pd.DataFrame, split: Split, model: Ensemble) -> pd.DataFrame:
    """A split's forecast table with the runs' truth, side and use."""
    fit = next(iter(model.fits.values()))
    used = set(zip(fit.points["run"], fit.points["k"].astype(float), strict=True))
    train, test = split.train, split.test
    fitted = np.array([(r, float(k)) in used for r, k in zip(rows["run"], rows["k"], strict=True)]) & train
    true = rows["value"].to_numpy(float)
    usable = usable_points(true, fit.spec.q_rand, fit.spec.benchmark)
    if "inconsistent" in rows:  # a pass@k no samples could give (data.table.inconsistent_k) is no truth to score
        usable &= ~rows["inconsistent"].to_numpy(bool)
    return frame.assign(
        split=split.label,
        run=rows["run"].to_numpy(),
        k=rows["k"].to_numpy(float),
        true=true,
        side=np.where(train, "train", np.where(test, "test", "unused")),
        fitted=fitted,
        usable=usable,
    )
