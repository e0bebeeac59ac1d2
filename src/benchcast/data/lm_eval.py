"""lm-evaluation-harness results files (v0.3 and v0.4) placed on a ladder by run metadata.

What lm-eval writes, and how it is read here:

* v0.4 ``results_<timestamp>.json``: ``results[task]`` maps ``"<metric>,<filter>"`` and
  ``"<metric>_stderr,<filter>"`` to numbers (``"N/A"`` for a stderr it did not compute) plus an
  ``alias``. The filter ``none`` is dropped; another filter stays in the metric name
  (``exact_match,strict-match`` -> ``exact_match/strict-match``).
* v0.3 ``<anything>.json`` (e.g. the Pythia evaluations): ``results[task]`` maps ``acc``,
  ``acc_stderr``, ... with no filter; the checkpoint is in ``config.model_args``
  (``pretrained=...,revision=step<N>``).

The benchmark is the task key; the run comes from the metadata (see :mod:`benchcast.data.metadata`).
Re-runs: when two files give the same run, benchmark and metric, only the newest (by the
timestamp in its name, or its ``date``) is kept and a :class:`DataWarning` names both files.
"""

from __future__ import annotations

import fnmatch
import re
import warnings
from datetime import UTC, datetime
from pathlib import Path, PurePath

import pandas as pd

from benchcast.data.choices import find_samples, measured_choices, with_measured_chance
from benchcast.data.files import read_json
from benchcast.data.metadata import RunMetadata, read_metadata
from benchcast.data.schema import validate
from benchcast.errors import DataError, DataWarning

TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)")
STEP_IN_NAME = re.compile(r"step(\d+)")
MISSING_STDERR = ("N/A", "n/a", "NA", "nan", "")
# Metadata fields that place a run or select files; every other field is copied onto its rows.
PLACEMENT_FIELDS = ("run", "params", "tokens", "flops", "path", "steps", "tokens_per_step", "final_step")


def _results_document(file: Path) -> dict:
    """A results file's top-level object, checked to hold a non-empty ``results`` mapping of mappings."""
    doc = read_json(file, "an lm-evaluation-harness results file")
    if not isinstance(doc, dict):
        raise DataError(
            f"{file}: not an lm-evaluation-harness results file (top level is a {type(doc).__name__}, "
            "expected an object with 'results')."
        )
    results = doc.get("results")
    if not isinstance(results, dict):
        raise DataError(f"{file}: not an lm-evaluation-harness results file (no 'results' object).")
    if not results:
        raise DataError(f"{file}: 'results' is empty: no task was evaluated.")
    for task, metrics in results.items():
        if not isinstance(metrics, dict):
            raise DataError(
                f"{file}: results[{task!r}] is a {type(metrics).__name__} ({metrics!r}); expected an object "
                "mapping metric names to numbers."
            )
    return doc


def _results_rows(doc: dict, file: Path) -> list[dict]:
    """One row per (task, metric) with its value and stderr."""
    rows = []
    for task, metrics in doc["results"].items():
        values, errors = {}, {}
        for key, value in metrics.items():
            if key == "alias":
                continue
            name, _, filt = str(key).partition(",")
            is_err = name.endswith("_stderr")
            name = name.removesuffix("_stderr")
            label = name if filt.strip() in ("", "none") else f"{name}/{filt.strip()}"
            if is_err and (value is None or (isinstance(value, str) and value.strip() in MISSING_STDERR)):
                errors[label] = None  # lm-eval's marker for a stderr it did not compute
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise DataError(
                    f"{file}: results[{task!r}][{key!r}] holds {value!r}; expected a number"
                    + (" (or 'N/A')." if is_err else ".")
                )
            (errors if is_err else values)[label] = float(value)
        for label, value in values.items():
            rows.append({"benchmark": str(task), "metric": label, "value": value, "stderr": errors.get(label)})
    return rows


def model_args(doc: dict) -> dict[str, str]:
    """The ``model_args`` of a results file's ``config`` as a mapping (a dict or ``key=value,...`` text)."""
    args = (doc.get("config") or {}).get("model_args") if isinstance(doc.get("config"), dict) else None
    if isinstance(args, dict):
        return {str(k): str(v) for k, v in args.items()}
    if isinstance(args, str):
        return dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    return {}


