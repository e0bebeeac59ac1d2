"""Does an evaluation-noise floor, estimated from each run's last checkpoints, improve the interval? (issue #40)

On Pythia (27 checkpoints per size in ../shared): per benchmark, the noise of one evaluation is the scatter of
each run's last K checkpoints about a straight line in log step (their trend removed: the learning rate still
decays there), pooled over the runs. Consecutive checkpoints are correlated, so the evidence is counted by
their effective number, n_eff = n (1 - rho) / (1 + rho) with rho their lag-1 autocorrelation.

The default forecaster is fitted to the final checkpoints of the smaller models and forecasts the larger ones'
(two protocols: fit <= 1.4B forecast 2.8B/6.9B/12B; fit <= 2.8B forecast 6.9B/12B). Its predictive distribution,
read from 19 central intervals (5 %..95 %), is scored as it is and convolved with N(0, sigma_noise^2) (the floor:
a measured score carries the evaluation's noise) by the weighted interval score (WIS, lower is better), 90 %
coverage and width. The floor is kept only if it improves the score.

    python benchmarks/noise_floor.py            # writes benchmarks/noise_floor.md
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

import benchcast as bc
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.targets import planned_runs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHIA = ROOT.parent / "shared" / "data" / "pythia" / "zero-shot"
META = ROOT / "examples" / "pythia" / "checkpoints.yaml"
TASKS = [
    ("arc_easy", "acc_norm"),
    ("arc_challenge", "acc_norm"),
    ("sciq", "acc_norm"),
    ("piqa", "acc_norm"),
    ("winogrande", "acc"),
    ("lambada_openai", "acc"),
    ("logiqa", "acc_norm"),
    ("wsc", "acc"),
]
LAST = 5  # checkpoints per run behind the noise estimate (steps 103000 .. 143000)
LEVELS = tuple(np.round(np.arange(0.1, 1.0, 0.1), 2)) + (0.95,)
PROTOCOLS = {"fit <= 1.4B": 1.5e9, "fit <= 2.8B": 3e9}
N_BOOT, SEED, N_MC = 200, 0, 20000


def noise(table: pd.DataFrame, benchmark: str, metric: str) -> dict:
    """sigma of one evaluation from each run's last checkpoints about their trend in log step, pooled; n_eff."""
    rows = table[(table["benchmark"] == benchmark) & (table["metric"] == metric)]
    residuals, lag = [], []
    for _, run in rows.groupby("series"):
        run = run.sort_values("step").tail(LAST)
        x, y = np.log(run["step"].to_numpy(float)), run["value"].to_numpy(float)
        r = y - np.polyval(np.polyfit(x, y, 1), x)
        residuals.append(r)
        lag += list(zip(r[:-1], r[1:], strict=True))
    dof = sum(len(r) - 2 for r in residuals)
    sigma = float(np.sqrt(sum(np.sum(r**2) for r in residuals) / dof))
    a, b = np.array(lag).T
    rho = float(np.clip(np.sum(a * b) / np.sum(np.concatenate(residuals) ** 2), -0.99, 0.99))
    n = sum(len(r) for r in residuals)
    final = rows[rows["final"].astype(bool)]
    # detrending five points makes their residuals anticorrelated: rho < 0 is no extra evidence (n_eff <= n)
    return {
        "sigma": sigma,
        "rho": rho,
        "n": n,
        "n_eff": n * (1 - max(rho, 0)) / (1 + max(rho, 0)),
        "stderr": float(final["stderr"].median()),
    }


def quantiles(forecast, i: int) -> tuple[np.ndarray, np.ndarray]:
    """The predictive distribution of point i as (probabilities, quantiles) read from its central intervals."""
    probs, values = [0.5], [float(forecast.prediction[i])]
    for level in LEVELS:
        lower, upper = forecast.interval(level)
        probs += [(1 - level) / 2, (1 + level) / 2]
        values += [float(lower[i]), float(upper[i])]
    order = np.argsort(probs)
    return np.array(probs)[order], np.maximum.accumulate(np.array(values)[order])


def convolved(probs, values, sigma, rng) -> np.ndarray:
    """The quantiles at ``probs`` of the distribution plus N(0, sigma^2), from draws: the quantile function is read
    linearly in the normal score between the intervals' ends and extrapolated past them (clipped to [0, 1])."""
    z = norm.ppf(probs)
    draws_z = rng.standard_normal(N_MC)
    inside = np.interp(draws_z, z, values)
    slope_lo, slope_hi = (values[1] - values[0]) / (z[1] - z[0]), (values[-1] - values[-2]) / (z[-1] - z[-2])
    draws = np.where(draws_z < z[0], values[0] + slope_lo * (draws_z - z[0]), inside)
    draws = np.where(draws_z > z[-1], values[-1] + slope_hi * (draws_z - z[-1]), draws)
    return np.quantile(np.clip(draws + rng.normal(0, sigma, N_MC) if sigma else draws, 0, 1), probs)


