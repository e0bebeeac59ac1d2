"""The fit result: parameters, uncertainty, diagnostics, a readable report, JSON round-trip."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast._version import __version__
from benchcast.errors import ArtifactError, BenchcastError
from benchcast.laws import get_law
from benchcast.utils.io import atomic_write_text
from benchcast.utils.jsonable import jsonable

ARTIFACT_FORMAT = "benchcast-fit"
ARTIFACT_VERSION = 1
POINT_COLUMNS = ("run", "flops", "params", "tokens", "k", "gold", "proxy", "value")


def fingerprint(points: pd.DataFrame) -> str:
    """sha256 of the fitted points (runs, covariates, values): identifies the data of a fit."""
    cols = [c for c in POINT_COLUMNS if c in points.columns]
    text = points[cols].to_csv(index=False, float_format="%.17g")
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass
class FitResult:
    """A fitted law on one benchmark/metric (and k): everything needed to predict and explain."""

    law: str
    params: dict[str, float]
    stderr: dict[str, float]
    settings: dict
    diagnostics: dict
    points: pd.DataFrame
    dropped: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    data_fingerprint: str = ""
    version: str = __version__

    # -- prediction ------------------------------------------------------------------------
    @property
    def law_object(self):
        return get_law(self.law)

    @property
    def theta(self) -> np.ndarray:
        return np.array([self.params[name] for name in self.law_object.param_names], float)

    def covariates(self, flops=None, params=None, tokens=None, k=None, gold=None) -> dict:
        """Validated covariate arrays for this law (flops derived as 6 N D when needed)."""
        law = self.law_object
        given = {"flops": flops, "params": params, "tokens": tokens, "k": k, "gold": gold}
        arrays = {}
        for name, value in given.items():
            if value is None:
                continue
            array = np.asarray(value, float)
            if not np.all(np.isfinite(array)) or np.any(array <= 0):
                raise BenchcastError(f"{name} must be positive and finite, got {value!r}.")
            arrays[name] = array
        if "flops" in law.covariates and "flops" not in arrays:
            if "params" in arrays and "tokens" in arrays:
                arrays["flops"] = 6.0 * arrays["params"] * arrays["tokens"]
        fitted_k = self.settings.get("k")
        if law.per_k and "k" in arrays and fitted_k is not None:
            if not np.all(arrays["k"] == fitted_k):
                raise BenchcastError(
                    f"this {self.law} fit is for k={fitted_k}; fit the law at the k you need "
                    "(the pass@k laws are fitted one k at a time)."
                )
        missing = [c for c in law.covariates if c not in arrays]
        if missing:
            hint = {
                "flops": "--flops (or --params and --tokens)",
                "params": "--params",
                "tokens": "--tokens",
                "k": "--k",
                "gold": "--gold",
            }
            raise BenchcastError(f"law {self.law!r} needs {', '.join(hint[m] for m in missing)} to predict.")
        shape = np.broadcast_shapes(*(arrays[c].shape for c in law.covariates))
        return {c: np.broadcast_to(arrays[c], shape).ravel() for c in law.covariates}, shape

    def predict(self, flops=None, params=None, tokens=None, k=None, gold=None) -> np.ndarray:
        """Predicted score(s) in [0, 1] for the given covariates."""
        X, shape = self.covariates(flops, params, tokens, k, gold)
        law = self.law_object
        with np.errstate(over="ignore", under="ignore"):
            score = law.predict_score(self.theta, X, self.settings["q_rand"])
        return np.asarray(score, float).reshape(shape)

    # -- explanation -----------------------------------------------------------------------
    @property
    def converged(self) -> bool:
        return bool(self.diagnostics.get("converged"))

    def to_dict(self) -> dict:
        return jsonable(
            {
                "format": ARTIFACT_FORMAT,
                "format_version": ARTIFACT_VERSION,
                "benchcast_version": self.version,
                "law": self.law,
                "formula": self.law_object.formula,
                "params": self.params,
                "stderr": self.stderr,
                "settings": self.settings,
                "diagnostics": self.diagnostics,
                "warnings": self.warnings,
                "data_fingerprint": self.data_fingerprint,
                "dropped": self.dropped,
                "points": self.points.astype(object).where(self.points.notna(), None).to_dict("list"),
            }
        )

    def report(self) -> str:
        """A readable multi-line summary in the manner of lmfit's fit report."""
        d, s = self.diagnostics, self.settings
        law = self.law_object
        lines = [f"[[Fit]] law {self.law}: {law.formula}"]
        sel = f"benchmark {s.get('benchmark')}, metric {s.get('metric')}"
        if s.get("k") is not None:
            sel += f", k={s['k']}"
        lines.append(f"    {sel}; q_rand {s['q_rand']:g} ({s.get('q_rand_source', '')})")
        drops = ", ".join(f"{reason}: {n}" for reason, n in d.get("dropped_reasons", {}).items())
        lines.append(f"    points: {d['n_used']} used, {d['n_dropped']} dropped" + (f" ({drops})" if drops else ""))
        lines.append(f"    compute: {d['flops_min']:.3g} .. {d['flops_max']:.3g} FLOPs ({d['decades']:.2f} decades)")
        lines.append(f"    loss ({s['loss']}): {d['loss']:.4g}; RMSE {d['rmse']:.4g}; R^2 {d['r2']:.4f}")
        lines.append(
            f"    converged: {'yes' if d['converged'] else 'NO'} ({d['message']}); "
            f"starts {d['n_starts']}, evaluations {d['n_evaluations']}"
        )
        lines.append("[[Parameters]]")
        width = max(len(n) for n in self.params)
        for name, value in self.params.items():
            err = self.stderr.get(name)
            err_text = f" +/- {err:.3g}" if err is not None and np.isfinite(err) else ""
            flag = "  (at bound)" if name in d.get("at_bound", []) else ""
            lines.append(f"    {name:<{width}} = {value:.6g}{err_text}{flag}")
        if self.warnings:
            lines.append("[[Warnings]]")
            lines.extend(f"    {w}" for w in self.warnings)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    # -- persistence -----------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write a versioned JSON artifact (atomically)."""
        return atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, doc: dict, source: str = "artifact") -> FitResult:
        if not isinstance(doc, dict) or doc.get("format") != ARTIFACT_FORMAT:
            raise ArtifactError(f"{source}: not a benchcast fit artifact (no format '{ARTIFACT_FORMAT}').")
        if doc.get("format_version", 0) > ARTIFACT_VERSION:
            raise ArtifactError(
                f"{source}: artifact format version {doc['format_version']} is newer than this "
                f"benchcast ({__version__}) reads ({ARTIFACT_VERSION}); upgrade benchcast."
            )
        try:
            get_law(doc["law"])
            points = pd.DataFrame(doc.get("points") or {})
            for column in points.columns:
                if column != "run":
                    points[column] = pd.to_numeric(points[column], errors="coerce")
            return cls(
                law=doc["law"],
                params={k: float(v) for k, v in doc["params"].items()},
                stderr={k: (np.nan if v is None else float(v)) for k, v in doc.get("stderr", {}).items()},
                settings=doc["settings"],
                diagnostics=doc["diagnostics"],
                points=points,
                dropped=doc.get("dropped", []),
                warnings=doc.get("warnings", []),
                data_fingerprint=doc.get("data_fingerprint", ""),
                version=doc.get("benchcast_version", "unknown"),
            )
        except (KeyError, TypeError, ValueError, BenchcastError) as exc:
            raise ArtifactError(f"{source}: malformed fit artifact ({exc}).") from exc

    @classmethod
    def load(cls, path: str | Path) -> FitResult:
        path = Path(path)
        if not path.exists():
            raise ArtifactError(f"{path}: no such fit file.")
        try:
            doc = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ArtifactError(f"{path}: not valid JSON ({exc}).") from exc
        return cls.from_dict(doc, str(path))
