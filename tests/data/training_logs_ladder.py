"""A synthetic ladder kept as labs keep one: a W&B history export per run (issue #40's shape), with run metadata.

30 runs, 190M-3B parameters at 10-200 tokens per parameter, plus a rerun of each 20 TPR run; every export logs
100 steps and evaluates every 10th (checkpoints). Task bits per byte follow L = E + A / N^a + B / D^b (a little
higher before the learning rate has decayed), accuracy a sigmoid of it above chance, plus evaluation noise.

``write_ladder(..., published=True)`` writes 30 runs in the published format of ``../shared/data/olmo-exports`` (issue
#49): the same column families (soft and soft_log columns, corpus losses ``eval/<corpus>-validation/...``, MMLU
subtasks, optim/ and other unread columns), the sizes file inside the export folder, and ratios that rounding splits
(each run's tokens off its planned ratio by up to 0.4 %, so 100 reads 99.6 .. 100.4).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SIZES = (190e6, 370e6, 600e6, 760e6, 1e9, 3e9)
TPRS = (10, 20, 50, 100, 200)
TOKENS_PER_STEP = 4 * 2**20
# task: (chance, sigmoid slope, bpb at the midpoint, E, A, B, column kind)
TASKS = {
    "hellaswag_val": (0.25, 9.0, 0.95, 0.55, 60.0, 180.0, "len_norm"),
    "arc_easy_test": (0.25, 7.0, 1.05, 0.60, 70.0, 200.0, "len_norm"),
    "arc_challenge_test": (0.25, 6.0, 0.80, 0.65, 80.0, 230.0, "len_norm"),
    "boolq_val": (0.5, 5.0, 0.90, 0.60, 60.0, 190.0, "acc"),
}
ALPHA, BETA = 0.33, 0.30


def _run_name(params: float, tpr: int, rerun: bool) -> str:
    size = f"{params / 1e9:g}B" if params >= 1e9 else f"{params / 1e6:g}M"
    return f"ladder-{size}-{tpr}xN" + ("-rerun" if rerun else "")


MMLU = {
    f"mmlu_{s}_val": (0.25, 5.0, 0.9 + 0.05 * i, 0.65, 70.0, 220.0, "len_norm")
    for i, s in enumerate(("stem", "humanities", "social_sciences", "other"))
}
PUBLISHED_SIZES = (190e6, 370e6, 760e6, 1.3e9, 3.2e9)


def _export(params: float, tpr: int, rng: np.random.Generator, log_every_pct: int = 1, published: bool = False):
    """One run's history: a row per logged step, evaluations every 10th (the lab's published columns if asked)."""
    total = params * tpr * (1 + rng.uniform(-0.004, 0.004) if published else 1)
    steps = np.linspace(total / TOKENS_PER_STEP / 100, total / TOKENS_PER_STEP, 100 // log_every_pct).round()
    tokens = steps * TOKENS_PER_STEP
    progress = tokens / total
    frame = pd.DataFrame(
        {
            "_step": steps.astype(int),
            "throughput/total_tokens": tokens,
            # FLOPs per 6ND above 1 and falling with N, as real exports' are (attention, embeddings)
            "throughput/total_training_Gflops": 6 * params * tokens * (1 + 4e8 / (params + 4e8)) / 1e9,
            "optim/learning_rate_group0": 3e-3 * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * progress))),
        }
    )
    evaluated = np.arange(len(frame)) % 10 == 9  # every 10th logged step, the last one included
    undecayed = 0.04 * (1 - progress)  # a checkpoint before the learning rate decayed is worse than a finished run
    for task, (chance, slope, mid, e, a, b, kind) in (TASKS | MMLU if published else TASKS).items():
        bpb = e + a / params**ALPHA + b / tokens**BETA + undecayed
        bpb = bpb + rng.normal(0, 0.004, len(frame))
        score = chance + (1 - chance) / (1 + np.exp(slope * (bpb - mid)))
        score = np.clip(score + rng.normal(0, 0.006, len(frame)), 0, 1)
        frame[f"eval/downstream/{task}_rc_5shot_{kind}"] = np.where(evaluated, score, np.nan)
        frame[f"eval/downstream_bpb/{task}_rc_5shot_bpb" + ("" if published else "_bpb")] = np.where(
            evaluated, bpb, np.nan
        )
        if published:  # the probability of the correct answer and its log
            soft = np.where(evaluated, np.exp(-bpb), np.nan)
            frame[f"eval/downstream_soft/{task}_rc_5shot_soft"] = soft
            frame[f"eval/downstream_soft_log/{task}_rc_5shot_soft_log"] = np.log(soft)
    loss = 1.7 + 400 / params**0.34 + 410 / tokens**0.28 + undecayed
    for corpus in ("c4_en-validation", "pile-validation") if published else ("c4_en",):
        frame[f"eval/{corpus}/CrossEntropyLoss"] = np.where(evaluated, loss + rng.normal(0, 0.003, len(frame)), np.nan)
    if published:
        frame = frame.assign(learning_rate_peak=3e-3, batch_size_in_tokens=TOKENS_PER_STEP)
    return frame


def write_ladder(folder: Path, seed: int = 0, *, published: bool = False) -> tuple[Path, Path]:
    """Write the exports into ``folder/exports`` and the run metadata (run, params) to ``folder/runs.csv``; returns
    (exports, runs.csv). ``published``: 30 runs (5 sizes x TPR 10, 20, 50, 100, 200, and a rerun of each 20 TPR run)
    exported as the lab publishes them into ``folder/published``, with ``runs.csv`` inside that folder."""
    rng = np.random.default_rng(seed)
    exports = Path(folder) / ("published" if published else "exports")
    exports.mkdir(parents=True, exist_ok=True)
    meta = []
    for params in PUBLISHED_SIZES if published else SIZES:
        for tpr in TPRS:
            for rerun in (False, True) if tpr == 20 else (False,):
                name = _run_name(params, tpr, rerun)
                _export(params, tpr, rng, published=published).to_csv(exports / f"{name}.csv", index=False)
                meta.append({"run": name, "params": params})
    runs = (exports if published else Path(folder)) / "runs.csv"
    pd.DataFrame(meta).to_csv(runs, index=False)
    return exports, runs


if __name__ == "__main__":
    import sys

    print(write_ladder(Path(sys.argv[1] if len(sys.argv) > 1 else "training-logs-ladder")))