def wis(probs, values, truth) -> float:
    """Weighted interval score of the central intervals (and the median) a quantile set holds."""
    median = float(np.interp(0.5, probs, values))
    total = 0.5 * abs(truth - median)
    k = len(probs) // 2
    for j in range(k):
        alpha = 2 * probs[j]
        lower, upper = values[j], values[-1 - j]
        score = (upper - lower) + 2 / alpha * max(lower - truth, 0) + 2 / alpha * max(truth - upper, 0)
        total += alpha / 2 * score
    return total / (k + 0.5)


def main() -> None:
    start, load = time.perf_counter(), os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = bc.load(PYTHIA, metadata=META, checkpoints="all")
    finals = table[table["final"].astype(bool)].assign(run=lambda t: t["series"])
    rng = np.random.default_rng(SEED)
    noise_rows, rows, skipped = [], [], []
    for benchmark, metric in TASKS:
        est = noise(table, benchmark, metric)
        noise_rows.append({"benchmark": f"{benchmark}:{metric}", **est})
        for protocol, largest in PROTOCOLS.items():
            fitted = finals[finals["params"] <= largest]
            held = finals[(finals["params"] > largest) & (finals["benchmark"] == benchmark)]
            held = held[held["metric"] == metric].sort_values("params")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ens = Ensemble().fit(fitted, FitSpec("power", benchmark, metric, seed=SEED), progress=False)
                if not ens.ok:
                    skipped.append(f"{protocol}, {benchmark}:{metric}: {ens.choice_.reason}")
                    continue
                runs = planned_runs(params=held["params"].to_numpy(), tokens=held["tokens"].to_numpy())
                forecast = ens.predict(runs, Uncertainty(N_BOOT, SEED, levels=LEVELS))
            for i, truth in enumerate(held["value"].to_numpy(float)):
                if not forecast.intervals:
                    continue
                probs, values = quantiles(forecast, i)
                # both variants read the same draws (common random numbers); they differ only by the noise
                state = rng.bit_generator.state
                plain = convolved(probs, values, 0.0, rng)
                rng.bit_generator.state = state
                floored = convolved(probs, values, est["sigma"], rng)
                for name, q in (("without", plain), ("with floor", floored)):
                    lo, hi = np.interp([0.05, 0.95], probs, q)
                    rows.append(
                        {
                            "protocol": protocol,
                            "benchmark": benchmark,
                            "run": held["run"].iloc[i],
                            "variant": name,
                            "wis": wis(probs, q, truth),
                            "covered90": lo <= truth <= hi,
                            "width90": hi - lo,
                        }
                    )
    scores = pd.DataFrame(rows)
    by = scores.groupby(["protocol", "variant"]).agg(
        wis=("wis", "mean"), coverage90=("covered90", "mean"), width90=("width90", "mean"), points=("wis", "size")
    )
    per = scores.pivot_table(index=["protocol", "benchmark"], columns="variant", values="wis").round(6)
    better = (per["with floor"] < per["without"]).groupby(level=0).sum()
    noise_table = pd.DataFrame(noise_rows).round(4)
    verdict = by["wis"].unstack("variant")
    improves = bool((verdict["with floor"] < verdict["without"]).all())
    text = [
        "# The evaluation-noise floor, measured on Pythia",
        "",
        f"`python benchmarks/noise_floor.py`: {time.perf_counter() - start:.0f} s at 1-minute load {load:.1f}"
        " (2 cores);",
        f"default forecaster, {N_BOOT} replicates per law, seed {SEED}; noise from each run's last {LAST} checkpoints.",
        "",
        "## The noise of one evaluation (sigma) beside the binomial stderr lm-eval states",
        "",
        markdown(noise_table.set_index("benchmark")),
        "",
        "## The interval with and without the floor (mean over held-out final checkpoints)",
        "",
        markdown(by.round(6)),
        "",
        "Benchmarks where the floor lowers the WIS, per protocol: "
        + ", ".join(f"{k}: {int(better[k])} of {int(n)}" for k, n in per.groupby(level=0).size().items())
        + ".",
        "",
        markdown(per),
        "",
        "Not forecast (no law has support on the fitted runs):",
        "",
        *(f"- {line}" for line in skipped),
        "",
        f"**Decision:** {'keep' if improves else 'do not keep'} the floor "
        + ("(it lowers the WIS in every protocol)." if improves else "(it does not lower the WIS in every protocol)."),
        "",
    ]
    (HERE / "noise_floor.md").write_text("\n".join(text))
    print("\n".join(text))


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a Markdown table (index first)."""
    frame = frame.reset_index()
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    body = [
        "| " + " | ".join("" if pd.isna(v) else f"{v:g}" if isinstance(v, float) else str(v) for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, "|" + "---|" * len(frame.columns), *body])


if __name__ == "__main__":
    main()
