"""Training-log exports (W&B run histories) as a table: one row per run, checkpoint, benchmark and metric.

A source is a folder of per-run CSV/Parquet files (the run is the file's stem) or one long file with a ``run``
column. Every row of an export is one logged step; the steps where an ``eval/...`` column holds a value are
the run's evaluated checkpoints. The columns read, by one rule:

* ``_step`` -> ``step``; ``throughput/total_tokens`` -> ``tokens``; ``throughput/total_training_Gflops`` x 1e9 ->
  ``flops`` (without it C = 6 N D); ``params`` from a column of the file or from ``--metadata`` (run, params).
  ``--column FILE_COLUMN=NAME`` (``columns={'file column': 'step' | 'tokens' | 'flops' | 'params' | 'run'}``) names
  other spellings.
* ``eval/downstream/<task>_<rc|mc>_<n>shot_<metric>`` -> benchmark ``<task>`` (its split kept: ``hellaswag_val``),
  metric ``<metric>`` as written (``len_norm``, ``acc``...), ``format`` and ``shots`` columns;
  ``eval/downstream_bpb/<task>_<rc|mc>_<n>shot_bpb[_bpb]`` -> metric ``bpb`` (bits per byte of the gold answer);
  ``eval/<corpus>/CrossEntropyLoss`` -> benchmark ``<corpus>``, metric ``loss`` (``Perplexity`` -> ``ppl``).
* Any other ``eval/`` column is refused by name; columns outside ``eval/`` (optim/, throughput/...) are not read.

Checkpoints get ``series`` (the run), ``step`` and ``final``: the final checkpoint is the step ``--metadata``
names (``final_step``) or the one that reaches its ``tokens``; otherwise the last evaluated step of the export,
which :func:`benchcast.data.readers.load` says when it sets the others aside.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.files import read_frame
from benchcast.data.metadata import read_metadata
from benchcast.data.schema import validate
from benchcast.errors import DataError, DataWarning

DOWNSTREAM = re.compile(r"^eval/downstream/(?P<task>.+?)_(?P<format>rc|mc)_(?P<shots>\d+)shot_(?P<metric>[a-z_]+)$")
BPB = re.compile(r"^eval/downstream_bpb/(?P<task>.+?)(?:_(?P<format>rc|mc)_(?P<shots>\d+)shot)?_bpb(?:_bpb)?$")
CORPUS = re.compile(r"^eval/(?P<task>[^/]+)/(?P<metric>CrossEntropyLoss|Perplexity)$")
CORPUS_METRICS = {"CrossEntropyLoss": "loss", "Perplexity": "ppl"}
DEFAULT_COLUMNS = {
    "_step": "step",
    "throughput/total_tokens": "tokens",
    "throughput/total_training_Gflops": "gflops",
}
SUFFIXES = (".csv", ".parquet", ".pq")
TPR_MATCH = 0.01  # a checkpoint within 1 % of the planned tokens reaches them


def is_training_log(columns) -> bool:
    """Whether a header is a training-log export's (a ``_step`` column and some ``eval/`` columns)."""
    columns = [str(c) for c in columns]
    return "_step" in columns and any(c.startswith("eval/") for c in columns)


def _split_metric_column(column: str) -> dict | None:
    """A metric column's benchmark, metric, format and shots by the module's rule (None: not a metric column)."""
    if not column.startswith("eval/"):
        return None
    for pattern in (DOWNSTREAM, BPB):
        found = pattern.match(column)
        if found:
            parts = found.groupdict()
            return {
                "benchmark": parts["task"],
                "metric": parts.get("metric") or "bpb",
                "format": parts["format"],
                "shots": int(parts["shots"]) if parts["shots"] else None,
            }
    found = CORPUS.match(column)
    if found:
        return {"benchmark": found["task"], "metric": CORPUS_METRICS[found["metric"]], "format": None, "shots": None}
    raise DataError(
        f"column {column!r}: an eval/ column benchcast cannot split into benchmark and metric (expected "
        "eval/downstream/<task>_<rc|mc>_<n>shot_<metric>, eval/downstream_bpb/<task>_<rc|mc>_<n>shot_bpb or "
        "eval/<corpus>/CrossEntropyLoss); rename or drop it."
    )


