"""pass@k past n never falls below the measured pass@n, nor as k grows (the new-user trial of 2026-12-01: on a
simulated ladder the power law in k gave pass@139 = 0.9613 below the measured pass@100 = 0.9667): every candidate
is anchored to the run's own unbiased pass@n, and its interval is non-decreasing in k too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchcast.generative.passk import pass_at_k
from benchcast.generative.past_n import CANDIDATES, passk_table

N = 100
GRID = [139, 193, 268, 373, 518, 720, 1000, 3000]


def _sim_ladder(seed=3, runs=6, problems=60):
    """A Rasch ladder like the trial's: 6 runs x 60 problems, n = 100, abilities rising with log compute."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, 2.0, problems)
    frames, compute = [], {}
    for i in range(runs):
        p = 1 / (1 + np.exp(-(-4.5 + 1.0 * i - d)))
        frames.append(pd.DataFrame({"run": f"r{i}", "benchmark": "sim", "problem_id": [f"p{j}" for j in
                                    range(problems)], "n": N, "c": rng.binomial(N, p)}))  # fmt: skip
        compute[f"r{i}"] = 1e19 * 4.0**i
    return pd.concat(frames, ignore_index=True), compute


def _near_saturated(counts):
    measured = {run: float(pass_at_k(g["n"], g["c"], [N])[0]) for run, g in counts.groupby("run")}
    return measured, [run for run, v in measured.items() if 0.93 <= v < 1]


def test_the_simulated_ladder_has_a_near_saturated_run():
    counts, _ = _sim_ladder()
    _, near = _near_saturated(counts)
    assert near


@pytest.mark.parametrize("family", CANDIDATES)
def test_every_candidate_past_n_is_at_least_the_measured_pass_at_n_and_non_decreasing(family):
    counts, compute = _sim_ladder()
    measured, near = _near_saturated(counts)
    table = passk_table(counts, [1, 10, N, *GRID], n_boot=20, family=family, compute=compute)
    for run, rows in table.groupby("run"):
        rows = rows.sort_values("k")
        past = rows[rows["k"] > N]
        assert (past["source"] != "refused").all(), past["note"].tolist()
        at_n = rows[rows["k"] == N].iloc[0]
        assert at_n["pass_at_k"] == pytest.approx(measured[run])
        values = past["pass_at_k"].to_numpy(float)
        assert np.all(values >= measured[run] - 1e-12), (run, family, measured[run], values)
        assert np.all(np.diff(values) >= -1e-12), (run, family, values)
        for bound in ("lower", "upper"):
            b = past[bound].to_numpy(float)
            assert np.all((b >= 0) & (b <= 1))
            assert np.all(np.diff(b) >= -1e-12), (run, family, bound, b)
        assert np.all(past["lower"].to_numpy(float) <= values + 1e-12)
        assert np.all(values <= past["upper"].to_numpy(float) + 1e-12)
    assert set(near) <= set(table["run"])


def _evidence(power_errors, joint_errors):
    """The joint-vs-power_k sentence of _choose on origins with these errors."""
    from benchcast.generative.past_n import PassKPastN

    rows = [{"run": f"r{i}", "origin": "n/10", "candidate": name, "error": e}
            for name, errors in (("power_k", power_errors), ("joint", joint_errors))
            for i, e in enumerate(errors)]  # fmt: skip
    judged = pd.DataFrame(rows)
    model = PassKPastN(("power_k", "joint"))
    model.scores_ = judged.groupby("candidate")["error"].agg(mae=lambda e: float(np.abs(e).mean())).reset_index()
    chosen = model._choose(judged, ("power_k", "joint"))
    return chosen, model.evidence_


def test_the_paired_z_sentence_agrees_with_its_sign():
    small, large = [0.006, 0.007, 0.008, 0.007, 0.006], [0.08, 0.09, 0.085, 0.09, 0.087]
    chosen, text = _evidence(small, large)  # the trial's case: power_k far better
    assert chosen == "power_k" and "paired z = -" in text
    assert "power_k's errors smaller by" in text and "not separated" not in text
    chosen, text = _evidence(large, small)
    assert chosen == "joint" and "paired z = +" in text and "the joint model chosen" in text
    chosen, text = _evidence([0.01, 0.03, 0.02, 0.01], [0.02, 0.01, 0.02, 0.02])
    assert chosen == "power_k" and "not separated by 2 standard errors" in text
