"""Issue #51 item 6: replicates that stop once the 90 % bounds' Monte-Carlo error is below the noise target.

For each fit below, a pool of replicates (``--pool`` per seed x ``--seeds``) is refitted once and cached; seed s
reads replicates [s * 1500, (s + 1) * 1500) of it (replicates are independent draws: this is what another seed
would make). Each stopping rule makes rounds of ``ROUND`` replicates until its estimate of the bounds' Monte-Carlo
standard error is at most ``TARGET`` (or the 1500 asked are made); the fixed rule makes all 1500. The bootstrap's
90 % prediction bounds (no widening) at the rule's probes (the fit's runs and its largest run with 10x its compute)
and at 100x compute are compared with the whole pool's. Printed per fit and rule: the replicates made (median, max),
the bounds' error against the pool (90th percentile over seeds of the largest over the points), and how many seeds
missed 2 x TARGET (0.01) anywhere. The table is ``benchmarks/replicate_stopping.md``.

    python benchmarks/replicate_stopping.py [--seeds 30] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import benchcast as bc
from benchcast.data.example import example_path
from benchcast.forecasting.bootstrap import Bootstrap, fit_replicates, resample_counts

SHARED = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream"
DCLM = SHARED / "metrics_dclm_data_mixture.subset.csv"
CACHE = Path("/tmp/benchcast-replicate-pools")
ASKED, ROUND, TARGET = 1500, 250, 0.005
FITS = {  # name: (data, law, benchmark, metric, tpr)
    "example-arc-power_floor": (example_path(), "power_floor", "arc_easy", "acc_norm", None),
    "example-arc-bnsl_monotone": (example_path(), "bnsl_monotone", "arc_easy", "acc_norm", None),
    "example-hellaswag-power_floor": (example_path(), "power_floor", "hellaswag", "acc_norm", None),
    "dclm-arc-power_floor": (DCLM, "power_floor", "arc_easy", "acc_norm", 20),
    "dclm-hellaswag-power_floor": (DCLM, "power_floor", "hellaswag", "acc_norm", 20),
    "c4-arc-power_floor": (SHARED / "metrics_c4_mixture.subset.csv", "power_floor", "arc_easy", "acc_norm", None),
}


def probes(result) -> dict:
    """The fit's runs, its largest run with 10x and 100x its compute (N and D each sqrt of that)."""
    law, points = result.law_object, result.points
    X = {c: points[c].to_numpy(float) for c in law.covariates}
    scales = [c for c in ("flops", "params", "tokens") if c in X]
    top = int(np.argmax(np.prod([X[c] for c in scales], axis=0)))
    for factor in (10.0, 100.0):
        step = factor ** (1 / len(scales))
        X = {c: np.append(x, x[top] * (step if c in scales else 1.0)) for c, x in X.items()}
    return X


def spacing(values: np.ndarray) -> float:
    """The removed rule's estimate: half the distance between the quantiles q -+ sqrt(q (1 - q) / B)."""
    spread = np.sqrt(0.05 * 0.95 / len(values))
    q = np.nanquantile(values, [0.05 - spread, 0.05 + spread, 0.95 - spread, 0.95 + spread], axis=0)
    return float(np.max(np.maximum(q[1] - q[0], q[3] - q[2]) / 2))


def resampled(values: np.ndarray, R: int = 200) -> float:
    """The standard deviation of the bounds over R resamples of the draws (a bootstrap of the bootstrap's draws)."""
    rng = np.random.default_rng(0)
    B = len(values)
    pick = rng.integers(0, B, size=(R, B))
    q = np.stack([np.nanquantile(values[p], [0.05, 0.95], axis=0) for p in pick])
    return float(np.max(q.std(axis=0, ddof=1)))


def sections(values: np.ndarray, K: int = 5) -> float:
    """Bounds of K disjoint sections of the draws: their spread / sqrt(K)."""
    parts = np.array_split(values, K)
    q = np.stack([np.nanquantile(p, [0.05, 0.95], axis=0) for p in parts])
    return float(np.max(q.std(axis=0, ddof=1)) / np.sqrt(K))


RULES = {"spacing": spacing, "resampled": resampled, "sections": sections}


def made_by(rule, draws_of, safety: float = 1.0) -> int:
    """How many replicates a rule makes: rounds until its estimate (times ``safety``) is at most TARGET."""
    made = ROUND
    while made < ASKED:
        noise = rule(draws_of(made)[:, :-1]) * safety  # the rule reads the runs and 10x, not the 100x point
        if noise <= TARGET:
            break
        wanted = made * (noise / TARGET) ** 2
        made = int(min(ASKED, max(made + ROUND, ROUND * np.ceil(wanted / ROUND))))
    return made


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    variants = [("fixed", None, 1.0)] + [(n, r, s) for n, r in RULES.items() for s in (1.0, 1.5)]
    print("| fit | rule | replicates made: median / max | bound error, 90th pct over seeds | seeds over 0.01 |")
    print("|---|---|---|---|---|")
    for name, (path, law, benchmark, metric, tpr) in FITS.items():
        if args.only and name not in args.only:
            continue
        table = bc.load(path)
        result = bc.fit(table, law=law, benchmark=benchmark, metric=metric, tpr=tpr)
        size = ASKED * args.seeds
        cache = CACHE / f"{name}-{size}.npz"
        if not cache.exists():
            start = time.perf_counter()
            made = fit_replicates(result, resample_counts(result, 0, range(size)))
            np.savez(cache, *made)
            print(f"<!-- {name}: {size} replicates in {time.perf_counter() - start:.0f} s -->")
        thetas, losses, converged, failed = (np.load(cache)[f"arr_{i}"] for i in range(4))
        X = probes(result)
        pooled = Bootstrap(result, thetas, losses, converged, failed, seed=0).draws("prediction", **X).values
        truth = np.nanquantile(pooled, [0.05, 0.95], axis=0)
        for label, rule, safety in variants:
            counts, errors = [], []
            for s in range(args.seeds):
                block = slice(s * ASKED, (s + 1) * ASKED)
                boot = Bootstrap(result, thetas[block], losses[block], converged[block], failed[block], seed=s)
                values = boot.draws("prediction", **X).values  # replicate order: the first m are the first m made

                def draws_of(m, values=values, boot=boot):
                    return values[: boot.usable[:m].sum()]

                m = ASKED if rule is None else made_by(rule, draws_of, safety)
                bounds = np.nanquantile(draws_of(m), [0.05, 0.95], axis=0)
                counts.append(m)
                errors.append(float(np.max(np.abs(bounds - truth))))
            errors = np.array(errors)
            rule_name = label if safety == 1 else f"{label} x{safety:g}"
            print(
                f"| {name} | {rule_name} | {int(np.median(counts))} / {max(counts)} "
                f"| {np.quantile(errors, 0.9):.4f} | {int((errors > 2 * TARGET).sum())} of {args.seeds} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