def _renamed(frame: pd.DataFrame, columns: dict[str, str], file) -> pd.DataFrame:
    """The export with ``columns`` renamed; a column named there that the file lacks is refused."""
    unknown = [c for c in columns if c not in frame.columns]
    if unknown:
        raise DataError(f"{file}: column(s) {unknown} named by --column are not in the file.")
    return frame.rename(columns=columns)


def _exports(path: Path, columns: dict[str, str]) -> list[tuple[str, pd.DataFrame, str]]:
    """(run, frame, file) per run: each file of a folder, or each run of one long file."""
    if path.is_dir():
        files = sorted(f for f in path.iterdir() if f.suffix.lower() in SUFFIXES)
        if not files:
            raise DataError(f"{path}: no CSV or Parquet training-log exports in this folder.")
        stems = pd.Series([f.stem for f in files])
        if stems.duplicated().any():
            raise DataError(f"{path}: two exports are named {stems[stems.duplicated()].iloc[0]!r}; keep one per run.")
        out = []
        for file in files:
            frame = _renamed(read_frame(file, "a training-log export"), columns, file)
            if "run" in frame.columns:
                raise DataError(f"{file}: a per-run export names its run by its file name; drop its 'run' column.")
            out.append((file.stem, frame, str(file)))
        return out
    frame = _renamed(read_frame(path, "a training-log export"), columns, path)
    if "run" not in frame.columns:
        raise DataError(f"{path}: one long training-log file needs a 'run' column (or give a folder of per-run files).")
    if frame["run"].isna().any():
        raise DataError(f"{path}: row {int(frame['run'].isna().to_numpy().argmax())} has no 'run'; name its run.")
    return [(str(run), rows, str(path)) for run, rows in frame.groupby("run", sort=False)]


def _long_rows(run: str, frame: pd.DataFrame, file: str, meta) -> pd.DataFrame:
    """One run's evaluated checkpoints as long rows (run, sizes, benchmark, metric, value, series, step)."""
    frame = frame.rename(columns={k: v for k, v in DEFAULT_COLUMNS.items() if k in frame.columns})
    for needed, what in (("step", "_step"), ("tokens", "throughput/total_tokens")):
        if needed not in frame.columns:
            raise DataError(
                f"{file}: run {run!r} has no {what!r} column (the {needed} of each checkpoint); name the one that "
                f"holds it with --column COLUMN={needed}."
            )
    params = frame["params"].dropna().unique() if "params" in frame.columns else []
    if len(params) > 1:
        raise DataError(f"{file}: run {run!r} has several 'params' values {sorted(params)[:3]}.")
    given = meta.row(run).get("params") if meta is not None and run in set(meta.runs["run"]) else None
    if len(params) and pd.notna(given) and not np.isclose(float(given), float(params[0]), rtol=1e-9):
        raise DataError(f"{file}: run {run!r} has params {params[0]:.6g} in the file and {given:.6g} in --metadata.")
    if not len(params):
        if meta is None or run not in set(meta.runs["run"]):
            raise DataError(
                f"{file}: run {run!r} has no size: add a 'params' column, or give --metadata with a row "
                f"'run: {run}, params: N'."
            )
        params = [meta.row(run)["params"]]
    try:
        metric_columns = {c: _split_metric_column(c) for c in frame.columns if str(c).startswith("eval/")}
    except DataError as exc:
        raise DataError(f"{file}: {exc}") from None
    keys: dict[tuple, str] = {}
    for column, parts in metric_columns.items():
        key = (parts["benchmark"], parts["metric"])
        if key in keys:
            raise DataError(
                f"{file}: columns {keys[key]!r} and {column!r} are both {key[0]}:{key[1]}; keep one of them."
            )
        keys[key] = column
    if not metric_columns:
        raise DataError(f"{file}: run {run!r} has no eval/ columns (no benchmark scores or losses).")
    sizes = frame[["step", "tokens", *(c for c in ("gflops", "flops") if c in frame.columns)]]
    long = sizes.join(frame[list(metric_columns)]).melt(
        id_vars=list(sizes.columns), var_name="column", value_name="value"
    )
    long = long[long["value"].notna()]  # a step without this evaluation logged: not a checkpoint of it
    if long.empty:
        raise DataError(f"{file}: run {run!r} logs no value in any eval/ column.")
    for column, what in (("step", "_step"), ("tokens", "throughput/total_tokens"), ("gflops", "total_training_Gflops"),
                         ("flops", "flops")):  # fmt: skip
        # an evaluation without its step, tokens or (where the export logs it) compute cannot be placed: no 6ND guess
        if column in long.columns and long[column].isna().any():
            row = long.loc[long[column].isna()].iloc[0]
            raise DataError(
                f"{file}: run {run!r} logs an evaluation ({row['column']}) in a row without {what!r} "
                f"(step {row['step']}); every evaluated row needs it."
            )
    steps = pd.to_numeric(long["step"], errors="coerce")
    if (steps.isna() | (steps != steps.round())).any():
        bad = long["step"][steps.isna() | (steps != steps.round())].iloc[0]
        raise DataError(f"{file}: run {run!r}: column '_step' must hold whole steps, got {bad}.")
    parts = pd.DataFrame([metric_columns[c] for c in long["column"]], index=long.index)
    out = pd.concat([long.drop(columns="column"), parts], axis=1)
    out["step"] = out["step"].astype(np.int64)
    out = out.assign(series=run, params=float(params[0]), run=[f"{run}@step{s}" for s in out["step"]])
    if "gflops" in out.columns:
        out = out.assign(flops=out.pop("gflops") * 1e9)
    out["final"] = _final(run, out, file, meta)
    return out


