"""Time the batched bootstrap refits alone (issue #51): one law's replicates on the DCLM file, CPU seconds.

Fits ``--law`` to ``--benchmark`` on the DCLM subset, then refits ``--n-boot`` replicates in this process (seed 0, the
forecast's counts) and prints the CPU seconds, the solver's row-iterations and the replicate parameters' largest
relative change against ``--compare`` (an ``--save`` of another tree)::

    PYTHONPATH=SRC python benchmarks/replicate_solve.py --law nd_floor --n-boot 300 --save /tmp/a.npz [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from pathlib import Path

import numpy as np

import benchcast
from benchcast.fitting.engine import replicates, solver
from benchcast.forecasting import bootstrap as boot

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "apple-downstream"
DCLM = DATA / "metrics_dclm_data_mixture.subset.csv"
TARGET = {
    "params": np.array([7e9]),
    "tokens": np.array([4e12]),
    "flops": np.array([6 * 7e9 * 4e12]),
    "k": np.array([1.0]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--law", default="nd_floor")
    parser.add_argument("--benchmark", default="hellaswag")
    parser.add_argument("--metric", default="acc_norm")
    parser.add_argument("--n-boot", type=int, default=300)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--seed", type=int, default=0, help="the replicates' seed")
    parser.add_argument(
        "--gradient-tolerance", type=float, default=None, help="override the solver's (a method change)"
    )
    parser.add_argument(
        "--forecast-tolerance", type=float, default=None, help="override the solver's (a method change)"
    )
    args = parser.parse_args()
    iterations = []
    solve = replicates.solve

    def counted(*a, **k):
        solution = solve(*a, **k)
        iterations.append(solution.iterations)
        return solution

    replicates.solve = counted
    if args.gradient_tolerance is not None:
        solver.GRADIENT_TOLERANCE = args.gradient_tolerance
    if args.forecast_tolerance is not None:
        solver.FORECAST_TOLERANCE = args.forecast_tolerance
    table = benchcast.load(DCLM)
    result = benchcast.fit(table, args.law, args.benchmark, args.metric)
    start, wall = time.process_time(), time.perf_counter()
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    thetas, losses, converged, failed = boot._replicates(result, args.seed, list(range(args.n_boot)))
    if profiler:
        profiler.disable()
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    print(
        f"{args.law} {args.benchmark}: {args.n_boot} replicates {cpu:.2f} CPU s ({wall:.2f} wall), "
        f"{converged.sum()} converged, load {os.getloadavg()[0]:.2f}"
    )
    its = np.concatenate(iterations)
    print(
        f"rows {its.size}, row-iterations {its.sum()}, p50 {np.median(its):.0f}, p99 {np.quantile(its, 0.99):.0f}, "
        f"at the limit {(its >= 1000).sum()}; {1e6 * cpu / its.sum():.1f} CPU us per row-iteration"
    )
    law = benchcast.get_law(args.law)
    with np.errstate(all="ignore"):
        target = law.forward(thetas[converged], TARGET)[:, 0]
    low, high = np.quantile(target, [0.05, 0.95])
    print(f"replicate predictions at 7e9 params, 4e12 tokens (fitted space): 5 % {low:.6f}, 95 % {high:.6f}")
    if args.save:
        np.savez(args.save, thetas=thetas, losses=losses, converged=converged)
    if args.compare:
        other = np.load(args.compare)
        change = np.abs(thetas - other["thetas"]) / np.maximum(np.abs(other["thetas"]), 1e-300)
        change = np.where(np.isnan(thetas) & np.isnan(other["thetas"]), 0.0, change)
        per = change.max(axis=1)
        print(
            f"parameters: largest change {np.nanmax(per):.2e}; replicates > 1e-12: {(per > 1e-12).sum()}, "
            f"> 1e-6: {(per > 1e-6).sum()}, > 1e-3: {(per > 1e-3).sum()}; converged same: "
            f"{(converged == other['converged']).all()}"
        )
        with np.errstate(all="ignore"):
            theirs = law.forward(other["thetas"], TARGET)[:, 0]
            ours = law.forward(thetas, TARGET)[:, 0]
        print(f"replicate predictions at the target: largest change {np.nanmax(np.abs(ours - theirs)):.2e}")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
