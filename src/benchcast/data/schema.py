"""The one in-memory table every reader produces: its columns, metric names and validation.

Selections from a table live in :mod:`benchcast.data.table`.

A table is a :class:`pandas.DataFrame` with one row per (run, benchmark, metric[, k]):

=========== ==============================================================
run         run identifier (replicate runs with equal N, D keep distinct ids)
params      N, non-embedding parameters (> 0)
tokens      D, training tokens (> 0)
flops       C, training compute in FLOPs (> 0; C = 6 N D when not given)
tpr         tokens per parameter, D / N
benchmark   benchmark name
metric      metric name (``pass@k`` metrics carry their k in ``k``)
k           attempts for pass@k metrics, missing otherwise (nullable integer)
value       the metric's value
stderr      standard error of ``value`` (optional, may be missing; >= 0)
q_rand      chance level of the (benchmark, metric) (optional; see :mod:`benchcast.data.chance`)
=========== ==============================================================

Metric names may be written as lm-evaluation-harness spells them: ``exact_match,strict-match``
is the metric ``exact_match/strict-match`` (the filter ``none`` is dropped: ``acc,none`` is ``acc``).
Rows with no ``value`` (a NaN score) are not rows of the table, but they are not lost either: the table
keeps them aside (``table.attrs[MISSING_VALUES]``) and every fit counts those of its selection as dropped,
with the reason ``score is NaN`` (:func:`benchcast.data.table.select` with ``missing=True``).
Duplicate rows: rows that repeat a (run, benchmark, metric, k) with the same value and stderr are
kept once and a :class:`DataWarning` says so; rows that repeat it with different values are refused.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from benchcast.data.units import check_scores, check_sizes
from benchcast.errors import DataError, DataWarning

# Accepted spellings of the size columns, in tidy tables and in run metadata alike.
SIZE_ALIASES = {
    "N": "params",
    "n_params": "params",
    "parameters": "params",
    "D": "tokens",
    "n_tokens": "tokens",
    "C": "flops",
    "compute": "flops",
    "TPR": "tpr",
}
COLUMNS = ("run", "params", "tokens", "flops", "tpr", "benchmark", "metric", "k", "value", "stderr")
SIZE_COLUMNS = ("params", "tokens", "flops")
# where a table keeps its rows with no value: (run, benchmark, metric, k, params, tokens, flops, tpr) each
MISSING_VALUES = "benchcast_missing_values"
MISSING_COLUMNS = ("run", "benchmark", "metric", "k", "params", "tokens", "flops", "tpr")


class MissingRows(tuple):
    """A table's rows with no value, kept in ``attrs``; immutable, so pandas' deep copies of ``attrs`` are free."""

    def __deepcopy__(self, memo):
        return self


# Metrics whose values are probabilities of success and must lie in [0, 1].
# len_norm: a training log's length-normalised multiple-choice accuracy (benchcast.data.training_logs)
SCORE_METRICS = frozenset(
    {"acc", "acc_norm", "len_norm", "exact_match", "pass@k", "f1", "em", "mc1", "mc2", "accuracy", "score"}
)


# what marks a loss, a likelihood or an error in a metric's name (lower is better, or not a probability): parts of
# it, and words of it (short marks match whole words only: "ppl" in task_ppl, not in a name that holds "appl")
LOSS_MARKS = ("loss", "perplexity", "brier", "bits_per_byte", "likelihood", "logprob")
LOSS_WORDS = frozenset({"bpb", "nll", "ppl", "neg", "log"})


def is_loss_metric(metric: str) -> bool:
    """Whether a metric is a loss, likelihood or error by its name (``loss``, ``brier``, ``task_ppl``, ``soft_log``)."""
    name = str(metric).lower().split("/")[0]
    words = set(re.split(r"[^a-z0-9]+", name))
    return not is_score_metric(name) and (any(mark in name for mark in LOSS_MARKS) or bool(words & LOSS_WORDS))


def is_score_metric(metric: str) -> bool:
    """Whether a metric is a probability of success (case-insensitive; a ``/filter`` suffix is ignored)."""
    name = str(metric).lower()
    return name in SCORE_METRICS or name.split("/")[0] in SCORE_METRICS


def parse_metric(metric: str) -> tuple[str, int | None]:
    """Split ``'pass@8'`` into ``('pass@k', 8)``; other names pass through with ``k=None``."""
    metric = str(metric).strip()
    name, comma, filt = metric.partition(",")
    if comma:
        metric = name if filt.strip() in ("", "none") else f"{name}/{filt.strip()}"
    base, slash, filt = metric.partition("/")
    if base == "pass@k":
        return metric, None
    if base.lower().startswith("pass@"):
        k = base[5:]
        if not (k.isdigit() and int(k) >= 1):
            raise DataError(f"metric {metric!r}: pass@k needs a positive integer k (pass@1, pass@8, ...).")
        return "pass@k" + slash + filt, int(k)
    return metric, None


def first_row(mask) -> int | None:
    """The position of the first true value of a mask (a Series or an array), or None where there is none."""
    found = np.flatnonzero(np.asarray(mask, bool))
    return int(found[0]) if found.size else None


def _numeric(frame: pd.DataFrame, column: str, source: str) -> pd.Series:
    """A column as floats; booleans, dates and text that is not a number are refused, not coerced."""
    raw = frame[column]
    dtype = raw.dtype
    if (
        pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_datetime64_any_dtype(dtype)
        or pd.api.types.is_timedelta64_dtype(dtype)
        or isinstance(dtype, pd.PeriodDtype)
    ):
        raise DataError(f"{source}: column '{column}' must be numeric, but it holds {dtype} values.")
    odd = False  # a boolean or a date among the objects: not a number, though pandas would coerce it
    if pd.api.types.is_object_dtype(dtype):
        odd = raw.map(lambda v: isinstance(v, (bool, np.bool_)) or hasattr(v, "isoformat"))
        raw = raw.mask(odd)
    values = pd.to_numeric(raw, errors="coerce")
    bad = (values.isna() & raw.notna()) | odd
    if (row := first_row(bad)) is not None:
        raise DataError(
            f"{source}: column '{column}' must be numeric, but row {row} holds {frame[column].iloc[row]!r}."
        )
    values = values.astype(float)
    infinite = np.isinf(values.to_numpy())
    if (row := first_row(infinite)) is not None:
        raise DataError(
            f"{source}: column '{column}' must be finite, but row {row} holds {frame[column].iloc[row]!r} "
            "(infinite or beyond the range of a float)."
        )
    return values


def _check_duplicates(out: pd.DataFrame, source: str) -> pd.DataFrame:
    """Refuse conflicting repeats of a (run, benchmark, metric, k); keep exact repeats once, saying so."""
    key = ["run", "benchmark", "metric", "k"]
    keyed = out.assign(k=out["k"].astype("float").fillna(-1.0))
    repeated = keyed.duplicated(key, keep=False)
    if not repeated.any():
        return out
    groups = keyed[repeated].groupby(key, sort=False, dropna=False)
    for (run, bench, metric, k), rows in groups:
        for column, differing in (("value", "values"), ("stderr", "stderrs")):
            shown = rows[column].to_numpy(float)
            if np.all((shown == shown[0]) | (np.isnan(shown) & np.isnan(shown[0]))):
                continue
            what = f"{metric}" + (f" (k={int(k)})" if k >= 0 else "")
            raise DataError(
                f"{source}: run {run!r}, benchmark {bench!r}, metric {what} appears {len(rows)} times with "
                f"different {differing} ({', '.join(repr(float(v)) for v in shown[:4])}); keep one row per run, "
                "benchmark, metric and k."
            )
    dropped = keyed.duplicated(key, keep="first")
    warnings.warn(
        f"{source}: {int(dropped.sum())} row(s) repeat an earlier row exactly (same run, benchmark, metric, k "
        "and value); each is kept once so no run counts twice.",
        DataWarning,
        stacklevel=3,
    )
    return out[~dropped.to_numpy()]


def require_names(column: pd.Series, name: str, source: str) -> None:
    """Refuse a missing or blank cell in a column of names (it would become a run or benchmark 'nan' or '')."""
    text = column.astype(str).str.strip()
    blank = column.isna().to_numpy() | (text == "").to_numpy()
    if (row := first_row(blank)) is not None:
        raise DataError(f"{source}: column '{name}' has no value in row {row}; every row needs one.")


def qualify_runs(frame: pd.DataFrame, group: str, source: str) -> pd.DataFrame:
    """Rename each run name shared by several values of column ``group`` to ``<group value>/<run>``, warning."""
    if group not in frame.columns or "run" not in frame.columns:
        return frame
    spread = frame.dropna(subset=[group]).groupby(frame["run"].astype(str))[group].nunique()
    shared = spread.index[spread > 1]
    if not len(shared):
        return frame
    hit = frame["run"].astype(str).isin(shared) & frame[group].notna()
    frame = frame.copy()
    frame["run"] = frame["run"].astype(str).where(~hit, frame[group].astype(str) + "/" + frame["run"].astype(str))
    warnings.warn(
        f"{source}: {len(shared)} run name(s) ({', '.join(map(repr, list(shared)[:3]))}"
        f"{', ...' if len(shared) > 3 else ''}) appear under several values of '{group}': a run is identified by "
        f"('{group}', run), so each is named '<{group}>/<run>' here.",
        DataWarning,
        stacklevel=3,
    )
    return frame


def validate(frame: pd.DataFrame, source: str = "table", group: str | None = None) -> pd.DataFrame:
    """Check and complete a table: derive missing sizes, coerce types, check ranges.

    Raises :class:`DataError` naming ``source``, the column and the offending value.

    Parameters
    ----------
    frame : pandas.DataFrame
        A table as read (columns of :data:`COLUMNS`; sizes may be partly missing).
    source : str
        Where it came from, named in errors.
    group : str, optional
        A column (a recipe) that, with the run name, identifies a run: run names shared by several of its values
        are qualified as ``<group>/<run>`` (:func:`qualify_runs`) before duplicates are checked.

    Returns
    -------
    pandas.DataFrame
        A new, validated table: sizes derived (C = 6 N D, tpr = D / N), types coerced, duplicates
        kept once.
    """
    missing = [c for c in ("benchmark", "metric", "value") if c not in frame.columns]
    if "run" not in frame.columns:
        missing.insert(0, "run")
    if missing:
        raise DataError(
            f"{source}: missing required column(s) {', '.join(repr(m) for m in missing)}; "
            f"found {', '.join(repr(c) for c in frame.columns)}."
        )
    sizes = [c for c in SIZE_COLUMNS if c in frame.columns]
    if "flops" not in sizes and not {"params", "tokens"} <= set(sizes):
        raise DataError(
            f"{source}: need either a 'flops' column or both 'params' and 'tokens' "
            f"(found {', '.join(repr(c) for c in frame.columns)})."
        )
    if frame.empty:
        raise DataError(f"{source}: the table has no rows.")
    for column in ("run", "benchmark", "metric"):
        require_names(frame[column], column, source)
    if group is not None:
        frame = qualify_runs(frame, group, source)
    out = pd.DataFrame(index=frame.index)
    out["run"] = frame["run"].astype(str)
    for column in SIZE_COLUMNS:
        out[column] = _numeric(frame, column, source) if column in frame.columns else np.nan
    given = pd.DataFrame({c: out[c].notna() for c in SIZE_COLUMNS})  # the sizes the file gave, not derived
    if "tpr" in frame.columns:
        given["tpr"] = frame["tpr"].notna()
    derived_flops = 6.0 * out["params"] * out["tokens"]
    out["flops"] = out["flops"].fillna(derived_flops)
    out["params"] = out["params"].fillna(out["flops"] / (6.0 * out["tokens"]))
    out["tokens"] = out["tokens"].fillna(out["flops"] / (6.0 * out["params"]))
    for column in SIZE_COLUMNS:
        values = out[column]
        bad = ~(values > 0) & values.notna() | np.isinf(values.to_numpy())
        if (row := first_row(bad)) is not None:
            raise DataError(
                f"{source}: column '{column}' must be positive and finite, but row {row} "
                f"(run {out['run'].iloc[row]!r}) holds {values.iloc[row]!r}."
            )
    if (row := first_row(out["flops"].isna())) is not None:
        raise DataError(
            f"{source}: row {row} (run {out['run'].iloc[row]!r}) has no compute: give 'flops' "
            f"or both 'params' and 'tokens'."
        )
    out["tpr"] = _numeric(frame, "tpr", source) if "tpr" in frame.columns else out["tokens"] / out["params"]
    bad_tpr = out["tpr"].notna() & ~(out["tpr"] > 0)
    if (row := first_row(bad_tpr)) is not None:
        raise DataError(f"{source}: column 'tpr' must be positive, but row {row} holds {out['tpr'].iloc[row]!r}.")
    check_sizes(out, given, source)
    out["benchmark"] = frame["benchmark"].astype(str)
    metric = frame["metric"].astype(str)
    k = _numeric(frame, "k", source) if "k" in frame.columns else pd.Series(np.nan, index=frame.index)
    # each distinct spelling parsed once (a file repeats a few metric names over thousands of rows),
    # in order of first appearance, so that the first bad one is the one reported
    codes, spellings = pd.factorize(metric, use_na_sentinel=False)
    try:
        parsed = [parse_metric(spelling) for spelling in spellings]
    except DataError as exc:
        raise DataError(f"{source}: {exc}") from None
    out["metric"] = np.array([name for name, _ in parsed], dtype=object)[codes]
    parsed_k = pd.Series(np.array([np.nan if k is None else float(k) for _, k in parsed])[codes], index=frame.index)
    k = k.fillna(parsed_k)
    bad_k = k.notna() & ~((k >= 1) & (k == np.round(k)))
    if (row := first_row(bad_k)) is not None:
        raise DataError(f"{source}: column 'k' must hold integers >= 1; row {row} has {k.iloc[row]!r}.")
    out["k"] = k.round().astype("Int64")
    needs_k = (out["metric"] == "pass@k") & out["k"].isna()
    if (row := first_row(needs_k)) is not None:
        raise DataError(f"{source}: row {row} has metric 'pass@k' but no k.")
    out["value"] = _numeric(frame, "value", source)
    out["stderr"] = _numeric(frame, "stderr", source) if "stderr" in frame.columns else np.nan
    negative = out["stderr"] < 0
    if (row := first_row(negative)) is not None:
        raise DataError(
            f"{source}: column 'stderr' must be >= 0, but row {row} (run {out['run'].iloc[row]!r}, benchmark "
            f"{out['benchmark'].iloc[row]!r}) holds {float(out['stderr'].iloc[row]):.6g}."
        )
    if "q_rand" in frame.columns:
        out["q_rand"] = _numeric(frame, "q_rand", source)
    codes, names = pd.factorize(out["metric"], use_na_sentinel=False)
    scores = pd.Series(np.array([is_score_metric(name) for name in names], bool)[codes], index=out.index)
    outside = scores & ~out["value"].between(0.0, 1.0) & out["value"].notna()
    if outside.any():  # the first such (benchmark, metric), all its scores judged (percentages?)
        row = out.iloc[first_row(outside)]
        rows = out[(out["benchmark"] == row["benchmark"]) & (out["metric"] == row["metric"])]
        check_scores(
            rows["value"], rows["run"], f"score metric '{row['metric']}' of benchmark '{row['benchmark']}'", source
        )
    for extra in frame.columns:
        if extra not in out.columns:
            out[extra] = frame[extra]
    no_value = out["value"].isna().to_numpy()
    missing = MissingRows(
        (str(r.run), str(r.benchmark), str(r.metric), float(r.k) if pd.notna(r.k) else np.nan, *map(float, r[4:]))
        for r in out.loc[no_value, list(MISSING_COLUMNS)].itertuples(index=False, name="Row")
    )
    out = out[~no_value].reset_index(drop=True)
    if out.empty:
        raise DataError(f"{source}: every row's 'value' is missing.")
    out.attrs = {MISSING_VALUES: missing} if missing else {}
    if "q_rand" in out.columns:
        q = out["q_rand"]
        bad = q.notna() & ~((q >= 0) & (q < 1))
        if (row := first_row(bad)) is not None:
            raise DataError(f"{source}: column 'q_rand' must lie in [0, 1), but row {row} holds {q.iloc[row]!r}.")
        for (bench, metric), values in out.dropna(subset=["q_rand"]).groupby(["benchmark", "metric"])["q_rand"]:
            if values.nunique() > 1:
                raise DataError(
                    f"{source}: benchmark {bench!r}, metric {metric!r} has several chance levels in column "
                    f"'q_rand' ({sorted(values.unique())[:4]}); give one per benchmark and metric."
                )
    for column in SIZE_COLUMNS:  # one run has one size: rows that disagree on N, D or C are two runs under one name
        spread = out.groupby("run")[column].agg(["min", "max"])
        differ = spread[~(np.isclose(spread["min"], spread["max"], rtol=1e-9, atol=0.0) | spread["min"].isna())]
        if not differ.empty:
            raise DataError(
                f"{source}: run {differ.index[0]!r} has different '{column}' values ({float(differ['min'].iloc[0])!r} "
                f"and {float(differ['max'].iloc[0])!r}); one run has one size: give replicates or checkpoints "
                "their own run names."
            )
    return _check_duplicates(out, source).reset_index(drop=True)
