"""The fit artifact: the versioned JSON a :class:`~benchcast.fitting.result.FitResult` is saved as,
its data fingerprint, and the validation of every field a prediction depends on when it is read."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pandas as pd

from benchcast._version import __version__
from benchcast.errors import ArtifactError, BenchcastError
from benchcast.fitting.diagnostics import REQUIRED_DIAGNOSTICS, FitDiagnostics
from benchcast.fitting.spec import FitSpec
from benchcast.laws import get_law
from benchcast.laws.fitted import FittedLaw
from benchcast.laws.linalg import distinct_points
from benchcast.validation import check_columns

ARTIFACT_FORMAT = "benchcast-fit"
ARTIFACT_VERSION = 2  # 2: 'settings' is the whole resolved FitSpec (selection included)
POINT_COLUMNS = ("run", "flops", "params", "tokens", "k", "gold", "proxy", "value")
# the table of a fit's rolling-origin forecasts (benchcast.forecasting.extrapolation.rolling_origin), as stored
ROLLING_ORIGIN_COLUMNS = (
    "axis",
    "origin_decades",
    "side",
    "origin",
    "run",
    "k",
    "flops",
    "decades",
    "tpr_decades",
    "true",
    "predicted",
    "converged",
)
ROLLING_ORIGIN_TEXT = ("axis", "side", "run", "converged")  # its columns that are not numbers


def fingerprint(points: pd.DataFrame) -> str:
    """sha256 of the fitted points (runs, covariates, values): identifies the data of a fit."""
    cols = [c for c in POINT_COLUMNS if c in points.columns]
    text = points[cols].to_csv(index=False, float_format="%.17g")
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def artifact_fields(doc: dict, source: str = "artifact") -> dict:
    """The fields of a FitResult read from an artifact, every field a prediction depends on validated."""
    if not isinstance(doc, dict) or doc.get("format") != ARTIFACT_FORMAT:
        raise ArtifactError(f"{source}: not a benchcast fit artifact (no format '{ARTIFACT_FORMAT}').")
    version = doc.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ArtifactError(f"{source}: 'format_version' must be a positive integer, got {version!r}.")
    if version > ARTIFACT_VERSION:
        raise ArtifactError(
            f"{source}: artifact format version {version} is newer than this "
            f"benchcast ({__version__}) reads ({ARTIFACT_VERSION}); upgrade benchcast."
        )
    try:
        law = get_law(doc.get("law"))
        params = doc.get("params")
        if not isinstance(params, dict):
            raise ArtifactError(f"{source}: 'params' must be a mapping of parameter names to numbers.")
        missing = [n for n in law.param_names if n not in params]
        extra = [n for n in params if n not in law.param_names]
        if missing or extra:
            raise ArtifactError(
                f"{source}: law {law.name!r} has parameters {law.param_names}; "
                + (f"missing {missing}" if missing else "")
                + ("; " if missing and extra else "")
                + (f"unknown {extra}" if extra else "")
                + "."
            )
        theta = []
        for name in law.param_names:
            value = params[name]
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ArtifactError(f"{source}: parameter {name} must be a number, got {value!r}.")
            theta.append(float(value))
        settings = doc.get("settings")
        if not isinstance(settings, dict):
            raise ArtifactError(f"{source}: 'settings' must be a mapping.")
        spec = FitSpec.from_dict({"law": law.name, **{k: v for k, v in settings.items() if k != "law"}})
        for key in ("benchmark", "metric", "q_rand", "loss"):
            if getattr(spec, key) is None:
                raise ArtifactError(f"{source}: setting {key!r} is missing.")
        if not isinstance(spec.q_rand, (int, float)):
            raise ArtifactError(f"{source}: setting 'q_rand' must be a number, got {spec.q_rand!r}.")
        diagnostics = doc.get("diagnostics")
        if not isinstance(diagnostics, dict) or any(key not in diagnostics for key in REQUIRED_DIAGNOSTICS):
            raise ArtifactError(f"{source}: 'diagnostics' must hold {', '.join(REQUIRED_DIAGNOSTICS)}.")
        diagnostics = FitDiagnostics.from_dict(diagnostics)
        # only parameters the fit itself reported outside their range may be there
        problems = law.check_params(np.asarray(theta), allow_outside=diagnostics.at_bound)
        if problems:
            raise ArtifactError(f"{source}: invalid parameters for law {law.name!r}: " + "; ".join(problems) + ".")
        fitted = FittedLaw(law, tuple(theta), float(spec.q_rand), {"k": spec.k})
        points = pd.DataFrame(doc.get("points") or {})
        for column in points.columns:
            if column != "run":
                points[column] = pd.to_numeric(points[column], errors="coerce")
        if len(points.columns):  # no points at all: it predicts, and bootstrapping says it cannot
            needed = ("run", "flops", "value", "fitted", *law.covariates, *law.fit_covariates)
            check_columns(points, needed, f"{source}: the training points", ArtifactError)
            if diagnostics.n_distinct is None:  # an artifact older than the count: counted once, from its points
                columns = {*law.covariates, *law.fit_covariates}
                diagnostics = replace(
                    diagnostics, n_distinct=distinct_points({c: points[c].to_numpy(float) for c in columns})
                )
        stderr = doc.get("stderr") or {}
        origins = doc.get("rolling_origins")
        if origins is not None:
            if not isinstance(origins, dict) or not {"origin_decades", "axes", "made_for", "table"} <= set(origins):
                raise ArtifactError(f"{source}: 'rolling_origins' must hold origin_decades, axes, made_for and table.")
            table = pd.DataFrame(origins["table"])
            if tuple(table.columns) != ROLLING_ORIGIN_COLUMNS:
                raise ArtifactError(
                    f"{source}: the rolling origins' table has columns {list(table.columns)}; expected "
                    f"{list(ROLLING_ORIGIN_COLUMNS)}."
                )
            for column in set(ROLLING_ORIGIN_COLUMNS) - set(ROLLING_ORIGIN_TEXT):
                table[column] = pd.to_numeric(table[column], errors="raise")
            origins = {**origins, "table": table}
        return dict(
            spec=spec,
            fitted=fitted,
            stderr={k: (np.nan if v is None else float(v)) for k, v in stderr.items()},
            diagnostics=diagnostics,
            points=points,
            dropped=list(doc.get("dropped") or []),
            warnings=list(doc.get("warnings") or []),
            data_fingerprint=str(doc.get("data_fingerprint", "")),
            version=str(doc.get("benchcast_version", "unknown")),
            rolling_origins=origins,
        )
    except ArtifactError:
        raise
    except (KeyError, TypeError, ValueError, BenchcastError) as exc:
        raise ArtifactError(f"{source}: malformed fit artifact ({exc}).") from exc
