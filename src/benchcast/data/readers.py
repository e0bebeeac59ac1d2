"""Readers: tidy CSV/Parquet, Apple's long format, lm-evaluation-harness results JSON.

Each returns a validated table (see :mod:`benchcast.table`).
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from benchcast.data.table import validate
from benchcast.errors import DataError

FORMATS = ("auto", "tidy", "apple", "lm-eval")
# Accepted spellings of the canonical columns in tidy files.
ALIASES = {
    "N": "params",
    "n_params": "params",
    "parameters": "params",
    "D": "tokens",
    "n_tokens": "tokens",
    "C": "flops",
    "compute": "flops",
    "TPR": "tpr",
    "task": "benchmark",
    "metric_type": "metric",
    "score": "value",
    "model": "run",
    "run_id": "run",
}
APPLE_COLUMNS = {"tokens", "benchmark", "metric_type", "score", "tpr"}


def read_frame(path: Path, what: str = "a table") -> pd.DataFrame:
    """Any CSV, Parquet or JSON-lines file as a DataFrame; errors name the file."""
    if not path.exists():
        raise DataError(f"{path}: no such file.")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".ndjson", ".json"):
            return pd.read_json(path, lines=True)
        return pd.read_csv(path)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: could not be read as {what} ({exc}).") from exc


def read_tidy(path: str | Path, columns: dict[str, str] | None = None) -> pd.DataFrame:
    """A tidy table with one row per (run, benchmark, metric[, k]); ``columns`` renames."""
    path = Path(path)
    frame = read_frame(path)
    rename = {c: ALIASES[c] for c in frame.columns if c in ALIASES and ALIASES[c] not in frame.columns}
    rename.update(columns or {})
    unknown = [c for c in (columns or {}) if c not in frame.columns]
    if unknown:
        raise DataError(f"{path}: column(s) {unknown} named in the column mapping are not in the file.")
    return validate(frame.rename(columns=rename), source=str(path))


def _apple_run_ids(frame: pd.DataFrame) -> list[str]:
    """Split the contiguous blocks into runs; a repeated (benchmark, metric) starts a new block."""
    run_ids: list[str] = []
    seen: set[tuple[str, str]] = set()
    names: dict[str, int] = {}
    previous_key = None
    current = ""
    for tokens, tpr, bench, metric in zip(
        frame["tokens"], frame["tpr"], frame["benchmark"], frame["metric_type"], strict=True
    ):
        key = (tokens, tpr)
        if key != previous_key or (bench, metric) in seen:
            params = tokens / tpr
            base = f"{params / 1e6:.0f}M-tpr{tpr:g}" if params < 1e9 else f"{params / 1e9:.2f}B-tpr{tpr:g}"
            names[base] = names.get(base, 0) + 1
            current = base if names[base] == 1 else f"{base}-rep{names[base]}"
            seen = set()
            previous_key = key
        seen.add((bench, metric))
        run_ids.append(current)
    return run_ids


def read_apple(path: str | Path) -> pd.DataFrame:
    """Apple ``ml-scaling-downstream-metrics`` long format (``,tokens,benchmark,metric_type,score,tpr``).

    ``*_stderr`` rows become the ``stderr`` of their metric; ``pass@K`` becomes metric
    ``pass@k`` with ``k = K``; params = tokens / tpr and flops = 6 N D where absent.
    """
    path = Path(path)
    frame = read_frame(path)
    missing = APPLE_COLUMNS - set(frame.columns)
    if missing:
        raise DataError(
            f"{path}: not in the Apple long format: missing column(s) {sorted(missing)} "
            f"(expected ',tokens,benchmark,metric_type,score,tpr')."
        )
    for column in ("tokens", "tpr", "score"):
        if not pd.api.types.is_numeric_dtype(frame[column]):
            bad = pd.to_numeric(frame[column], errors="coerce").isna()
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{path}: column '{column}' must be numeric; row {row} holds {frame[column].iloc[row]!r}.")
    frame = frame.copy()
    frame["run"] = _apple_run_ids(frame)
    if "params" not in frame.columns:
        frame["params"] = frame["tokens"] / frame["tpr"]
    metric = frame["metric_type"].astype(str)
    is_err = metric.str.endswith("_stderr")
    errors = frame[is_err].assign(metric_type=metric[is_err].str.removesuffix("_stderr"))
    errors = errors.set_index(["run", "benchmark", "metric_type"])["score"]
    values = frame[~is_err].copy()
    key = pd.MultiIndex.from_frame(values[["run", "benchmark", "metric_type"]])
    values["stderr"] = errors.reindex(key).to_numpy()
    keep = ["run", "params", "tokens", "tpr", "benchmark", "metric_type", "score", "stderr"]
    if "flops" in values.columns:
        keep.insert(3, "flops")
    tidy = values[keep].rename(columns={"metric_type": "metric", "score": "value"})
    return validate(tidy.reset_index(drop=True), source=str(path))


def _read_metadata(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise DataError(f"{path}: run metadata file not found.")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            raw = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise DataError(f"{path}: not valid YAML ({exc}).") from exc
        if isinstance(raw, dict) and "runs" in raw:
            raw = raw["runs"]
        if isinstance(raw, dict):
            raw = [{"run": name, **(fields or {})} for name, fields in raw.items()]
        if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
            raise DataError(f"{path}: expected a list of runs (each with run, params, tokens).")
        meta = pd.DataFrame(raw)
    else:
        meta = read_frame(path)
    meta = meta.rename(columns={c: ALIASES.get(c, c) for c in meta.columns})
    if "run" not in meta.columns:
        raise DataError(f"{path}: run metadata needs a 'run' column.")
    if "flops" not in meta.columns and not {"params", "tokens"} <= set(meta.columns):
        raise DataError(f"{path}: run metadata needs 'params' and 'tokens' (or 'flops') per run.")
    meta["run"] = meta["run"].astype(str)
    return meta


def _model_names(doc: dict, file: Path) -> set[str]:
    names = {file.parent.name, file.stem}
    for key in ("model_name", "model_name_sanitized"):
        if isinstance(doc.get(key), str):
            names.add(doc[key])
    args = (doc.get("config") or {}).get("model_args")
    if isinstance(args, str):
        for part in args.split(","):
            if part.startswith("pretrained="):
                pretrained = part.split("=", 1)[1]
                names.update({pretrained, Path(pretrained).name})
    elif isinstance(args, dict) and isinstance(args.get("pretrained"), str):
        names.update({args["pretrained"], Path(args["pretrained"]).name})
    return {n for n in names if n}


def _lm_eval_rows(doc: dict, file: Path) -> list[dict]:
    results = doc.get("results")
    if not isinstance(results, dict):
        raise DataError(f"{file}: not an lm-evaluation-harness results file (no 'results' object).")
    rows = []
    for task, metrics in results.items():
        values, errors = {}, {}
        for key, value in metrics.items():
            if key == "alias" or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            name, _, filt = key.partition(",")
            target = errors if name.endswith("_stderr") else values
            name = name.removesuffix("_stderr")
            target[name if filt in ("", "none") else f"{name}/{filt}"] = float(value)
        for name, value in values.items():
            rows.append({"benchmark": task, "metric": name, "value": value, "stderr": errors.get(name)})
    return rows


def read_lm_eval(paths: str | Path | list[str | Path], metadata: str | Path) -> pd.DataFrame:
    """lm-evaluation-harness ``results*.json`` files (or folders of them) plus run metadata.

    ``metadata`` is a YAML or CSV listing each run's ``run``, ``params`` and ``tokens`` (or
    ``flops``), optionally a ``path`` glob; a results file belongs to the run whose ``path``
    matches it, else to the run named by its model (``pretrained=...``) or its folder.
    """
    if metadata is None:
        raise DataError("lm-evaluation-harness results need run metadata (N and D): pass --metadata.")
    meta_path = Path(metadata)
    meta = _read_metadata(meta_path)
    files: list[Path] = []
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(path)
        if path.is_dir():
            files.extend(sorted(path.rglob("results*.json")))
        elif path.exists():
            files.append(path)
        else:
            raise DataError(f"{path}: no such file or folder.")
    if not files:
        raise DataError(f"{paths}: no results*.json files found.")
    rows = []
    for file in files:
        try:
            doc = json.loads(file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{file}: not valid JSON ({exc}).") from exc
        run = None
        if "path" in meta.columns:
            for name, pattern in zip(meta["run"], meta["path"], strict=True):
                if isinstance(pattern, str) and (
                    fnmatch.fnmatch(str(file), pattern)
                    or fnmatch.fnmatch(str(file), str(meta_path.parent / pattern))
                    or str(file).startswith(str(meta_path.parent / pattern))
                ):
                    run = name
                    break
        if run is None:
            matches = sorted(set(meta["run"]) & _model_names(doc, file))
            if len(matches) == 1:
                run = matches[0]
        if run is None:
            raise DataError(
                f"{file}: no run in {meta_path} matches this results file (model names "
                f"{sorted(_model_names(doc, file))}); add a 'path' to its run's metadata."
            )
        rows.extend({"run": run, **r} for r in _lm_eval_rows(doc, file))
    frame = pd.DataFrame(rows).merge(meta.drop(columns=["path"], errors="ignore"), on="run")
    return validate(frame, source=str(paths))


def detect_format(path: Path) -> str:
    if path.is_dir() or path.suffix.lower() == ".json":
        return "lm-eval"
    header = (
        set(read_frame(path).columns)
        if path.suffix.lower() in (".parquet", ".pq")
        else set(pd.read_csv(path, nrows=0).columns)
        if path.exists()
        else set()
    )
    return "apple" if APPLE_COLUMNS <= header else "tidy"


def load(
    path: str | Path,
    format: str = "auto",
    *,
    columns: dict[str, str] | None = None,
    metadata: str | Path | None = None,
) -> pd.DataFrame:
    """Read any supported file into a validated table.

    ``format`` is ``'auto'`` (by extension and header), ``'tidy'``, ``'apple'`` or ``'lm-eval'``.
    """
    path = Path(path)
    if format not in FORMATS:
        raise DataError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}.")
    if not path.exists():
        raise DataError(f"{path}: no such file or folder.")
    if format == "auto":
        format = detect_format(path)
    if format == "apple":
        return read_apple(path)
    if format == "lm-eval":
        return read_lm_eval(path, metadata)
    return read_tidy(path, columns)
