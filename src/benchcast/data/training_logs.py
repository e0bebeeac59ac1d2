"""Training-log exports (W&B run histories) as a table: one row per run, checkpoint, benchmark and metric.

The layouts, the columns read and the final checkpoint are described in docs/training-logs.md.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.files import read_frame, read_json
from benchcast.data.metadata import number, read_metadata
from benchcast.data.schema import first_row, validate
from benchcast.errors import DataError, DataWarning

LM_EVAL = re.compile(r"^(?:eval/)?(?P<task>[^/,]+)/(?P<metric>[^/,]+),(?P<filter>[^/,]+)$")
_SHOTS = r"(?:_(?P<format>rc|mc)_(?P<shots>\d+)shot)?"
# (family, pattern, metric): a column of the family is read as benchmark <task>, metric <metric> (the pattern's
# own group where None); the first family that matches reads the column
_D = r"^eval/downstream"
FAMILIES = (
    ("eval/downstream_bpb", re.compile(rf"{_D}_bpb/(?P<task>.+?){_SHOTS}_bpb(?:_bpb)?$"), "bpb"),
    ("eval/downstream_soft", re.compile(rf"{_D}_soft/(?P<task>.+?){_SHOTS}_soft$"), "soft"),
    ("eval/downstream_soft_log", re.compile(rf"{_D}_soft_log/(?P<task>.+?){_SHOTS}_soft_log$"), "soft_log"),
    ("eval/downstream", re.compile(rf"{_D}/(?P<task>.+?)_(?P<format>rc|mc)_(?P<shots>\d+)shot_(?P<metric>\w+)$"), None),
    ("eval/downstream/<task> (<metric>)", re.compile(rf"{_D}/(?P<task>[^/()]+?)\s*\((?P<metric>[^()]+)\)$"), None),
    ("eval/lm/<corpus>/<loss>", re.compile(r"^eval/lm/(?P<task>[^/]+)/(?P<metric>CE loss|PPL)$"), None),
    (
        "eval/<corpus>/CrossEntropyLoss",
        re.compile(r"^eval/(?P<task>[^/]+)/(?P<metric>CrossEntropyLoss|Perplexity)$"),
        None,
    ),
    ("lm-eval <task>/<metric>,<filter>", LM_EVAL, None),
    ("eval/<task>/<metric>", re.compile(r"^eval/(?!downstream)(?P<task>[^/]+)/(?P<metric>[A-Za-z][\w@.-]*)$"), None),
)
METRIC_NAMES = {  # the metric names written out by the evaluators, as benchcast names them
    "crossentropyloss": "loss",
    "ce loss": "loss",
    "perplexity": "ppl",
    "ppl": "ppl",
    "accuracy": "acc",
    "length-normalized accuracy": "len_norm",
    "bpb": "bpb",
    "soft loss": "soft",
    "log soft loss": "soft_log",
}
# the range a value of these metrics lies in (a loss or bits per byte is no score, but is never negative)
BOUNDS = {"soft": (0.0, 1.0), "soft_log": (-np.inf, 0.0), "bpb": (0.0, np.inf), "loss": (0.0, np.inf)}
DEFAULT_COLUMNS = {"_step": "step", "throughput/total_tokens": "tokens", "throughput/total_training_Gflops": "gflops"}
# keys of a run's config that give its parameter count, in the order they are taken (the last part of a nested key):
# the total count first (as --metadata and a params column give it), the non-embedding count only without one
PARAM_KEYS = (
    "n_params",
    "num_params",
    "num_parameters",
    "n_parameters",
    "params",
    "parameter_count",
    "model_params",
    "non_embedding_params",
    "num_non_embedding_params",
)
NON_EMBEDDING = frozenset({"non_embedding_params", "num_non_embedding_params"})
CONFIGS = ("config.yaml", "config.yml", "config.json", "files/config.yaml", "files/config.json")
SUFFIXES = (".csv", ".parquet", ".pq")
TPR_MATCH = 0.01  # a checkpoint within 1 % of the planned tokens reaches them
COLUMNS_READ = "benchcast_columns_read"  # table.attrs: (family, distinct columns read) of a training-log source
MAX_STEP = 2**53  # beyond it a step is no longer a whole number as a float (and 1e30 would wrap int64)


def is_training_log(columns) -> bool:
    """Whether a header is a training-log export's (a ``_step`` column and some evaluation columns)."""
    columns = [str(c) for c in columns]
    return "_step" in columns and any(_is_eval(c) for c in columns)


