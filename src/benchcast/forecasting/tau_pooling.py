"""The error per decade of a data set's benchmarks, pooled across them on the log scale.

A benchmark's own tau comes from 3 to 5 inner rolling origins (:mod:`benchcast.forecasting.calibration`)
and is noisy: for the default strategy on DCLM it ranged from under 0.01 (PIQA, SciQ) to 0.6
(GSM8K), whose 90 % intervals were then about four times as wide as its held-out errors needed.

Where a command sees several benchmarks of one ladder (``bench``), each benchmark's log tau
is shrunk towards the mean log tau of the *other* benchmarks (leave one benchmark out, so that a
benchmark is not pulled towards itself):

    log tau = (m log tau_own + M0 mean_{other benchmarks} log tau) / (m + M0),

m its own origins, M0 = ``PRIOR_ORIGINS``. On the log scale a benchmark an order of magnitude apart
moves the mean by as much as one an order of magnitude the other way (the pooled NNLS fit of
:func:`calibration.estimate_spread` over every benchmark's forecasts is dominated by the largest
errors). How M0 was chosen: README, "Intervals that account for extrapolation".

A command that forecasts one benchmark (``recommend``, ``forecast``, ``report``) has no other
benchmark to pool across: it uses the benchmark's own tau (source ``'own'`` in its output), which on
DCLM gave wider intervals (median 90 % width 0.118 against 0.064 pooled) that still held their levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.forecasting import calibration as cal

PRIOR_ORIGINS = 5.0  # M0: the other benchmarks' weight, in origins (a benchmark has 3 to 5 of its own)
MIN_OTHERS = 2  # other benchmarks with their own tau that a prior needs
TAU_FLOOR = 1e-3  # a tau below this (an exact inner forecast) counts as it on the log scale


@dataclass(frozen=True)
class TauPrior:
    """The mean log tau of a data set's other benchmarks.

    Parameters
    ----------
    log_tau : float
        Mean of their log tau (each floored at ``TAU_FLOOR``).
    n_benchmarks : int
        How many benchmarks it is the mean of.
    """

    log_tau: float
    n_benchmarks: int

    def shrink(self, own: cal.Spread) -> cal.Spread:
        """``own`` with its log tau shrunk towards this one by ``PRIOR_ORIGINS`` origins.

        Parameters
        ----------
        own : Spread
            The benchmark's own spread.

        Returns
        -------
        Spread
            Source ``'own+benchmarks'``; ``n_pooled`` the benchmarks pooled.
        """
        m = own.n_origins
        log_tau = (m * np.log(max(own.tau, TAU_FLOOR)) + PRIOR_ORIGINS * self.log_tau) / (m + PRIOR_ORIGINS)
        return replace(own, tau=float(np.exp(log_tau)), source="own+benchmarks", n_pooled=self.n_benchmarks)


def own_spread(errors: pd.DataFrame | None) -> cal.Spread | None:
    """A benchmark's own spread, or None where its inner forecasts cannot give one.

    Parameters
    ----------
    errors : DataFrame or None
        Its rolling-origin forecasts.

    Returns
    -------
    Spread or None
    """
    if errors is None or not len(errors):
        return None
    try:
        return cal.estimate_spread(errors)
    except BenchcastError:
        return None


def leave_one_out_priors(errors: Mapping) -> dict:
    """For each benchmark, the mean log tau of the others with their own spread.

    Parameters
    ----------
    errors : mapping of benchmark to DataFrame
        Each benchmark's rolling-origin forecasts (the strategy's, blended where it blends laws).

    Returns
    -------
    dict of benchmark to TauPrior
        Benchmarks with fewer than ``MIN_OTHERS`` others to pool are left out.
    """
    logs = {}
    for name, frame in errors.items():
        spread = own_spread(frame)
        if spread is not None:
            logs[name] = float(np.log(max(spread.tau, TAU_FLOOR)))
    out = {}
    for name in errors:
        others = [value for other, value in logs.items() if other != name]
        if len(others) >= MIN_OTHERS:
            out[name] = TauPrior(float(np.mean(others)), len(others))
    return out
