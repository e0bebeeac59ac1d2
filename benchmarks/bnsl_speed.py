"""Time benchcast's BNSL fits against the multi-start basin-hopping baseline of Krajewski et al. 2025.

Baseline (the paper's protocol): ``--starts`` uniform random starts in the law's own parameter
box (the same internal space as benchcast: log d1, log f1), each refined by scipy basin-hopping
with ``--hops`` hops of L-BFGS-B, on the same mean Huber loss (delta = 1e-3) of the same points
(TPR 20, 3e18 <= C <= 6e21, the law's point filter). It runs twice from the same starts:

* ``default``: scipy's default L-BFGS-B stopping rules. On a loss of about 1e-5 the relative
  reduction test (which divides by max(|f|, 1)) stops each local solve after a few iterations,
  so this baseline does not converge; it is reported only to show that.
* ``converged``: ftol = 1e-15, gtol = 1e-12 (maxiter 15000), so each local solve converges.
  The headline speed ratio is against this one, and benchcast's loss is compared with the best
  loss it found.

The full protocol (``--starts 100 --hops 100``) took 795-1391 s of chain time per benchmark for
``bnsl`` on DCLM (the first 8 chains at load 2-3, the other 92 two benchmarks at a time at load
2-3.6, on a 2-core machine), and 499-1082 s for ``bnsl_monotone`` (its other 92 chains one to three
benchmarks at a time at load 1-3). Its 100 chains are independent, and the starts and basin-hopping
seeds are drawn in sequence from one generator, so ``--starts S --hops 100`` runs exactly the first
S chains of the full protocol: their time is a measured lower bound on the full protocol's, and the
speed ratio against them a lower bound on the full ratio ("measured"); 100/S times their time
estimates the full protocol (labelled as an estimate). Each chain's best loss is kept, and how many
reach the overall best (``chains_at_best``) says how well S chains cover the landscape (more chains
can only lower the baseline's best loss). Both sides are also judged by what a user sees: each
fit's forecast at the reproduction's held-out runs (TPR 20, C > 6e21), and the largest difference
between them. ``--resume EARLIER.json`` completes an earlier run of
fewer chains with the rest of the protocol's chains (the earlier chains keep their measured times; a
baseline's time is the sum of its chains' times), and ``--baselines converged`` runs only the
converged baseline. BLAS runs single-threaded for both sides (multi-threaded BLAS inside L-BFGS-B is
~10x slower on a busy machine).

    python benchmarks/bnsl_speed.py [--law bnsl bnsl_monotone] [--benchmarks arc_easy:acc_norm ...]
        [--starts 100] [--hops 100] [--repeats 3] [--out results.json] [--reuse results.json]
        [--resume fewer_chains.json] [--baselines default converged]
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
from scipy.optimize import basinhopping  # noqa: E402

import benchcast as bc  # noqa: E402
from benchcast.fitting.engine.problem import Problem  # noqa: E402
from benchcast.fitting.engine.search import minimize_law  # noqa: E402
from benchcast.fitting.spec import FitSpec, design  # noqa: E402
from benchcast.laws import get_law  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
BENCHMARKS = (
    "arc_easy:acc_norm",
    "arc_challenge:acc_norm",
    "sciq:acc_norm",
    "piqa:acc_norm",
    "hellaswag:acc_norm",
    "winogrande:acc",
    "lambada_openai:acc",
    "webqs_1shot:exact_match",
    "triviaqa_1shot:exact_match",
    "gsm8k_cot_llama:exact_match",
    "humaneval-py:pass@1",
    "lbpp:pass@1",
)
CONVERGED = {"ftol": 1e-15, "gtol": 1e-12, "maxiter": 15000}
FULL_STARTS, FULL_HOPS = 100, 100


def held_out(table, law_name: str, benchmark: str, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The reproduction's held-out runs (TPR 20, C > 6e21): compute and observed score."""
    spec = FitSpec(law=law_name, benchmark=benchmark, metric=metric, tpr=20, min_flops=6e21 * (1 + 1e-9))
    rows, _ = design(table, spec)
    return rows["flops"].to_numpy(float), rows["value"].to_numpy(float)


def forecast(law, theta: np.ndarray, flops: np.ndarray) -> list[float]:
    """The law's score at the held-out runs' compute."""
    return [float(v) for v in np.ravel(law.predict_score(np.asarray(theta, float), {"flops": flops}, 0.0))]


def fit_data(table, law_name: str, benchmark: str, metric: str) -> tuple[dict, np.ndarray]:
    """The points a benchcast fit uses: the reproduction's selection and the law's own filter."""
    spec = FitSpec(law=law_name, benchmark=benchmark, metric=metric, tpr=20, min_flops=3e18, max_flops=6e21)
    rows, resolved = design(table, spec)
    law = get_law(law_name)
    keep = law.point_filter(rows["value"].to_numpy(float), resolved.q_rand, resolved.margin or 0.0) == ""
    rows = rows[keep]
    return {"flops": rows["flops"].to_numpy(float)}, rows["value"].to_numpy(float)


