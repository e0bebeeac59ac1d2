"""Covariates that live in other rows of the table: a per-run column built for a law that needs it.

A law declares the covariates it needs by name (``covariates``, ``fit_covariates``); sizes
(``flops``, ``params``, ``tokens``) and ``k`` are columns of every table, the others are built
here from another (benchmark, metric) of the same runs, keyed by covariate name.
"""

from __future__ import annotations

import pandas as pd

from benchcast.data.table import covariate_column
from benchcast.errors import SelectionError


def _positive_loss(values: pd.Series) -> pd.Series:
    # A log-likelihood is <= 0; the covariate is the positive negative log-likelihood.
    return -values if (values <= 0).all() else values


def gold_nll(table: pd.DataFrame, spec) -> pd.Series:
    """G = -log GoldProb per run: the benchmark's own gold log-likelihood metric, negated."""
    return _positive_loss(covariate_column(table, spec.benchmark, spec.gold_metric))


def proxy_loss(table: pd.DataFrame, spec) -> pd.Series:
    """A proxy loss per run, named 'benchmark:metric' (metric defaults to 'loss')."""
    if not spec.proxy:
        raise SelectionError(f"law {spec.law!r} needs a proxy loss: pass proxy='benchmark:metric'.")
    bench, _, metric = spec.proxy.partition(":")
    return _positive_loss(covariate_column(table, bench, metric or "loss"))


BUILDERS = {"gold": gold_nll, "proxy": proxy_loss}


def attach_covariates(rows: pd.DataFrame, table: pd.DataFrame, law, spec) -> pd.DataFrame:
    """``rows`` with a column for every covariate the law needs that the table does not carry."""
    for name in (*law.covariates, *law.fit_covariates):
        if name in BUILDERS:
            rows[name] = rows["run"].map(BUILDERS[name](table, spec))
    return rows
