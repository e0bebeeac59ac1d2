"""pass@k far past the samples drawn: every candidate of the pass@k-past-n forecaster, and its backtest-in-k
choice (``auto``), against the aggregate power law in k (``power_k``, the simplest alternative).

1. Simulated benchmarks of 128 problems, 8 runs each (difficulty rising along the runs), with heavy tails: a
   log-uniform p down to 1e-6, a never-solvable share, two components, a code-contest shape (three in four
   problems with p below 1e-3), a logit-normal ladder, and a beta. n = 100 and 1000 samples per problem; pass@k
   forecast at 10 n and 100 n against the true 1 - mean((1 - p)^k) of the drawn problems: MAE, bias, 90 %
   coverage, and how many runs were answered.
2. (``--borrow``, replaced by the joint model of study 5.)
3. The DCLM file's humaneval-py, lbpp and mbpp curves (aggregate pass@1..128 per run, no per-problem counts):
   pass@128 from k <= 16 and pass@64 from k <= 8, by the power law in k and by each family's curve fit.

4. The constants of the interval and the choice, on the simulations of 1: the origins' own RMS error per decade
   (``TAU_PRIOR``), the power law's coverage with ``REACH`` times the shrunk error, and how often ``auto`` loses to
   ``power_k`` at each ``FAMILY_MARGIN``.
5. Ladders (issue 53): 20 runs x 160 problems whose difficulty is shared across the runs, each run's p the problem's
   base p times a factor rising with compute (1e-3 .. 1 over three decades of FLOPs); bases log-uniform [1e-6, 0.5],
   the same with 30 % never solvable, code contests (75 % log-uniform [1e-7, 1e-3]) and logit-normal. n = 100 and
   1000; the candidates (``auto`` with the joint model, ``joint``, ``power_k``, ``zi_beta``) at 10 n and
   100 n against the true pass@k: runs answered, MAE, bias, 90 % coverage, and MAE on the runs ``power_k`` answered.

Usage: ``python benchmarks/passk_past_n.py [--reps 3] [--data PATH] [--only 1,3]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import benchcast as bc
from benchcast.errors import DataError
from benchcast.generative.families import FAMILIES
from benchcast.generative.past_n import CANDIDATES, REACH, PassKPastN, _from_x, _power_fit, fit_candidate
from benchcast.generative.success import fit_curve

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
PROBLEMS, RUNS = 128, 8


def _logit_normal(r, m, mu):
    return 1 / (1 + np.exp(-(mu + 3.0 * r.standard_normal(m))))


def _generators():
    """Distributions of p for run i of 8 (difficulty falls with i): name -> draw(rng, size, i)."""
    scale = lambda i: 0.2 + 0.8 * i / (RUNS - 1)  # noqa: E731
    return {
        "log-uniform [1e-6, 0.5]": lambda r, m, i: scale(i) * np.exp(r.uniform(np.log(1e-6), np.log(0.5), m)),
        "30% never + beta(0.5, 3)": lambda r, m, i: np.where(r.random(m) < 0.3, 0.0, scale(i) * r.beta(0.5, 3, m)),
        "0.6 beta(0.2, 20) + 0.4 beta(2, 2)": lambda r, m, i: (
            scale(i) * np.where(r.random(m) < 0.6, r.beta(0.2, 20, m), r.beta(2, 2, m))
        ),
        "code contests: 75% log-uniform [1e-7, 1e-3]": lambda r, m, i: np.where(
            r.random(m) < 0.75, np.exp(r.uniform(np.log(1e-7), np.log(1e-3), m)), scale(i) * r.beta(0.5, 2, m)
        ),
        "logit-normal ladder, mean -9 .. -2": lambda r, m, i: _logit_normal(r, m, -9 + i),
        "beta(0.3, 3)": lambda r, m, i: scale(i) * r.beta(0.3, 3, m),
    }


def _truth(p, ks):
    return 1 - np.mean((1 - p[:, None]) ** np.asarray(ks, float)[None, :], axis=0)


def _simulated_cell(task) -> list[dict]:
    """One simulated benchmark (a distribution, n, a replicate), forecast by ``auto`` and by each candidate."""
    name, n, rep, n_boot = task
    counts, truth, ks = _counts(name, n, rep)
    rows = []
    for how in ("auto", *CANDIDATES):
        model = PassKPastN(how, n_boot=n_boot, seed=rep).fit(counts, name)
        for r in model.predict(ks).itertuples():
            for k in ks if r.source == "refused" else [r.k]:  # a refusal stands for every k asked
                rows.append(
                    {
                        "distribution": name,
                        "n": n,
                        "how": how,
                        "chosen": model.chosen_,
                        "step": int(round(k / n)),
                        "run": r.run,
                        "forecast": r.pass_at_k,
                        "truth": truth[r.run][int(k == ks[1])],
                        "lower": getattr(r, "lower", np.nan),
                        "upper": getattr(r, "upper", np.nan),
                    }
                )
    return rows


def study_simulated(reps: int, n_boot: int = 200, workers: int = 2) -> pd.DataFrame:
    from multiprocessing import Pool

    tasks = [(name, n, rep, n_boot) for name in _generators() for n in (100, 1000) for rep in range(reps)]
    rows = []
    with Pool(workers) as pool:
        for i, cell in enumerate(pool.imap_unordered(_simulated_cell, tasks), 1):
            rows += cell
            print(f"  {i}/{len(tasks)} simulated benchmarks", flush=True, file=sys.stderr)
    return pd.DataFrame(rows)


def summarise(frame: pd.DataFrame, by) -> pd.DataFrame:
    answered = frame["forecast"].notna()
    frame = frame.assign(
        err=frame["forecast"] - frame["truth"],
        covered=(frame["lower"] <= frame["truth"]) & (frame["truth"] <= frame["upper"]),
    )
    out = (
        frame[answered]
        .groupby(by, sort=False)
        .agg(
            answered=("err", "size"),
            mae=("err", lambda e: np.abs(e).mean()),
            bias=("err", "mean"),
            coverage90=("covered", "mean"),
        )
    )
    out["asked"] = frame.groupby(by, sort=False).size()
    return out.reset_index()


def _counts(name, n, rep):
    """Study 1's simulated benchmark (the same draws) and each run's true pass@k at 10 n and 100 n."""
    draw, ks = _generators()[name], np.array([10.0 * n, 100.0 * n])
    rng = np.random.default_rng([rep, n, len(name)])
    frames, truth = [], {}
    for i in range(RUNS):
        p = np.clip(draw(rng, PROBLEMS, i), 0, 1)
        frames.append(pd.DataFrame({"run": f"r{i}", "n": n, "c": rng.binomial(n, p)}))
        truth[f"r{i}"] = _truth(p, ks)
    return pd.concat(frames, ignore_index=True), truth, ks


def _constants_cell(task) -> dict:
    """One simulated benchmark: the origins' RMS, the power law's coverage per multiple of tau, each candidate's
    error at 10 n and 100 n, and the backtest's scores."""
    name, n, rep = task
    counts, truth, ks = _counts(name, n, rep)
    model = PassKPastN("power_k", n_boot=200, seed=rep).fit(counts, name)
    own = model.backtest_["error_x"].to_numpy(float)
    shrunk = model.tau_ / REACH
    covered = {}
    for reach in (1.0, 1.5, 2.0):
        model.tau_ = shrunk * reach
        rows = model.predict(ks)
        rows = rows[rows["source"] != "refused"]
        true = np.array([truth[r.run][int(r.k == ks[1])] for r in rows.itertuples()])
        covered[reach] = list(zip(rows["k"] / n, (rows["lower"] <= true) & (true <= rows["upper"]), strict=True))
    scores = PassKPastN(n_boot=0, seed=rep).fit(counts, name).scores_
    errors = {}
    for candidate in CANDIDATES:
        found = []
        for run, group in counts.groupby("run"):
            try:
                found.append(np.abs(_from_x(fit_candidate(candidate, group["n"], group["c"], ks).x) - truth[run]))
            except DataError:
                continue
        errors[candidate] = np.mean(found, axis=0)
    return {
        "name": name,
        "n": n,
        "rms": float(np.sqrt(np.mean(own[np.isfinite(own)] ** 2))),
        "covered": covered,
        "errors": errors,
        "scores": dict(zip(scores["candidate"], scores["mae"], strict=True)),
    }


