"""Per-problem counts (n generations, c correct) from lm-evaluation-harness ``--log_samples`` files.

lm-eval writes ``samples_<task>_<timestamp>.jsonl`` next to ``results_<timestamp>.json``: one
line per (document, filter) with ``doc_id``, ``doc``, ``target``, ``arguments``, ``resps`` (raw
generations), ``filtered_resps`` (after the filter), ``filter``, ``metrics`` (the metric names)
and one field per metric. With ``repeats`` > 1 the metric field scores the *first* filtered
response only, so it says nothing about how many of the n generations are correct. Here
correctness is counted per generation:

1. a metric field holding a list (one 0/1 score per generation) is used as is;
2. a single generation with a 0/1 score is that score (n = 1);
3. several generations are graded against ``target``: by exact match with lm-eval's
   normalisation (``regexes_to_ignore``, ``ignore_case``, ``ignore_punctuation``,
   ``ignore_numbers``, read from the task's ``metric_list`` in the results file beside it), else
   by the math grader of :mod:`benchcast.data.grading`. A grader is used only if it reproduces
   the score lm-eval stored for every document; otherwise the file is refused, since per-generation
   correctness cannot then be determined. Counts are never inferred from a mean.

Each filter is its own benchmark (``gsm8k/flexible-extract``; the filter ``none`` adds nothing).
The task comes from the file name (``samples_<task>_<timestamp>``), the run from the results
file beside it (lm-eval's ``model_name`` or ``pretrained=``), else from the folder lm-eval named
after the model.
"""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.choices import sample_records, task_and_stamp
from benchcast.data.files import read_json
from benchcast.data.lm_eval import model_args
from benchcast.errors import DataError, DataWarning

CORRECTNESS_FIELDS = ("correct", "is_correct", "exact_match", "acc", "pass@1", "pass_at_1", "score")
EXACT_MATCH_OPTIONS = ("regexes_to_ignore", "ignore_case", "ignore_punctuation", "ignore_numbers")


def is_lm_eval_samples(head: dict) -> bool:
    """Whether a JSON-lines file's first record is an lm-eval ``--log_samples`` record."""
    return isinstance(head, dict) and "doc_id" in head and ("resps" in head or "filtered_resps" in head)


def _sibling_results(path: Path, stamp: str | None) -> dict | None:
    """The results file lm-eval wrote with this samples file (same folder, same timestamp if known)."""
    candidates = [path.parent / f"results_{stamp}.json"] if stamp else []
    candidates += sorted(path.parent.glob("results*.json"))
    for candidate in candidates:
        if candidate.is_file():
            doc = read_json(candidate, "an lm-evaluation-harness results file")
            if isinstance(doc, dict):
                return doc
    return None


def _exact_match_grader(options: dict) -> Callable[[str, object], bool]:
    """lm-eval's exact match: the same normalisation applied to prediction and reference."""
    regexes = options.get("regexes_to_ignore") or []
    drop = ""
    if options.get("ignore_punctuation"):
        drop += string.punctuation
    if options.get("ignore_numbers"):
        drop += string.digits
    table = str.maketrans("", "", drop)

    def norm(text: str) -> str:
        for pattern in regexes:
            text = re.sub(pattern, "", text)
        if options.get("ignore_case"):
            text = text.lower()
        return text.translate(table)

    def grade(prediction: str, target: object) -> bool:
        targets = target if isinstance(target, list) else [target]
        return any(norm(str(prediction)) == norm(str(t)) for t in targets)

    return grade


def _math_grader(prediction: str, target: object) -> bool:
    """Whether a completion's final answer matches the target's (math grading)."""
    from benchcast.data.grading import extract_answer, grade

    targets = target if isinstance(target, list) else [target]
    return any(grade(extract_answer(str(prediction)), extract_answer(str(t)) or str(t)) for t in targets)


def _generations(doc: dict) -> list | None:
    """The filtered generations of a document, or None for a non-generative (log-likelihood) task."""
    filtered = doc.get("filtered_resps", doc.get("resps"))
    if isinstance(filtered, str):
        return [filtered]
    if not isinstance(filtered, list):
        return None
    if len(filtered) == 1 and isinstance(filtered[0], list):
        filtered = filtered[0]
    return filtered if all(isinstance(g, str) for g in filtered) else None


def _flag(value, where: str) -> int:
    if value is None:
        raise DataError(f"{where}: the score is null; expected 0 or 1.")
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    raise DataError(f"{where}: a per-generation score must be 0 or 1 (or true/false), got {value!r}.")


