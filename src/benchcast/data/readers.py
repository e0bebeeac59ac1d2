"""Readers: tidy CSV/Parquet, Apple's long format, lm-evaluation-harness results JSON, training-log exports.

Each returns a validated table (see :mod:`benchcast.data.table`); the lm-eval reader lives in
:mod:`benchcast.data.lm_eval`, run metadata in :mod:`benchcast.data.metadata`, the exports' reader in
:mod:`benchcast.data.training_logs`. :func:`load` keeps each run's final checkpoint where a source has several.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data import FORMATS
from benchcast.data.files import read_frame, read_frame_header
from benchcast.data.lm_eval import read_lm_eval
from benchcast.data.schema import COLUMNS, SIZE_ALIASES, _numeric, first_row, require_names, validate
from benchcast.data.training_logs import export_files, is_training_log, read_training_logs
from benchcast.errors import DataError, DataWarning

# Accepted spellings of the canonical columns in tidy files.
ALIASES = {
    **SIZE_ALIASES,
    "task": "benchmark",
    "metric_type": "metric",
    "score": "value",
    "model": "run",  # only when the file has no 'run' column
    "run_id": "run",
}
# what a column may be renamed to (``columns=``, ``--column FILE_COLUMN=NAME``): the table's columns and those a reader
# reads besides (checkpoints, chance levels); a name outside them would be carried as an unread column, its values lost
RENAME_TARGETS = (*COLUMNS, "q_rand", "choices", "step", "series", "final")
APPLE_COLUMNS = {"tokens", "benchmark", "metric_type", "score", "tpr"}


def read_tidy(path: str | Path, columns: dict[str, str] | None = None, group: str | None = None) -> pd.DataFrame:
    """A tidy table with one row per (run, benchmark, metric[, k]); ``columns`` renames.

    Parameters
    ----------
    path : str or Path
        A CSV, Parquet or JSON-lines file.
    columns : dict of str to str, optional
        The file's column names mapped to the table's (``{'model': 'run'}``).
    group : str, optional
        A column that, with the run name, identifies a run (``compare --by``; see
        :func:`~benchcast.data.schema.validate`).

    Returns
    -------
    pandas.DataFrame
        The validated table.
    """
    path = Path(path)
    frame = read_frame(path)
    rename = {c: ALIASES[c] for c in frame.columns if c in ALIASES and ALIASES[c] not in frame.columns}
    rename.update(columns or {})
    unknown = [c for c in (columns or {}) if c not in frame.columns]
    if unknown:
        raise DataError(f"{path}: column(s) {unknown} named in the column mapping are not in the file.")
    frame = frame.rename(columns=rename)
    if "step" in frame.columns and "series" not in frame.columns and "run" in frame.columns:
        # rows of a run at several steps are its checkpoints: each one its own run, the run their series
        frame = frame.assign(series=frame["run"], run=frame["run"].astype(str) + "@step" + frame["step"].astype(str))
    return validate(frame, source=str(path), group=group)


def _apple_run_ids(frame: pd.DataFrame) -> pd.Series:
    """Name runs by their content, so that row order does not matter."""
    sizes = [c for c in ("tokens", "tpr", "params", "flops") if c in frame.columns]
    occurrence = frame.groupby([*sizes, "benchmark", "metric_type"], sort=False).cumcount()
    params = frame["params"] if "params" in frame.columns else frame["tokens"] / frame["tpr"]
    # one key per run (its sizes and occurrence), numbered: the names are made per key, not per row
    codes, keys = pd.MultiIndex.from_arrays([*(frame[c] for c in sizes), occurrence]).factorize()
    first_row = np.unique(codes, return_index=True)[1]  # a row of each key (its sizes are the key's)
    names: list[str] = [""] * len(keys)
    taken: dict[str, int] = {}
    # Name replicates in order of occurrence so that the first block keeps the bare name.
    for number in sorted(range(len(keys)), key=lambda i: (keys[i][-1], keys[i][:-1])):
        row = first_row[number]
        size, tpr = params.iloc[row], frame["tpr"].iloc[row]
        base = f"{size / 1e6:.0f}M-tpr{tpr:g}" if size < 1e9 else f"{size / 1e9:.2f}B-tpr{tpr:g}"
        taken[base] = taken.get(base, 0) + 1
        names[number] = base if taken[base] == 1 else f"{base}-rep{taken[base]}"
    return pd.Series(np.array(names, dtype=object)[codes], index=frame.index)


def read_apple(path: str | Path) -> pd.DataFrame:
    """Apple ``ml-scaling-downstream-metrics`` long format (``,tokens,benchmark,metric_type,score,tpr``).

    ``*_stderr`` rows become the ``stderr`` of their metric; ``pass@K`` becomes metric
    ``pass@k`` with ``k = K``; params = tokens / tpr and flops = 6 N D where absent.

    Parameters
    ----------
    path : str or Path
        The CSV file.

    Returns
    -------
    pandas.DataFrame
        The validated table.
    """
    path = Path(path)
    frame = read_frame(path, "an Apple long-format CSV")
    missing = APPLE_COLUMNS - set(frame.columns)
    if missing:
        raise DataError(
            f"{path}: not in the Apple long format: missing column(s) {sorted(missing)} "
            f"(expected ',tokens,benchmark,metric_type,score,tpr')."
        )
    if frame.empty:
        raise DataError(f"{path}: the file has a header but no rows.")
    for column in ("score", "tokens", "tpr", *(c for c in ("params", "flops") if c in frame.columns)):
        bad = ~(_numeric(frame, column, str(path)) > 0)  # booleans, dates, text and infinities refused first
        if column != "score" and (row := first_row(bad)) is not None:
            raise DataError(
                f"{path}: column '{column}' must be positive and finite; row {row} holds {frame[column].iloc[row]!r}."
            )
    for column in ("benchmark", "metric_type"):
        require_names(frame[column], column, str(path))
    frame = frame.copy()
    index_column = frame.columns[0]
    if index_column.startswith("Unnamed") and pd.api.types.is_integer_dtype(frame[index_column]):
        frame = frame.sort_values(index_column, kind="stable").reset_index(drop=True)
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


def detect_format(path: Path) -> str:
    """The format of a data file or folder, by its extension and header."""
    if path.is_dir():  # a folder of exports by their columns (a W&B config.json beside them is no lm-eval result)
        try:
            tables = [file for _, file, _ in export_files(path)]
        except DataError:  # a run folder with several tables: detected by the folder's own tables, refused on reading
            tables = sorted(f for f in path.iterdir() if f.suffix.lower() in (".csv", ".parquet", ".pq"))
        return "wandb" if any(detect_format(f) == "wandb" for f in tables[:3]) else "lm-eval"
    if path.suffix.lower() == ".json":
        return "lm-eval"
    header = set(read_frame(path).columns if path.suffix.lower() in (".parquet", ".pq") else read_frame_header(path))
    return "wandb" if is_training_log(header) else "apple" if APPLE_COLUMNS <= header else "tidy"


EXPORT_RULE = "an export's last evaluated step, unless --metadata gives its final_step or tokens"


def final_checkpoints(table: pd.DataFrame, source: str) -> pd.DataFrame:
    """Each run's final checkpoint where a table has several, named as its run; a bad ``final`` is refused."""
    if not {"step", "final"} & set(table.columns):
        return table
    rule = EXPORT_RULE if "family" in table.columns else ""
    if "final" not in table.columns:
        raise DataError(
            f"{source}: column 'step' marks checkpoints, but no column says which is each run's final one: add a "
            "'final' column (true on each run's last checkpoint)."
        )
    series = table["series"] if "series" in table.columns else table["run"]
    unknown = table["final"].isna()
    if unknown.any():
        raise DataError(
            f"{source}: the checkpoints of {series[unknown].iloc[0]!r} do not say which is final (column 'final' is "
            "empty): give its final step ('final_step' in the metadata) or a 'final' column."
        )
    flags = table["final"]
    if not (pd.api.types.is_bool_dtype(flags.dtype) or flags.map(lambda v: isinstance(v, bool | np.bool_)).all()):
        shown = flags[~flags.map(lambda v: isinstance(v, bool | np.bool_))].iloc[0]
        raise DataError(f"{source}: column 'final' must hold true or false, got {shown!r}.")  # 'no' would read True
    final = table["final"].astype(bool).to_numpy()
    twice = table.loc[final].groupby(series[final])["run"].nunique()
    if (twice > 1).any():
        raise DataError(
            f"{source}: run {twice[twice > 1].index[0]!r} has {int(twice.max())} checkpoints marked final; mark one."
        )
    if not final.any():
        raise DataError(
            f"{source}: no checkpoint of any of the {series.nunique()} run(s) is marked final (column 'final' is false "
            "everywhere): mark each run's last checkpoint, or give its final_step in the metadata."
        )
    if final.all():
        return table.assign(run=series.astype(str))
    unfinished = sorted(set(series) - set(series[final]))
    checkpoints = table.loc[~final].groupby(series[~final])["run"].nunique()
    warnings.warn(
        f"{source}: each run's final checkpoint is fitted ({rule or 'the final column'}); "
        f"{int(checkpoints.sum())} earlier checkpoint(s) of {len(checkpoints)} run(s) set aside"
        + (
            f"; {len(unfinished)} run(s) with no final checkpoint left out ({', '.join(map(str, unfinished[:5]))})"
            if unfinished
            else ""
        )
        + " (`inspect` lists them).",
        DataWarning,
        stacklevel=3,
    )
    return table.loc[final].assign(run=series[final].astype(str)).reset_index(drop=True)


