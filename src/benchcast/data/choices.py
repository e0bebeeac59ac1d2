"""The answer choices of multiple-choice tasks, read from lm-evaluation-harness outputs: chance levels measured.

The chance level of ``acc``-like metrics is the mean of gold/choices over the documents, the choices counted from a
``--log_samples`` file, else a v0.4 results file's ``configs[task]``, else the built-in table; sources that count a
task must agree (docs/guide/forecast.md, "Chance levels measured from lm-eval outputs").
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.chance import CHOICE_METRICS, MEASURED
from benchcast.errors import DataError

SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+?)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)$")
TEMPLATE = re.compile(r"^\s*\{\{(?P<expression>.*)\}\}\s*$", re.DOTALL)


def sample_records(path: Path):
    """Each record of an lm-eval samples file, with its line number, checked to be a sample object."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}, line {number}: not valid JSON ({exc}).") from exc
                if not isinstance(record, dict) or "doc_id" not in record:
                    raise DataError(f"{path}, line {number}: expected an lm-eval sample object with a 'doc_id'.")
                yield number, record
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc}).") from exc


def task_and_stamp(path: Path) -> tuple[str | None, str | None]:
    """The task and timestamp in lm-eval's samples file name, ``samples_<task>_<timestamp>.jsonl``."""
    stem = path.name.removesuffix(".jsonl").removesuffix(".json")
    found = SAMPLES_NAME.match(stem)
    return (found["task"], found["stamp"]) if found else (None, None)


@dataclass(frozen=True)
class Choices:
    """How many answer choices (and gold answers) each document of a task has, and where that was read."""

    task: str
    counts: tuple[int, ...]  # choices per document (one entry for a config: every document)
    golds: tuple[int, ...]  # gold answers per document (1 but for multiple-target tasks)
    where: str  # the file it was read from, and how

    @property
    def chance(self) -> float:
        """The chance level of acc and acc_norm: the mean over documents of gold / choices."""
        return float(np.mean(np.minimum(np.array(self.golds) / np.array(self.counts), 1.0)))

    @property
    def typical(self) -> int:
        """The most common number of choices (the smallest among equally common ones)."""
        return min(Counter(self.counts).most_common(), key=lambda item: (-item[1], item[0]))[0]

    def describe(self) -> str:
        """The counts in words, e.g. ``'4 choices'`` or ``'3-5 choices (mostly 4)'``."""
        low, high = min(self.counts), max(self.counts)
        text = f"{low} choices" if low == high else f"{low}-{high} choices (mostly {self.typical})"
        return text + (", several gold answers on some documents" if max(self.golds) > 1 else "")

    def source(self) -> str:
        """Where the chance level comes from, as :func:`benchcast.data.chance.chance_level` reports it."""
        docs = f"mean gold/choices over {len(self.counts)} documents" if len(self.counts) > 1 else "1/choices"
        return f"{MEASURED}: {docs}, {self.describe()}, from {self.where}"


def _requests(record: dict, where: str) -> list:
    arguments = record.get("arguments")
    if isinstance(arguments, dict):  # lm-eval's EvaluationTracker: {"gen_args_<i>": {"arg_<j>": ...}}
        keys = sorted(arguments, key=lambda k: int(re.sub(r"\D", "", k) or 0))
        return [[v for _, v in sorted(arguments[k].items())] if isinstance(arguments[k], dict) else [] for k in keys]
    if isinstance(arguments, list):  # early v0.4: one list of arguments per request
        return [a if isinstance(a, list) else [a] for a in arguments]
    raise DataError(f"{where}: no 'arguments' (lm-eval's requests) to count the choices from.")


def samples_choices(path: str | Path, task: str | None = None) -> Choices | None:
    """The choices of every document in a ``--log_samples`` file; None where the task is not multiple-choice."""
    path = Path(path)
    task = task or task_and_stamp(path)[0]
    if task is None:
        raise DataError(f"{path}: not lm-eval's samples_<task>_<timestamp>.jsonl name: the task is unknown.")
    by_doc: dict[str, tuple[int, int]] = {}
    pairs_only, several = True, False
    for number, record in sample_records(path):
        where = f"{path}, line {number}"
        requests = _requests(record, where)
        if not requests:
            raise DataError(f"{where}: 'arguments' holds no request.")
        pairs_only &= all(len(r) >= 2 and isinstance(r[0], str) and isinstance(r[1], str) for r in requests)
        n = len(requests)
        if "acc_mutual_info" in (record.get("metrics") or record):
            if n % 2:
                raise DataError(f"{where}: acc_mutual_info doubles the requests, but there are {n}.")
            n //= 2  # the second half are the unconditional requests of the same choices
        several |= n > 1
        target = record.get("target")  # a list (multiple-target tasks, written as text by lm-eval) counts each gold
        if isinstance(target, str) and target.strip().startswith("["):
            try:
                target = json.loads(target)
            except ValueError:
                target = None
        entry = (n, len(set(target)) if isinstance(target, list) and target else 1)
        doc = str(record["doc_id"])
        if by_doc.setdefault(doc, entry) != entry:  # one record per filter: they must agree
            raise DataError(f"{where}: document {doc} has {n} choices here and {by_doc[doc][0]} before.")
    if not by_doc:
        raise DataError(f"{path}: no samples found.")
    if not (pairs_only and several):
        return None
    counts, golds = zip(*by_doc.values(), strict=True)
    return Choices(task, tuple(counts), tuple(golds), f"{path.name} (lm-eval samples)")


