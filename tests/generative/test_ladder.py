"""pass@k past n from the whole ladder (issue 53): problems keep their difficulty across runs and abilities follow
compute, so the runs that solved little borrow from the runs that solved more."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import benchcast.generative.ladder as ladder
from benchcast.generative.ladder import bootstrap_ladder, fit_ladder, standardised_log_compute
from benchcast.generative.past_n import PassKPastN, fit_candidate
from benchcast.generative.xscale import from_x, to_x


def _ladder(seed, runs=12, problems=150, n=100, low=0.01, never=0.0):
    """Shared difficulty (log-uniform p in [1e-6, 0.5], a share never solvable), each run's p scaled by its compute
    from ``low`` to 1: counts, true p (problems x runs) and compute."""
    rng = np.random.default_rng(seed)
    base = np.exp(rng.uniform(np.log(1e-6), np.log(0.5), problems)) * (rng.random(problems) >= never)
    scale = np.geomspace(low, 1.0, runs)
    p = np.clip(base[:, None] * scale[None, :], 0, 1)
    c = rng.binomial(n, p)
    names = [f"r{i:02d}" for i in range(runs)]
    counts = pd.DataFrame(
        {"run": np.repeat(names, problems), "problem_id": np.tile(np.arange(problems), runs), "n": n, "c": c.T.ravel()}
    )
    return counts, p, dict(zip(names, np.geomspace(1e19, 1e22, runs), strict=True))


def _truth(p, k):
    return 1 - np.mean((1 - p) ** k, axis=0)


def test_the_ladder_recovers_pass_at_k_ten_times_past_n_where_the_power_law_in_k_cannot():
    counts, p, compute = _ladder(0)
    runs = list(compute)
    n = np.full((p.shape[0], len(runs)), 100.0)
    c = counts["c"].to_numpy(float).reshape(len(runs), -1).T
    fit = fit_ladder(n, c, standardised_log_compute(compute, runs))
    truth = _truth(p, 1000)
    joint = fit.pass_at_k([1000])[:, 0]
    power = np.array([from_x(fit_candidate("power_k", n[:, i], c[:, i], [1000]).x[0]) for i in range(len(runs))])
    assert np.all((joint >= 0) & (joint <= 1))
    assert np.abs(joint - truth).mean() < 0.03
    assert np.abs(joint - truth).mean() < 0.6 * np.abs(power - truth).mean()
    # at k <= n it agrees with the unbiased estimator the counts give
    from benchcast.generative.passk import pass_at_k

    unbiased = np.array([pass_at_k(n[:, i].astype(int), c[:, i].astype(int), [100])[0] for i in range(len(runs))])
    assert np.abs(fit.pass_at_k([100])[:, 0] - unbiased).max() < 0.05


def test_a_run_that_solved_nothing_is_placed_below_larger_runs_and_its_interval_rests_on_the_line():
    counts, p, compute = _ladder(1, low=1e-4)
    counts.loc[counts["run"] == "r00", "c"] = 0  # the smallest run solved nothing (its p are tiny anyway)
    assert counts.groupby("run")["c"].sum()["r00"] == 0
    model = PassKPastN("joint", n_boot=10, compute=compute).fit(counts, "b")
    rows = model.predict([1000, 10_000])
    rows = rows.set_index(["run", "k"])
    assert (rows["source"] == "joint").all()
    values = rows[["pass_at_k", "lower", "upper"]].to_numpy(float)
    assert np.all((values >= 0) & (values <= 1))
    first = rows.loc[("r00", 10_000)]
    assert 0 <= first["pass_at_k"] < rows.loc[("r03", 10_000), "pass_at_k"] < rows.loc[("r11", 10_000), "pass_at_k"]
    assert "placed on the ladder by its compute" in first["note"]
    # its interval rests on the line through the other runs: its bootstrap also draws its ability around it
    joint, ks = model.joint_, [10_000]
    i = joint.runs.index("r00")
    placed = joint.draws(ks, 30, 0)
    fixed = bootstrap_ladder(joint.fit, *joint._matrix, ks, replicates=30, rng=np.random.default_rng(0))
    assert np.nanstd(to_x(placed[:, i, 0])) > np.nanstd(to_x(fixed[:, i, 0]))


def test_the_choice_keeps_the_power_law_unless_the_evidence_separates_the_joint_model():
    counts, _, compute = _ladder(2, runs=8, problems=100, n=1000)
    model = PassKPastN(("power_k", "joint"), n_boot=0, compute=compute).fit(counts, "b")
    assert {"n/10", "n/100", "across runs"} <= set(model.backtest_["origin"])
    assert "paired z" in model.evidence_ and model.evidence_ in model.rule()
    scores = model.scores_.set_index("candidate")["mae"]
    wide = model.backtest_.pivot_table(index=["run", "origin"], columns="candidate", values="error")
    gain = (wide["power_k"].abs() - wide["joint"].abs()).dropna()
    separated = scores["joint"] < scores["power_k"] and gain.mean() > 2 * gain.std() / np.sqrt(len(gain))
    assert model.chosen_ == ("joint" if separated else "power_k")


def test_a_joint_fit_that_does_not_converge_falls_back_to_the_per_run_forecaster_and_says_so(monkeypatch):
    counts, _, compute = _ladder(3, runs=6, problems=80)
    monkeypatch.setattr(ladder, "MAX_ITER", 2)
    model = PassKPastN("joint", n_boot=0, compute=compute).fit(counts, "b")
    rows = model.predict([1000])
    assert model.chosen_ == "power_k" and (rows["source"] != "joint").all()
    assert rows["note"].str.contains("did not converge in 2 iterations: the per-run forecaster instead").all()


@pytest.mark.parametrize("seed", [4])
def test_the_ladder_is_deterministic_given_a_seed(seed):
    counts, _, compute = _ladder(seed, runs=6, problems=60)
    counts.loc[counts["run"] == "r00", "c"] = 0
    first, again = (
        PassKPastN("joint", n_boot=10, seed=seed, compute=compute).fit(counts).predict([1000]) for _ in range(2)
    )
    pd.testing.assert_frame_equal(first, again)