def study_constants(reps: int, workers: int = 2) -> list[pd.DataFrame]:
    from multiprocessing import Pool

    tasks = [(name, n, rep) for name in _generators() for n in (100, 1000) for rep in range(reps)]
    with Pool(workers) as pool:
        cells = pool.map(_constants_cell, tasks)
    rms = pd.DataFrame([{"distribution": c["name"], "n": c["n"], "rms": c["rms"]} for c in cells])
    rms = rms.groupby(["distribution", "n"], sort=False)["rms"].mean().rename("origins_rms_per_decade").reset_index()
    coverage = pd.DataFrame(
        [
            {"reach": reach, "step": int(step), "covered": hit}
            for c in cells
            for reach, pairs in c["covered"].items()
            for step, hit in pairs
        ]
    )
    coverage = coverage.groupby(["reach", "step"])["covered"].mean().unstack("step").reset_index()
    margins = []
    for margin in (1.0, 0.8, 0.67, 0.5, 0.4):
        rows = []
        for c in cells:
            families = {k: v for k, v in c["scores"].items() if k != "power_k"}
            best = min(families, key=families.get) if families else "power_k"
            chosen = (
                best if "power_k" in c["scores"] and families[best] < margin * c["scores"]["power_k"] else "power_k"
            )
            rows.append(
                {
                    "distribution": c["name"],
                    "n": c["n"],
                    "auto10": c["errors"][chosen][0],
                    "auto100": c["errors"][chosen][1],
                    "power10": c["errors"]["power_k"][0],
                    "power100": c["errors"]["power_k"][1],
                }
            )
        frame = pd.DataFrame(rows).groupby(["distribution", "n"]).mean()
        worse = int(
            ((frame["auto10"] > frame["power10"] + 1e-12) | (frame["auto100"] > frame["power100"] + 1e-12)).sum()
        )
        margins.append(
            {
                "margin": margin,
                "cells_where_auto_loses": worse,
                "of": len(frame),
                **frame[["auto10", "auto100", "power10", "power100"]].mean().to_dict(),
            }
        )
    return [rms, coverage, pd.DataFrame(margins)]


