"""The fit result: resolved spec, frozen law, uncertainty, diagnostics, a report, JSON round-trip."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast._version import __version__
from benchcast.errors import ArtifactError, BenchcastError
from benchcast.fitting.artifact import ARTIFACT_FORMAT, ARTIFACT_VERSION, artifact_fields
from benchcast.fitting.diagnostics import (
    BoundFindings,
    FitDiagnostics,
    bound_findings,
    identified_stderr,
    plain_message,
)
from benchcast.fitting.spec import FitSpec
from benchcast.laws.fitted import FittedLaw
from benchcast.utils.display import FigureView, ResultView
from benchcast.utils.io import atomic_write_text
from benchcast.utils.jsonable import jsonable

COVARIATE_HINTS = {
    "flops": "--flops (or --params and --tokens)",
    "params": "--params",
    "tokens": "--tokens",
    "k": "--k",
    "gold": "--gold",
}


@dataclass
class FitResult(ResultView, FigureView):
    """A fitted law on one benchmark/metric (and k): everything needed to predict and explain.

    Parameters
    ----------
    spec : FitSpec
        The resolved spec: every default filled in.
    fitted : FittedLaw
        The law frozen at its fitted parameters.
    stderr : dict[str, float]
        Standard error of each parameter (empty for the light refits of bootstraps and backtests).
    diagnostics : FitDiagnostics
        Loss, convergence, points used and dropped, in-sample error, compute range.
    points : pandas.DataFrame
        The fitted points (run, covariates, value) with the law's ``fitted`` score.
    dropped : list of dict
        The points the law's filter dropped, each with its ``reason``.
    warnings : list of str
        What a reader must know before trusting the fit (thin support, bounds, a short range).
    data_fingerprint : str
        sha256 of the fitted points (see :func:`fingerprint`).
    version : str
        The benchcast version that made the fit.
    rolling_origins : dict, optional
        The fit's forecasts of its own runs from rolling origins, where made ahead (``benchcast fit --out``
        stores them, so that a forecast of the artifact does not refit them): ``origin_decades``, ``axes``,
        ``made_for`` (a hash of the points, settings, law, origins and benchcast version they were made for:
        a table made for anything else is made afresh) and ``table``, as
        :func:`benchcast.forecasting.extrapolation.rolling_origin` makes it.
    """

    spec: FitSpec  # resolved: every default filled in
    fitted: FittedLaw
    stderr: dict[str, float]
    diagnostics: FitDiagnostics
    points: pd.DataFrame
    dropped: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    data_fingerprint: str = ""
    version: str = __version__
    rolling_origins: dict | None = None

    # -- views -------------------------------------------------------------------------------
    @property
    def law(self) -> str:
        return self.fitted.law.name

    @property
    def law_object(self):
        return self.fitted.law

    @property
    def params(self) -> dict[str, float]:
        return self.fitted.params

    @property
    def theta(self) -> np.ndarray:
        return self.fitted.vector

    @property
    def settings(self) -> dict:
        """The resolved spec as a plain dict (read-only view)."""
        return self.spec.to_dict()

    @property
    def converged(self) -> bool:
        return self.diagnostics.converged

    @property
    def bounds(self) -> BoundFindings:
        """The parameters on a bound, sorted into the law's own active constraints (information)
        and search limits reached (warnings)."""
        return bound_findings(self.law_object, self.params, self.diagnostics.at_bound)

    # -- prediction --------------------------------------------------------------------------
    def covariates(self, flops=None, params=None, tokens=None, k=None, gold=None) -> tuple[dict, tuple]:
        """Validated covariate arrays for this law (flops derived as 6 N D when needed).

        Parameters
        ----------
        flops : array_like, optional
            Training compute, in FLOPs (derived as 6 N D from ``params`` and ``tokens`` when the law
            needs it and it is not given).
        params : array_like, optional
            Model parameters N.
        tokens : array_like, optional
            Training tokens D.
        k : array_like, optional
            Number of attempts, for a pass@k law (must be the fitted k for a per-k fit).
        gold : array_like, optional
            Gold-reference negative log-likelihoods, for a law in them.

        Returns
        -------
        X : dict of str to ndarray
            The law's covariates by name, broadcast together and flattened.
        shape : tuple of int
            Their broadcast shape (the shape a prediction is given back in).
        """
        law = self.law_object
        given = {"flops": flops, "params": params, "tokens": tokens, "k": k, "gold": gold}
        arrays = {}
        for name, value in given.items():
            if value is None:
                continue
            array = np.asarray(value, float)
            if not np.all(np.isfinite(array)) or np.any(array <= 0):
                raise BenchcastError(f"{name} must be positive and finite, got {np.asarray(value).tolist()!r}.")
            arrays[name] = array
        if "flops" in law.covariates and "flops" not in arrays and {"params", "tokens"} <= set(arrays):
            arrays["flops"] = 6.0 * arrays["params"] * arrays["tokens"]
        if law.per_k and "k" in arrays and self.spec.k is not None and not np.all(arrays["k"] == self.spec.k):
            raise BenchcastError(
                f"this {self.law} fit is for k={self.spec.k}; fit the law at the k you need "
                "(the pass@k laws are fitted one k at a time)."
            )
        missing = [c for c in law.covariates if c not in arrays]
        if missing:
            raise BenchcastError(f"law {self.law!r} needs {', '.join(COVARIATE_HINTS[m] for m in missing)} to predict.")
        derived = {"params", "tokens"} if "flops" in law.covariates and flops is None else set()
        checked = {"k"} if law.per_k and self.spec.k is not None else set()  # k was checked against the fit's
        unused = [c for c in arrays if c not in law.covariates and c not in derived | checked]
        if unused:  # a covariate the law has no use for would be silently dropped
            raise BenchcastError(
                f"law {self.law!r} is a function of {', '.join(law.covariates)}, not of {', '.join(unused)}."
            )
        shape = np.broadcast_shapes(*(arrays[c].shape for c in law.covariates))
        return {c: np.broadcast_to(arrays[c], shape).ravel() for c in law.covariates}, shape

    def predict(self, flops=None, params=None, tokens=None, k=None, gold=None) -> np.ndarray:
        """Predicted score(s) in [0, 1] for the given covariates.

        Parameters
        ----------
        flops, params, tokens, k, gold : array_like, optional
            The covariates, as :meth:`covariates` takes them.

        Returns
        -------
        ndarray
            Predicted scores, in the covariates' broadcast shape.
        """
        X, shape = self.covariates(flops, params, tokens, k, gold)
        return np.asarray(self.fitted.score(X), float).reshape(shape)

    def frame_covariates(self, rows: pd.DataFrame) -> tuple[np.ndarray, dict]:
        """The covariates of the rows of a table, as :meth:`predict` takes them.

        Parameters
        ----------
        rows : DataFrame
            One row per point, with a column per covariate of the law.

        Returns
        -------
        ok : array of bool (rows,)
            Rows whose covariates are usable (finite and positive).
        covariates : dict of str to array
            The usable rows' covariates (a per-k law's k is its fit's, so it is left out).
        """
        law = self.law_object
        values = {c: rows[c].to_numpy(float) for c in law.covariates}
        ok = np.all([np.isfinite(v) & (v > 0) for v in values.values()], axis=0)
        return ok, {c: v[ok] for c, v in values.items() if not (law.per_k and c == "k")}

    def predict_frame(self, rows: pd.DataFrame) -> np.ndarray:
        """Predicted scores for the rows of a table (their covariates).

        Parameters
        ----------
        rows : DataFrame
            One row per point, with a column per covariate of the law.

        Returns
        -------
        array (rows,)
            nan where a covariate is not usable.
        """
        out = np.full(len(rows), np.nan)
        ok, covariates = self.frame_covariates(rows)
        if ok.any():
            out[ok] = self.predict(**covariates)
        return out

    # -- explanation -------------------------------------------------------------------------
    def to_dict(self) -> dict:
        doc = {
            "format": ARTIFACT_FORMAT,
            "format_version": ARTIFACT_VERSION,
            "benchcast_version": self.version,
            "law": self.law,
            "formula": self.law_object.formula,
            "params": self.params,
            "stderr": self.stderr,
            "settings": self.spec.to_dict(),
            "diagnostics": self.diagnostics.to_dict(),
            "warnings": self.warnings,
            "data_fingerprint": self.data_fingerprint,
            "dropped": self.dropped,
            "points": _columns(self.points),
        }
        if self.rolling_origins is not None:
            doc["rolling_origins"] = {**self.rolling_origins, "table": _columns(self.rolling_origins["table"])}
        return jsonable(doc)

    def _summary_lines(self) -> list[str]:
        """The report's lines between its heading and the parameters (selection, points, fit quality)."""
        d, s = self.diagnostics, self.spec
        sel = f"benchmark {s.benchmark}, metric {s.metric}"
        if s.k is not None:
            sel += f", k={s.k}"
        drops = ", ".join(f"{reason}: {n}" for reason, n in d.dropped_reasons.items())
        return [
            f"{sel}; q_rand {s.q_rand:g} ({s.q_rand_source or ''})",
            f"points: {d.n_used} used, {d.n_dropped} dropped" + (f" ({drops})" if drops else ""),
            (
                f"compute: {d.flops_min:.3g} .. {d.flops_max:.3g} FLOPs ({d.decades:.2f} decades)"
                if np.isfinite(d.decades)
                else "compute range: not recorded in this artifact"
            ),
            f"loss ({s.loss}): {d.loss:.4g}; RMSE {d.rmse:.4g}; R^2 {d.r2:.4f}",
            f"converged: {'yes' if d.converged else 'NO'} ({plain_message(d.message)}); "
            + (
                f"starts {d.n_starts}, evaluations {d.n_evaluations}"
                if d.n_starts is not None and d.n_evaluations is not None
                else "starts and evaluations not recorded in this artifact"
            ),
        ]

    def report(self) -> str:
        """A readable multi-line summary in the manner of lmfit's fit report (what ``str()`` and the CLI show).

        Returns
        -------
        str
            Heading, selection, points, compute range, loss and convergence, the parameters with
            their standard errors and bound flags, and the warnings.
        """
        lines = [self.title, *(f"    {line}" for line in self._summary_lines()), "Parameters:"]
        width = max(len(n) for n in self.params)
        bounds = self.bounds
        identified = identified_stderr(self.params, self.stderr, self.diagnostics.rmse)
        law = self.law_object
        presolved = set(law.param_names[: law.n_presolved])  # a first stage, fitted to the proxy loss
        for name, value in self.params.items():
            err = identified.get(name)
            stage1 = " (stage 1, fitted to the proxy: the bootstrap gives its spread)"
            missing = stage1 if name in presolved else " +/- not identified"
            err_text = f" +/- {err:.3g}" if err is not None else missing if self.stderr else ""
            flag = f"  ({bounds.flags[name]})" if name in bounds.flags else ""
            lines.append(f"    {name:<{width}} = {value:.6g}{err_text}{flag}")
        if bounds.constraints:
            lines.append("Constraints:")
            lines.extend(f"    {c}" for c in bounds.constraints)
        if self.warnings:
            lines.append("Warnings:")
            lines.extend(f"    {w}" for w in self.warnings)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    @property
    def title(self) -> str:
        return f"Fit: law {self.law}: {self.law_object.formula}"

    @property
    def notes(self) -> list[str]:
        """Selection, points, compute range, loss and convergence, the active constraints, then each warning."""
        return [
            *self._summary_lines(),
            *(f"information: {c}" for c in self.bounds.constraints),
            *(f"warning: {w}" for w in self.warnings),
        ]

    def to_frame(self) -> pd.DataFrame:
        """The parameters: ``parameter``, ``value``, ``stderr`` (NaN where not estimated), ``at_bound``."""
        names = list(self.params)
        values, stderr = [self.params[n] for n in names], [self.stderr.get(n, np.nan) for n in names]
        at_bound = [n in self.diagnostics.at_bound for n in names]
        return pd.DataFrame({"parameter": names, "value": values, "stderr": stderr, "at_bound": at_bound})

    def plot(self, ax=None, **style):
        """The panel of the runs the fit saw (dropped ones with why) and the law's curve (``style``: its keywords)."""
        from benchcast.plots.results import plot_fit  # matplotlib loads only when a figure is drawn

        return plot_fit(self, ax, **style)

    # -- persistence -------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write a versioned JSON artifact (atomically).

        Parameters
        ----------
        path : str or Path
            The file to write.

        Returns
        -------
        Path
            The path written.
        """
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, doc: dict, source: str = "artifact") -> FitResult:
        """Read an artifact, validating every field a prediction depends on.

        Parameters
        ----------
        doc : dict
            The artifact's JSON document, as :meth:`to_dict` writes it.
        source : str
            Where it came from, named in error messages.

        Returns
        -------
        FitResult
            The fit.
        """
        return cls(**artifact_fields(doc, source))

    @classmethod
    def load(cls, path: str | Path) -> FitResult:
        """Read a fit artifact written by :meth:`save`.

        Parameters
        ----------
        path : str or Path
            The artifact's JSON file.

        Returns
        -------
        FitResult
            The fit.
        """
        path = Path(path)
        if not path.exists():
            raise ArtifactError(f"{path}: no such fit file.")
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ArtifactError(f"{path}: not valid JSON ({exc}).") from exc
        return cls.from_dict(doc, str(path))


def _columns(frame: pd.DataFrame) -> dict:
    """A table as JSON lists per column (NaN as null)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("list")
