"""The backtest of `compare`'s decisions on the development data (issue 52): DCLM + C4 as two recipes, DCLM's own
recipe evaluations (6.9B from 412M/1.4B), synthetic recipe ladders with known multipliers and a crossing.

    PYTHONPATH=src nice python benchmarks/compare_backtest.py [apple|dclm|synthetic] [n_boot]
"""

import sys
import time
import warnings
from pathlib import Path

import pandas as pd
from scipy.optimize import brentq

import benchcast as bc
from benchcast.data.example import recipe_ladders, recipe_score

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
M = {"A": 1.0, "B": 2.0, "C": 1.0, "D": 0.5}  # known multipliers; C's exponent is 0.04 larger: it crosses A at PIVOT
DELTAS = {"C": 0.04}
PIVOT = 1e22  # between the ladder fitted (below 1.5e21 far, 9e21 near) and the held-out budget (3.1e22)


def true_multiplier(bench, recipe, reference, flops):
    """C_ref / C_recipe at the reference's true score at ``flops``."""
    score = recipe_score(bench, flops, M[reference], DELTAS.get(reference, 0.0), PIVOT)
    need = brentq(lambda lc: recipe_score(bench, 10**lc, M[recipe], DELTAS.get(recipe, 0.0), PIVOT) - score, 5, 40)
    return flops / 10**need


def run(which: str, n_boot: int) -> pd.DataFrame:
    """The scores table of one data set."""
    warnings.simplefilter("ignore")
    out = []
    if which == "apple":
        parts = [
            bc.load(DATA / "apple-downstream" / f"metrics_{name}.subset.csv").assign(recipe=label)
            for name, label in (("dclm_data_mixture", "dclm"), ("c4_mixture", "c4"))
        ]
        table = pd.concat(parts, ignore_index=True)
        benches = [
            "arc_easy:acc_norm",
            "arc_challenge:acc_norm",
            "hellaswag:acc_norm",
            "piqa:acc_norm",
            "sciq:acc_norm",
            "winogrande:acc",
        ]
        for errors in ("common", "independent"):
            b = bc.compare_backtest(
                table, "recipe", benches, tpr=20, uncertainty=bc.Uncertainty(n_boot, levels=0.9), errors=errors
            )
            out.append(b.scores.assign(data="apple dclm+c4", errors=errors, holdout=b.holdout_flops))
    elif which == "dclm":
        table = bc.load(DATA / "dclm-recipes" / "dclm_evals.csv")
        scales = table.groupby("recipe")["scale"].nunique()
        table = table[table["recipe"].isin(scales[scales == 3].index) & (table["tpp"] == 20)]
        benches = [
            "hellaswag_zeroshot:acc",
            "arc_easy:acc",
            "arc_challenge:acc",
            "piqa:acc",
            "jeopardy:acc",
            "mmlu_zeroshot:acc",
        ]
        for errors in ("common", "independent"):
            b = bc.compare_backtest(
                table, "recipe", benches, uncertainty=bc.Uncertainty(n_boot, levels=0.9), errors=errors
            )
            out.append(b.scores.assign(data="dclm-recipes (9 recipes)", errors=errors, holdout=b.holdout_flops))
    else:
        for seed in range(4):
            table = recipe_ladders(M, alphas=DELTAS, pivot=PIVOT, sizes=12, seed=seed, top=1.6e10)
            table = bc.validate(table, "synthetic")
            for label, below, modes in (("near", None, ("common",)), ("20x", 1.55e21, ("common", "independent"))):
                for errors in modes:
                    b = bc.compare_backtest(
                        table,
                        "recipe",
                        ["arc_easy", "hellaswag"],
                        errors=errors,
                        fit_below=below,
                        uncertainty=bc.Uncertainty(n_boot, seed, levels=0.9),
                        true_multipliers=true_multiplier,
                    )
                    data = f"synthetic {label} seed {seed}"
                    out.append(
                        b.scores.assign(data=data, errors=errors, holdout=b.holdout_flops, fit_below=b.fit_below)
                    )
    return pd.concat(out, ignore_index=True)


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "synthetic"
    start = time.perf_counter()
    scores = run(which, int(sys.argv[2]) if len(sys.argv) > 2 else 200)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print(scores.round(3).to_string())
    print(f"{time.perf_counter() - start:.0f} s")
    scores.to_csv(f"/tmp/compare_backtest_{which}.csv", index=False)