def _curve_forecast(name, ks, values, target):
    if name == "power_k":
        intercept, slope = _power_fit(np.log(ks), values[None, :])
        return float(_from_x(intercept[0] + slope[0] * np.log(target)))
    return float(fit_curve(ks, values, name).pass_at_k([target])[0])


def study_curves(path: Path) -> pd.DataFrame:
    table = bc.read_apple(path)
    table = table[table["benchmark"].isin(["humaneval-py", "lbpp", "mbpp"]) & (table["metric"] == "pass@k")]
    rows = []
    for (bench, _run), group in table.groupby(["benchmark", "run"]):
        curve = group.set_index(group["k"].astype(int))["value"].astype(float)
        for reach, target in ((16, 128), (8, 64)):
            early = curve[curve.index <= reach]
            true = float(curve.get(target, np.nan))
            if not np.isfinite(true):
                continue
            for name in ("power_k", *FAMILIES):
                try:  # beta_mix has 5 parameters: too many for 4-5 points
                    if not early.any() or early.max() >= 1:
                        raise DataError("nothing solved by the last k")
                    value = _curve_forecast(name, early.index.to_numpy(float), early.to_numpy(), target)
                except DataError:
                    rows.append(
                        {
                            "benchmark": bench,
                            "step": f"{reach}->{target}",
                            "how": name,
                            "forecast": np.nan,
                            "truth": true,
                        }
                    )
                    continue
                rows.append(
                    {"benchmark": bench, "step": f"{reach}->{target}", "how": name, "forecast": value, "truth": true}
                )
    frame = pd.DataFrame(rows).assign(lower=np.nan, upper=np.nan)
    return summarise(frame, ["benchmark", "step", "how"]).drop(columns="coverage90")