def _is_eval(column: str) -> bool:
    """Whether a column is an evaluation's (``eval/...``, or lm-eval's ``task/metric,filter``)."""
    return column.startswith("eval/") or bool(LM_EVAL.match(column))


def split_column(column: str) -> dict | None:
    """An evaluation column's family, benchmark, metric, format, shots and stderr flag (None: no family reads it)."""
    for family, pattern, metric in FAMILIES:
        found = pattern.match(column)
        if found:
            parts = found.groupdict()
            name = metric or parts["metric"].strip()
            stderr = name.endswith("_stderr")
            name = METRIC_NAMES.get(name.removesuffix("_stderr").lower(), name.removesuffix("_stderr"))
            if parts.get("filter") and parts["filter"] != "none":
                name = f"{name}/{parts['filter']}"
            shots = int(parts["shots"]) if parts.get("shots") else None
            return {
                "family": family,
                "benchmark": parts["task"].strip(),
                "metric": name,
                "format": parts.get("format"),
                "shots": shots,
                "stderr": stderr,
            }
    return None


def _renamed(frame: pd.DataFrame, columns: dict[str, str], file) -> pd.DataFrame:
    """The export with ``columns`` renamed; a column named there that the file lacks is refused."""
    unknown = [c for c in columns if c not in frame.columns]
    if unknown:
        raise DataError(f"{file}: column(s) {unknown} named by --column are not in the file.")
    return frame.rename(columns=columns)


def _tables(folder: Path) -> list[Path]:
    """The CSV/Parquet files directly in a folder."""
    return sorted(f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in SUFFIXES)


def export_files(path: Path, metadata: Path | None = None) -> list[tuple[str, Path, Path | None]]:
    """(run, history file, config or None) per run of a folder: its tables, then W&B's run subfolders."""
    skip = metadata.resolve() if metadata is not None else None
    out = [(f.stem, f, None) for f in _tables(path) if f.resolve() != skip]
    for sub in sorted(d for d in path.iterdir() if d.is_dir()):
        found = _tables(sub) + (_tables(sub / "files") if (sub / "files").is_dir() else [])
        history = [f for f in found if "history" in f.stem.lower()] or found
        if len(history) > 1:
            raise DataError(f"{sub}: several tables ({', '.join(f.name for f in history[:4])}); keep one history.")
        if history:
            config = next((sub / c for c in CONFIGS if (sub / c).is_file()), None)
            out.append((sub.name, history[0], config))
    return out


def _config_params(config: Path) -> tuple[float, str] | None:
    """The parameter count a run's config gives (W&B's ``{key: {value: ...}}`` unwrapped) and the key, or None."""
    if config.suffix == ".json":
        raw = read_json(config, "a run config")
    else:
        import yaml  # here, not at the top: only a W&B run folder pays for it

        try:
            raw = yaml.safe_load(config.read_text(encoding="utf-8"))
        except (yaml.YAMLError, OSError, UnicodeDecodeError) as exc:
            raise DataError(f"{config}: could not be read as a run config ({exc}).") from None
    flat: dict[str, object] = {}

    def walk(node, prefix: str) -> None:
        """Flatten nested mappings into dotted keys."""
        if isinstance(node, dict) and set(node) <= {"value", "desc"} and "value" in node:
            node = node["value"]
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else str(key))
        else:
            flat[prefix] = node

    walk(raw, "")
    for wanted in PARAM_KEYS:
        for key, value in flat.items():
            if key.split(".")[-1].lower() == wanted and value is not None:
                return number(value, key, str(config)), key
    return None


