"""Chance levels (Q_rand) and the near-chance point filter margins of Krajewski et al. 2025.

Where a chance level comes from, in order: a value the caller gives (``--q-rand``), a ``q_rand``
column in the data (lm-eval results get one measured from their samples files and task configs,
:mod:`benchcast.data.choices`, checked against the number of choices the table below states), the
defaults below, 0 for generative metrics. A multiple-choice metric with none of these has an
*unknown* chance level: :func:`chance_level` then returns 0 with source ``"unknown: ..."`` and
``known == False`` so that commands warn (a fit) or list it (``inspect``, :func:`chance_summary`);
:func:`suggested_chance` gives only what the data (a ``choices`` column) or the task state, never a score
of the runs (:func:`estimate_chance`, the cheapest runs' mean, is above chance on any real ladder).
"""

from __future__ import annotations

import re
import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from benchcast.data.table import is_score_metric
from benchcast.defaults import ALL_BENCHMARKS
from benchcast.errors import DataError, DataWarning

# Random-chance score per (benchmark, metric) used by Krajewski et al. 2025 (SPEC §3);
# acc_norm levels were estimated there from very small models; acc levels are 1/choices.
DEFAULT_Q_RAND: dict[tuple[str, str], float] = {
    ("arc_easy", "acc_norm"): 0.291,
    ("arc_challenge", "acc_norm"): 0.215,
    ("sciq", "acc_norm"): 0.304,
    ("piqa", "acc_norm"): 0.53,
    ("hellaswag", "acc_norm"): 0.252,
    ("winogrande", "acc"): 0.5,
    ("piqa", "acc"): 0.5,
    ("arc_easy", "acc"): 0.25,
    ("arc_challenge", "acc"): 0.25,
    ("hellaswag", "acc"): 0.25,
    ("sciq", "acc"): 0.25,
    ("mmlu", "acc"): 0.25,
    ("lambada_openai", "acc"): 0.0,
}
# Tasks of the Pythia evaluations whose acc chance level is 1/choices (logiqa: 4 options;
# wsc: 2; the MMLU subtasks, ``hendrycksTest-*`` in lm-eval v0.3, have 4).
CHOICES: dict[str, int] = {
    **{"logiqa": 4, "wsc": 2, "wsc273": 2, "boolq": 2, "copa": 2, "openbookqa": 4},
    **{"csqa": 5, "commonsense_qa": 5, "socialiqa": 3, "social_iqa": 3},  # OLMo's ladder tasks
}
MMLU_PREFIXES = ("hendrycksTest-", "mmlu_")
# Metrics scored by the choice a model ranks first (lm-eval's multiple_choice): chance is gold/choices.
CHOICE_METRICS = ("acc", "acc_norm", "acc_bytes", "acc_mutual_info", "len_norm")
# a task named with its split, format or shots (training logs: hellaswag_val, arc_challenge_test_rc_5shot) is the
# task it names: the suffixes are stripped only where what is left is a task this module knows
TASK_SUFFIX = re.compile(r"_(?:val|validation|test|train|dev|rc|mc|\d+shot)$")
# Generative metrics have no guessing floor.
ZERO_CHANCE_METRICS = frozenset({"exact_match", "pass@k", "f1", "em"})
# Filter margin above chance for the power-law family (LBPP is sparse near chance).
DEFAULT_MARGIN = 0.05
MARGINS: dict[str, float] = {"lbpp": 0.02}
UNKNOWN = "unknown"
MEASURED = "measured"  # the source of a level counted from lm-eval's files (benchcast.data.choices)


class Chance(NamedTuple):
    """A chance level and where it came from; unpacks as ``(value, source)``."""

    value: float
    source: str

    @property
    def known(self) -> bool:
        return not self.source.startswith(UNKNOWN)


def _check(value: float, where: str) -> float:
    value = float(value)
    if not (np.isfinite(value) and 0.0 <= value < 1.0):
        raise DataError(f"{where}: q_rand must lie in [0, 1), got {value!r}.")
    return value


def builtin_choices(benchmark: str) -> int | None:
    """The number of answer choices the built-in tables state for a task, or None."""
    benchmark = _known_task(benchmark)
    if benchmark in CHOICES:
        return CHOICES[benchmark]
    level = DEFAULT_Q_RAND.get((benchmark, "acc"))
    if level:  # lambada_openai's 0 is not a multiple-choice level
        return round(1.0 / level)
    return 4 if benchmark.startswith(MMLU_PREFIXES) else None


def _known_task(benchmark: str) -> str:
    """The known task a benchmark names with split, format or shot suffixes (``hellaswag_val``), else the name."""
    name = benchmark
    while TASK_SUFFIX.search(name):
        name = TASK_SUFFIX.sub("", name)
        if name in CHOICES or any(task == name for task, _ in DEFAULT_Q_RAND) or name.startswith(MMLU_PREFIXES):
            return name
    return benchmark


