"""How many pool starts a bootstrap replicate of a BNSL fit needs: the bounds users see against their
Monte-Carlo spread, and the time.

Each replicate is refitted from the full fit's optimum and the ``n_replicate_starts`` best pool starts by
its own loss (:mod:`benchcast.fitting.engine.replicates`). For each BNSL form and five DCLM benchmarks
(TPR 20, every run; the same fits as ``benchcast fit DATA --law L -b B --tpr 20``) the forecast at 1e23
FLOPs with 1000 replicates is made at seeds 0..S-1 with 2, 1 and 0 pool starts. Printed per benchmark:
the seed-to-seed standard deviation of each bound with 2 starts (the Monte-Carlo spread), the mean and
largest change of each bound at the same seed with fewer starts (in units of that spread), the
unconverged replicates (dropped from the interval) and the mean time of one forecast. Single-threaded
BLAS; the load is printed::

    python benchmarks/replicate_starts.py [--laws bnsl_monotone bnsl] [--seeds 6] [--out results.md]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import benchcast as bc  # noqa: E402
from benchcast import Uncertainty  # noqa: E402
from benchcast.forecasting.answers import forecast  # noqa: E402
from benchcast.forecasting.bootstrap import bootstrap  # noqa: E402
from benchcast.laws import get_law  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
BENCHMARKS = ("arc_easy:acc_norm", "hellaswag:acc_norm", "piqa:acc_norm", "winogrande:acc", "lambada_openai:acc")
BOUNDS = ("prediction lower", "prediction upper", "confidence lower", "confidence upper")
STARTS = (2, 1, 0)
N_BOOT, FLOPS = 1000, 1e23


def measure(law_name: str, table, seeds: int) -> list[str]:
    law = type(get_law(law_name))
    kept = law.search
    lines = [f"### {law_name} (its setting: {kept.n_replicate_starts})", ""]
    lines += [
        "| benchmark | starts | spread (sd, 4 bounds) | mean change / sd | largest change / sd | unconverged | s |"
    ]
    lines += ["|---|---|---|---|---|---|---|"]
    try:
        for item in BENCHMARKS:
            bench, metric = item.split(":")
            fit = bc.fit(table, law_name, bench, metric, tpr=20)
            bounds, times, unconverged = {}, {}, {}
            for starts in STARTS:
                law.search = dataclasses.replace(kept, n_replicate_starts=starts)
                rows, spent = [], []
                for seed in range(seeds):
                    start = time.perf_counter()
                    row = (
                        forecast(
                            fit, flops=FLOPS, n_jobs=1, uncertainty=Uncertainty(n_boot=N_BOOT, seed=seed, levels=0.9)
                        )
                        .to_frame()
                        .iloc[0]
                    )
                    spent.append(time.perf_counter() - start)
                    rows.append([float(row[b]) for b in BOUNDS])
                bounds[starts], times[starts] = np.array(rows), float(np.mean(spent))
                unconverged[starts] = int(
                    (~bootstrap(fit, n_jobs=1, uncertainty=Uncertainty(n_boot=N_BOOT, seed=0)).converged).sum()
                )
            spread = bounds[STARTS[0]].std(axis=0, ddof=1)
            for starts in STARTS:
                change = np.abs(bounds[starts] - bounds[STARTS[0]]) / spread
                lines.append(
                    f"| {bench} | {starts} | {' '.join(f'{s:.5f}' for s in spread)} | "
                    f"{' '.join(f'{c:.2f}' for c in change.mean(axis=0))} | "
                    f"{' '.join(f'{c:.2f}' for c in change.max(axis=0))} | "
                    f"{unconverged[starts]} | {times[starts]:.2f} |"
                )
                print(lines[-1], flush=True)
    finally:
        law.search = kept
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--laws", nargs="*", default=["bnsl_monotone", "bnsl"])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    table = bc.load(args.data)
    lines = [f"load at the start: {os.getloadavg()[0]:.2f}; {N_BOOT} replicates, forecast at {FLOPS:g} FLOPs", ""]
    for name in args.laws:
        lines += measure(name, table, args.seeds)
    lines.append(f"load at the end: {os.getloadavg()[0]:.2f}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
