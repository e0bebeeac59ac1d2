"""Speed of `compare` (issue 52): 6 recipes x 6 benchmarks on a synthetic ladder of 90 runs per recipe, the default
settings (200 replicates), all cores.

    PYTHONPATH=src nice python benchmarks/compare_speed.py
"""

import time
import warnings

import pandas as pd

import benchcast as bc
from benchcast.data.example import recipe_ladders

MULTIPLIERS = {"A": 1.0, "B": 1.5, "C": 2.0, "D": 0.7, "E": 1.2, "F": 3.0}


def ladder() -> pd.DataFrame:
    """Six recipes, 90 sizes each, six benchmarks (the example's three laws, twice with their own noise)."""
    parts = []
    for copy in (0, 1):
        part = recipe_ladders(MULTIPLIERS, sizes=90, seed=copy, benchmarks=("arc_easy", "hellaswag", "gsm8k"))
        parts.append(part.assign(benchmark=part["benchmark"] + f"_{copy}"))
    return bc.validate(pd.concat(parts, ignore_index=True), "synthetic")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    table = ladder()
    benches = sorted(table["benchmark"].unique())
    start = time.perf_counter()
    out = bc.compare(table, "recipe", benches, flops=1e23)
    seconds = time.perf_counter() - start
    print(out.recipes[["benchmark", "recipe", "prediction", "lower", "upper", "rank", "baseline_rank"]].to_string())
    print(f"{table['run'].nunique()} runs, {len(benches)} benchmarks, {len(MULTIPLIERS)} recipes: {seconds:.1f} s")