LADDER_RUNS, LADDER_PROBLEMS = 20, 160
LADDER_CANDIDATES = ("auto", "joint", "power_k", "zi_beta")  # beta and beta_mix: judged inside auto


def _ladder_bases():
    """Shared base p per problem: name -> draw(rng, problems)."""
    log_uniform = lambda r, m, lo=1e-6, hi=0.5: np.exp(r.uniform(np.log(lo), np.log(hi), m))  # noqa: E731
    return {
        "log-uniform [1e-6, 0.5]": log_uniform,
        "30% never + log-uniform": lambda r, m: np.where(r.random(m) < 0.3, 0.0, log_uniform(r, m)),
        "code contests: 75% log-uniform [1e-7, 1e-3]": lambda r, m: np.where(
            r.random(m) < 0.75, log_uniform(r, m, 1e-7, 1e-3), r.beta(0.5, 2, m)
        ),
        "logit-normal (-6, 3)": lambda r, m: 1 / (1 + np.exp(6 - 3 * r.standard_normal(m))),
    }


def ladder_counts(name, n, rep, runs=LADDER_RUNS, problems=LADDER_PROBLEMS):
    """A simulated ladder: counts (run, problem_id, n, c), each run's compute, and true pass@k at 10 n and 100 n."""
    rng = np.random.default_rng([53, rep, n, len(name)])
    base = _ladder_bases()[name](rng, problems)
    factor = np.geomspace(1e-3, 1.0, runs)
    p = np.clip(base[:, None] * factor[None, :], 0, 1)
    names = [f"r{i:02d}" for i in range(runs)]
    counts = pd.DataFrame(
        {
            "run": np.repeat(names, problems),
            "problem_id": np.tile(np.arange(problems), runs),
            "n": n,
            "c": rng.binomial(n, p).T.ravel(),
        }
    )
    ks = np.array([10.0 * n, 100.0 * n])
    truth = {r: 1 - np.mean((1 - p[:, i, None]) ** ks[None, :], axis=0) for i, r in enumerate(names)}
    return counts, dict(zip(names, np.geomspace(1e19, 1e22, runs), strict=True)), truth, ks


def _ladder_cell(task) -> list[dict]:
    """One simulated ladder forecast by every candidate (families without an interval: each replicate a refit)."""
    name, n, rep, n_boot, candidates = task
    counts, compute, truth, ks = ladder_counts(name, n, rep)
    rows = []
    for how in candidates:
        start = time.perf_counter()
        boot = 0 if how in FAMILIES else n_boot
        model = PassKPastN(how, n_boot=boot, seed=rep, compute=compute).fit(counts, name)
        for r in model.predict(ks).itertuples():
            alone = r.source == "refused" or (how not in ("auto", "joint") and r.source == "joint")
            for k in ks if r.source == "refused" else [r.k]:  # a per-run candidate alone: the ladder's rows left out
                rows.append(
                    {
                        "distribution": name,
                        "n": n,
                        "rep": rep,
                        "how": how,
                        "chosen": model.chosen_,
                        "source": r.source,
                        "step": int(round(k / n)),
                        "run": r.run,
                        "forecast": np.nan if alone else r.pass_at_k,
                        "truth": truth[r.run][int(k == ks[1])],
                        "lower": getattr(r, "lower", np.nan),
                        "upper": getattr(r, "upper", np.nan),
                        "seconds": time.perf_counter() - start,
                    }
                )
    return rows


