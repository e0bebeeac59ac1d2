"""pass@k past n never falls below the measured pass@n, nor as k grows (the new-user trial of 2026-12-01: on a
simulated ladder the power law in k gave pass@139 = 0.9613 below the measured pass@100 = 0.9667): every candidate
is anchored to the run's own unbiased pass@n, and its interval is non-decreasing in k too."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchcast import Uncertainty
from benchcast.generative.passk import pass_at_k
from benchcast.generative.past_n import CANDIDATES, passk_table
from benchcast.generative.xscale import anchor, from_x, to_x

N = 100
GRID = [139, 193, 268, 373, 518, 720, 1000, 3000]


def _sim_ladder(seed=3, runs=6, problems=60):
    """A Rasch ladder like the trial's: 6 runs x 60 problems, n = 100, abilities rising with log compute."""
    rng = np.random.default_rng(seed)
    d = rng.normal(0.0, 2.0, problems)
    frames, compute = [], {}
    for i in range(runs):
        p = 1 / (1 + np.exp(-(-4.5 + 1.0 * i - d)))
        frames.append(
            pd.DataFrame(
                {
                    "run": f"r{i}",
                    "benchmark": "sim",
                    "problem_id": [f"p{j}" for j in range(problems)],
                    "n": N,
                    "c": rng.binomial(N, p),
                }
            )
        )
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
    table = passk_table(
        counts, [1, 10, N, *GRID], uncertainty=Uncertainty(20, levels=0.9), family=family, compute=compute
    )
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
        lower = past["lower"].to_numpy(float)
        if family == "joint":  # its replicates start from the run's measured pass@n; the per-run candidates' from
            # their own resample's (which may lie below the run's: the sampling error of pass@n itself)
            assert np.all(lower >= measured[run] - 1e-12), (run, family, "lower", measured[run], lower)
        assert np.all(lower <= values + 1e-12)
        assert np.all(values <= past["upper"].to_numpy(float) + 1e-12)
    for run in near:  # the trial's case: a run just below 1, whose pass@139 must lie in [measured, 1]
        first = table[(table["run"] == run) & (table["k"] == GRID[0])].iloc[0]
        assert measured[run] - 1e-12 <= first["pass_at_k"] <= first["upper"] <= 1, (run, family)
        assert first["lower"] <= first["pass_at_k"] + 1e-12
        if family == "joint":
            assert first["lower"] >= measured[run] - 1e-12, (run, first["lower"], measured[run])


def _anchored(model, model_at_n, measured):
    """pass@k of ``anchor`` on probabilities: the model's pass@k past n, its pass@n, the measured pass@n."""
    return from_x(anchor(to_x(model), to_x(model_at_n), to_x(measured)))[0]


def test_anchor_at_ordinary_values_rises_from_the_measured_pass_at_n_within_0_1():
    out = _anchored([0.5, 0.6, 0.8], 0.4, 0.3)
    assert np.all(np.diff(out) >= 0) and np.all((out >= 0.3) & (out <= 1))
    assert out[0] > 0.3  # the model's own step from n to k carried over
    below = _anchored([0.2, 0.25], 0.4, 0.3)  # a model curve that falls below its own pass@n: no fall
    assert below == pytest.approx([0.3, 0.3])


def test_anchor_gives_no_number_where_the_model_pass_at_n_is_0_or_1():
    assert np.isnan(_anchored([1e-3, 1e-2], 0.0, 0.3)).all()  # was [1, 1]: a 0 turned into pass@k = 1
    assert np.isnan(_anchored([1.0, 1.0], 1.0, 0.3)).all()  # was [0.3, 0.3]: flat, though the model says 1


def test_anchor_at_a_measured_pass_at_n_of_1_is_1_and_of_0_keeps_the_model():
    assert _anchored([0.5, 0.6], 0.4, 1.0) == pytest.approx([1.0, 1.0])
    assert _anchored([0.5, 0.6], 0.0, 1.0) == pytest.approx([1.0, 1.0])
    assert _anchored([0.05, 0.1], 0.01, 0.0) == pytest.approx([0.05, 0.1])  # measured 0: not anchored
    assert np.isnan(_anchored([np.nan, 0.5], 0.4, 0.3)[0])  # a failed refit stays NaN


def test_a_family_whose_pass_at_n_is_0_or_1_is_refused_with_the_reason():
    from benchcast.errors import DataError
    from benchcast.generative.past_n import _anchored_family

    class Flat:
        def __init__(self, value):
            self.value = value

        def pass_at_k(self, ks):
            return np.full(len(np.atleast_1d(ks)), self.value)

    n, c = np.full(5, 10), np.array([0, 1, 3, 5, 10])
    for value, said in ((0.0, "0"), (1.0, "1")):
        with pytest.raises(DataError, match=f"model's pass@n is {said}: no step from n to k"):
            _anchored_family(Flat(value), [20.0, 40.0], n, c)


def _evidence(power_errors, joint_errors):
    """The joint-vs-power_k sentence of _choose on origins with these errors."""
    from benchcast.generative.past_n import PassKPastN

    rows = [
        {"run": f"r{i}", "origin": "n/10", "candidate": name, "error": e}
        for name, errors in (("power_k", power_errors), ("joint", joint_errors))
        for i, e in enumerate(errors)
    ]
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
