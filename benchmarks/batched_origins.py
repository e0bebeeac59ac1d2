"""Rolling origins solved as one batch (``fitting.api.fit_subsets``) against the loop of cold fits
(``fit_rows`` per origin, as ``forecasting.calibration.rolling_origin`` does), on the DCLM ladder.

For each law, arc_easy acc_norm, min_flops 3e18, TPR 20 (nd_floor separates N from D, so it is
fitted across the ladder's TPRs): the five rolling origins (runs up to the largest fitted run /
10**delta, delta in 0.2 .. 1.0), fitted both ways ``--repeats`` times, the two orders alternated;
prints each way's median wall time, their ratio (loop / batch) and the largest relative difference of
the two ways' forecasts of the runs ahead of each origin.

Then whether variable projection already applies to each law: its linear parameters, where the
engine projects them (starts: the screen, the law's grid and refinement starts, by
``engine/projection.py``; never inside the Levenberg-Marquardt iterations), the iterations the
winning solve took, and the loss change when the final point's linear parameters are projected (0:
the solve already ends at their optimum).

    python benchmarks/batched_origins.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
import warnings
from dataclasses import replace

import numpy as np

import benchcast as bc
from benchcast.fitting.api import fit_rows, fit_subsets
from benchcast.fitting.engine.problem import Problem
from benchcast.fitting.engine.projection import project_linear
from benchcast.fitting.spec import FitSpec, design
from benchcast.laws import to_target

DATA = "../shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
LAWS = {"power": 20.0, "power_floor": 20.0, "bnsl_monotone": 20.0, "nd_floor": None}  # law -> TPR
ORIGINS = (0.2, 0.4, 0.6, 0.8, 1.0)


def _case(table, law):
    rows, spec = design(table, FitSpec(law=law, benchmark="arc_easy", metric="acc_norm", tpr=LAWS[law], min_flops=3e18))
    flops = rows["flops"].to_numpy(float)
    full = fit_rows(rows, spec, quiet=True)
    top = full.points["flops"].max()
    return rows, spec, flops, [flops <= top / 10**d * (1 + 1e-9) for d in ORIGINS], full


def _loop(rows, spec, flops, masks):
    return [
        fit_rows(rows[m].reset_index(drop=True), replace(spec, max_flops=float(flops[m].max())), quiet=True)
        for m in masks
    ]


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _projection(full):
    """(linear parameters, iterations of the winning solve, loss change when its end is projected)."""
    law = full.law_object
    linear = [p.name for p in law.parameters if p.linear]
    if not linear or "closed form" in full.diagnostics.message:
        return linear, "-", "-"
    points = full.points
    X = {c: points[c].to_numpy(float) for c in set(law.covariates) | set(law.fit_covariates)}
    y = to_target(law.target, points["value"].to_numpy(float), full.spec.q_rand)
    problem = Problem(
        law,
        X,
        y,
        full.spec.loss or law.loss,
        law.huber_delta if full.spec.huber_delta is None else full.spec.huber_delta,
    )
    u = problem.inside(full.fitted.vector)
    before, after = problem.objective(u)[0], problem.objective(project_linear(problem, u))[0]
    iterations = re.search(r"\((\d+) iterations\)", full.diagnostics.message)
    return linear, iterations.group(1) if iterations else "?", f"{(after - before) / before:+.1e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    table = bc.load(DATA)
    print(f"load average at start: {os.getloadavg()}")
    header = f"{'law':14s} {'TPR':>4s} {'origins':>7s} {'batch s':>8s} {'loop s':>8s} {'loop/batch':>10s}"
    print(f"{header} {'max rel diff':>12s}")
    fulls = {}
    for law in LAWS:
        rows, spec, flops, masks, fulls[law] = _case(table, law)
        batch_times, loop_times, diff = [], [], 0.0
        for repeat in range(args.repeats):
            ways = [
                ("batch", lambda rows=rows, spec=spec, masks=masks: fit_subsets(rows, spec, masks)),
                ("loop", lambda rows=rows, spec=spec, flops=flops, masks=masks: _loop(rows, spec, flops, masks)),
            ]
            for name, fn in ways if repeat % 2 == 0 else ways[::-1]:
                seconds, out = _timed(fn)
                (batch_times if name == "batch" else loop_times).append(seconds)
                if name == "batch":
                    batched = out
                else:
                    alone = out
            for m, a, b in zip(masks, batched, alone, strict=True):
                ahead = rows[~m].reset_index(drop=True)
                pa, pb = a.predict_frame(ahead), b.predict_frame(ahead)
                diff = max(diff, float(np.max(np.abs(pa - pb) / np.abs(pb))))
        tb, tl = statistics.median(batch_times), statistics.median(loop_times)
        print(f"{law:14s} {LAWS[law] or 'all':>4} {len(masks):7d} {tb:8.3f} {tl:8.3f} {tl / tb:10.2f} {diff:12.1e}")
    print(f"load average at end: {os.getloadavg()}")
    print("\nvariable projection (linear parameters projected at the starts, never inside the solve):")
    print(f"{'law':14s} {'linear parameters':24s} {'iterations':>10s} {'loss change, end projected':>28s}")
    for law, full in fulls.items():
        linear, iterations, change = _projection(full)
        print(f"{law:14s} {', '.join(linear) or 'none':24s} {iterations:>10s} {change:>28s}")


if __name__ == "__main__":
    main()
