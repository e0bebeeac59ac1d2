"""How a fit went (:class:`FitDiagnostics`): loss and convergence, points used and dropped,
in-sample error, the compute range fitted. A fit artifact stores it as its ``diagnostics`` mapping."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import pandas as pd

from benchcast.utils.display import ResultView
from benchcast.utils.jsonable import jsonable

# an artifact without these cannot be explained; the others default (NaN, 0, empty)
REQUIRED_DIAGNOSTICS = ("loss", "n_used", "n_dropped", "converged", "message", "at_bound", "rmse", "r2")
# two points per free parameter: at least as many residual degrees of freedom as parameters (power_floor's
# 3 parameters on Pythia's 5 runs up to 1.4B is the README's "correspondingly fragile" case)
MIN_POINTS_PER_PARAMETER = 2.0


def few_points(n_free: int, n_distinct: int) -> bool:
    """Whether a fit has fewer than ``MIN_POINTS_PER_PARAMETER`` distinct points per free parameter: the one rule of
    the fit's note and the forecast's flag."""
    return bool(n_free) and n_distinct < MIN_POINTS_PER_PARAMETER * n_free


def _number(value) -> float:
    """A float from an artifact, where JSON's null stands for a value that was not finite."""
    return math.nan if value is None else float(value)


def _count(doc: dict, key: str, required: bool = False) -> int | None:
    """A count from an artifact's diagnostics, named where it is not one (None: not recorded)."""
    value = doc[key] if required else doc.get(key)
    if value is None and not required:
        return None  # an artifact that did not record it reads as unknown, not as zero
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0 or value % 1:
        raise ValueError(f"diagnostics.{key} must be a count (a whole number >= 0), got {value!r}")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class FitDiagnostics(ResultView):
    """How a fit went: its loss and convergence, the points it used, its in-sample error.

    Parameters
    ----------
    loss : float
        The minimised loss (the spec's: least squares or Huber) at the optimum.
    n_used : int
        Points fitted.
    n_dropped : int
        Points the law's point filter dropped (too close to chance, no positive covariate).
    dropped_reasons : dict[str, int]
        How many points were dropped for each reason.
    converged : bool
        Whether the optimiser reported convergence.
    message : str
        The optimiser's message (or the closed form's), in benchcast's words (:func:`plain_message`).
    at_bound : tuple[str, ...]
        Parameters on a bound of their range, or outside it: a constraint of the law that is active,
        or a search limit the fit ran into (:func:`bound_findings` tells which).
    rmse : float
        In-sample root mean squared error of the fitted scores.
    r2 : float
        In-sample coefficient of determination of the fitted scores.
    flops_min, flops_max : float
        Compute range of the fitted runs (FLOPs).
    decades : float
        ``log10(flops_max / flops_min)``: how wide a range the law was fitted on.
    n_starts : int or None
        Optimiser starts (None: the artifact did not record it).
    n_evaluations : int or None
        Loss evaluations over all starts (None: not recorded).
    n_distinct : int or None
        Distinct covariate points fitted: replicate runs of one N and D are one point (None: not recorded).
    """

    # the field order is the artifact's key order
    loss: float
    n_used: int
    n_dropped: int
    dropped_reasons: dict[str, int] = field(default_factory=dict)
    converged: bool
    message: str
    at_bound: tuple[str, ...] = ()
    rmse: float
    r2: float
    flops_min: float = math.nan
    flops_max: float = math.nan
    decades: float = math.nan
    n_starts: int | None = None
    n_evaluations: int | None = None
    n_distinct: int | None = None

    def to_dict(self) -> dict:
        """The artifact's ``diagnostics`` mapping (JSON-ready)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["dropped_reasons"], out["at_bound"] = dict(self.dropped_reasons), list(self.at_bound)
        return jsonable(out)

    @classmethod
    def from_dict(cls, doc: dict) -> FitDiagnostics:
        """Read an artifact's ``diagnostics``; it must hold ``REQUIRED_DIAGNOSTICS``, other keys default.

        Parameters
        ----------
        doc : dict
            The mapping :meth:`to_dict` wrote (unknown keys are ignored).

        Returns
        -------
        FitDiagnostics
        """
        return cls(
            loss=_number(doc["loss"]),
            n_used=_count(doc, "n_used", required=True),
            n_dropped=_count(doc, "n_dropped", required=True),
            dropped_reasons={str(k): int(v) for k, v in (doc.get("dropped_reasons") or {}).items()},
            converged=bool(doc["converged"]),
            message=str(doc["message"]),
            at_bound=tuple(str(name) for name in doc["at_bound"] or ()),
            rmse=_number(doc["rmse"]),
            r2=_number(doc["r2"]),
            flops_min=_number(doc.get("flops_min")),
            flops_max=_number(doc.get("flops_max")),
            decades=_number(doc.get("decades")),
            n_starts=_count(doc, "n_starts"),
            n_evaluations=_count(doc, "n_evaluations"),
            n_distinct=_count(doc, "n_distinct"),
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per diagnostic: ``quantity`` and ``value``."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["dropped_reasons"] = ", ".join(f"{reason}: {n}" for reason, n in self.dropped_reasons.items())
        values["at_bound"] = ", ".join(self.at_bound)
        return pd.DataFrame({"quantity": list(values), "value": pd.Series(list(values.values()), dtype=object)})

    @property
    def title(self) -> str:
        return "Fit diagnostics"

    @property
    def dropped(self) -> str:
        """The rows the fit left out, counted with their reasons: ``'0'``, or ``'1 (score is NaN: 1)'``."""
        reasons = ", ".join(f"{why}: {n}" for why, n in self.dropped_reasons.items())
        return f"{self.n_dropped} ({reasons})" if reasons else str(self.n_dropped)


@dataclass(frozen=True)
class BoundFindings:
    """The parameters on a bound: active constraints of the law (information) and search limits reached (warning)."""

    constraints: tuple[str, ...] = ()
    limits: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)
    active: dict[str, str] = field(default_factory=dict)

    @property
    def at_search_limit(self) -> tuple[str, ...]:
        """The parameters at a search limit (a warning), in the law's order."""
        return tuple(name for name, flag in self.flags.items() if flag == "at search limit")

    def columns(self) -> dict[str, str]:
        """The findings as the cells ``constraint_active`` and ``at_search_limit`` (empty where none)."""
        return {
            "constraint_active": ", ".join(self.active.values()),
            "at_search_limit": ", ".join(self.at_search_limit),
        }


