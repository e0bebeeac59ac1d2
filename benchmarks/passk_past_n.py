"""pass@k far past the samples drawn: error of each success-rate family, and of borrowing across runs.

Three studies (about 3 minutes on one core):

1. Simulated benchmarks with a known distribution of per-problem success p (some in no fitted family):
   n samples per problem (100, 1000), pass@k forecast at 10 n and 100 n by each family and by ``auto``
   (least AIC), against the true 1 - mean((1 - p)^k) of the drawn problems.
2. A simulated ladder of checkpoints whose distribution moves with log compute, n = 100: how many runs get
   a pass@10^4 forecast alone and with borrowing across runs, and the error of each.
3. The DCLM file's humaneval-py and lbpp curves (pass@1..128 per run, no per-problem counts): pass@64 and
   pass@128 forecast from pass@1..16 by :func:`fit_curve`.

Usage: ``python benchmarks/passk_past_n.py [--reps 5] [--data PATH]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import benchcast as bc
from benchcast.errors import DataError
from benchcast.generative.borrowing import borrow_across_runs
from benchcast.generative.families import FAMILIES
from benchcast.generative.success import SuccessModel, fit_curve

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
PROBLEMS = 200


def _generators():
    """Distributions of p: name -> draw(rng, size)."""
    return {
        "beta(0.3, 3)": lambda r, m: r.beta(0.3, 3, m),
        "30% never + beta(0.5, 3)": lambda r, m: np.where(r.random(m) < 0.3, 0.0, r.beta(0.5, 3, m)),
        "log-uniform [1e-6, 0.5]": lambda r, m: np.exp(r.uniform(np.log(1e-6), np.log(0.5), m)),
        "kumaraswamy(0.3, 2)": lambda r, m: (1 - (1 - r.random(m)) ** (1 / 2)) ** (1 / 0.3),
        "beta mix 0.6 beta(0.2, 20) + 0.4 beta(2, 2)": lambda r, m: np.where(
            r.random(m) < 0.6, r.beta(0.2, 20, m), r.beta(2, 2, m)
        ),
    }


def _truth(p, ks):
    return 1 - np.mean((1 - p[:, None]) ** np.asarray(ks, float)[None, :], axis=0)


def study_families(reps: int) -> pd.DataFrame:
    rows = []
    for name, draw in _generators().items():
        for n in (100, 1000):
            ks = np.array([10 * n, 100 * n])
            for rep in range(reps):
                rng = np.random.default_rng([rep, n])
                p = draw(rng, PROBLEMS)
                c = rng.binomial(n, p)
                true = _truth(p, ks)
                try:
                    model = SuccessModel().fit(np.full(PROBLEMS, n), c)
                except DataError:
                    rows.append({"distribution": name, "n": n, "family": "none", "rep": rep})
                    continue
                for fam, fit in [*model.fits_.items(), ("auto", model.chosen_)]:
                    err = fit.pass_at_k(ks) - true
                    rows.append(
                        {"distribution": name, "n": n, "family": fam, "rep": rep, "err10": err[0], "err100": err[1]}
                    )
    frame = pd.DataFrame(rows)
    out = frame.groupby(["distribution", "n", "family"], sort=False).agg(
        mae_10x=("err10", lambda e: np.abs(e).mean()),
        bias_10x=("err10", "mean"),
        mae_100x=("err100", lambda e: np.abs(e).mean()),
        bias_100x=("err100", "mean"),
    )
    return out.reset_index()


def study_borrowing(reps: int) -> pd.DataFrame:
    rows = []
    for rep in range(reps):
        rng = np.random.default_rng([7, rep])
        counts, flops, truth = [], {}, {}
        for i, log_c in enumerate(np.linspace(19, 23, 8)):
            mean = 1 / (1 + np.exp(-(-8.5 + 1.3 * (log_c - 19))))
            never = 0.5 - 0.08 * (log_c - 19)  # the never-solved share falls with compute
            p = np.where(rng.random(PROBLEMS) < never, 0.0, rng.beta(mean * 1.5, (1 - mean) * 1.5, PROBLEMS))
            run = f"r{i}"
            c = rng.binomial(100, p)
            counts.append(pd.DataFrame({"run": run, "problem_id": np.arange(PROBLEMS), "n": 100, "c": c}))
            flops[run], truth[run] = 10**log_c, float(_truth(p, [1e4])[0])
        counts = pd.concat(counts, ignore_index=True)
        for run, group in counts.groupby("run"):
            try:
                alone = float(SuccessModel().fit(group["n"], group["c"]).pass_at_k([1e4])[0])
            except DataError:
                alone = np.nan
            rows.append({"rep": rep, "run": run, "how": "alone", "forecast": alone, "truth": truth[run]})
        joint = borrow_across_runs(counts, flops, [1e4]).table
        for r in joint.itertuples():
            how = "borrowed" if r.borrowed else "joint"
            rows.append({"rep": rep, "run": r.run, "how": how, "forecast": r.pass_at_k, "truth": truth[r.run]})
    frame = pd.DataFrame(rows)
    frame["abs_err"] = (frame["forecast"] - frame["truth"]).abs()
    summary = frame.groupby("how").agg(
        runs=("run", "size"), forecast=("forecast", lambda v: int(v.notna().sum())), mae=("abs_err", "mean")
    )
    return summary.reset_index()


def study_curves(path: Path) -> pd.DataFrame:
    table = bc.read_apple(path)
    table = table[table["benchmark"].isin(["humaneval-py", "lbpp"]) & (table["metric"] == "pass@k")]
    rows = []
    for (bench, run), group in table.groupby(["benchmark", "run"]):
        curve = group.set_index(group["k"].astype(int))["value"].astype(float)
        early = curve[curve.index <= 16]
        if not early.any() or early.max() >= 1:
            rows.append({"benchmark": bench, "run": run, "family": "none"})
            continue
        for fam in FAMILIES:
            try:  # beta_mix has 5 parameters: pass@1..16 gives 5 points, too few
                forecast = fit_curve(early.index.to_numpy(), early.to_numpy(), fam).pass_at_k([64, 128])
            except DataError:
                continue
            for k, value in zip((64, 128), forecast, strict=True):
                true = float(curve.get(k, np.nan))
                rows.append({"benchmark": bench, "run": run, "family": fam, "k": k, "err": value - true,
                             "rel": (value - true) / true if true > 0 else np.nan})  # fmt: skip
    frame = pd.DataFrame(rows)
    skipped = frame[frame["family"] == "none"].groupby("benchmark").size().rename("runs_nothing_solved_by_16")
    frame = frame[frame["family"] != "none"]
    out = frame.groupby(["benchmark", "family", "k"]).agg(
        runs=("err", "size"),
        mae=("err", lambda e: np.abs(e).mean()),
        bias=("err", "mean"),
        mre_pct=("rel", lambda r: 100 * np.abs(r).mean()),
    )
    return out.reset_index().merge(skipped.reset_index(), on="benchmark", how="left")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    pd.set_option("display.width", 160)
    for title, study in (
        ("1. families past n (simulated, 200 problems)", lambda: study_families(args.reps)),
        ("2. borrowing across 8 checkpoints (simulated, n = 100, pass@1e4)", lambda: study_borrowing(args.reps)),
        ("3. DCLM curves: pass@64, pass@128 from pass@1..16", lambda: study_curves(args.data)),
    ):
        start = time.perf_counter()
        frame = study()
        print(f"\n{title}  ({time.perf_counter() - start:.0f} s)")
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


if __name__ == "__main__":
    main()