def _final(run: str, rows: pd.DataFrame, file: str, meta) -> pd.Series:
    """Which checkpoint is the run's final: ``final_step`` or ``tokens`` of the metadata, else the last evaluated."""
    info = meta.row(run) if meta is not None and run in set(meta.runs["run"]) else {}
    step = rows["step"]
    if pd.notna(info.get("final_step")):
        final = step == int(info["final_step"])
        named = f"final_step {int(info['final_step'])}"
    elif pd.notna(info.get("tokens")):
        reached = np.abs(rows["tokens"] / float(info["tokens"]) - 1) <= TPR_MATCH
        final = reached & (step == step[reached].max()) if reached.any() else pd.Series(False, index=rows.index)
        named = f"tokens {float(info['tokens']):.4g}"
    else:
        final = step == step.max()
        named = ""
    if named and not final.any():  # a typo would drop the run from the ladder: say so instead
        raise DataError(
            f"{file}: run {run!r}: the metadata's {named} matches no evaluated step (steps {int(step.min())} .. "
            f"{int(step.max())}, tokens {rows['tokens'].min():.4g} .. {rows['tokens'].max():.4g})."
        )
    missing = sorted(set(rows["benchmark"]) - set(rows.loc[final, "benchmark"]))
    if missing:  # evaluated less often than the run's final step: not at the finished model
        warnings.warn(
            f"{file}: run {run!r}: {', '.join(missing)} not evaluated at its final step {int(step[final].iloc[0])}: "
            "no score of the finished run for them.",
            DataWarning,
            stacklevel=4,
        )
    return final


def read_training_logs(
    path: str | Path, metadata: str | Path | None = None, columns: dict[str, str] | None = None
) -> pd.DataFrame:
    """Training-log exports (a folder of per-run files, or one long file with a ``run`` column) as a table."""
    path = Path(path)
    meta = read_metadata(metadata, params_only=True) if metadata is not None else None
    rows = [_long_rows(run, frame, file, meta) for run, frame, file in _exports(path, dict(columns or {}))]
    return validate(pd.concat(rows, ignore_index=True), source=str(path))
