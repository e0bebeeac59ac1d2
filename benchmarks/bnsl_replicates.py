"""Bootstrap replicates of the BNSL laws: benchcast's shared-pool batched refits against cold refits.

For each of the reproduction's 12 benchmarks and both BNSL forms (TPR 20, fit 3e18..6e21), the
same resamples (``--replicates``, seeded) are refitted twice:

* ``cold``: the full engine on each resample (its own grid and screen, its best-ranked starts
  solved together, the law's refinement starts), as a fit of that data alone would be made;
* ``pool``: what ``benchcast.bootstrap`` does (``fitting.engine.replicates.refit_weighted``): every
  replicate starts from the full-data optimum and the best, by its own loss, of the full data's
  ranked candidates, all rows of one batched Levenberg-Marquardt solve. A replicate it leaves
  unconverged is dropped from the intervals and counted.

Neither search is global on a law with several basins, so the script reports, per benchmark, how
many replicates the pool converged, and on those how often each search ends above the other by
more than 1e-6 (relative loss) and the mean relative difference (pool - cold)/cold; and the CPU
time per replicate of ``bootstrap`` against cold refits of all.

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
from benchcast.fitting.engine.replicates import refit_weighted  # noqa: E402
from benchcast.fitting.engine.search import single_threaded_blas  # noqa: E402
from benchcast.forecasting.bootstrap import _cold, _Data, resample_counts  # noqa: E402
from benchcast.studies.krajewski2025 import BENCHMARKS  # noqa: E402

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
            data = _Data.of(result)
            # as bootstrap does: a resample with no more distinct runs than parameters is not fitted
            counts = counts[(counts > 0).sum(axis=1) > data.law.n_params - data.law.n_presolved]
            clock = time.process_time()
            with single_threaded_blas():
                _, pool, pool_ok = refit_weighted(
                    data.law, data.X, data.y, counts, result.theta, loss=result.spec.loss, seed=result.spec.seed
                )
            pool_seconds = time.process_time() - clock
            cold, cold_seconds = np.full(len(counts), np.nan), np.zeros(len(counts))
            for i, row_counts in enumerate(counts):
                clock = time.process_time()
                try:
                    cold[i] = _cold(data, result.spec, row_counts)[1]
                except (bc.BenchcastError, ValueError, np.linalg.LinAlgError):
                    pass  # too few distinct runs: no fit either way
                cold_seconds[i] = time.process_time() - clock
            # the replicates the pool converged (bootstrap drops the others)
            both = pool_ok & np.isfinite(pool) & np.isfinite(cold)
            excess = (pool[both] - cold[both]) / cold[both]
            # what bootstrap spends: the pool's one solve
            bootstrap_ms = 1000 * pool_seconds / len(counts)
            row = {
                "law": law,
                "benchmark": benchmark,
                "replicates": len(counts),
                "pool_converged": int(pool_ok.sum()),
                "compared": int(both.sum()),
                "pool_worse": int((excess > TOLERANCE).sum()),
                "cold_worse": int((excess < -TOLERANCE).sum()),
                "mean_relative_difference": float(np.mean(excess)) if excess.size else float("nan"),
                "max_pool_excess": float(excess.max()) if excess.size else float("nan"),
                "max_cold_excess": float(-excess.min()) if excess.size else float("nan"),
                "bootstrap_ms": bootstrap_ms,
                "cold_ms": 1000 * cold_seconds.mean(),
            }
            print(
                f"{law:14s} {benchmark:16s} pool converged {row['pool_converged']:2d}/{len(counts)}; of those "
                f"{row['compared']}: pool above cold {row['pool_worse']:2d} (max {row['max_pool_excess']:.1e}), "
                f"cold above pool {row['cold_worse']:2d} (max {row['max_cold_excess']:.1e}), mean (pool-cold)/cold "
                f"{row['mean_relative_difference']:+.2e}; {row['bootstrap_ms']:.0f} ms (the pool) vs "
                f"{row['cold_ms']:.0f} ms per replicate (x{row['cold_ms'] / row['bootstrap_ms']:.1f})",
                flush=True,
            )
            rows.append(row)
            if args.out:
                args.out.write_text(json.dumps(rows, indent=1))
    for law in args.law:
        mine = [r for r in rows if r["law"] == law]
        print(
            f"{law}: pool converged on {sum(r['pool_converged'] for r in mine)} of "
            f"{sum(r['replicates'] for r in mine)}; of {sum(r['compared'] for r in mine)} compared, pool above cold "
            f"{sum(r['pool_worse'] for r in mine)}, cold above pool {sum(r['cold_worse'] for r in mine)}; "
            f"mean relative difference {np.nanmean([r['mean_relative_difference'] for r in mine]):+.2e}; "
            f"median speed-up x{np.median([r['cold_ms'] / r['bootstrap_ms'] for r in mine]):.1f}"
        )


if __name__ == "__main__":
    main()
