"""Run metadata: where each evaluated run sits on a scaling ladder (N, D or C).

A YAML (or CSV with the same columns) file. Numbers may be written ``70426624``, ``7.0e7`` or
``"7.0e7"`` (PyYAML reads ``7.0e7`` as text; every numeric field is converted, or refused with the
field named)::

    tokens_per_step: 2097152     # optional: D of a checkpoint = step x tokens_per_step
    final_step: 143000           # optional: checkpoints at this step get final = true
    steps: final                 # optional: which checkpoints to read: all (default), final, or a list
    runs:                        # a list of mappings, or a mapping run name -> fields
      - run: pythia-70m          # the run's name (required; never replaced by 'model')
        params: 70426624         # N
        tokens: 3.0e11           # D, or flops: C. Omit both for a checkpointed run (see below)
        path: pythia-70m/*.json  # optional glob matched against the results file's path
        model: EleutherAI/pythia-70m   # optional: the model name lm-eval recorded

A *checkpointed* run has ``tokens_per_step`` (its own or the global one) and neither ``tokens``
nor ``flops``: each results file of it is one checkpoint, named ``<run>@step<N>``, with the step
read from ``revision=step<N>`` in the file's ``model_args`` or from ``step<N>`` in its file name,
and D = step x tokens_per_step. Step 0 (no compute) is skipped with a warning. When ``steps``
selects a single step (``final`` or a one-element list) the checkpoint keeps the run's own name.
Checkpoint rows carry the columns ``series`` (the run), ``step`` and ``final``.
``tokens_per_step``, ``final_step`` and ``steps`` may also be given per run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchcast.data.files import read_frame
from benchcast.data.schema import SIZE_ALIASES
from benchcast.errors import DataError

NUMERIC_FIELDS = ("params", "tokens", "flops", "tpr", "tokens_per_step", "final_step")
GLOBAL_FIELDS = ("tokens_per_step", "final_step", "steps")
# Spellings accepted for the canonical fields (never 'model': it names the checkpoint, not the run).
FIELD_ALIASES = {**SIZE_ALIASES, "run_id": "run", "name": "run"}


@dataclass(frozen=True)
class RunMetadata:
    """Parsed run metadata: one row per run and the file it came from."""

    runs: pd.DataFrame
    path: Path

    def is_checkpointed(self, run: str) -> bool:
        """Whether a run is a series of checkpoints (tokens per step given, no total tokens or compute)."""
        row = self.row(run)
        return _present(row.get("tokens_per_step")) and not (_present(row.get("tokens")) or _present(row.get("flops")))

    def row(self, run: str) -> dict:
        """A run's metadata."""
        return self.runs[self.runs["run"] == run].iloc[0].to_dict()


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def number(value, field: str, where: str) -> float:
    """A metadata number: int, float or numeric text (``'8.0e5'``); finite and positive."""
    if isinstance(value, bool):
        raise DataError(f"{where}: field '{field}' must be a number, got {value!r}.")
    try:
        out = float(str(value).replace("_", "")) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: field '{field}' must be a number, got {value!r}.") from None
    if not math.isfinite(out) or out <= 0:
        raise DataError(f"{where}: field '{field}' must be a positive finite number, got {value!r}.")
    return out


def _records_from_yaml(path: Path) -> tuple[list[dict], dict]:
    import yaml  # here, not at the top: every command but those given metadata would pay 15 ms for it

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: run metadata is not UTF-8 text ({exc}).") from exc
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML ({exc}).") from exc
    except OSError as exc:
        raise DataError(f"{path}: could not be read ({exc}).") from exc
    settings: dict = {}
    if isinstance(raw, dict) and "runs" in raw:
        settings = {k: v for k, v in raw.items() if k != "runs"}
        unknown = sorted(set(settings) - set(GLOBAL_FIELDS))
        if unknown:
            raise DataError(f"{path}: unknown top-level field(s) {unknown}; expected runs, {', '.join(GLOBAL_FIELDS)}.")
        raw = raw["runs"]
    if isinstance(raw, dict):
        records = []
        for name, fields in raw.items():
            if fields is not None and not isinstance(fields, dict):
                raise DataError(
                    f"{path}: run {name!r} maps to {type(fields).__name__} {fields!r}; expected a mapping of its "
                    "fields (params, tokens, ...). For several runs write 'runs:' followed by a list of mappings."
                )
            records.append({"run": name, **(fields or {})})
        raw = records
    if not isinstance(raw, list) or not raw or not all(isinstance(r, dict) for r in raw):
        raise DataError(f"{path}: expected a non-empty list of runs (each a mapping with run, params, tokens).")
    return raw, settings


def read_metadata(path: str | Path, params_only: bool = False) -> RunMetadata:
    """Read and check run metadata (YAML or CSV); see the module docstring for the schema."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: run metadata file not found.")
    if path.suffix.lower() in (".yaml", ".yml"):
        records, settings = _records_from_yaml(path)
    else:
        records, settings = read_frame(path, "run metadata").to_dict("records"), {}
    rows = []
    for index, record in enumerate(records):
        record = {str(k): v for k, v in record.items()}
        for alias, field in FIELD_ALIASES.items():
            if alias in record and field not in record:
                record[field] = record.pop(alias)
        if not _present(record.get("run")) and _present(record.get("model")):
            record["run"] = record["model"]  # a file that names runs only by their model
        where = f"{path}, run {record.get('run', f'#{index + 1}')!r}"
        if not _present(record.get("run")) or str(record["run"]).strip() == "":
            raise DataError(f"{path}: run #{index + 1} has no 'run' name.")
        record["run"] = str(record["run"])
        for field in GLOBAL_FIELDS:
            if field in settings and not _present(record.get(field)):
                record[field] = settings[field]
        for field in NUMERIC_FIELDS:
            if _present(record.get(field)):
                record[field] = number(record[field], field, where)
        if _present(record.get("final_step")) and record["final_step"] != round(record["final_step"]):
            raise DataError(f"{where}: field 'final_step' must be an integer, got {record['final_step']!r}.")
        steps = record.get("steps")
        if _present(steps) and not (steps in ("all", "final") or isinstance(steps, list)):
            raise DataError(f"{where}: field 'steps' must be 'all', 'final' or a list of steps, got {steps!r}.")
        if steps == "final" and not _present(record.get("final_step")):
            raise DataError(f"{where}: steps: final needs final_step.")
        if isinstance(steps, list):
            record["steps"] = [int(number(s, "steps", where)) for s in steps]
        has_size = _present(record.get("flops")) or (_present(record.get("params")) and _present(record.get("tokens")))
        checkpointed = _present(record.get("tokens_per_step")) and not (
            _present(record.get("tokens")) or _present(record.get("flops"))
        )
        if checkpointed and not _present(record.get("params")):
            raise DataError(f"{where}: a checkpointed run (tokens_per_step) needs 'params'.")
        if params_only and not _present(record.get("params")):
            raise DataError(f"{where}: needs 'params' (tokens and FLOPs come from the training log's columns).")
        if not (has_size or checkpointed or params_only):
            raise DataError(
                f"{where}: needs 'params' and 'tokens' (or 'flops'), "
                "or 'params' with 'tokens_per_step' for checkpoints."
            )
        rows.append(record)
    runs = pd.DataFrame(rows)
    repeated = runs["run"][runs["run"].duplicated()]
    if not repeated.empty:
        raise DataError(f"{path}: run {repeated.iloc[0]!r} is listed more than once.")
    return RunMetadata(runs, path)