def read_lm_eval_samples(path: str | Path, *, benchmark: str | None = None, run: str | None = None) -> pd.DataFrame:
    """Per-problem (run, benchmark, problem_id, n, c) from one lm-eval ``--log_samples`` JSONL file."""
    path = Path(path)
    task, stamp = task_and_stamp(path)
    task = benchmark or task
    if task is None:
        raise DataError(
            f"{path}: cannot tell the task: the name is not lm-eval's samples_<task>_<timestamp>.jsonl; "
            "pass the benchmark."
        )
    results = _sibling_results(path, stamp)
    name, pretrained = (results or {}).get("model_name"), model_args(results or {}).get("pretrained")
    # lm-eval's model_name, else the pretrained model, else lm-eval's output folder (named after the model)
    run = run or (name if isinstance(name, str) and name else pretrained) or path.parent.name
    docs = list(sample_records(path))
    if not docs:
        raise DataError(f"{path}: no samples found.")

    records, to_grade, first_only = [], [], 0
    seen: set[tuple[str, str]] = set()
    for number, doc in docs:
        where = f"{path}, line {number}"
        filt = str(doc.get("filter") or "none")
        bench = task if filt == "none" else f"{task}/{filt}"
        problem = str(doc["doc_id"])
        if (bench, problem) in seen:
            raise DataError(f"{where}: doc_id {problem} appears twice for filter {filt!r}.")
        seen.add((bench, problem))
        named = [m for m in doc.get("metrics") or [] if isinstance(m, str) and m in doc]
        field = next(iter(named), None) or next((f for f in CORRECTNESS_FIELDS if f in doc), None)
        if field is None:
            raise DataError(f"{where}: no score field (looked for 'metrics' and {', '.join(CORRECTNESS_FIELDS)}).")
        value = doc[field]
        generations = _generations(doc)
        record = {"run": run, "benchmark": bench, "problem_id": problem}
        if isinstance(value, list):
            flags = [_flag(v, f"{where}, field {field!r}") for v in value]
            if generations is not None and len(generations) > 1 and len(generations) != len(flags):
                raise DataError(f"{where}: {len(flags)} scores in {field!r} for {len(generations)} generations.")
            records.append({**record, "n": len(flags), "c": sum(flags)})
            continue
        if value is None:
            raise DataError(f"{where}: field {field!r} is null; expected the document's score.")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise DataError(f"{where}: field {field!r} must be a score in [0, 1], got {value!r}.")
        if generations is None or len(generations) <= 1:
            stored = _flag(value, f"{where}, field {field!r} (one generation)")
            raw = doc.get("resps")  # several raw generations, of which the filter kept one
            first_only += isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list) and len(raw[0]) > 1
            records.append({**record, "n": 1, "c": stored})
            continue
        if "target" not in doc:
            raise DataError(
                f"{where}: {len(generations)} generations but only one score ({field!r}) and no 'target' to grade "
                "them against: per-generation correctness cannot be determined."
            )
        to_grade.append((len(records), where, field, float(value), generations, doc["target"]))
        records.append({**record, "n": len(generations), "c": None})

    if to_grade:
        configs = (results or {}).get("configs")  # the exact_match options of the task's v0.4 config
        config = (configs.get(task) if isinstance(configs, dict) else None) or {}
        metrics = [
            e for e in config.get("metric_list") or [] if isinstance(e, dict) and e.get("metric") == "exact_match"
        ]
        options = {k: metrics[0][k] for k in EXACT_MATCH_OPTIONS if k in metrics[0]} if metrics else {}
        graders = [(f"exact match {options or '(lm-eval defaults)'}", _exact_match_grader(options))]
        graders.append(("math answer grader", _math_grader))
        failures = []
        for label, grader in graders:
            counts, failure = [], None
            for index, where, field, stored, generations, target in to_grade:
                flags = [grader(g, target) for g in generations]
                if stored not in (float(flags[0]), float(np.mean(flags))):
                    failure = (
                        f"{label} gives generation 1 a score of {int(flags[0])} at {where}, "
                        f"but lm-eval stored {field} = {stored:g}"
                    )
                    break
                counts.append((index, sum(flags)))
            if failure is None:
                for index, c in counts:
                    records[index]["c"] = c
                break
            failures.append(failure)
        else:
            raise DataError(
                f"{path}: per-generation correctness cannot be determined: the file scores only the first "
                f"generation of each document and grading the others does not reproduce lm-eval ("
                + "; ".join(failures)
                + "). Provide a per-generation score list (a list in the metric field) instead."
            )
    if first_only:
        warnings.warn(
            f"{path}: {first_only} document(s) have several raw generations but the filter kept only the first "
            "(e.g. take_first); counted as n = 1 each.",
            DataWarning,
            stacklevel=2,
        )
    return pd.DataFrame(records).astype({"n": int, "c": int})