def load(
    path: str | Path,
    format: str = "auto",
    *,
    columns: dict[str, str] | None = None,
    metadata: str | Path | None = None,
    samples: str | Path | list | None = None,
    checkpoints: str = "final",
    group: str | None = None,
) -> pd.DataFrame:
    """Read any supported file into a validated table.

    Parameters
    ----------
    path : str or Path
        The data file, or a folder of lm-evaluation-harness results.
    format : str
        ``'auto'`` (by extension and header), ``'tidy'``, ``'apple'``, ``'lm-eval'`` or ``'wandb'``.
    columns : dict of str to str, optional
        Renames of a tidy file's columns (``{'model': 'run'}``).
    metadata : str or Path, optional
        Run metadata (N and D), required by lm-eval results.
    samples : str or Path or list of them, optional
        lm-eval ``--log_samples`` files or folders (besides those next to the results), whose answer
        choices give the multiple-choice tasks' chance levels (:mod:`benchcast.data.choices`).
    checkpoints : {'final', 'all'}
        Where a source has several checkpoints per run: each run's final one (the default, named as the run;
        a DataWarning counts those set aside) or every one (named ``run@step<N>``, with ``series``, ``step``
        and ``final`` columns).
    group : str, optional
        A tidy file's column that, with the run name, identifies a run (a recipe, ``compare --by``): run names
        shared by several of its values are read as ``<group>/<run>``.

    Returns
    -------
    pandas.DataFrame
        The table: one row per (run, benchmark, metric[, k]) (see :mod:`benchcast.data.schema`).
    """
    path = Path(path)
    if checkpoints not in ("final", "all"):
        raise DataError(f"checkpoints must be 'final' or 'all', got {checkpoints!r}.")
    if format not in FORMATS:
        raise DataError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}.")
    if not path.exists():
        raise DataError(f"{path}: no such file or folder.")
    if format == "auto":
        format = detect_format(path)
    if samples is not None and format != "lm-eval":
        raise DataError(f"samples files are read only with lm-eval results, and {path} is read as {format} data.")
    if columns and format not in ("tidy", "wandb"):
        raise DataError(
            f"column renames are read for tidy files and training-log exports, and {path} is {format} data."
        )
    unread = {old: new for old, new in (columns or {}).items() if new not in RENAME_TARGETS}
    if unread:
        old, new = next(iter(unread.items()))
        raise DataError(
            f"{path}: column {old!r} is renamed to {new!r}, a column benchcast does not read (its values would be "
            f"dropped); rename to one of {', '.join(RENAME_TARGETS)}."
        )
    if format == "apple":
        table = read_apple(path)
    elif format == "lm-eval":
        table = read_lm_eval(path, metadata, samples)
    elif format == "wandb":
        table = read_training_logs(path, metadata, columns)
    else:
        table = read_tidy(path, columns, group)
    return table if checkpoints == "all" else final_checkpoints(table, str(path))
