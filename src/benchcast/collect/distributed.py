"""Scale-out of scoring and sampling: checkpoints x problem shards as Ray tasks (one GPU per
task when the cluster has GPUs), or a local loop. Workers return tables; the driver merges them
with any previous output (resume) and writes once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.collect import store
from benchcast.collect.sampling import KEY as SAMPLE_KEY
from benchcast.collect.sampling import sample
from benchcast.collect.scoring import KEY as SCORE_KEY
from benchcast.collect.scoring import score_gold
from benchcast.collect.store import SIZES
from benchcast.errors import BenchcastError


def _work(kind: str, checkpoint: dict, problems: pd.DataFrame, options: dict) -> pd.DataFrame:
    frame = (score_gold if kind == "score" else sample)(
        checkpoint["model"], problems, run=checkpoint.get("run"), **options
    )
    # the run's sizes travel with every row, so passk and the gold table need no --metadata
    return frame.assign(**{c: checkpoint.get(c) for c in SIZES if checkpoint.get(c) is not None})


def _split_budget(budget: int | None, sizes: list[int]) -> list[int | None]:
    """A total sampling budget split over shards in proportion to their problems (the remainder to the first)."""
    if budget is None:
        return [None] * len(sizes)
    total = sum(sizes)
    shares = [budget * s // total for s in sizes]
    for i in range(budget - sum(shares)):
        shares[i % len(shares)] += 1
    return shares


def _rows_of(previous: pd.DataFrame, model: str, problems: pd.DataFrame) -> pd.DataFrame:
    """The earlier samples of one model on some problems, handed to the job that resumes them."""
    if not len(previous):
        return previous
    keep = (previous["model"].astype(str) == model) & previous["problem_id"].astype(str).isin(
        problems["id"].astype(str)
    )
    return previous[keep]


def run(
    kind: str,
    checkpoints: list[dict],
    problems: pd.DataFrame,
    *,
    out: str | Path | None = None,
    ray_address: str | None = None,
    shards: int = 1,
    **options,
) -> pd.DataFrame:
    """Score (``kind='score'``) or sample (``kind='sample'``) every checkpoint on every problem."""
    key = SCORE_KEY if kind == "score" else SAMPLE_KEY
    previous = store.read_existing(Path(out) if out else None, key)
    done = store.done_keys(previous, key)
    jobs = []
    for checkpoint in checkpoints:
        if kind == "score":
            todo = problems[[(checkpoint["model"], str(p)) not in done for p in problems["id"]]]
        elif options.get("budget") is None:
            n = options.get("n", 100)
            todo = problems[
                [any((checkpoint["model"], str(p), str(i)) not in done for i in range(n)) for p in problems["id"]]
            ]
        else:  # which problems still need samples depends on the rounds: every shard replays them
            todo = problems
        parts = [part for part in np.array_split(np.arange(len(todo)), max(1, min(shards, len(todo)))) if len(part)]
        for part, budget in zip(parts, _split_budget(options.get("budget"), [len(p) for p in parts]), strict=True):
            extra = {} if kind == "score" else {"previous": _rows_of(previous, checkpoint["model"], todo.iloc[part])}
            if budget is not None:
                extra["budget"] = budget
            jobs.append((checkpoint, todo.iloc[part], extra))
    if ray_address:
        try:
            import ray
        except ImportError:
            raise BenchcastError("--ray needs Ray: pip install 'benchcast[ray]'.") from None
        if not ray.is_initialized():
            ray.init(address=None if ray_address == "local" else ray_address, ignore_reinit_error=True)
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        task = ray.remote(num_gpus=gpus)(_work)
        parts = ray.get(
            [task.remote(kind, cp, part, {**options, **extra, "progress": False}) for cp, part, extra in jobs]
        )
    else:
        parts = [_work(kind, cp, part, {**options, **extra}) for cp, part, extra in jobs]
    frames = [f for f in [previous, *parts] if len(f)]
    merged = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=key)
    merged[key] = merged[key].astype(str)
    merged = merged.drop_duplicates(subset=key, keep="first").reset_index(drop=True)
    if out:
        store.write(merged, Path(out))
    return merged
