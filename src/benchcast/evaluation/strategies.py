"""Forecasting strategies judged by :mod:`benchcast.evaluation.bench`.

A strategy turns what one benchmark's runs at or below a cutoff showed into forecasts of the runs
above it. The expensive part (fitting each candidate law, its bootstrap and its rolling-origin
forecasts inside the training runs) is done once per law by :func:`law_outcome` and shared by every
strategy; assembling a strategy from those outcomes is cheap. Everything a strategy uses comes from
the training runs: the held-out rows it forecasts carry their covariates, never their scores.

Strategies (by name; candidate laws come from a list, so new laws join by name):

* ``<law>``: one fixed law with the extrapolation-aware interval; ``<law>[bootstrap]``: the same
  forecasts with the bootstrap-only interval.
* ``ensemble`` (the default): the equal-weight mean of the candidates with support (at least
  ``extrapolation.MIN_ORIGINS`` rolling origins inside the training runs, on points they share), named in
  the row's ``laws``; where none has support, the ladder's fallback law alone (``power``; its interval
  from the spread pooled over the data set's benchmarks where it has too few origins of its own);
  no forecast only where nothing fits. Which laws are candidates depends on the ladder
  (:func:`benchcast.forecasting.selection.ladder_laws`).
* ``stack``: candidates weighted by the inverse of their rolling-origin mean squared log error.
* ``select``: the candidate with the lowest rolling-origin error inside the training runs.
* ``switch``: the default, or the cell's simplest alternative (``power``; ``power_envelope`` on an IsoFLOP sweep) alone
  where the rolling origins favour it (:func:`benchcast.forecasting.alternative.compare`).
* a :class:`Chooser`: a rule, given by the caller, that picks one law per benchmark and cutoff
  from the training runs (e.g. :data:`benchcast.studies.legacy.HOLDOUT`, the law choice of an
  earlier release); its forecasts are that law's.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.data.table import at_tpr
from benchcast.errors import BenchcastError
from benchcast.fitting.metrics import usable_points
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.alternative import compare
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble, Member, fit_members
from benchcast.forecasting.selection import ladder_laws
from benchcast.validation import check_interval

FIXED_LAWS = ("power", "power_floor", "bnsl", "bnsl_monotone")
SELECTORS = ("ensemble", "stack", "select")
DEFAULT_STRATEGY = "ensemble"
# the default, or the simplest alternative alone where the cell's rolling origins favour it (alternative.compare):
# a rule measured against the default (benchmarks/member_designs.md), by name only (-s switch), not a default row
SWITCH = "switch"


def law_outcome(train: pd.DataFrame, spec: FitSpec, n_boot: int, seed: int) -> Member:
    """Fit ``spec`` to ``train`` (every run the strategy may see), forecast inside the training runs from rolling
    origins and bootstrap the fit (the expensive part, done once per law and cell in a worker)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bench warns of the data once, in the main process
        made = fit_members(
            train, spec, [spec.law], progress=False, uncertainty=Uncertainty(n_boot, seed) if n_boot else None
        )
    return made[spec.law]


@dataclass(frozen=True)
class Chooser:
    """A strategy that picks one law per benchmark and cutoff from the training runs alone."""

    name: str
    choose: Callable[[pd.DataFrame, FitSpec], str]
    interval: str = "extrapolation"

    def pick(self, train: pd.DataFrame, spec: FitSpec) -> str | None:
        """The law chosen for these training runs, or None where the rule cannot choose."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self.choose(train, spec)
        except BenchcastError:
            return None


# -- assembling strategies from law outcomes (cheap, in the main process) ----------------------


def with_interval(strategy: str, interval: str, choosers: dict[str, Chooser] | None = None) -> str:
    """A strategy's name with ``interval`` made explicit: ``'[bootstrap]'`` added to a bare name; a name with a suffix
    and a chooser's name are kept."""
    check_interval(interval)
    if (choosers and strategy in choosers) or strategy.endswith("]") or interval == "extrapolation":
        return strategy
    return f"{strategy}[{interval}]"