def _model_names(doc: dict, file: Path) -> set[str]:
    """Names a results file may be known by: its model (``pretrained=``), lm-eval's model_name, its folder."""
    names = {file.parent.name, file.stem}
    for key in ("model_name", "model_name_sanitized"):
        if isinstance(doc.get(key), str):
            names.add(doc[key])
    pretrained = model_args(doc).get("pretrained")
    if pretrained:
        names.update({pretrained, Path(pretrained).name})
    return {n for n in names if n}


def _file_time(doc: dict, file: Path) -> float | None:
    """When lm-eval wrote a results file: the timestamp in its name, else its ``date`` field."""
    found = TIMESTAMP.search(file.name)
    if found:
        stamp = found.group(1)
        fmt = "%Y-%m-%dT%H-%M-%S.%f" if "." in stamp else "%Y-%m-%dT%H-%M-%S"
        return datetime.strptime(stamp, fmt).replace(tzinfo=UTC).timestamp()
    date = doc.get("date")
    return float(date) if isinstance(date, (int, float)) and not isinstance(date, bool) else None


def _results_files(paths) -> list[Path]:
    """The results JSON files named by ``paths`` (folders searched for ``results*.json``, else any ``*.json``)."""
    files: list[Path] = []
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(path)
        if path.is_dir():
            files.extend(sorted(path.rglob("results*.json")) or sorted(path.rglob("*.json")))
        elif path.exists():
            files.append(path)
        else:
            raise DataError(f"{path}: no such file or folder.")
    if not files:
        raise DataError(f"{paths}: no results JSON files found.")
    return files


def _path_matches(file: Path, pattern, folder: Path) -> bool:
    """Whether a metadata ``path`` glob names a results file (as given, or relative to the metadata's folder)."""
    if not isinstance(pattern, str) or not pattern:
        return False
    name, beside = str(file), str(folder / pattern)
    matched = PurePath(file).match(pattern) or fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(name, beside)
    return matched or name.startswith(beside)


def _matching_runs(meta: RunMetadata, doc: dict, file: Path) -> list[str]:
    runs = meta.runs
    if "path" in runs.columns:
        by_path = [
            r for r, p in zip(runs["run"], runs["path"], strict=True) if _path_matches(file, p, meta.path.parent)
        ]
        if by_path:
            return by_path
    names = _model_names(doc, file)
    matches = [r for r in runs["run"] if r in names]
    if "model" in runs.columns:
        matches += [r for r, m in zip(runs["run"], runs["model"], strict=True) if isinstance(m, str) and m in names]
    return sorted(set(matches))


def _keep_newest(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, benchmark, metric): the newest file's, with a warning naming the files."""
    key = ["run", "benchmark", "metric"]
    files_per_key = frame.groupby(key)["file"].nunique()
    clashing = files_per_key[files_per_key > 1]
    if clashing.empty:
        return frame
    involved = frame.set_index(key).loc[clashing.index].reset_index()
    undated = involved[involved["time"].isna()]
    if not undated.empty:
        run = undated["run"].iloc[0]
        files = sorted(set(involved[involved["run"] == run]["file"]))
        raise DataError(
            f"run {run!r} is evaluated on the same task in several files ({', '.join(files[:3])}) and their "
            "dates are unknown, so the newest cannot be chosen: remove the older file(s)."
        )
    frame = frame.sort_values("time", kind="stable")
    for run, rows in involved.groupby("run"):
        files = rows.sort_values("time")["file"].unique()
        warnings.warn(
            f"run {run!r}: {len(files)} results files give the same tasks ({', '.join(files)}); "
            f"kept the newest, {files[-1]}, for those tasks.",
            DataWarning,
            stacklevel=3,
        )
    return frame.drop_duplicates(key, keep="last")


