"""The runs a forecast is asked about: given by their compute C alone, or as planned runs of N
parameters trained on D tokens ("my 7B on 4T tokens").

A planned run's compute is C = r 6 N D, where r is the file's own FLOPs convention: the median of its runs'
FLOPs / (6 N D) (:mod:`benchcast.forecasting.convention`; 1 where the file gives no FLOPs, or FLOPs = 6 N D),
or a ratio the caller gives (``--flops-per-6nd``); the outputs say which. Its tokens per parameter TPR = D / N.
A law of N and D is given N and D themselves; a law of compute alone is given C, and the output says that it
ignores the allocation (:meth:`PlannedRuns.covariates`). A run given by its compute has an N and a D only where a
tokens-per-parameter ratio places it (C = 6 N D at that ratio).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchcast.errors import BenchcastError
from benchcast.validation import check_positive

# a target's TPR this far (relative) outside the fitted runs' range is flagged: the data's TPRs are
# themselves ratios of rounded sizes, so an exact comparison would flag a run at the ladder's own TPR
TPR_TOLERANCE = 0.02
SIX_ND = "C = 6 N D"  # a planned run's compute where no other convention is given


@dataclass(frozen=True)
class PlannedRuns:
    """Runs to forecast, with what is known of each: its compute, and N and D where known.

    Parameters
    ----------
    flops : ndarray (runs,)
        Compute of each run (6 N D for a run given by its size).
    params, tokens : ndarray (runs,)
        Parameters N and tokens D (for a run given by its compute: split at a TPR, or nan without one).
    sized : ndarray of bool (runs,)
        Whether each run was given by its parameters and tokens (else by its compute).
    convention : str
        How the compute of a run given by its size was placed (:func:`flops_convention`; '' for C = 6 N D
        by default).
    """

    flops: np.ndarray
    params: np.ndarray
    tokens: np.ndarray
    sized: np.ndarray
    convention: str = ""

    @property
    def tpr(self) -> np.ndarray:
        """Tokens per parameter D / N of each run (nan where unknown)."""
        return self.tokens / self.params

    @property
    def by_size(self) -> bool:
        """Whether some run was given by its parameters and tokens."""
        return bool(self.sized.any())

    def __len__(self) -> int:
        return len(self.flops)

    def take(self, which) -> PlannedRuns:
        """Some of the runs.

        Parameters
        ----------
        which : int, slice or array of int
            The runs kept (in that order).

        Returns
        -------
        PlannedRuns
        """
        index = np.atleast_1d(np.arange(len(self))[which])
        return PlannedRuns(
            self.flops[index], self.params[index], self.tokens[index], self.sized[index], self.convention
        )

    def by_compute(self) -> PlannedRuns:
        """The runs ordered by compute (a stable order: runs of equal compute keep theirs).

        Returns
        -------
        PlannedRuns
        """
        return self.take(np.argsort(self.flops, kind="stable"))

    def join(self, other: PlannedRuns) -> PlannedRuns:
        """These runs, then ``other``'s.

        Parameters
        ----------
        other : PlannedRuns

        Returns
        -------
        PlannedRuns
        """
        fields = ("flops", "params", "tokens", "sized")
        convention = self.convention or other.convention
        return PlannedRuns(*(np.concatenate([getattr(self, f), getattr(other, f)]) for f in fields), convention)

    def record(self, i: int) -> dict:
        """Run ``i`` as outputs show it: ``flops``, ``params``, ``tokens``, ``tpr`` (None where unknown) and
        ``given`` (``'params_tokens'`` for a run given by its size, ``'flops'`` for one given by its compute),
        and, for a run given by its size, ``flops_convention`` (how its compute was placed).

        Parameters
        ----------
        i : int
            The run.

        Returns
        -------
        dict
        """
        values = {"flops": self.flops[i], "params": self.params[i], "tokens": self.tokens[i], "tpr": self.tpr[i]}
        out = {name: float(v) if np.isfinite(v) else None for name, v in values.items()}
        placed = {"flops_convention": self.convention or SIX_ND} if self.sized[i] else {}
        return {**out, "given": "params_tokens" if self.sized[i] else "flops", **placed}

    def covariates(self, fitted) -> tuple[dict, str]:
        """What a fitted law is given for these runs, and that in words.

        Parameters
        ----------
        fitted : FittedLaw
            The law (its covariates decide: N and D, or C).

        Returns
        -------
        covariates : dict of str to ndarray
            As :meth:`FitResult.predict` takes them.
        used : str
            The covariates in words, e.g. ``'N, D'`` or ``'C = 6ND (ignores tokens per parameter)'``.
        """
        law = fitted.law
        if {"params", "tokens"} <= set(law.covariates):
            if not np.all(np.isfinite(self.params)):
                raise BenchcastError(
                    f"law {law.name!r} is a function of parameters and tokens: give the planned run as its parameters "
                    "and tokens (params=, tokens=; --params N --tokens D), or a tokens-per-parameter ratio (tpr) "
                    "splitting its compute C = 6 N D."
                )
            # the law's own k (where it has one) from covariates_at; N and D as given (or as the TPR split C)
            X = fitted.covariates_at(self.flops, tpr=1.0)
            X["params"], X["tokens"] = self.params.copy(), self.tokens.copy()
            if self.sized.all():
                return X, "N, D"
            split = f"C split at TPR {self.tpr[~self.sized][0]:g}"
            return X, f"N, D ({'given, or ' if self.by_size else ''}{split})"
        X = fitted.covariates_at(self.flops)
        if "flops" in law.covariates and self.by_size:
            six_nd = not self.convention or self.convention.startswith(SIX_ND)
            return X, f"C = {'6ND' if six_nd else 'r 6ND, the FLOPs convention'} (ignores tokens per parameter)"
        return X, "C"

    def tpr_flags(self, fitted_tpr: tuple[float, float], compute_only: list[str], in_size: list[str]) -> list[str]:
        """A flag per run whose TPR lies outside the fitted runs' TPR range.

        Parameters
        ----------
        fitted_tpr : (float, float)
            The smallest and largest TPR among the runs the laws were fitted to.
        compute_only, in_size : list of str
            The laws of compute alone, and the laws of N and D, that forecast the runs.

        Returns
        -------
        list of str
            One message per run: empty where its TPR is inside the range or unknown.
        """
        lo, hi = fitted_tpr
        out = []
        for value in self.tpr:
            if not (np.isfinite(value) and np.isfinite(lo)) or lo / (1 + TPR_TOLERANCE) <= value <= hi * (
                1 + TPR_TOLERANCE
            ):
                out.append("")
                continue
            span = f"{lo:.3g}" if np.isclose(lo, hi, rtol=TPR_TOLERANCE) else f"{lo:.3g} .. {hi:.3g}"
            text = f"target TPR {value:.3g} lies outside the fitted runs' TPR ({span})"
            if compute_only:
                text += f"; {', '.join(compute_only)} (compute only) ignore(s) the allocation"
            if in_size:
                text += f"; {', '.join(in_size)} extrapolate(s) in TPR"
            out.append(text)
        return out


def fitted_tpr_range(results) -> tuple[float, float]:
    """The smallest and largest TPR (D / N) among the runs some laws were fitted to.

    Parameters
    ----------
    results : iterable of FitResult
        The fits (their points have ``params`` and ``tokens``).

    Returns
    -------
    (float, float)
        (nan, nan) where no point has both sizes.
    """
    values = [
        (r.points["tokens"] / r.points["params"]).to_numpy(float)
        for r in results
        if {"params", "tokens"} <= set(r.points.columns)
    ]
    values = np.concatenate(values) if values else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    return (float(values.min()), float(values.max())) if len(values) else (np.nan, np.nan)


def describe_run(record: dict) -> str:
    """A run as a sentence names it: ``'7e+09 parameters on 4e+12 tokens (C = 1.68e+23 FLOPs, TPR 571)'``, or
    ``'1e+23 FLOPs'`` for a run given by its compute (with its TPR split where one placed it).

    Parameters
    ----------
    record : dict
        :meth:`PlannedRuns.record` of the run.

    Returns
    -------
    str
    """
    if record.get("given") == "params_tokens":
        return (
            f"{record['params']:.3g} parameters on {record['tokens']:.3g} tokens "
            f"(C = {record['flops']:.3g} FLOPs, TPR {record['tpr']:.3g})"
        )
    return f"{record['flops']:.3g} FLOPs"


def target_flags(runs: PlannedRuns, results) -> list[str]:
    """A flag per run whose TPR lies outside the fitted runs' TPR (:meth:`PlannedRuns.tpr_flags`).

    Parameters
    ----------
    runs : PlannedRuns
        The runs forecast.
    results : mapping of law name to FitResult
        The laws forecasting them.

    Returns
    -------
    list of str
        One message per run, empty where there is nothing to flag.
    """
    compute_only = [law for law, r in results.items() if "flops" in r.law_object.covariates]
    in_size = [law for law, r in results.items() if {"params", "tokens"} <= set(r.law_object.covariates)]
    return runs.tpr_flags(fitted_tpr_range(results.values()), compute_only, in_size)


def query_notes(result, covariates: dict, convention: tuple | None = None) -> list[str]:
    """For a fit's forecast of planned runs (``params`` and ``tokens`` given): what the law was given, and a
    flag per run whose TPR lies outside the fitted runs'. Nothing for points given otherwise.

    Parameters
    ----------
    result : FitResult
        The fit.
    covariates : dict
        The query, as :func:`benchcast.forecasting.forecast.forecast` takes it.
    convention : (float, str), optional
        The planned runs' FLOPs convention (:func:`planned_runs`).

    Returns
    -------
    list of str
    """
    if covariates.get("params") is None or covariates.get("tokens") is None or covariates.get("flops") is not None:
        return []
    params, tokens = np.broadcast_arrays(
        np.asarray(covariates["params"], float), np.asarray(covariates["tokens"], float)
    )
    runs = planned_runs(params=params.ravel(), tokens=tokens.ravel(), convention=convention)
    law = result.law_object
    if not ({"params", "tokens"} <= set(law.covariates) or "flops" in law.covariates):
        return []
    words = runs.covariates(result.fitted)[1]
    flags = target_flags(runs, {result.law: result})
    return [f"covariates: {result.law}: {words}"] + [
        f"warning: for {describe_run(runs.record(i))}: {flag}" for i, flag in enumerate(flags) if flag
    ]


def planned_runs(
    flops=None, params=None, tokens=None, *, tpr: float | None = None, convention: tuple | None = None
) -> PlannedRuns:
    """Runs to forecast, given by their compute (``flops``) or as planned runs (``params`` and ``tokens``).

    Parameters
    ----------
    flops : float or array_like, optional
        Compute of each run (FLOPs); not with ``params``/``tokens``.
    params, tokens : float or array_like, optional
        Parameters N and training tokens D of each run, both or neither (paired in order).
    tpr : float, optional
        Tokens per parameter placing runs given by their compute (their N and D at that ratio).
    convention : (float, str), optional
        The FLOPs convention placing runs given by their size, C = r 6 N D, as :func:`flops_convention` gives
        it (ratio, words); None: C = 6 N D.

    Returns
    -------
    PlannedRuns
        Raises a BenchcastError for a missing or contradictory combination, or a size that is not a positive
        finite number.
    """
    tpr = check_positive("tpr", tpr)
    has_size = params is not None or tokens is not None
    if flops is not None and has_size:
        raise BenchcastError(
            "give the runs to forecast either by their compute (flops; --flops C) or by their parameters and tokens "
            "(params and tokens; --params N --tokens D, compute C = 6 N D), not both."
        )
    if has_size and (params is None or tokens is None):
        given, missing = ("params", "tokens") if tokens is None else ("tokens", "params")
        raise BenchcastError(
            f"a planned run given by its size needs both its parameters and its tokens: {given} was given without "
            f"{missing} (--params N --tokens D, e.g. --params 7e9 --tokens 4e12)."
        )
    if flops is None and not has_size:
        raise BenchcastError("give the runs to forecast: their compute (flops; --flops C), or params and tokens.")
    arrays = {"flops": flops} if flops is not None else {"params": params, "tokens": tokens}
    arrays = {name: np.atleast_1d(np.asarray(value, float)).ravel() for name, value in arrays.items()}
    for name, values in arrays.items():
        if not len(values) or not np.all(np.isfinite(values) & (values > 0)):
            raise BenchcastError(f"{name} must be positive and finite, got {values.tolist()!r}.")
    if flops is None:
        n, d = arrays["params"], arrays["tokens"]
        if len(n) != len(d):
            raise BenchcastError(
                f"give one tokens value per params value (paired in order): got {len(n)} params and {len(d)} tokens."
            )
        ratio, words = convention if convention is not None else (1.0, SIX_ND)
        return PlannedRuns(ratio * 6.0 * n * d, n, d, np.ones(len(n), bool), words)
    c = arrays["flops"]
    if tpr is None:
        return PlannedRuns(c, np.full(len(c), np.nan), np.full(len(c), np.nan), np.zeros(len(c), bool))
    n = np.sqrt(c / (6.0 * tpr))  # as FittedLaw.covariates_at splits C
    return PlannedRuns(c, n, c / (6.0 * n), np.zeros(len(c), bool))
