"""Time one BNSL fit of benchcast against the plain baseline of Krajewski et al. 2025.

Baseline: 100 random starts in the same parameter box, each refined by scipy basin-hopping
(100 hops of L-BFGS-B) on the same Huber loss (delta = 1e-3), on the same data: the arc_easy
acc_norm TPR-20 runs with 3e18 <= C <= 6e21 and Q > Q_rand. Reports wall times, the speed ratio
and both losses.

    python benchmarks/bnsl_speed.py [--data FILE] [--benchmark arc_easy] [--starts 100] [--hops 100]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import basinhopping

import benchcast as bc
from benchcast.fitting.engine import Problem, minimize_law
from benchcast.fitting.spec import FitSpec, design
from benchcast.laws import get_law

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--benchmark", default="arc_easy")
    parser.add_argument("--metric", default="acc_norm")
    parser.add_argument("--starts", type=int, default=100)
    parser.add_argument("--hops", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="benchcast fits timed (median reported)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    table = bc.load(args.data)
    spec = FitSpec(law="bnsl", benchmark=args.benchmark, metric=args.metric, tpr=20, min_flops=3e18, max_flops=6e21)
    rows, resolved = design(table, spec)
    rows = rows[rows["value"] > resolved.q_rand]
    law = get_law("bnsl")
    X, y = {"flops": rows["flops"].to_numpy(float)}, rows["value"].to_numpy(float)

    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        ours = minimize_law(law, X, y, seed=0)
        times.append(time.perf_counter() - start)
    ours_time = float(np.median(times))

    # Baseline in the same internal parameterisation and box; scipy's own numerical gradient.
    problem = Problem(law, X, y, "huber", 1e-3)
    bounds = list(zip(problem.lower, problem.upper, strict=True))
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    best = np.inf
    for i in range(args.starts):
        x0 = np.array([rng.uniform(lo, hi) for lo, hi in bounds])
        res = basinhopping(
            lambda u: float(problem.objective(u)),
            x0,
            niter=args.hops,
            seed=int(rng.integers(2**31)),
            minimizer_kwargs={"method": "L-BFGS-B", "bounds": bounds},
        )
        best = min(best, float(res.fun))
        print(f"  baseline start {i + 1}/{args.starts}: best loss so far {best:.6e}", flush=True)
    base_time = time.perf_counter() - start
    report = {
        "benchmark": args.benchmark,
        "points": int(len(y)),
        "benchcast_seconds": ours_time,
        "benchcast_loss": ours.loss,
        "baseline_seconds": base_time,
        "baseline_loss": best,
        "baseline": f"{args.starts} starts x basinhopping({args.hops} hops, L-BFGS-B)",
        "speed_ratio": base_time / ours_time,
        "benchcast_loss_le_baseline": bool(ours.loss <= best * (1 + 1e-9)),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
