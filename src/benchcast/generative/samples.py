"""Readers for generative-eval outcomes (SPEC §1.2), all returning per-problem counts.

* per-problem tables: ``problem_id``, ``n``, ``c`` (optionally ``run``, ``benchmark``);
* per-sample tables: ``problem_id``, ``correct`` (0/1 or bool; optionally ``run``, ``benchmark``,
  ``sample_id``), CSV, Parquet or JSONL;
* lm-evaluation-harness ``--log_samples`` JSONL: one document per line with ``doc_id`` and its
  generations (``resps``/``filtered_resps``); correctness is a per-generation list or a scalar
  mean in a metric field (``correct``, ``exact_match``, ``acc``, ``pass@1``, ...).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.readers import read_frame
from benchcast.errors import DataError

COUNT_COLUMNS = ["run", "benchmark", "problem_id", "n", "c"]
CORRECTNESS_FIELDS = ("correct", "is_correct", "exact_match", "acc", "pass@1", "pass_at_1", "score")


def _as_bool(values: pd.Series, path: Path) -> np.ndarray:
    if values.dtype == bool:
        return values.to_numpy()
    mapped = values.map(lambda v: {"true": 1, "false": 0}.get(str(v).strip().lower(), v))
    numeric = pd.to_numeric(mapped, errors="coerce")
    bad = numeric.isna() | ~numeric.isin([0, 1])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{path}: column 'correct' must be 0/1 or true/false; row {row} holds {values.iloc[row]!r}.")
    return numeric.to_numpy().astype(bool)


def _lm_eval_counts(path: Path, benchmark: str | None, run: str | None) -> pd.DataFrame:
    records = []
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {number}: not valid JSON ({exc}).") from exc
            generations = doc.get("filtered_resps") or doc.get("resps") or []
            if generations and isinstance(generations[0], list) and len(generations) == 1:
                generations = generations[0]
            field = next((f for f in CORRECTNESS_FIELDS if f in doc), None)
            if field is None:
                raise DataError(
                    f"{path}, line {number}: no correctness field (looked for {', '.join(CORRECTNESS_FIELDS)})."
                )
            value = doc[field]
            if isinstance(value, list):
                flags = np.asarray(value, float)
                n, c = flags.size, int(np.round(flags.sum()))
            else:
                n = max(len(generations), 1)
                c = int(round(float(value) * n))
            records.append(
                {
                    "run": run or "run",
                    "benchmark": benchmark or doc.get("task", path.stem),
                    "problem_id": str(doc.get("doc_id", number)),
                    "n": n,
                    "c": c,
                }
            )
    if not records:
        raise DataError(f"{path}: no samples found.")
    return pd.DataFrame(records)


def read_counts(path: str | Path, *, benchmark: str | None = None, run: str | None = None) -> pd.DataFrame:
    """Per-problem (run, benchmark, problem_id, n, c) from any supported sample file."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".json") and path.exists():
        with path.open() as handle:
            first = handle.readline()
        try:
            head = json.loads(first) if first.strip() else {}
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}, line 1: not valid JSON ({exc}).") from exc
        if "doc_id" in head and ("resps" in head or "filtered_resps" in head):
            return _lm_eval_counts(path, benchmark, run)
    frame = read_frame(path, "sample outcomes")
    if "problem_id" not in frame.columns:
        raise DataError(f"{path}: missing column 'problem_id' (found {', '.join(map(str, frame.columns))}).")
    frame["run"] = frame["run"].astype(str) if "run" in frame.columns else (run or "run")
    frame["benchmark"] = frame["benchmark"].astype(str) if "benchmark" in frame.columns else (benchmark or path.stem)
    frame["problem_id"] = frame["problem_id"].astype(str)
    if {"n", "c"} <= set(frame.columns):
        for column in ("n", "c"):
            values = pd.to_numeric(frame[column], errors="coerce")
            if values.isna().any() or (values < 0).any() or (values != values.round()).any():
                row = int(
                    np.flatnonzero((values.isna() | (values < 0)).to_numpy() | (values != values.round()).to_numpy())[0]
                )
                raise DataError(
                    f"{path}: column '{column}' must hold non-negative integers; row {row} holds "
                    f"{frame[column].iloc[row]!r}."
                )
            frame[column] = values.astype(int)
        bad = (frame["c"] > frame["n"]) | (frame["n"] < 1)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(
                f"{path}: row {row} has c = {frame['c'].iloc[row]} correct of n = {frame['n'].iloc[row]}; "
                "need 1 <= n and c <= n."
            )
        return frame[COUNT_COLUMNS].reset_index(drop=True)
    if "correct" not in frame.columns:
        raise DataError(f"{path}: need columns 'n' and 'c' (per problem) or 'correct' (per sample).")
    if "error" in frame.columns:  # samples that failed to generate or grade are not outcomes
        frame = frame[frame["error"].isna()].copy()
    frame["correct"] = _as_bool(frame["correct"], path)
    grouped = frame.groupby(["run", "benchmark", "problem_id"], sort=False)["correct"]
    return grouped.agg(n="size", c="sum").reset_index()[COUNT_COLUMNS]
