"""Problem sets: JSONL/CSV/Parquet files or a Hugging Face dataset, and prompt templates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchcast.data.files import read_frame
from benchcast.errors import DataError, did_you_mean

# Built-in few-shot-free templates: {question} is the problem text; the gold solution follows.
TEMPLATES = {
    "plain": "{question}",
    "gsm8k": "Question: {question}\nAnswer:",
    "math": "Problem:\n{question}\n\nSolution:",
}
ALIASES = {
    "problem": "question",
    "input": "question",
    "reference": "solution",
    "target": "answer",
    "task_id": "id",
    "idx": "id",
}


def load_problems(
    source: str | Path, *, split: str = "test", template: str | None = None, fewshot: str = "", limit: int | None = None
) -> pd.DataFrame:
    """Problems with ``id``, ``prompt``, ``solution`` (gold reference) and ``answer``."""
    path = Path(source)
    if path.exists():
        frame = read_frame(path, "a problem set")
    else:
        try:
            import datasets
        except ImportError:
            raise DataError(
                f"{source}: no such file (and the `datasets` package is not installed to read it "
                "as a Hugging Face dataset)."
            ) from None
        name, _, config = str(source).partition(":")
        try:
            frame = datasets.load_dataset(name, config or None, split=split).to_pandas()
        except Exception as exc:  # datasets raises many types for missing/unreachable data
            raise DataError(f"{source}: not a file, and not loadable as a Hugging Face dataset ({exc}).") from exc
    frame = frame.rename(columns={c: ALIASES[c] for c in frame.columns if c in ALIASES and ALIASES[c] not in frame})
    if "id" not in frame.columns:
        frame["id"] = [str(i) for i in range(len(frame))]
    frame["id"] = frame["id"].astype(str)
    if frame["id"].duplicated().any():
        raise DataError(
            f"{source}: problem ids must be unique; {frame['id'][frame['id'].duplicated()].iloc[0]!r} repeats."
        )
    if "prompt" not in frame.columns:
        if "question" not in frame.columns:
            raise DataError(
                f"{source}: need a 'prompt' column, or 'question' and a template "
                f"(found {', '.join(map(str, frame.columns))})."
            )
        fmt = TEMPLATES.get(template or "plain", template or "")
        if template and template not in TEMPLATES and "{question}" not in template:
            raise DataError(f"unknown template {template!r}." + did_you_mean(template, TEMPLATES))
        try:
            frame["prompt"] = [fewshot + fmt.format(question=q) for q in frame["question"].astype(str)]
        except (KeyError, IndexError, ValueError) as exc:  # a stray {field} or brace in the template
            raise DataError(
                f"template {template!r} is not a format string with only {{question}} "
                f"(write literal braces as {{{{ and }}}}): {exc!r}."
            ) from None
    if "solution" not in frame.columns and "answer" in frame.columns:
        frame["solution"] = frame["answer"].astype(str)
    if "answer" not in frame.columns and "solution" in frame.columns:
        frame["answer"] = frame["solution"].astype(str)
    if limit is not None:
        frame = frame.head(limit)
    return frame.reset_index(drop=True)
