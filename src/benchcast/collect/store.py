"""Resumable outputs: rows already done (keyed by model and problem) are kept and skipped."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from benchcast.errors import DataError
from benchcast.utils.io import atomic_write


def read_existing(path: Path | None, key: list[str]) -> pd.DataFrame:
    """Rows of a previous run at ``path`` that succeeded (no error), or an empty frame."""
    if path is None or not Path(path).exists():
        return pd.DataFrame(columns=key)
    try:
        if Path(path).suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:  # keys as text: a problem id '007' must not come back as 7 and be drawn again
            frame = pd.read_csv(path, dtype={c: str for c in key})
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: exists but cannot be read to resume ({exc}); move it away or pick --out.") from exc
    missing = [c for c in key if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: exists but lacks columns {missing}; it is not a benchcast output to resume.")
    if "error" in frame.columns:
        frame = frame[frame["error"].isna() | (frame["error"].astype(str) == "")]
    return frame


def done_keys(frame: pd.DataFrame, key: list[str]) -> set[tuple]:
    """The keys (as tuples of text) of the rows in ``frame``."""
    return set(map(tuple, frame[key].astype(str).to_numpy().tolist())) if len(frame) else set()


def write(frame: pd.DataFrame, path: Path) -> Path:
    """Write an output table atomically: parquet for ``.parquet``/``.pq``, else fully quoted CSV."""
    path = Path(path)
    if path.suffix in (".parquet", ".pq"):
        return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    # every text field quoted: pandas leaves a bare carriage return unquoted, and a completion
    # holding one would come back from read_csv cut in two
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, quoting=csv.QUOTE_NONNUMERIC))


SIZES = ("params", "tokens", "flops")


def run_sizes(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """One row per run with the sizes (params, tokens, flops) that ``frame`` records for it."""
    present = [c for c in SIZES if c in frame.columns]
    if "run" not in frame.columns or not present:
        return pd.DataFrame(columns=["run"])
    sizes = frame[["run", *present]].assign(run=frame["run"].astype(str))
    for column in present:
        sizes[column] = pd.to_numeric(sizes[column], errors="coerce")
        spread = sizes.dropna(subset=[column]).groupby("run")[column].nunique()
        if (spread > 1).any():
            run = spread[spread > 1].index[0]
            values = sorted(sizes.loc[sizes["run"] == run, column].dropna().unique())
            raise DataError(f"{source}: run {run!r} has several {column} values {values}; one run, one size.")
    grouped = sizes.groupby("run", sort=False)[present].first().reset_index()
    return grouped.dropna(axis=1, how="all")