def _skip_table(file: Path, columns, metadata: Path | None) -> list[Path]:
    """Warn of a folder's table that is no run history; return it where it looks like a sizes table."""
    columns = [str(c) for c in columns]
    is_sizes = {"run", "params"} <= set(columns)
    shown = ", ".join(columns[:4]) + (", ..." if len(columns) > 4 else "")
    what = "a sizes table" if is_sizes else "a table"
    advice = (
        f"not read (--metadata {metadata.name} gives the sizes)"
        if metadata is not None
        else ("pass it with --metadata" if is_sizes else "skipped")
    )
    warnings.warn(
        f"{file} looks like {what} ({shown}), not a run history (no '_step' and no eval/ column); {advice}.",
        DataWarning,
        stacklevel=4,
    )
    return [file] if is_sizes else []


def _exports(
    path: Path, columns: dict[str, str], metadata: Path | None, sizes: list[Path] | None = None
) -> list[tuple[str, pd.DataFrame, str, object]]:
    """(run, frame, file, config) per run of a folder or of one long file; sizes tables go to ``sizes``."""
    sizes = [] if sizes is None else sizes
    if path.is_dir():
        found = export_files(path, metadata)
        if not found:
            raise DataError(f"{path}: no CSV or Parquet training-log exports in this folder (nor a folder per run).")
        names = pd.Series([run for run, _, _ in found])
        if names.duplicated().any():
            raise DataError(f"{path}: two exports are named {names[names.duplicated()].iloc[0]!r}; keep one per run.")
        out = []
        for run, file, config in found:
            frame = _renamed(read_frame(file, "a training-log export"), columns, file)
            heads = [str(c) for c in frame.columns]  # a run history has a _step/step or an evaluation column
            if not ("_step" in heads or "step" in heads or any(_is_eval(c) for c in heads)):  # runs.csv is no run
                sizes.extend(_skip_table(file, frame.columns, metadata))
                continue
            if "run" in frame.columns:
                raise DataError(f"{file}: a per-run export names its run by its file name; drop its 'run' column.")
            out.append((run, frame, str(file), config))
        if not out:
            raise DataError(f"{path}: no training-log export (a table with a '_step' column) in this folder.")
        return out
    frame = _renamed(read_frame(path, "a training-log export"), columns, path)
    if "run" not in frame.columns:
        raise DataError(f"{path}: one long training-log file needs a 'run' column (or give a folder of per-run files).")
    blank = frame["run"].isna().to_numpy() | (frame["run"].astype(str).str.strip() == "").to_numpy()
    if (row := first_row(blank)) is not None:
        raise DataError(f"{path}: row {row} has no 'run' (it holds {frame['run'].iloc[row]!r}); name its run.")
    return [(str(run), rows, str(path), None) for run, rows in frame.groupby("run", sort=False)]


def _params(run: str, frame: pd.DataFrame, file: str, meta, config, sizes: list[Path] = ()) -> tuple[float, str]:
    """A run's N and its source: a ``params`` column, the metadata or the config (those given must agree)."""
    given = []
    values = frame["params"].dropna().unique() if "params" in frame.columns else []
    if len(values) > 1:
        raise DataError(f"{file}: run {run!r} has several 'params' values {sorted(values)[:3]}.")
    if len(values):
        given.append((float(number(values[0], "params", f"{file}, run {run!r}")), "the file's params column"))
    if meta is not None and run in set(meta.runs["run"]) and pd.notna(meta.row(run).get("params")):
        given.append((float(meta.row(run)["params"]), f"--metadata {meta.path.name}"))
    found = _config_params(config) if config is not None else None
    if found:
        kind = "non-embedding N" if found[1].split(".")[-1].lower() in NON_EMBEDDING else "total N"
        given.append((found[0], f"config {config.name} ({found[1]}, {kind})"))
    if not given and meta is None and sizes:
        raise DataError(
            f"{file}: run {run!r} has no size, and {sizes[0]} beside it looks like the sizes (run, params): pass "
            f"it with --metadata {sizes[0]}."
        )
    if not given:
        raise DataError(
            f"{file}: run {run!r} has no size: add a 'params' column, or give --metadata with a row "
            f"'run: {run}, params: N'."
        )
    for value, source in given[1:]:
        if not np.isclose(value, given[0][0], rtol=1e-9):
            raise DataError(
                f"{file}: run {run!r} has params {given[0][0]:.6g} in {given[0][1]} and {value:.6g} in {source}."
            )
    return given[0]


