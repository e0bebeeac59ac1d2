"""Adaptive vs uniform sampling at equal budget: the beta-binomial forecast of pass@10^4.

Simulated ladders: for each generating distribution of per-problem success rates p, five rungs
(the p of every problem scaled so that the ladder's mean p spans two decades, as a ladder of
checkpoints would), 128 problems per rung, many replicates. Each replicate draws the problems'
p, then their counts twice with the same total budget: uniform (budget / problems samples each)
and adaptive (``benchcast.collect.budget``: a quarter of the even share first, then four rounds
given to the problems with no success yet). The beta family (``fit_family("beta", ...)``) is fitted to each
and forecasts pass@10^4; the truth is the mean over the rung's problems of 1 - (1 - p)^k.

    python benchmarks/adaptive_sampling.py [--reps 30] [--problems 128]

Prints per distribution and budget per problem: mean absolute error and bias of the forecast at
k = 10^4 (uniform, adaptive; over the rungs where both have a forecast), their ratio, and the rungs
without a forecast (no success drawn).
Also the bias at k = 1 of the per-problem unbiased estimator when it pools all of a problem's
adaptive samples (the number of samples depends on the first round's outcome, so it is not
unbiased any more), beside the same estimator on the first round alone.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchcast.collect.budget import default_first_round, simulate
from benchcast.errors import DataError
from benchcast.generative.success import fit_family

K = 10_000
RUNG_SCALES = np.geomspace(0.1, 10.0, 5)  # the mean p of a rung relative to the family's own


def _kumaraswamy(rng, a, b, size):
    return (1 - (1 - rng.uniform(size=size)) ** (1 / b)) ** (1 / a)


FAMILIES = {
    "beta(0.3, 3)": lambda rng, m: rng.beta(0.3, 3.0, m),
    "beta(0.1, 2) (heavy near 0)": lambda rng, m: rng.beta(0.1, 2.0, m),
    "40% never + beta(0.5, 2)": lambda rng, m: np.where(rng.uniform(size=m) < 0.4, 0.0, rng.beta(0.5, 2.0, m)),
    "log-uniform [1e-6, 0.3]": lambda rng, m: np.exp(rng.uniform(np.log(1e-6), np.log(0.3), m)),
    "kumaraswamy(0.2, 1.5)": lambda rng, m: _kumaraswamy(rng, 0.2, 1.5, m),
    "beta(0.2, 200) (very hard)": lambda rng, m: rng.beta(0.2, 200.0, m),
}


def _forecast(n, c) -> float:
    try:
        return float(fit_family("beta", n, c).pass_at_k([K])[0])
    except DataError:  # no problem solved: no forecast (counted, not scored)
        return np.nan


def _rung_p(rng, family, scale, m):
    p = FAMILIES[family](rng, m)
    return np.clip(p * scale, 0.0, 1.0)


def run(
    reps: int, problems: int, budgets: list[int], seed: int = 0, first_share: float | None = None, target: int = 1
) -> list[dict]:
    rows = []
    for family in FAMILIES:
        for per_problem in budgets:
            budget = per_problem * problems
            first = (
                default_first_round(budget, problems) if first_share is None else max(1, int(per_problem * first_share))
            )
            err = {"uniform": [], "adaptive": []}
            missing = {"uniform": 0, "adaptive": 0}
            pooled_bias, first_bias = [], []
            for rep in range(reps):
                rng = np.random.default_rng([seed, rep, per_problem, list(FAMILIES).index(family)])
                for scale in RUNG_SCALES:
                    p = _rung_p(rng, family, scale, problems)
                    truth = float(np.mean(-np.expm1(K * np.log1p(-np.minimum(p, 1 - 1e-15)))))
                    n_u = np.full(problems, per_problem)
                    c_u = rng.binomial(n_u, p)
                    n_a, c_a = simulate(p, budget, first_round=first, target=target, rng=rng)
                    values = {"uniform": _forecast(n_u, c_u), "adaptive": _forecast(n_a, c_a)}
                    for name, value in values.items():
                        missing[name] += int(np.isnan(value))
                    if not np.isnan(list(values.values())).any():  # errors compared on the same cases
                        for name, value in values.items():
                            err[name].append(value - truth)
                    pooled_bias.append(np.mean(c_a / n_a) - p.mean())
            # the first round alone, drawn afresh with the same n: its pass@1 estimate is unbiased
            for rep in range(reps):
                rng = np.random.default_rng([seed, rep, per_problem, 99])
                for scale in RUNG_SCALES:
                    p = _rung_p(rng, family, scale, problems)
                    first_bias.append(np.mean(rng.binomial(first, p) / first) - p.mean())
            u, a = np.asarray(err["uniform"]), np.asarray(err["adaptive"])
            rows.append(
                {
                    "family": family,
                    "per_problem": per_problem,
                    "first_round": first,
                    "mae_uniform": np.abs(u).mean(),
                    "bias_uniform": u.mean(),
                    "mae_adaptive": np.abs(a).mean(),
                    "bias_adaptive": a.mean(),
                    "ratio": np.abs(a).mean() / np.abs(u).mean(),
                    "none_uniform": missing["uniform"],
                    "none_adaptive": missing["adaptive"],
                    "cases": reps * len(RUNG_SCALES),
                    "pass1_bias_pooled": float(np.mean(pooled_bias)),
                    "pass1_bias_first": float(np.mean(first_bias)),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--problems", type=int, default=128)
    parser.add_argument("--budgets", default="100,1000", help="samples per problem, comma-separated")
    parser.add_argument("--first-share", type=float, default=None, help="first round / even share (default 1/4)")
    parser.add_argument("--target", type=int, default=1, help="successes that end a problem's adaptive rounds")
    parser.add_argument("--families", default=None, help="comma-separated indices into the families (default: all)")
    args = parser.parse_args()
    if args.families:
        keep = [list(FAMILIES)[int(i)] for i in args.families.split(",")]
        for name in list(FAMILIES):
            if name not in keep:
                del FAMILIES[name]
    start = time.perf_counter()
    budgets = [int(b) for b in args.budgets.split(",")]
    rows = run(args.reps, args.problems, budgets, first_share=args.first_share, target=args.target)
    print(f"pass@{K} forecast by the beta family, {args.problems} problems per rung, 5 rungs x {args.reps} replicates")
    print(f"adaptive: first round {args.first_share or 0.25:g} of the even share, then 4 rounds to c < {args.target}")
    header = (
        f"{'generating distribution':30s} {'n/prob':>6s} {'first':>5s} {'MAE unif':>9s} {'bias unif':>9s} "
        f"{'MAE adapt':>9s} {'bias adapt':>10s} {'ratio':>6s} {'no fcst u/a':>11s} {'p@1 bias pooled/first':>22s}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['family']:30s} {r['per_problem']:6d} {r['first_round']:5d} {r['mae_uniform']:9.4f} "
            f"{r['bias_uniform']:+9.4f} {r['mae_adaptive']:9.4f} {r['bias_adaptive']:+10.4f} {r['ratio']:6.2f} "
            f"{r['none_uniform']:>5d}/{r['none_adaptive']:<5d} "
            f"{r['pass1_bias_pooled']:+11.5f}/{r['pass1_bias_first']:+.5f}"
        )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
