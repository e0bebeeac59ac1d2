"""Bootstrap replicates of the BNSL laws: benchcast's shared-pool batched refits against cold refits.

For each of the reproduction's 12 benchmarks and both BNSL forms (TPR 20, fit 3e18..6e21), the
same resamples (``--replicates``, seeded) are refitted twice:

* ``cold``: the full engine on each resample (its own grid and screen, L-BFGS-B polish,
  trust-region finish), as a fit of that data alone would be made;
* ``pool``: what ``benchcast.bootstrap`` does (``fitting.engine.refit_weighted``): every replicate
  starts from the full data's best screened candidates and the full-data optimum, one batched
  Levenberg-Marquardt settles all of them, each replicate's best is finished by the trust-region
  solve.

Neither search is global on a multimodal law, so the script reports, per benchmark, how often each
one is worse than the other by more than 1e-6 (relative loss), the mean relative loss difference
(pool - cold)/cold, and CPU seconds per replicate of each.

    python benchmarks/bnsl_replicates.py [--law bnsl bnsl_monotone] [--replicates 30] [--out results.json]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import benchcast as bc  # noqa: E402
from benchcast.evaluation.reproduce import BENCHMARKS  # noqa: E402
from benchcast.forecasting.intervals import _cold, _Data, fit_replicates, resample_counts  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
TOLERANCE = 1e-6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--law", nargs="+", default=["bnsl", "bnsl_monotone"])
    parser.add_argument("--benchmarks", nargs="+", default=[b for b, _ in BENCHMARKS])
    parser.add_argument("--replicates", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    table = bc.load(args.data)
    metrics = dict(BENCHMARKS)
    rows = []
    for law in args.law:
        for benchmark in args.benchmarks:
            result = bc.fit(table, law, benchmark, metrics[benchmark], tpr=20, min_flops=3e18, max_flops=6e21)
            counts = resample_counts(result, args.seed, range(args.replicates))
            clock = time.process_time()
            _, pool, pool_ok, _ = fit_replicates(result, counts)
            pool_seconds = (time.process_time() - clock) / len(counts)
            data = _Data.of(result)
            clock = time.process_time()
            cold = np.array([_cold(data, result.spec, row)[1] for row in counts])
            cold_seconds = (time.process_time() - clock) / len(counts)
            both = np.isfinite(pool) & np.isfinite(cold)  # a replicate with too few distinct runs fails both ways
            excess = (pool[both] - cold[both]) / cold[both]
            row = {
                "law": law,
                "benchmark": benchmark,
                "replicates": len(counts),
                "compared": int(both.sum()),
                "pool_worse": int((excess > TOLERANCE).sum()),
                "cold_worse": int((excess < -TOLERANCE).sum()),
                "mean_relative_difference": float(np.mean(excess)),
                "max_pool_excess": float(excess.max()),
                "max_cold_excess": float(-excess.min()),
                "pool_converged": int(pool_ok.sum()),
                "pool_ms": 1000 * pool_seconds,
                "cold_ms": 1000 * cold_seconds,
            }
            rows.append(row)
            print(
                f"{law:14s} {benchmark:16s} pool worse {row['pool_worse']:2d}/{row['compared']} "
                f"(max {row['max_pool_excess']:.1e}), cold worse {row['cold_worse']:2d} "
                f"(max {row['max_cold_excess']:.1e}), mean (pool-cold)/cold {row['mean_relative_difference']:+.2e}, "
                f"converged {row['pool_converged']}/{len(counts)}; {row['pool_ms']:.0f} ms vs {row['cold_ms']:.0f} ms "
                f"per replicate (x{row['cold_ms'] / row['pool_ms']:.1f})",
                flush=True,
            )
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
    for law in args.law:
        mine = [r for r in rows if r["law"] == law]
        print(
            f"{law}: pool worse on {sum(r['pool_worse'] for r in mine)}, cold worse on "
            f"{sum(r['cold_worse'] for r in mine)} of {sum(r['compared'] for r in mine)} replicates; "
            f"mean relative difference {np.mean([r['mean_relative_difference'] for r in mine]):+.2e}; "
            f"median speed-up x{np.median([r['cold_ms'] / r['pool_ms'] for r in mine]):.1f}"
        )


if __name__ == "__main__":
    main()
