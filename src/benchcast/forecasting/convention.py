"""Where a planned run given by its size sits among a file's runs: the file's own FLOPs convention.

A file that gives FLOPs may count them otherwise than C = 6 N D (attention, embeddings, another
rule): a ladder's runs at 1.15-1.67 x 6 N D put a planned run placed at 6 N D a fraction of a decade
too low among them. :func:`flops_convention` measures the file's ratio FLOPs / (6 N D) over the runs of
the selection (its median) or takes the caller's; :func:`table_runs` places the targets of a forecast from a
table with it (:class:`~benchcast.forecasting.targets.PlannedRuns` records it in words, which outputs print).
"""

from __future__ import annotations

import numpy as np

from benchcast.data.table import at_tpr, runs, within_compute
from benchcast.errors import BenchcastError
from benchcast.forecasting.targets import SIX_ND, PlannedRuns, planned_runs
from benchcast.validation import check_positive

CONVENTION_RTOL = 1e-3  # FLOPs within this of 6 N D are 6 N D (rounding of sizes written to a file)


def flops_convention(table, *, tpr: float | None = None, min_flops=None, max_flops=None, given=None) -> tuple:
    """How a file's FLOPs relate to its runs' 6 N D, so that a planned run given by N and D sits where the file's
    runs of that size sit: the median ratio FLOPs / (6 N D) over the runs of the selection, or ``given``.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs (a table as :func:`benchcast.load` returns; C = 6 N D where the file gives no FLOPs).
    tpr, min_flops, max_flops : float, optional
        The selection of runs (as :class:`~benchcast.fitting.spec.FitSpec` takes it).
    given : float, optional
        The ratio r in C = r 6 N D, given by the caller (``--flops-per-6nd``): used as it is.

    Returns
    -------
    (float, str)
        The ratio r, and in words where it comes from (what outputs print).
    """
    if given is not None:
        return _given(given)
    by_run = runs(within_compute(table, min_flops, max_flops))
    if tpr is not None:
        by_run = by_run[at_tpr(by_run["tpr"], tpr)]
    return _measured(by_run, "the file's own convention", "selected runs")


def _given(given: float) -> tuple[float, str]:
    ratio = check_positive("flops_per_6nd", given)
    return ratio, f"C = {ratio:.4g} x 6 N D (given: --flops-per-6nd)"


def _measured(frame, whose: str, what: str) -> tuple[float, str]:
    """The median FLOPs / (6 N D) of a frame's rows (flops, params, tokens), with its source in words."""
    ratios = (frame["flops"] / (6.0 * frame["params"] * frame["tokens"])).to_numpy(float)
    ratios = ratios[np.isfinite(ratios)]
    if not len(ratios) or np.allclose(ratios, 1.0, rtol=CONVENTION_RTOL, atol=0.0):
        return 1.0, f"{SIX_ND} (the {what}' FLOPs are 6 N D)"
    ratio = float(np.median(ratios))
    return ratio, (
        f"C = {ratio:.4g} x 6 N D: {whose}, the median FLOPs / (6 N D) of its {len(ratios)} {what} "
        f"({ratios.min():.3g} .. {ratios.max():.3g}; --flops-per-6nd R gives another)"
    )


def fit_convention(result, given: float | None = None) -> tuple[float, str]:
    """The FLOPs convention of the runs a fit was fitted to (its points), as :func:`flops_convention` measures
    a table's; ``given`` as it takes it.

    Parameters
    ----------
    result : FitResult
        The fit (its points: ``flops``, and ``params`` and ``tokens`` where known).
    given : float, optional
        r in C = r 6 N D, given by the caller.

    Returns
    -------
    (float, str)
    """
    if given is not None:
        return _given(given)
    points = result.points.drop_duplicates("run")
    if not {"params", "tokens"} <= set(points.columns):
        return 1.0, SIX_ND
    return _measured(points, "the fit's runs' convention", "fitted runs")


def placed_query(result, covariates: dict, given: float | None = None) -> tuple[dict, float | None, str]:
    """A forecast's query as the fitted law is given it: a planned run (``params`` and ``tokens``, no ``flops``)
    is placed at the compute C = r 6 N D of the fit's own runs' convention (:func:`fit_convention`), which a law
    of compute alone is given; a law of N and D is given N and D as they are.

    Parameters
    ----------
    result : FitResult
        The fit.
    covariates : dict
        The query (``flops=``, or ``params=`` and ``tokens=``, ``k=``, ``gold=``).
    given : float, optional
        r in C = r 6 N D (``--flops-per-6nd``); refused for a query that is no planned run.

    Returns
    -------
    (dict, float or None, str)
        The covariates the law is given, r (None: no planned run) and the convention in words.
    """
    sized = covariates.get("params") is not None and covariates.get("tokens") is not None
    if not sized or covariates.get("flops") is not None:
        if given is not None:
            raise BenchcastError(_NOT_PLANNED)
        return covariates, None, ""
    ratio, words = fit_convention(result, given)
    law = result.law_object
    if "flops" not in law.covariates:
        return covariates, ratio, words
    placed = {name: value for name, value in covariates.items() if name not in ("params", "tokens")}
    placed["flops"] = ratio * 6.0 * np.asarray(covariates["params"], float) * np.asarray(covariates["tokens"], float)
    return placed, ratio, words


_NOT_PLANNED = (
    "--flops-per-6nd (flops_per_6nd) places a planned run given by its size (--params N --tokens D) at C = r 6 N D; "
    "a run given by its compute has no N and D to place: drop it, or give the run as --params N --tokens D."
)


def table_runs(
    table, flops=None, params=None, tokens=None, *, tpr=None, min_flops=None, max_flops=None, given=None
) -> PlannedRuns:
    """The runs to forecast from a table's runs: as :func:`planned_runs`, a run given by its size placed at the
    file's own FLOPs convention (:func:`flops_convention`), and a run given by its compute at ``tpr``.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs.
    flops, params, tokens : float or array_like, optional
        As :func:`planned_runs` takes them.
    tpr, min_flops, max_flops : float, optional
        The selection of runs (its TPR also places runs given by their compute).
    given : float, optional
        r in C = r 6 N D, given by the caller (``--flops-per-6nd``; refused for runs given by their compute).

    Returns
    -------
    PlannedRuns
    """
    sized = params is not None or tokens is not None
    if given is not None and not sized:
        raise BenchcastError(_NOT_PLANNED)
    selection = {"tpr": tpr, "min_flops": min_flops, "max_flops": max_flops}
    convention = flops_convention(table, **selection, given=given) if sized else None
    return planned_runs(flops, params, tokens, tpr=None if sized else tpr, convention=convention)