def baseline(
    problem: Problem, starts: int, hops: int, seed: int, options: dict | None, done: dict | None = None
) -> dict:
    """Random starts in the box, each refined by basin-hopping with L-BFGS-B local solves.

    ``done``: an earlier run of the first chains of the same protocol (its ``chain_losses`` and
    ``chain_seconds``); those chains are kept with their measured times and the run goes on from
    the next chain (the generator draws the skipped chains' start and seed without solving them)."""
    bounds = list(zip(problem.lower, problem.upper, strict=True))
    rng = np.random.default_rng(seed)
    minimizer = {"method": "L-BFGS-B", "bounds": bounds, **({"options": options} if options else {})}
    # the first S chains of a longer run are exactly the S-chain run
    chain_losses = list(done["chain_losses"][:starts]) if done else []
    chain_seconds = list(done["chain_seconds"][:starts]) if done else []
    if len(chain_losses) != len(chain_seconds):
        raise SystemExit("--resume: a baseline's chain_losses and chain_seconds differ in length")
    n_resumed = len(chain_losses)
    best_u = np.asarray(done["theta_internal"], float) if done and "theta_internal" in done else None
    for _ in chain_losses:  # the same draws, in the same order, as the chains that ran
        rng.uniform(problem.lower, problem.upper)
        rng.integers(2**31)
    for _ in range(starts - len(chain_losses)):
        chain_clock = time.perf_counter()
        x0 = rng.uniform(problem.lower, problem.upper)
        res = basinhopping(
            lambda u: float(problem.objective(u)),
            x0,
            niter=hops,
            seed=int(rng.integers(2**31)),
            minimizer_kwargs=minimizer,
        )
        chain_losses.append(float(res.fun))
        chain_seconds.append(time.perf_counter() - chain_clock)
        if res.fun <= min(chain_losses):
            best_u = np.asarray(res.x, float)
    best = min(chain_losses)
    n_solves = starts * (hops + 1)
    seconds = float(sum(chain_seconds))  # every chain's own measured time
    per_solve = seconds / n_solves
    return {
        "seconds": seconds,
        "loss": best,
        "local_solves": n_solves,
        "seconds_per_solve": per_solve,
        "projected_full_seconds": per_solve * FULL_STARTS * (FULL_HOPS + 1),
        # each chain's own best: how many of the independent chains reach the overall best says how
        # well the sampled starts cover the landscape (more starts can only lower the best)
        "chain_losses": chain_losses,
        "chain_seconds": chain_seconds,
        # chains taken from an earlier run (timed then, possibly at another load)
        "resumed_chains": n_resumed,
        "chains_at_best": int(sum(loss <= best * (1 + 1e-6) for loss in chain_losses)),
        # the best chain's end, internal and natural units (None: only resumed chains, not stored then)
        "theta_internal": None if best_u is None else best_u.tolist(),
        "theta": None if best_u is None else problem.natural(best_u).tolist(),
    }