def _from_table(table: pd.DataFrame, benchmark: str, metric: str) -> Chance | None:
    """The level a table's ``q_rand`` column gives a (benchmark, metric) with its source, checked; or None."""
    if "q_rand" not in table.columns:
        return None
    rows = table[(table["benchmark"] == benchmark) & (table["metric"] == metric)]
    levels = rows["q_rand"].dropna().unique()
    if len(levels) > 1:
        raise DataError(f"benchmark {benchmark!r}, metric {metric!r}: several q_rand values {sorted(levels)[:4]}.")
    if not len(levels):
        return None
    value = float(levels[0])
    sources = rows["q_rand_source"].dropna() if "q_rand_source" in rows else ()
    source = str(sources.iloc[0]) if len(sources) else "data (q_rand column)"
    choices = rows["choices"].dropna() if "choices" in rows else ()
    typical = round(float(choices.iloc[0])) if len(choices) else None
    stated = builtin_choices(benchmark)  # a measured level must agree with the number of choices the table states
    if typical is not None and stated is not None and source.startswith(MEASURED) and typical != stated:
        raise DataError(
            f"task {benchmark!r} ({metric}): the lm-eval files give {typical} choices on most documents "
            f"(chance level {value:.4g}; {source}) but benchcast's built-in table says {stated} choices "
            f"(chance level {1 / stated:.4g}). One is not the task the other means: give its chance level with "
            f"--q-rand {benchmark}=VALUE (or rename the task)."
        )
    return Chance(_check(value, f"{benchmark}/{metric}"), source)


def chance_level(
    benchmark: str, metric: str, override: float | None = None, *, table: pd.DataFrame | None = None
) -> Chance:
    """Q_rand for a (benchmark, metric), with a note saying where the number came from.

    ``override`` (e.g. from ``--q-rand``) wins, then the ``q_rand`` column of ``table`` (its source from a
    ``q_rand_source`` column; a measured level that contradicts the built-in number of choices raises
    :class:`~benchcast.errors.DataError` naming both). An unknown
    level is returned as 0 with ``source`` starting ``"unknown"`` (``.known`` is False): the caller
    must warn, or pass a level, or suggest what the data or the task state (:func:`suggested_chance`).

    Parameters
    ----------
    benchmark : str
        The benchmark.
    metric : str
        Its metric.
    override : float, optional
        A chance level given by the caller, in [0, 1).
    table : pandas.DataFrame, optional
        The data table, whose ``q_rand`` column is read.

    Returns
    -------
    Chance
        The level (a score in [0, 1)) and its source.
    """
    if override is not None:
        return Chance(_check(override, f"{benchmark}/{metric}"), "given")
    found = _from_table(table, benchmark, metric) if table is not None else None
    if found is not None:
        return found
    base_metric = metric.split("/")[0].lower()
    if base_metric in ZERO_CHANCE_METRICS:
        return Chance(0.0, "generative metric")
    if not is_score_metric(base_metric):
        return Chance(0.0, "not a score metric (no chance level)")
    task = _known_task(benchmark)
    read_as = f" ({benchmark} read as task {task})" if task != benchmark else ""
    if (task, base_metric) in DEFAULT_Q_RAND:
        return Chance(DEFAULT_Q_RAND[(task, base_metric)], "Krajewski et al. 2025 default" + read_as)
    stated = builtin_choices(task) if base_metric in CHOICE_METRICS else None
    if stated:  # a random pick among n choices is right 1/n of the time, however the choice is scored
        mmlu = task not in CHOICES and task.startswith(MMLU_PREFIXES)
        return Chance(1.0 / stated, f"1/{stated} choices" + (" (MMLU subtask)" if mmlu else "") + read_as)
    return Chance(
        0.0,
        f"{UNKNOWN}: no chance level known for {benchmark!r} {metric!r}; assumed 0 "
        "(give q_rand or a q_rand column: 1/n for a task of n answer choices)",
    )


def estimate_chance(table: pd.DataFrame, benchmark: str, metric: str, n_smallest: int = 3) -> float:
    """Q_rand estimated as the mean score of the ``n_smallest`` cheapest runs (for acc_norm).

    Parameters
    ----------
    table : pandas.DataFrame
        The data table (columns benchmark, metric, flops, value, ...).
    benchmark : str
        The benchmark.
    metric : str
        Its metric.
    n_smallest : int
        How many of the lowest-compute rows to average.

    Returns
    -------
    float
        The estimate, a score in [0, 1].
    """
    rows = table[(table["benchmark"] == benchmark) & (table["metric"] == metric)]
    if rows.empty:
        raise DataError(f"no rows for benchmark {benchmark!r}, metric {metric!r} to estimate a chance level from.")
    return float(rows.nsmallest(n_smallest, "flops")["value"].mean())