def base_name(strategy: str, choosers: dict[str, Chooser] | None = None) -> tuple[str, str]:
    """(strategy, interval) from a name such as 'power[bootstrap]'; a chooser's name is its own."""
    if choosers and strategy in choosers:
        return strategy, choosers[strategy].interval
    if strategy.endswith("]") and "[" in strategy:
        name, interval = strategy[:-1].split("[", 1)
        return name, check_interval(interval)
    return strategy, "extrapolation"


def strategy_ensemble(
    strategy: str, members: dict, picks: dict, candidates, choosers=None, fallbacks=(), alternative: str = "power"
):
    """The one forecaster of ``strategy`` in one cell, from the cell's fitted laws: a selector's ensemble of the
    candidates (:func:`benchcast.forecasting.selection.choose`), a fixed law alone, a chooser's pick alone, or
    (``SWITCH``) the default or the cell's simplest ``alternative`` law, as the rolling origins favour."""
    name, interval = base_name(strategy, choosers)
    some = next((m for m in members.values() if m.fit is not None), None)
    benchmark = str(some.fit.spec.benchmark) if some is not None else ""
    if name in (*SELECTORS, SWITCH):
        pool = {law: members[law] for law in (*candidates, *fallbacks) if law in members}
        made = Ensemble.of_members(benchmark, pool, DEFAULT_STRATEGY if name == SWITCH else name,
                                   fallbacks=tuple(fallbacks))  # fmt: skip
        other = members.get(alternative)
        if name == SWITCH and made.ok and other is not None and other.fit is not None:
            plain = Ensemble.of_members(benchmark, {alternative: other}, alternative)
            made = plain if compare(made, plain).favours == "alternative" else made
        return (made if made.ok else "no support"), interval
    law = picks.get(name) if choosers and name in choosers else name
    if law is None:
        return "failed: no law picked", interval
    member = members.get(law)
    if member is None or member.fit is None:
        return f"failed: {member.error if member else 'not fitted'}", interval
    return Ensemble.of_members(benchmark, {law: member}, law), interval


def runs_of(data, cutoff: float | None = None) -> pd.DataFrame:
    """A data set's runs as its strategies see them: its TPR and compute floor, without held-out TPRs, and at or below
    ``cutoff`` (the runs above it are held out: they must not shape a strategy)."""
    table = data.table.drop_duplicates("run")
    flops = table["flops"].to_numpy(float)
    keep = np.ones(len(table), bool) if cutoff is None else flops <= cutoff
    if data.tpr is not None:
        keep &= at_tpr(table["tpr"], data.tpr)
    if data.min_flops is not None:
        keep &= flops >= data.min_flops
    for held in data.holdout_tprs:
        keep &= ~at_tpr(table["tpr"], held)
    if data.holdout_params is not None:  # the larger models are held out: they must not shape a strategy either
        keep &= ~(table["params"].to_numpy(float) >= data.holdout_params)
    return table[keep]


def ladder_candidates(data, cutoff: float | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The default's candidate and fallback laws for a data set's ladder below a cutoff
    (:func:`benchcast.forecasting.selection.ladder_laws` on :func:`runs_of`, as ``recommend`` decides on the runs
    below its target)."""
    return ladder_laws(runs_of(data, cutoff))


def cell_ladders(datasets, candidates=None) -> dict:
    """Each data set's and cutoff's candidate and fallback laws: ``candidates`` where given (no fallback), else its
    ladder below the cutoff (:func:`ladder_candidates`)."""
    return {
        (d.name, c): (tuple(candidates), ()) if candidates else ladder_candidates(d, c)
        for d in datasets
        for c in d.cutoffs
    }


def ladder_settings(ladders: dict, which: int) -> dict:
    """The candidates (``which`` 0) or fallbacks (1) of :func:`cell_ladders` as bench's settings show them: by data set
    name, or by ``'name @ cutoff'`` where a data set has several cutoffs."""
    names = [name for name, _ in ladders]
    return {
        name if names.count(name) == 1 else f"{name} @ {cutoff:.3g}": list(pair[which])
        for (name, cutoff), pair in ladders.items()
    }


def usable(ensemble, true: np.ndarray, benchmark: str) -> np.ndarray:
    """Held-out points far enough above chance (:data:`benchcast.fitting.metrics.USABLE`)."""
    q_rand = float(next(iter(ensemble.fits.values())).spec.q_rand)
    return usable_points(true, q_rand, benchmark)