def ours(law, X, y, repeats: int) -> dict:
    times, optimum = [], None
    for _ in range(repeats):
        clock = time.perf_counter()
        optimum = minimize_law(law, X, y, seed=0)
        times.append(time.perf_counter() - clock)
    return {
        "seconds": float(np.median(times)),
        "loss": optimum.loss,
        "at_bound": optimum.at_bound,
        "theta": optimum.theta.tolist(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--law", nargs="+", default=["bnsl", "bnsl_monotone"])
    parser.add_argument("--benchmarks", nargs="+", default=list(BENCHMARKS), help="benchmark:metric ...")
    parser.add_argument("--starts", type=int, default=FULL_STARTS)
    parser.add_argument("--hops", type=int, default=FULL_HOPS)
    parser.add_argument("--repeats", type=int, default=3, help="benchcast fits timed (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write every result as JSON")
    parser.add_argument("--reuse", type=Path, help="JSON of an earlier run: reuse its baselines with the same settings")
    parser.add_argument(
        "--resume",
        type=Path,
        help="JSON of an earlier run of the same protocol: keep each baseline's chains and run the rest",
    )
    parser.add_argument(
        "--baselines",
        nargs="+",
        default=["default", "converged"],
        choices=["default", "converged"],
        help="baselines to run (one not run is left out of the row)",
    )
    args = parser.parse_args()
    if "converged" not in args.baselines and not args.reuse:
        parser.error("--baselines must include 'converged' (the speed ratio is against it) unless --reuse gives it")
    warnings.simplefilter("ignore")

    table = bc.load(args.data)
    earlier = json.loads(args.reuse.read_text()) if args.reuse else []
    partial = json.loads(args.resume.read_text()) if args.resume else []
    settings = {"starts": args.starts, "hops": args.hops, "seed": args.seed}
    full = (args.starts, args.hops) == (FULL_STARTS, FULL_HOPS)
    results = []
    for law_name in args.law:
        law = get_law(law_name)
        for item in args.benchmarks:
            benchmark, metric = item.split(":")
            X, y = fit_data(table, law_name, benchmark, metric)
            problem = Problem(law, X, y, "huber", law.huber_delta)
            row = {"law": law_name, "benchmark": benchmark, "metric": metric, "points": int(len(y)), **settings}
            # the box the starts are drawn from: a resumed run must draw from the same one
            row["box"] = [problem.lower.tolist(), problem.upper.tolist()]
            reused = next(
                (
                    r
                    for r in earlier
                    if all(r.get(k) == row[k] for k in ("law", "benchmark", "points", "starts", "hops", "seed"))
                ),
                None,
            )
            row["benchcast"] = ours(law, X, y, args.repeats)
            started = next(
                (
                    r
                    for r in partial
                    if all(r.get(k) == row[k] for k in ("law", "benchmark", "points", "hops", "seed"))
                    and r.get("box", row["box"]) == row["box"]
                ),
                None,
            )
            for name, options in (("default", None), ("converged", CONVERGED)):
                if reused and name in reused:
                    row[name] = reused[name]
                elif name in args.baselines:
                    done = started.get(name) if started else None
                    row[name] = baseline(problem, args.starts, args.hops, args.seed, options, done)
            if "converged" not in row:
                raise SystemExit("--baselines must include 'converged': the speed ratio is against it")
            converged = row["converged"]
            default = row.get("default")
            default_text = f"{default['seconds']:7.1f}s loss {default['loss']:.6e}" if default else "not run"
            row["speed_ratio_measured"] = converged["seconds"] / row["benchcast"]["seconds"]
            row["speed_ratio_projected_full"] = converged["projected_full_seconds"] / row["benchcast"]["seconds"]
            row["loss_ratio"] = row["benchcast"]["loss"] / converged["loss"]
            resumed = converged.get("resumed_chains", 0)
            if resumed:
                # chains timed in two runs at different loads: the ratio is also given against the
                # smaller of their sum and all chains timed at the earlier chains' mean
                earlier_estimate = args.starts * float(np.mean(converged["chain_seconds"][:resumed]))
                conservative = min(converged["seconds"], earlier_estimate)
                row["speed_ratio_conservative"] = conservative / row["benchcast"]["seconds"]
            row["benchcast_le_baseline"] = bool(row["benchcast"]["loss"] <= converged["loss"] * (1 + 1e-6))
            # judged by forecasts too: both fits at the held-out runs (TPR 20, C > 6e21)
            test_flops, test_score = held_out(table, law_name, benchmark, metric)
            row["held_out"] = {"flops": test_flops.tolist(), "observed": test_score.tolist()}
            row["benchcast"]["forecast"] = forecast(law, row["benchcast"]["theta"], test_flops)
            if converged.get("theta") is not None:
                converged["forecast"] = forecast(law, converged["theta"], test_flops)
                gap = np.abs(np.subtract(row["benchcast"]["forecast"], converged["forecast"]))
                row["forecast_max_abs_difference"] = float(gap.max()) if gap.size else 0.0
            results.append(row)
            print(
                f"{law_name:14s} {benchmark:16s} n={len(y):2d}  benchcast {row['benchcast']['seconds']:6.2f}s "
                f"loss {row['benchcast']['loss']:.6e} | default {default_text} | "
                f"converged {converged['seconds']:7.1f}s loss {converged['loss']:.6e} "
                f"({converged['seconds_per_solve']:.3f}s/solve) | measured x{row['speed_ratio_measured']:.0f}"
                + (
                    " (the full protocol)"
                    if full
                    else f" (a lower bound), estimated full x{row['speed_ratio_projected_full']:.0f}"
                )
                + (
                    f" [{resumed} chains timed in an earlier run; conservative x{row['speed_ratio_conservative']:.0f}]"
                    if resumed
                    else ""
                )
                + f" | chains at best "
                f"{converged.get('chains_at_best', '?')}/{args.starts}"
                f" | benchcast/baseline loss {row['loss_ratio']:.6f}"
                + (
                    f" | held-out forecasts differ by {row['forecast_max_abs_difference']:.4f} at most"
                    if "forecast_max_abs_difference" in row
                    else ""
                ),
                flush=True,
            )
            if args.out:
                args.out.write_text(json.dumps(results, indent=1))
    for law_name in args.law:
        rows = [r for r in results if r["law"] == law_name]
        measured = np.median([r["speed_ratio_measured"] for r in rows])
        at_or_below = f"{sum(r['benchcast_le_baseline'] for r in rows)}/{len(rows)} at or below the converged"
        slowest = min(r["speed_ratio_measured"] for r in rows)
        if full:
            print(
                f"{law_name}: {at_or_below} baseline's loss (the full protocol, {FULL_STARTS} chains x {FULL_HOPS} "
                f"hops); measured speed ratio (median) x{measured:.0f} (minimum x{slowest:.0f})"
            )
            continue
        print(
            f"{law_name}: {at_or_below} baseline's loss (its {args.starts} chains run, not the full protocol's best); "
            f"measured speed ratio (median) x{measured:.0f} (minimum x{slowest:.0f}) against the first "
            f"{args.starts} chains of {args.hops} hops, a lower bound; estimated for {FULL_STARTS} x {FULL_HOPS} "
            f"(an estimate, not a measurement): x{np.median([r['speed_ratio_projected_full'] for r in rows]):.0f}"
        )


if __name__ == "__main__":
    main()