def suggested_chance(table: pd.DataFrame, benchmark: str, metric: str) -> tuple[float | None, str]:
    """1/n for a (benchmark, metric) of unknown chance, n from a ``choices`` column or the built-in table."""
    if metric.split("/")[0].lower() not in CHOICE_METRICS:
        return None, ""
    rows = table[(table["benchmark"] == benchmark) & (table["metric"] == metric)]
    counts = pd.to_numeric(rows["choices"], errors="coerce").dropna().unique() if "choices" in rows else []
    if len(counts) == 1 and counts[0] >= 2 and float(counts[0]).is_integer():
        return 1.0 / float(counts[0]), f"1/{int(counts[0])} choices (the data's choices column)"
    stated = builtin_choices(benchmark)
    return (1.0 / stated, f"1/{stated} choices (benchcast's table of tasks)") if stated else (None, "")


def filter_margin(benchmark: str, override: float | None = None) -> float:
    """The near-chance filter margin of a benchmark: points at or below chance + margin are dropped."""
    return float(override) if override is not None else MARGINS.get(benchmark, DEFAULT_MARGIN)


def with_chance_levels(table: pd.DataFrame, levels: dict[str, float]) -> pd.DataFrame:
    """``table`` with ``q_rand`` from ``levels`` (``benchmark``, ``benchmark:metric``, ``*``); unknown keys raise."""
    if not levels:
        return table
    out = table.copy()
    if "q_rand" not in out.columns:
        out["q_rand"] = np.nan
    if "q_rand_source" not in out.columns:  # else a given level would be credited to a q_rand column of the data
        out["q_rand_source"] = pd.Series(None, index=out.index, dtype=object)
    for key, rows in _rows_by_key(out, levels, "--q-rand"):
        out.loc[rows, "q_rand"] = _check(levels[key], f"--q-rand {key}")
        # said where it came from (a measured level's source replaced too)
        out.loc[rows, "q_rand_source"] = f"given (--q-rand {'option' if key == ALL_BENCHMARKS else key})"
    return out


def with_margins(table: pd.DataFrame, margins: dict[str, float]) -> pd.DataFrame:
    """``table`` with a ``margin`` column from ``--margin`` values (keys as :func:`with_chance_levels` takes them)."""
    if not margins:
        return table
    out = table.assign(margin=table["margin"] if "margin" in table.columns else np.nan)
    for key, rows in _rows_by_key(out, margins, "--margin"):
        out.loc[rows, "margin"] = _check(margins[key], f"--margin {key}")
    return out


def _rows_by_key(table: pd.DataFrame, values: dict[str, float], option: str):
    """(key, row mask) per key of ``values``: '*' first, then benchmark, then benchmark:metric, so the specific wins."""
    known = set(table["benchmark"])
    for key in sorted(values, key=lambda k: (k != ALL_BENCHMARKS, ":" in k)):
        bench, _, metric = key.partition(":")
        if key == ALL_BENCHMARKS:
            yield key, np.ones(len(table), bool)
            continue
        if bench not in known:
            raise DataError(f"{option} names benchmark {bench!r}, which is not in the data.")
        rows = table["benchmark"] == bench
        if metric:
            rows = rows & (table["metric"] == metric)  # a new mask: a frame's own array is read-only in pandas 3
        yield key, rows.to_numpy(bool)


def chance_summary(table: pd.DataFrame) -> dict[str, dict[str, dict]]:
    """Every score metric's chance level and its source, as ``inspect`` reports them."""
    out: dict[str, dict[str, dict]] = {}
    for bench, metric in table[["benchmark", "metric"]].drop_duplicates().itertuples(index=False):
        if not is_score_metric(str(metric).split("/")[0]):
            continue
        try:
            level = chance_level(str(bench), str(metric), table=table)
            entry = {"q_rand": level.value, "source": level.source, "known": level.known}
        except DataError as exc:
            entry = {"q_rand": None, "source": f"conflict: {exc}", "known": False}
        out.setdefault(str(bench), {})[str(metric)] = entry
    return out


def warn_unknown_chance(table: pd.DataFrame, pairs, where: str) -> list[str]:
    """Warn once of every (benchmark, metric) whose chance level is unknown (taken as 0)."""
    unknown = [f"{b}:{m}" for b, m in pairs if not chance_level(b, m, table=table).known]
    if unknown:
        warnings.warn(
            f"{where}: the chance level of {', '.join(unknown)} is unknown, so it is taken as 0 - wrong for a "
            "multiple-choice task. Give it with --q-rand BENCHMARK=VALUE, a q_rand column, or lm-eval samples files.",
            DataWarning,
            stacklevel=2,
        )
    return unknown
