"""Resumable outputs: rows already done (keyed by model and problem) are kept and skipped."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchcast.errors import DataError
from benchcast.utils.io import atomic_write


def read_existing(path: Path | None, key: list[str]) -> pd.DataFrame:
    """Rows of a previous run at ``path`` that succeeded (no error), or an empty frame."""
    if path is None or not Path(path).exists():
        return pd.DataFrame(columns=key)
    try:
        frame = pd.read_parquet(path) if Path(path).suffix in (".parquet", ".pq") else pd.read_csv(path)
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: exists but cannot be read to resume ({exc}); move it away or pick --out.") from exc
    missing = [c for c in key if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: exists but lacks columns {missing}; it is not a benchcast output to resume.")
    if "error" in frame.columns:
        frame = frame[frame["error"].isna() | (frame["error"].astype(str) == "")]
    return frame


def done_keys(frame: pd.DataFrame, key: list[str]) -> set[tuple]:
    return set(map(tuple, frame[key].astype(str).to_numpy().tolist())) if len(frame) else set()


def write(frame: pd.DataFrame, path: Path) -> Path:
    path = Path(path)
    if path.suffix in (".parquet", ".pq"):
        return atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