def read_lm_eval(
    paths: str | Path | list[str | Path], metadata: str | Path | None, samples: str | Path | list | None = None
) -> pd.DataFrame:
    """lm-evaluation-harness results JSON files (or folders of them) plus run metadata.

    ``metadata`` is a YAML or CSV file (schema in :mod:`benchcast.data.metadata`). A results file
    belongs to the run whose ``path`` glob matches it, else to the run named by its model
    (``pretrained=...``, lm-eval's ``model_name``, ``model`` in the metadata) or by its folder.
    Checkpointed runs add the columns ``series`` (the run in the metadata), ``step`` and ``final``
    (``True`` at ``final_step``). Multiple-choice tasks get their measured chance level (``q_rand``,
    ``q_rand_source``, ``choices``; :mod:`benchcast.data.choices`) from the ``samples_<task>_*.jsonl``
    files beside the results or in ``samples``, and from the results files' task configs.

    Parameters
    ----------
    paths : str or Path or list of them
        Results files and folders.
    metadata : str or Path
        The run metadata file (required: it gives each run's N and D).
    samples : str or Path or list of them, optional
        lm-eval ``--log_samples`` files or folders that are not beside the results files.

    Returns
    -------
    pandas.DataFrame
        The tidy table: one row per run, benchmark and metric.
    """
    if metadata is None:
        raise DataError("lm-evaluation-harness results need run metadata (N and D): pass --metadata.")
    meta = read_metadata(metadata)
    rows: list[dict] = []
    untrained: list[str] = []
    configs: dict[str, list[tuple[dict, str]]] = {}
    files = _results_files(paths)
    for file in files:
        doc = _results_document(file)
        for task, config in (doc.get("configs") if isinstance(doc.get("configs"), dict) else {}).items():
            configs.setdefault(str(task), []).append((config, str(file)))
        matches = _matching_runs(meta, doc, file)
        if not matches:
            raise DataError(
                f"{file}: no run in {meta.path} matches this results file (model names "
                f"{sorted(_model_names(doc, file))}); add a 'path' glob or a 'model' to its run's metadata."
            )
        if len(matches) > 1:
            raise DataError(f"{file}: several runs in {meta.path} match this results file: {matches}.")
        run = matches[0]
        info = meta.row(run)
        sizes = {k: info.get(k) for k in ("params", "tokens", "flops") if k in info}
        extra = {k: v for k, v in info.items() if k not in PLACEMENT_FIELDS}
        if meta.is_checkpointed(run):
            # the step: ``revision=step<N>`` in model_args, else ``step<N>`` in the file name
            found = STEP_IN_NAME.search(model_args(doc).get("revision", "")) or STEP_IN_NAME.search(file.stem)
            if found is None:
                raise DataError(
                    f"{file}: run {run!r} is checkpointed (tokens_per_step) but the file names no step "
                    "(no 'revision=step<N>' in config.model_args and no 'step<N>' in the file name)."
                )
            step, steps = int(found.group(1)), info.get("steps")
            if (isinstance(steps, list) and step not in steps) or (
                steps == "final" and step != int(info["final_step"])
            ):
                continue
            if step == 0:
                untrained.append(str(file))
                continue
            sizes["tokens"] = step * info["tokens_per_step"]
            final = info.get("final_step")
            extra |= {"series": run, "step": step, "final": (step == int(final)) if pd.notna(final) else pd.NA}
            if not (steps == "final" or (isinstance(steps, list) and len(steps) == 1)):
                run = f"{run}@step{step}"
        time = _file_time(doc, file)
        for row in _results_rows(doc, file):
            rows.append({"run": run, **sizes, **extra, **row, "file": str(file), "time": time})
    if untrained:
        warnings.warn(
            f"skipped {len(untrained)} step-0 checkpoint file(s) (0 tokens: no compute to place them at), "
            f"e.g. {untrained[0]}.",
            DataWarning,
            stacklevel=2,
        )
    if not rows:
        raise DataError(f"{paths}: no results left to read (the metadata's 'steps' selected none of the files).")
    frame = _keep_newest(pd.DataFrame(rows)).drop(columns=["file", "time"]).reset_index(drop=True)
    frame = with_measured_chance(frame, measured_choices(configs, find_samples(files, samples)))
    return validate(frame, source=str(paths))
