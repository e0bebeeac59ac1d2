"""The law a report forecasts with, and why: the user's, or the one :func:`~benchcast.forecasting.selection.recommend`
selects by rolling-origin forecasts inside the runs."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.selection import DEFAULT_CANDIDATES, recommend
from benchcast.laws import get_law

BACKTEST_FRACTION = 0.25  # the validation backtest the page shows holds out the top quarter of log C
RECOMMENDED = "recommended"


@dataclass
class LawChoice:
    law: str
    reason: str
    ranking: pd.DataFrame | None  # one row per law backtested (None when the user named the law)
    validation_threshold: float


def choose_law(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    law: str = RECOMMENDED,
    target_flops: float | None,
    tpr: float | None,
    n_boot: int,
    n_jobs: int | None = 1,
) -> LawChoice:
    """The law to forecast with, and why: the user's, or the one of recommend's default candidates
    that :func:`recommend` selects by its rolling-origin forecasts inside the runs
    (``rule='select'``: the page draws one law). The
    validation backtest the page shows holds out the top quarter of the log-compute range.

    Parameters
    ----------
    table : pandas.DataFrame
        The tidy results table.
    spec : FitSpec
        Benchmark, metric, k and seed (its law is ignored).
    law : str
        A law name, or ``RECOMMENDED`` to let :func:`recommend` choose.
    target_flops : float, optional
        Largest target compute (not used by the choice itself).
    tpr : float, optional
        Tokens per parameter selecting the runs.
    n_boot : int
        Bootstrap replicates (not used by the choice itself).
    n_jobs : int, optional
        Workers for the rolling-origin fits.

    Returns
    -------
    LawChoice
        The law, the reason, the ranking (None for a named law) and the validation threshold.
    """
    rows, _ = design(table, replace(spec, tpr=tpr))
    log_c = np.log10(rows["flops"].to_numpy(float))
    threshold = float(10 ** (log_c.max() - BACKTEST_FRACTION * (log_c.max() - log_c.min())))
    if law != RECOMMENDED:
        return LawChoice(law, "named by the user (--law)", None, threshold)
    forecastable = forecastable_laws(table, spec, tpr)
    # the same candidates as recommend's default (bench's measured choice), where they apply
    candidates = [law for law in DEFAULT_CANDIDATES if law in forecastable] or forecastable
    rec = recommend(
        table,
        spec.benchmark,
        spec.metric,
        spec.k,
        tpr=tpr,
        rule="select",
        n_boot=0,
        seed=spec.seed,
        n_jobs=n_jobs,
        laws=candidates,
    )
    if not rec.supported:
        raise BenchcastError(f"{spec.benchmark}: {rec.reason}")
    best = rec.ranking.set_index("law").loc[rec.best]
    reason = (
        f"lowest error of rolling-origin forecasts inside the runs (inner MRE {best['inner_mre']:.2f} %, up to "
        f"{rec.extrapolation_decades:.2f} decades ahead) of {len(rec.ranking)} laws with support"
    )
    return LawChoice(rec.best, reason, rec.ranking, threshold)


def forecastable_laws(table: pd.DataFrame, spec: FitSpec, tpr: float | None) -> list[str]:
    """Laws the report can carry to a target compute: functions of compute, or of N and D (split
    at a tokens-per-parameter ratio).

    Parameters
    ----------
    table : pandas.DataFrame
        The tidy results table.
    spec : FitSpec
        Benchmark, metric and k.
    tpr : float, optional
        Tokens per parameter selecting the runs.

    Returns
    -------
    list of str
        Names of the applicable laws whose covariates are among flops, params and tokens.
    """
    from benchcast.forecasting.selection import applicable_laws

    laws = applicable_laws(table, replace(spec, tpr=tpr))
    return [name for name in laws if set(get_law(name).covariates) <= {"flops", "params", "tokens"}]