# the solvers' own words (scipy's least_squares and L-BFGS-B), as benchcast says them; checked in order
# scipy's words, for fit artifacts saved before the batched engine (its own messages are plain)
SOLVER_WORDS = (
    ("both `ftol` and `xtol`", "the loss and the parameters stopped changing"),
    ("`ftol`", "the loss stopped decreasing"),
    ("`xtol`", "the parameters stopped moving"),
    ("`gtol`", "the gradient vanished"),
    ("rel_reduction_of_f", "the loss stopped decreasing"),
    ("norm_of_projected_gradient", "the gradient vanished"),
    ("norm of projected gradient", "the gradient vanished"),  # scipy >= 1.15 spells L-BFGS-B's words out
    ("relative reduction of f", "the loss stopped decreasing"),
    ("maximum number of function evaluations", "the evaluation budget ran out"),
    ("total no. of", "the iteration budget ran out"),
    ("abnormal", "the line search found no lower loss"),
)


def plain_message(message: str) -> str:
    """An optimiser's message in benchcast's words, its stage kept (unknown messages as they are)."""
    stage, colon, said = message.partition(": ")
    if not colon:
        stage, said = "", message
    lowered = said.lower()
    for words, plain in SOLVER_WORDS:
        if words in lowered:
            return f"{stage}: {plain}" if stage else plain
    return message


SEARCH_LIMIT_ADVICE = (
    "the data do not determine it: try a wider compute range or more runs, or a law with fewer parameters"
)


def bound_findings(law, params: dict[str, float], at_bound) -> BoundFindings:
    """Sort the parameters on a bound into the law's active constraints and the search limits reached."""
    declared = {p.name: p for p in law.parameters}
    constraints, limits, flags, active = [], [], {}, {}
    for name in at_bound:
        param, value = declared.get(name), params.get(name, math.nan)
        if param is None:
            continue
        lower, upper = param.at_bounds(value)
        side = "lower" if bool(lower) else "upper" if bool(upper) else None
        box = law.search_box_reasons.get(name)
        if side is None and box is not None:  # a bound the law sets from the runs (Law.search_box)
            constraints.append(f"{name} = {value:.4g} is on the law's range for these runs: {box}")
            flags[name] = "constraint active"
            active[name] = box
        elif side is not None and param.is_constraint(side):
            constraints.append(
                f"the constraint {param.constraint_text(side)} is active"
                + (f" ({param.description})" if param.description else "")
                + ": the law's own bound, reached by the data"
            )
            flags[name] = "constraint active"
            active[name] = param.constraint_text(side)
        else:
            where = f"the {side} limit {param.bound(side):g}" if side else "a limit"
            limits.append(f"parameter {name} reached {where} of its search range: {SEARCH_LIMIT_ADVICE}")
            flags[name] = "at search limit"
    return BoundFindings(tuple(constraints), tuple(limits), flags, active)


def identified_stderr(params: dict[str, float], stderr: dict[str, float], rmse: float) -> dict[str, float | None]:
    """Each parameter's standard error, None where the data do not identify it (missing, infinite or zero)."""
    exact = bool(rmse <= 1e-12)
    out = {}
    for name in params:
        err = stderr.get(name)
        out[name] = float(err) if err is not None and math.isfinite(err) and (err > 0 or exact) else None
    return out
