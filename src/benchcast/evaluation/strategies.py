"""Forecasting strategies judged by :mod:`benchcast.evaluation.bench`: values, each with its interval method, that
make a cell's forecaster (:meth:`make`) from the laws fitted once on its training side (:func:`law_outcome`; the
held-out rows carry their covariates, never their scores). :class:`FixedLaw`: one law alone. :class:`Combine`: the
default ``Ensemble`` of the ladder's candidates with support by its rule (``ensemble``: the equal-weight mean, the
fallback law where none has support; ``stack``: weights by the inverse rolling-origin error; ``select``: the lowest
rolling-origin error). :class:`Switch`: the default, or the simplest alternative alone where the rolling origins favour
it. :class:`Chooser`: a caller's rule that picks one law per cell (e.g. :data:`benchcast.studies.legacy.HOLDOUT`).
:func:`parse_strategy` is the one reader of the command line's names (``power``, ``power[bootstrap]``, ``stack``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.alternative import compare
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble, Member, fit_members
from benchcast.validation import check_interval

FIXED_LAWS = ("power", "power_floor", "bnsl", "bnsl_monotone")
SELECTORS = ("ensemble", "stack", "select")
DEFAULT_STRATEGY = "ensemble"
EXTRAPOLATION = "extrapolation"


class NoForecast(BenchcastError):
    """A strategy made no forecaster in a cell: ``support`` where no candidate had support, else a failure."""

    def __init__(self, reason: str, *, support: bool = False):
        super().__init__(reason)
        self.status = "no support" if support else f"failed: {reason}"  # as bench's rows show it


def _named(name: str, interval: str) -> str:
    """A strategy's row label: its name, with ``[interval]`` where that is not the extrapolation interval."""
    return name if interval == EXTRAPOLATION else f"{name}[{interval}]"


def law_outcome(train: pd.DataFrame, spec: FitSpec, n_boot: int, seed: int) -> Member:
    """Fit ``spec`` to ``train``, its rolling origins and bootstrap (once per law and training side)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bench warns of the data once, in the main process
        made = fit_members(
            train, spec, [spec.law], progress=False, uncertainty=Uncertainty(n_boot, seed) if n_boot else None
        )
    return made[spec.law]


def _member(cell, law: str | None) -> Member:
    """The cell's fitted ``law``, or why there is none."""
    if law is None:
        raise NoForecast("no law picked")
    member = cell.members.get(law)
    if member is None or member.fit is None:
        raise NoForecast(member.error if member else "not fitted")
    return member


@dataclass(frozen=True)
class FixedLaw:
    """One law alone."""

    law: str
    interval: str = EXTRAPOLATION

    name = property(lambda self: _named(self.law, self.interval), doc="The row label.")

    def needs(self, cell) -> tuple[str, ...]:
        """The laws this strategy needs fitted in ``cell``."""
        return (self.law,)

    def make(self, cell) -> Ensemble:
        """The cell's forecaster (raises :class:`NoForecast`)."""
        return Ensemble.of_members(cell.benchmark, {self.law: _member(cell, self.law)}, self.law)


@dataclass(frozen=True)
class Combine:
    """The default ``Ensemble`` of the cell's candidates by ``rule`` (``ensemble``, ``stack``, ``select``)."""

    rule: str = DEFAULT_STRATEGY
    interval: str = EXTRAPOLATION

    name = property(lambda self: _named(self.rule, self.interval), doc="The row label.")

    def needs(self, cell) -> tuple[str, ...]:
        """The cell's candidates and fallbacks."""
        return (*cell.candidates, *cell.fallbacks)

    def make(self, cell) -> Ensemble:
        """The ensemble of the candidates with support (raises :class:`NoForecast` where none has)."""
        pool = {law: cell.members[law] for law in (*cell.candidates, *cell.fallbacks) if law in cell.members}
        made = Ensemble.of_members(cell.benchmark, pool, self.rule, fallbacks=tuple(cell.fallbacks))
        if not made.ok:
            # every candidate (one or more) refused for one reason: that reason (a loss named as the score), as the
            # laws alone say it, not a lack of support
            reasons = {member.error for member in pool.values() if member.fit is None} - {""}
            if pool and len(reasons) == 1 and all(member.fit is None for member in pool.values()):
                raise NoForecast(reasons.pop())
            raise NoForecast("no support", support=True)
        return made


@dataclass(frozen=True)
class Switch:
    """The default, or the cell's simplest alternative alone where its rolling origins favour it (``-s switch``)."""

    interval: str = EXTRAPOLATION

    name = property(lambda self: _named("switch", self.interval), doc="The row label.")

    def needs(self, cell) -> tuple[str, ...]:
        """The default's laws and the simplest alternative."""
        return (*cell.candidates, *cell.fallbacks, cell.alternative)

    def make(self, cell) -> Ensemble:
        """The default's ensemble, or the alternative where :func:`compare` favours it."""
        made = Combine(DEFAULT_STRATEGY).make(cell)
        other = cell.members.get(cell.alternative)
        if other is not None and other.fit is not None:
            plain = Ensemble.of_members(cell.benchmark, {cell.alternative: other}, cell.alternative)
            made = plain if compare(made, plain).favours == "alternative" else made
        return made


@dataclass(frozen=True)
class Chooser:
    """A strategy that picks one law per cell from the training runs alone."""

    name: str
    choose: Callable[[pd.DataFrame, FitSpec], str]
    interval: str = EXTRAPOLATION

    def pick(self, train: pd.DataFrame, spec: FitSpec) -> str | None:
        """The law chosen for these training runs, or None where the rule cannot choose."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self.choose(train, spec)
        except BenchcastError:
            return None

    def needs(self, cell) -> tuple[str, ...]:
        """The law picked in ``cell`` (none before the pick)."""
        law = cell.picks.get(self.name)
        return (law,) if law else ()

    def make(self, cell) -> Ensemble:
        """The picked law alone."""
        law = cell.picks.get(self.name)
        return Ensemble.of_members(cell.benchmark, {law: _member(cell, law)}, law)


def parse_strategy(name, interval: str | None = None, choosers: tuple = ()):
    """The strategy value of a name (``power[bootstrap]``, ``ensemble``, a chooser's); a value as it is."""
    if not isinstance(name, str):
        return name
    by_name = {chooser.name: chooser for chooser in choosers}
    if name in by_name:
        return by_name[name]
    base, own = name, interval or EXTRAPOLATION
    if name.endswith("]") and "[" in name:
        base, own = name[:-1].split("[", 1)
    check_interval(own)
    if base in SELECTORS:
        return Combine(base, own)
    return Switch(own) if base == "switch" else FixedLaw(base, own)


def default_strategies(laws, choosers=(), interval: str | None = None) -> list:
    """Every law with both intervals, the selectors, the default with the bootstrap, the choosers."""
    if interval is not None:
        return [*(FixedLaw(law, interval) for law in laws), *(Combine(rule, interval) for rule in SELECTORS), *choosers]
    return [
        *(FixedLaw(law) for law in laws),
        *(FixedLaw(law, "bootstrap") for law in laws),
        *(Combine(rule) for rule in SELECTORS),
        Combine(DEFAULT_STRATEGY, "bootstrap"),
        *choosers,
    ]