def _steps(run: str, long: pd.DataFrame, file: str) -> np.ndarray:
    """The rows' steps as whole, non-negative numbers below :data:`MAX_STEP` (no int64 wrap), or refused."""
    steps = pd.to_numeric(long["step"], errors="coerce").to_numpy(float)
    checks = (
        (~np.isfinite(steps) | (steps != np.round(steps)), "whole steps"),
        (steps < 0, "steps >= 0"),
        (steps >= MAX_STEP, f"steps below 2**53 ({MAX_STEP:.3g})"),
    )
    for bad, expected in checks:
        if bad.any():
            shown = long["step"].to_numpy()[np.flatnonzero(bad)[0]]
            shown = f"{float(shown):.6g}" if isinstance(shown, int | float | np.number) else repr(shown)
            raise DataError(f"{file}: run {run!r}: column '_step' must hold {expected}, got {shown}.")
    return steps.astype(np.int64)


def _long_rows(
    run: str, frame: pd.DataFrame, file: str, meta, config, skipped: dict, taken: dict, sizes: list[Path] = ()
) -> pd.DataFrame:
    """One run's evaluated checkpoints as long rows; columns read go to ``taken``, those skipped to ``skipped``."""
    frame = frame.rename(columns={k: v for k, v in DEFAULT_COLUMNS.items() if k in frame.columns})
    for needed, what in (("step", "_step"), ("tokens", "throughput/total_tokens")):
        if needed not in frame.columns:
            raise DataError(
                f"{file}: run {run!r} has no {what!r} column (the {needed} of each checkpoint); name the one that "
                f"holds it with --column COLUMN={needed}."
            )
    params, source = _params(run, frame, file, meta, config, sizes)
    read: dict[str, dict] = {}
    for column in (str(c) for c in frame.columns):
        parts = split_column(column) if _is_eval(column) else None
        numeric = pd.api.types.is_numeric_dtype(frame[column]) or frame[column].isna().all()
        if parts is None or not numeric:
            if _is_eval(column):  # a skipped column's family is reported by its first two path parts
                family = "/".join(column.split("/")[:2]) + ("/..." if column.count("/") > 1 else "")
                skipped.setdefault(family + ("" if numeric else " (text)"), set()).add(column)
            continue
        read[column] = parts
        taken.setdefault(parts["family"], set()).add(column)
    keys: dict[tuple, str] = {}
    for column, parts in read.items():
        key = (parts["benchmark"], parts["shots"], parts["metric"], parts["stderr"])  # 0 and 5 shots: two keys
        if key in keys:
            raise DataError(
                f"{file}: columns {keys[key]!r} and {column!r} are both {key[0]}:{key[2]}; keep one of them."
            )
        keys[key] = column
    sizes = frame[["step", "tokens", *(c for c in ("gflops", "flops") if c in frame.columns)]]
    columns = [c for c, parts in read.items() if not parts["stderr"]]
    values = frame[columns].to_numpy(float)
    errors = [keys.get((read[c]["benchmark"], read[c]["shots"], read[c]["metric"], True)) for c in columns]
    stderrs = np.column_stack([frame[e].to_numpy(float) if e else np.full(len(frame), np.nan) for e in errors] or [[]])
    at, of = np.nonzero(~np.isnan(values))  # a step without this evaluation logged: not a checkpoint of it
    long = sizes.iloc[at].reset_index(drop=True).assign(value=values[at, of], stderr=stderrs[at, of] if len(at) else [])
    for part in ("family", "benchmark", "metric", "format", "shots"):
        long[part] = np.array([read[c][part] for c in columns] or [None], dtype=object)[of]
    long["_column"] = np.array(columns or [None], dtype=object)[of]
    long["shots"] = long["shots"].astype("Int64")
    if long.empty:
        raise DataError(f"{file}: run {run!r} logs no value in any evaluation column it can read (eval/...).")
    for column, what in (
        ("step", "_step"),
        ("tokens", "throughput/total_tokens"),
        ("gflops", "total_training_Gflops"),
        ("flops", "flops"),
    ):
        # an evaluation without its step, tokens or (where the export logs it) compute cannot be placed: no 6ND guess
        if column in long.columns and long[column].isna().any():
            row = long.loc[long[column].isna()].iloc[0]
            raise DataError(
                f"{file}: run {run!r} logs an evaluation ({row['_column']}) in a row without {what!r} "
                f"(step {row['step']}); every evaluated row needs it."
            )
    for metric, (lo, hi) in BOUNDS.items():
        outside = (long["metric"] == metric) & ~long["value"].between(lo, hi)
        if outside.any():
            row = long.loc[outside].iloc[0]
            raise DataError(
                f"{file}: run {run!r}, column {row['_column']!r} at step {row['step']}: {metric} must lie in "
                f"[{lo:g}, {hi:g}], got {row['value']!r}."
            )
    out = long.drop(columns="_column")
    out["step"] = _steps(run, long, file)
    out = out.assign(series=run, params=params, params_source=source, run=[f"{run}@step{s}" for s in out["step"]])
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
    """Training-log exports (a folder of runs or one long file) as a table; each skipped family is warned of."""
    path = Path(path)
    meta = read_metadata(metadata, params_only=True) if metadata is not None else None
    skipped: dict[str, set] = {}
    taken: dict[str, set] = {}
    sizes: list[Path] = []
    exports = _exports(path, dict(columns or {}), Path(metadata) if metadata is not None else None, sizes)
    rows = [_long_rows(run, frame, file, meta, config, skipped, taken, sizes) for run, frame, file, config in exports]
    for family, names in skipped.items():
        warnings.warn(
            f"{path}: column family {family} skipped ({len(names)} column(s), e.g. {sorted(names)[0]}): benchcast "
            "cannot split it into benchmark and metric, so it is not read.",
            DataWarning,
            stacklevel=3,
        )
    out = validate(_by_shots(pd.concat(rows, ignore_index=True), path), source=str(path))
    # the evaluation columns read per family (stderr columns included), as inspect counts them; a tuple: pandas
    # copies attrs on every operation, and an immutable one costs nothing
    out.attrs = {**out.attrs, COLUMNS_READ: tuple(sorted((family, len(names)) for family, names in taken.items()))}
    return out


def _by_shots(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The table with each task evaluated at several shot counts named per count (``piqa_val_0shot``), warned of."""
    shots = table.dropna(subset=["shots"]).groupby("benchmark")["shots"].unique()
    several = {name: sorted(int(n) for n in counts) for name, counts in shots.items() if len(counts) > 1}
    if not several:
        return table
    renamed = table["benchmark"].isin(list(several)) & table["shots"].notna()
    table.loc[renamed, "benchmark"] = [
        f"{name}_{int(n)}shot"
        for name, n in zip(table.loc[renamed, "benchmark"], table.loc[renamed, "shots"], strict=True)
    ]
    shown = "; ".join(f"{name} at {', '.join(map(str, n))} shots" for name, n in sorted(several.items()))
    warnings.warn(
        f"{path}: tasks evaluated at several shot counts are read as one benchmark per count (<task>_<n>shot): "
        f"{shown}.",
        DataWarning,
        stacklevel=3,
    )
    return table
