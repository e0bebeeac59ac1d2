"""Chance levels (Q_rand) and the near-chance point filter margins of Krajewski et al. 2025."""

from __future__ import annotations

import pandas as pd

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
# Generative metrics have no guessing floor.
ZERO_CHANCE_METRICS = frozenset({"exact_match", "pass@k", "f1", "em"})
# Filter margin above chance for the power-law family (LBPP is sparse near chance).
DEFAULT_MARGIN = 0.05
MARGINS: dict[str, float] = {"lbpp": 0.02}


def chance_level(benchmark: str, metric: str, override: float | None = None) -> tuple[float, str]:
    """Q_rand for a (benchmark, metric), with a note saying where the number came from."""
    if override is not None:
        if not 0.0 <= override < 1.0:
            raise ValueError(f"q_rand must lie in [0, 1), got {override!r}.")
        return float(override), "given"
    base_metric = metric.split("/")[0]
    if base_metric in ZERO_CHANCE_METRICS:
        return 0.0, "generative metric"
    if (benchmark, base_metric) in DEFAULT_Q_RAND:
        return DEFAULT_Q_RAND[(benchmark, base_metric)], "Krajewski et al. 2025 default"
    return 0.0, "unknown: assumed 0 (pass q_rand, or estimate it with estimate_chance)"


def estimate_chance(table: pd.DataFrame, benchmark: str, metric: str, n_smallest: int = 3) -> float:
    """Q_rand estimated as the mean score of the ``n_smallest`` cheapest runs (for acc_norm)."""
    rows = table[(table["benchmark"] == benchmark) & (table["metric"] == metric)]
    return float(rows.nsmallest(n_smallest, "flops")["value"].mean())


def filter_margin(benchmark: str, override: float | None = None) -> float:
    return float(override) if override is not None else MARGINS.get(benchmark, DEFAULT_MARGIN)