def study_ladders(reps: int, n_boot: int = 100, workers: int = 2, candidates=LADDER_CANDIDATES) -> pd.DataFrame:
    from multiprocessing import Pool

    tasks = [(name, n, rep, n_boot, candidates) for name in _ladder_bases() for n in (100, 1000) for rep in range(reps)]
    rows = []
    with Pool(workers) as pool:
        for i, cell in enumerate(pool.imap_unordered(_ladder_cell, tasks), 1):
            rows += cell
            print(f"  {i}/{len(tasks)} simulated ladders", flush=True, file=sys.stderr)
    return pd.DataFrame(rows)


def summarise_ladders(frame: pd.DataFrame, by) -> pd.DataFrame:
    """``summarise`` plus the MAE on the runs power_k answered (the same runs for every candidate)."""
    out = summarise(frame, by)
    out.loc[out["how"].isin(list(FAMILIES)), "coverage90"] = np.nan  # forecast without an interval here
    key = [c for c in ("distribution", "n", "rep", "step", "run") if c in frame.columns]
    power = frame[(frame["how"] == "power_k") & frame["forecast"].notna()][key].drop_duplicates()
    common = frame.merge(power.assign(common=True), on=key, how="left")
    common = common[common["common"].fillna(False).astype(bool) & common["forecast"].notna()]
    mae = common.assign(err=(common["forecast"] - common["truth"]).abs()).groupby(by, sort=False)["err"].mean()
    return out.merge(mae.rename("mae_on_power_k_runs").reset_index(), on=by, how="left")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--only", default="1,3,4,5", help="Which studies, comma-separated.")
    parser.add_argument("--save", type=Path, help="Write study 1's rows to this CSV.")
    parser.add_argument("--ladder-candidates", default=",".join(LADDER_CANDIDATES), help="Study 5's candidates.")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    pd.set_option("display.width", 200)
    only = set(args.only.split(","))
    fmt = lambda v: f"{v:.4f}"  # noqa: E731
    if "1" in only:
        start = time.perf_counter()
        frame = study_simulated(args.reps)
        if args.save:
            frame.to_csv(args.save, index=False)
        print(
            f"\n1. simulated benchmarks ({PROBLEMS} problems x {RUNS} runs, {args.reps} reps; "
            f"{time.perf_counter() - start:.0f} s)"
        )
        print(summarise(frame, ["distribution", "n", "step", "how"]).to_string(index=False, float_format=fmt))
        print("\nall simulated benchmarks")
        print(summarise(frame, ["n", "step", "how"]).to_string(index=False, float_format=fmt))
    if "3" in only:
        start = time.perf_counter()
        frame = study_curves(args.data)
        print(f"\n3. DCLM aggregate curves ({time.perf_counter() - start:.0f} s)")
        print(frame.to_string(index=False, float_format=fmt))

    if "5" in only:
        start = time.perf_counter()
        frame = study_ladders(args.reps, candidates=tuple(args.ladder_candidates.split(",")))
        if args.save:
            frame.to_csv(args.save.with_suffix(".ladders.csv"), index=False)
        print(
            f"\n5. simulated ladders ({LADDER_RUNS} runs x {LADDER_PROBLEMS} problems, shared difficulty, "
            f"{args.reps} reps; {time.perf_counter() - start:.0f} s)"
        )
        print(summarise_ladders(frame, ["distribution", "n", "step", "how"]).to_string(index=False, float_format=fmt))
        print("\nall simulated ladders")
        print(summarise_ladders(frame, ["n", "step", "how"]).to_string(index=False, float_format=fmt))
        chosen = frame.drop_duplicates(["distribution", "n", "rep", "how", "chosen"])
        print("\nchosen by auto:", chosen[chosen["how"] == "auto"].groupby("chosen").size().to_dict())
        seconds = frame.groupby(["distribution", "n", "how"])["seconds"].max().groupby("how").median()
        print("median seconds per ladder:", seconds.round(1).to_dict())
    if "4" in only:
        start = time.perf_counter()
        tables = study_constants(args.reps)
        print(f"\n4. the interval's and the choice's constants ({time.perf_counter() - start:.0f} s)")
        for table in tables:
            print(table.to_string(index=False, float_format=fmt))


if __name__ == "__main__":
    main()
