"""Rolling origins solved as one batch (``fitting.stages.fit_subsets``) against the loop of cold fits
(``fit_rows`` per origin, as ``forecasting.calibration.rolling_origin`` does), on the DCLM ladder.

For each law, arc_easy acc_norm, min_flops 3e18, TPR 20 (nd_floor separates N from D, so it is
fitted across the ladder's TPRs): the five rolling origins (runs up to the largest fitted run /
10**delta, delta in 0.2 .. 1.0), fitted both ways ``--repeats`` times, the two orders alternated;
prints each way's median wall time, their ratio (loop / batch), the largest relative difference of
the two ways' forecasts of the runs ahead of each origin, and the seconds of the origins' ranked starts
(their screens: the stage a batch does not share, so the ratio's ceiling is loop / starts).

Then whether variable projection already applies to each law: its linear parameters, where the
engine projects them (starts: the screen, the law's grid and refinement starts, by
``engine/projection.py``; never inside the Levenberg-Marquardt iterations), the iterations the
winning solve took, and the loss change when the final point's linear parameters are projected (0:
the solve already ends at their optimum).

    python benchmarks/batched_origins.py [--repeats 5] [--benchmark arc_easy]

Measured on the 2-core machine shared with other work (h31-batch, 2026-11-27), loop / batch, medians:

    arc_easy, 7 repeats, load 5.0-5.1: power 0.96, power_floor 2.10, bnsl_monotone 1.70, nd_floor 1.13, bnsl 1.68
    arc_easy, 7 repeats, load 2.6-4.7: power 0.92, power_floor 2.04, bnsl_monotone 1.28, nd_floor 1.32, bnsl 1.75
    hellaswag, 5 repeats, load 5.6-6.5: power 1.27, power_floor 1.90, bnsl_monotone 1.51, nd_floor 1.08, bnsl 1.77

power is closed form (nothing to batch); nd_floor solves all 81 grid starts per origin, so its rows
are already a large batch; the BNSL laws keep their per-origin screens (0.3-0.6 s of the loop's
1.2-1.6 s for bnsl_monotone). Forecasts of the two ways agree within 6e-11 relative.
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
from benchcast.fitting.api import fit_rows
from benchcast.fitting.engine.problem import Problem
from benchcast.fitting.engine.projection import project_linear
from benchcast.fitting.engine.starts import ranked_starts
from benchcast.fitting.spec import FitSpec, design
from benchcast.fitting.stages import fit_subsets, prepare_fit
from benchcast.laws import Law, get_law, to_target

DATA = "../shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
LAWS = {"power": 20.0, "power_floor": 20.0, "bnsl_monotone": 20.0, "nd_floor": None, "bnsl": 20.0}  # law -> TPR
ORIGINS = (0.2, 0.4, 0.6, 0.8, 1.0)


def _case(table, law, benchmark):
    rows, spec = design(table, FitSpec(law=law, benchmark=benchmark, metric="acc_norm", tpr=LAWS[law], min_flops=3e18))
    flops = rows["flops"].to_numpy(float)
    full = fit_rows(rows, spec, quiet=True)
    top = full.points["flops"].max()
    return rows, spec, flops, [flops <= top / 10**d * (1 + 1e-9) for d in ORIGINS], full


def _loop(rows, spec, flops, masks):
    return [
        fit_rows(rows[m].reset_index(drop=True), replace(spec, max_flops=float(flops[m].max())), quiet=True)
        for m in masks
    ]


def _starts_seconds(rows, spec, masks) -> float:
    """Seconds the origins' ranked starts take (their screens, projected): the stage each origin still
    pays alone in a batch."""
    law = get_law(spec.law)
    start = time.perf_counter()
    for m in masks:
        _, _, _, X, y, _ = prepare_fit(rows[m].reset_index(drop=True), spec)
        if law.loss == "lsq" and law.closed_form(X, y) is not None:
            continue
        problem = Problem(law, X, y, law.loss, law.huber_delta, fixed=law.presolve(X, y))
        ranked_starts(problem, law.search.n_screen, spec.seed)
    return time.perf_counter() - start


def _where(full) -> str:
    """Where the engine projects the law's linear parameters in a fit."""
    law = full.law_object
    if "closed form" in full.diagnostics.message:
        return "- (closed form)"
    if not any(p.linear for p in law.parameters):
        return "never (none linear in its target)"
    places = ["screen"] * bool(law.search.n_screen) + ["refinement starts"] * (
        type(law).refinement_starts is not Law.refinement_starts
    )
    return " + ".join(places) or "never (no screen, no refinement)"


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
    parser.add_argument("--benchmark", default="arc_easy")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    table = bc.load(DATA)
    print(f"load average at start: {os.getloadavg()}")
    header = f"{'law':14s} {'TPR':>4s} {'origins':>7s} {'batch s':>8s} {'loop s':>8s} {'loop/batch':>10s}"
    print(f"{header} {'max rel diff':>12s} {'starts s':>8s}")
    fulls = {}
    for law in LAWS:
        rows, spec, flops, masks, fulls[law] = _case(table, law, args.benchmark)
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
        starts = _starts_seconds(rows, spec, masks)
        print(
            f"{law:14s} {LAWS[law] or 'all':>4} {len(masks):7d} {tb:8.3f} {tl:8.3f} {tl / tb:10.2f} {diff:12.1e} "
            f"{starts:8.3f}"
        )
    print(f"load average at end: {os.getloadavg()}")
    print("\nvariable projection (engine/projection.py runs on starts only, never inside the solve):")
    print(f"{'law':14s} {'linear parameters':18s} {'projected at':34s} {'iterations':>10s} {'loss change':>12s}")
    for law, full in fulls.items():
        linear, iterations, change = _projection(full)
        print(f"{law:14s} {', '.join(linear) or 'none':18s} {_where(full):34s} {iterations:>10s} {change:>12s}")


if __name__ == "__main__":
    main()
