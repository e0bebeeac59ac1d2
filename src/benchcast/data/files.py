"""Reading one table file (CSV, Parquet, JSON lines) or JSON document with errors that name the file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from benchcast.errors import DataError


def read_frame(path: Path, what: str = "a table") -> pd.DataFrame:
    """Any CSV, Parquet or JSON-lines file as a DataFrame; every error names the file."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file.")
    if path.is_dir():
        raise DataError(f"{path}: is a folder; expected {what} (a CSV, Parquet or JSON-lines file).")
    suffix = path.suffix.lower()
    try:
        if path.stat().st_size == 0:
            raise DataError(f"{path}: the file is empty; expected {what}.")
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".jsonl", ".ndjson", ".json"):
            return pd.read_json(path, lines=True, encoding="utf-8")
        return pd.read_csv(path, encoding="utf-8")
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{path}: holds no columns; expected {what} ({exc}).") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text; expected {what} ({exc}).") from exc
    except (ValueError, OSError, ImportError) as exc:
        raise DataError(f"{path}: could not be read as {what} ({exc}).") from exc


def read_frame_header(path: Path) -> list[str]:
    """The column names of a CSV file, read without its rows."""
    try:
        return list(pd.read_csv(path, nrows=0, encoding="utf-8").columns)
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"{path}: the file is empty; expected a CSV with a header.") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc}).") from exc
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: could not be read ({exc}).") from exc


def read_json(file: Path, what: str = "JSON") -> object:
    """A JSON document; every way it can fail names the file."""
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{file}: not UTF-8 text ({exc}).") from exc
    except OSError as exc:
        raise DataError(f"{file}: could not be read ({exc}).") from exc
    if not text.strip():
        raise DataError(f"{file}: the file is empty; expected {what}.")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{file}: not valid JSON ({exc}).") from exc
