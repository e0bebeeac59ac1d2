"""Readers for generative-eval outcomes (SPEC §1.2), all returning per-problem counts.

* per-problem tables: ``problem_id``, ``n``, ``c`` (optionally ``run``, ``benchmark``);
* per-sample tables: ``problem_id``, ``correct`` (0/1 or bool; optionally ``run``, ``benchmark``,
  ``sample_id``), CSV, Parquet or JSONL;
* lm-evaluation-harness ``--log_samples`` JSONL: correctness counted per generation, never
  inferred from a mean (see :mod:`benchcast.data.lm_eval_samples`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.files import read_frame
from benchcast.data.lm_eval_samples import is_lm_eval_samples, read_lm_eval_samples
from benchcast.data.schema import first_row
from benchcast.errors import DataError

COUNT_COLUMNS = ["run", "benchmark", "problem_id", "n", "c"]


def _first_line(path: Path) -> dict | None:
    """The first line of a JSON-lines file, parsed."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc}).") from exc
    except OSError as exc:
        raise DataError(f"{path}: could not be read ({exc}).") from exc
    if not first.strip():
        raise DataError(f"{path}: the file is empty (or starts with an empty line); expected samples.")
    try:
        return json.loads(first)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}, line 1: not valid JSON ({exc}).") from exc


def read_counts(path: str | Path, *, benchmark: str | None = None, run: str | None = None) -> pd.DataFrame:
    """Per-problem (run, benchmark, problem_id, n, c) from any supported sample file."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".json") and path.is_file():
        if is_lm_eval_samples(_first_line(path)):
            return read_lm_eval_samples(path, benchmark=benchmark, run=run)
    frame = read_frame(path, "sample outcomes")
    if "problem_id" not in frame.columns:
        # a scaling table (a score per run, pass@k among its metrics) is no sample file: say what reads it
        curves = {"metric_type", "score"} <= set(frame.columns) or {"metric", "value"} <= set(frame.columns)
        hint = (
            ": this is a table of scores per run (pass@k curves, not per-problem counts n, c or outcomes); "
            "`benchcast kscan` reads its pass@k across k and `benchcast fit --law passk_compute` across compute and k"
            if curves
            else ""
        )
        raise DataError(f"{path}: missing column 'problem_id' (found {', '.join(map(str, frame.columns))}){hint}.")
    frame["run"] = frame["run"].astype(str) if "run" in frame.columns else (run or "run")
    frame["benchmark"] = frame["benchmark"].astype(str) if "benchmark" in frame.columns else (benchmark or path.stem)
    frame["problem_id"] = frame["problem_id"].astype(str)
    if {"n", "c"} <= set(frame.columns):
        for column in ("n", "c"):
            values = pd.to_numeric(frame[column], errors="coerce")
            bad = values.isna() | (values < 0) | ~np.isfinite(values) | (values != values.round())
            bad |= pd.api.types.is_bool_dtype(frame[column].dtype)  # True and False are no counts
            if (row := first_row(bad)) is not None:
                raise DataError(
                    f"{path}: column '{column}' must hold non-negative integers; row {row} holds "
                    f"{frame[column].iloc[row]!r}."
                )
            frame[column] = values.astype(int)
        bad = (frame["c"] > frame["n"]) | (frame["n"] < 1)
        if (row := first_row(bad)) is not None:
            raise DataError(
                f"{path}: row {row} has c = {frame['c'].iloc[row]} correct of n = {frame['n'].iloc[row]}; "
                "need 1 <= n and c <= n."
            )
        repeated = frame.duplicated(["run", "benchmark", "problem_id"])
        if (row := first_row(repeated)) is not None:
            raise DataError(
                f"{path}: problem {frame['problem_id'].iloc[row]!r} (run {frame['run'].iloc[row]!r}, benchmark "
                f"{frame['benchmark'].iloc[row]!r}) has more than one (n, c) row; give one row per problem."
            )
        return frame[COUNT_COLUMNS].reset_index(drop=True)
    if "correct" not in frame.columns:
        raise DataError(f"{path}: need columns 'n' and 'c' (per problem) or 'correct' (per sample).")
    if "error" in frame.columns:  # samples that failed to generate or grade are not outcomes
        frame = frame[frame["error"].isna()].copy()
    values = frame["correct"]  # 0/1 or true/false, refused otherwise
    if values.dtype != bool:
        mapped = values.map(lambda v: {"true": 1, "false": 0}.get(str(v).strip().lower(), v))
        numeric = pd.to_numeric(mapped, errors="coerce")
        bad = numeric.isna() | ~numeric.isin([0, 1])
        if (row := first_row(bad)) is not None:
            raise DataError(
                f"{path}: column 'correct' must be 0/1 or true/false; row {row} holds {values.iloc[row]!r}."
            )
        frame["correct"] = numeric.to_numpy().astype(bool)
    keys = ["run", "benchmark", "problem_id"]
    counts = frame.groupby(keys, sort=False)["correct"].agg(n="size", c="sum").reset_index()[COUNT_COLUMNS]
    return _with_first_round(counts, frame, keys, path)


def _with_first_round(counts: pd.DataFrame, frame: pd.DataFrame, keys: list, path: Path) -> pd.DataFrame:
    """Each problem's first-round counts too where samples were drawn in rounds (the unbiased estimator reads them)."""
    if "round" not in frame.columns:
        return counts
    rounds = pd.to_numeric(frame["round"], errors="coerce")
    if (row := first_row(rounds.isna() | (rounds < 0) | (rounds != rounds.round()))) is not None:
        raise DataError(
            f"{path}: column 'round' must hold rounds 0, 1, 2...; row {row} holds {frame['round'].iloc[row]!r}."
        )
    if not (rounds > 0).any():
        return counts
    first = frame[rounds.to_numpy() == 0].groupby(keys, sort=False)["correct"].agg(n_first="size", c_first="sum")
    out = counts.merge(first.reset_index(), on=keys, how="left")
    missing = out["n_first"].isna()
    if missing.any():
        raise DataError(
            f"{path}: problem {out.loc[missing, 'problem_id'].iloc[0]!r} has samples from later rounds but none "
            "from round 0, which `sample --budget` gives every problem: the unbiased pass@k estimator reads the "
            "first round; give the file with its first round."
        )
    return out.astype({"n_first": int, "c_first": int})