def config_choices(task: str, config: dict, where: str) -> Choices | None:
    """The choices a v0.4 task config states for every document; None where it does not state a number."""
    if not isinstance(config, dict) or config.get("output_type") != "multiple_choice" or config.get("use_prompt"):
        return None
    choice = config.get("doc_to_choice")
    if isinstance(choice, str):
        found = TEMPLATE.match(choice)
        try:
            node = ast.parse((found["expression"] if found else choice).strip(), mode="eval").body
        except SyntaxError:  # a function's source, or a template that is not one list
            return None
        if not isinstance(node, (ast.List, ast.Tuple)) or any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        n = len(node.elts)
    elif isinstance(choice, (list, dict)):
        n = len(choice)
    else:
        return None
    return Choices(task, (n,), (1,), f"{where} (configs.{task}.doc_to_choice)") if n else None


def find_samples(results_paths, samples_paths) -> dict[str, Path]:
    """One samples file per task, the newest by its name's timestamp: those given first, then those beside results."""
    given: list[Path] = []
    for path in [samples_paths] if isinstance(samples_paths, (str, Path)) else samples_paths or []:
        path = Path(path)
        if not path.exists():
            raise DataError(f"{path}: no such samples file or folder.")
        found = sorted(path.rglob("samples_*.jsonl")) if path.is_dir() else [path]
        if path.is_dir() and not found:
            raise DataError(f"{path}: no lm-eval samples files (samples_<task>_<timestamp>.jsonl) in this folder.")
        given += found
    beside = sorted({f for folder in {Path(p).parent for p in results_paths} for f in folder.glob("samples_*.jsonl")})
    chosen: dict[str, Path] = {}
    for group in (given, beside):
        newest: dict[str, tuple[str, Path]] = {}
        for path in group:
            task, stamp = task_and_stamp(path)
            if task is None:
                raise DataError(f"{path}: not lm-eval's samples_<task>_<timestamp>.jsonl name: the task is unknown.")
            if task not in newest or stamp > newest[task][0]:
                newest[task] = (stamp, path)
        for task, (_, path) in newest.items():
            chosen.setdefault(task, path)
    return chosen


def measured_choices(configs: dict[str, list[tuple[dict, str]]], samples: dict[str, Path]) -> dict[str, Choices]:
    """Each task's measured choices: from its samples file, checked against its configs; else from its configs."""
    out: dict[str, Choices] = {}
    for task in sorted(set(configs) | set(samples)):
        counted = [c for c in (config_choices(task, *entry) for entry in configs.get(task, [])) if c]
        from_config = counted[0] if counted else None
        for other in counted[1:]:
            if other.counts != from_config.counts:
                raise DataError(
                    f"task {task!r}: {from_config.where} lists {from_config.counts[0]} choices but {other.where} "
                    f"lists {other.counts[0]}; the results files come from different task versions."
                )
        from_samples = samples_choices(samples[task], task) if task in samples else None
        if from_samples and from_config and set(from_samples.counts) != set(from_config.counts):
            raise DataError(
                f"task {task!r}: {from_samples.where} gives {from_samples.describe()} but {from_config.where} "
                f"lists {from_config.counts[0]}; the samples and the results come from different task versions? "
                "Read matching files."
            )
        if from_samples or from_config:
            out[task] = from_samples or from_config
    return out


def with_measured_chance(table: pd.DataFrame, choices: dict[str, Choices]) -> pd.DataFrame:
    """``table`` with ``q_rand``, ``q_rand_source`` and ``choices`` set on each measured task's choice metrics."""
    base = table["metric"].astype(str).str.split("/").str[0]
    rows = {task: (table["benchmark"] == task) & base.isin(CHOICE_METRICS) for task in choices}
    if not any(r.any() for r in rows.values()):
        return table
    out = table.copy()
    for column, empty in (("q_rand", np.nan), ("q_rand_source", None), ("choices", np.nan)):
        if column not in out:
            out[column] = pd.Series(empty, index=out.index, dtype=object if empty is None else float)
    for task, selected in rows.items():
        found = choices[task]
        out.loc[selected, ["q_rand", "q_rand_source", "choices"]] = [found.chance, found.source(), found.typical]
    return out
