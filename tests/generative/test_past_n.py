"""pass@k past n (issue 41): the power law in k beside the per-problem families, chosen by a backtest in k; an
interval widened by the error it measured; every run answered or refused; never a number outside [0, 1]."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from benchcast import Uncertainty
from benchcast.errors import DataError
from benchcast.generative.passk import pass_at_k
from benchcast.generative.past_n import (
    FAMILY_MARGIN,
    PER_RUN,
    PRIOR_WEIGHT,
    REACH,
    TAU_PRIOR,
    PassKPastN,
    _power_fit,
    backtest_in_k,
    fit_candidate,
    passk_table,
)


def _truth(p, ks):
    return 1 - np.mean((1 - p[:, None]) ** np.asarray(ks, float)[None, :], axis=0)


def _benchmark(rng, n, runs=6, problems=128, shift=1.0):
    """Runs of one benchmark whose p are logit-normal (a heavy tail near 0), easier along the runs."""
    frames, truth = [], {}
    for i in range(runs):
        p = 1 / (1 + np.exp(-(-8 + shift * i + 3 * rng.standard_normal(problems))))
        frames.append(pd.DataFrame({"run": f"r{i}", "problem_id": range(problems), "n": n, "c": rng.binomial(n, p)}))
        truth[f"r{i}"] = p
    return pd.concat(frames, ignore_index=True), truth


def test_the_power_law_in_k_recovers_its_own_curve_and_extends_it():
    ks = np.array([1, 2, 4, 8, 16, 32, 64])
    a, b = 3.0, 0.4
    curve = np.exp(-a * ks ** (-b))
    intercept, slope = _power_fit(np.log(ks), curve[None, :])
    assert intercept[0] == pytest.approx(np.log(a), abs=1e-9) and slope[0] == pytest.approx(-b, abs=1e-9)
    # from counts: fitted to the unbiased curve, it forecasts pass@k past n on the x = log(-log pass) scale
    rng = np.random.default_rng(0)
    p = rng.beta(0.3, 3.0, 4000)
    c = rng.binomial(100, p)
    fit = fit_candidate("power_k", np.full(4000, 100), c, [100, 1000])
    assert np.exp(-np.exp(fit.x[0])) == pytest.approx(pass_at_k(np.full(4000, 100), c, [100])[0], abs=0.01)
    assert 0 < np.exp(-np.exp(fit.x[1])) < 1


def test_the_backtest_thins_each_problem_and_forecasts_one_decade_on():
    rng = np.random.default_rng(1)
    p = rng.beta(0.4, 4.0, 200)
    for n, origins in ((1000, {100, 10}), (100, {10}), (30, set())):
        c = rng.binomial(n, p)
        table = backtest_in_k(np.full(200, n), c, candidates=("power_k", "beta"), seed=3)
        assert set(table["origin_n"]) == origins
        assert (table["k"] == 10 * table["origin_n"]).all()  # one decade past the thinned n
        for row in table.itertuples():  # the truth is the full counts' unbiased pass@k there
            assert row.truth == pytest.approx(pass_at_k(np.full(200, n), c, [row.k])[0], rel=1e-12)
    again = backtest_in_k(np.full(200, 1000), rng.binomial(1000, p), seed=3)
    assert set(again["candidate"]) == {"power_k", "beta", "zi_beta", "beta_mix"}


def test_the_choice_is_the_least_error_in_the_backtest_and_power_k_unless_clearly_beaten():
    rng = np.random.default_rng(2)
    counts, _ = _benchmark(rng, 1000, runs=3)  # the rule is per run: three runs of 1000 samples show it
    model = PassKPastN(PER_RUN, n_boot=0).fit(counts, "gsm")  # the joint model's rule: tests/generative/test_ladder.py
    scores = model.scores_.set_index("candidate")
    best = scores["mae"].idxmin()
    wins = scores.loc[best, "mae"] < FAMILY_MARGIN * scores.loc["power_k", "mae"]
    assert model.chosen_ == (best if wins else "power_k")
    # without the power law among the candidates, the least error is chosen outright
    families = PassKPastN(("beta", "zi_beta"), n_boot=0).fit(counts)
    assert families.chosen_ == families.scores_.set_index("candidate")["mae"].idxmin()
    assert (scores["origins"] == scores["origins"].iloc[0]).all()  # every candidate judged on the same origins
    # tau is the chosen candidate's error per decade, shrunk toward the prior by its pseudo-origins
    own = model.backtest_.loc[model.backtest_["candidate"] == model.chosen_, "error_x"].to_numpy()
    expected = REACH * np.sqrt((np.sum(own**2) + PRIOR_WEIGHT * TAU_PRIOR**2) / (len(own) + PRIOR_WEIGHT))
    assert model.tau_ == pytest.approx(expected, rel=1e-9)
    assert model.chosen_ in model.rule() and f"{model.tau_:.3f}" in model.rule()
    # with no origin to judge by (n below 40), the simplest alternative
    few, _ = _benchmark(rng, 20)
    unjudged = PassKPastN(PER_RUN, n_boot=0).fit(few)
    assert unjudged.chosen_ == "power_k"
    # and says it was not judged (it read 'least MAE one decade of k past 0 thinned origins')
    assert "by default: no thinned origin to judge by" in unjudged.rule() and "past 0" not in unjudged.rule()
    assert "past" in model.rule() and "by default" not in model.rule() and "origins' RMS" in model.rule()
    assert "x the prior 0.25: no origin measured it" in unjudged.rule()


def test_the_interval_covers_on_a_heavy_tailed_ladder_and_is_a_probability():
    """Truth at 10 n and 100 n on 3 simulated benchmarks of 6 runs: the 90 % interval covers most of them, every
    bound is in [0, 1], and the band widens with k (on the scale the error is added)."""
    covered, total = 0, 0
    for seed in range(3):
        rng = np.random.default_rng(10 + seed)
        counts, truth = _benchmark(rng, 100)
        rows = PassKPastN(n_boot=200, seed=seed).fit(counts).predict([1000, 10000])
        answered = rows[rows["source"] != "refused"]
        values = answered[["pass_at_k", "lower", "upper"]].to_numpy()
        assert np.all((values >= 0) & (values <= 1))
        for run, group in answered.groupby("run"):
            true = _truth(truth[run], group["k"])
            covered += int(((group["lower"] <= true) & (true <= group["upper"])).sum())
            total += len(group)
            with np.errstate(divide="ignore"):  # the width on log(-log pass@k), where the error is added
                width = np.log(-np.log(group["lower"])) - np.log(-np.log(group["upper"])).to_numpy()
            assert not np.isfinite(width).all() or width.iloc[-1] >= width.iloc[0]
    assert total >= 24 and covered / total >= 0.8


def test_every_run_is_answered_or_refused_with_its_reason():
    rng = np.random.default_rng(4)
    counts, _ = _benchmark(rng, 100, runs=3)
    counts.loc[counts["run"] == "r0", "c"] = 0  # solved nothing
    counts.loc[counts["run"] == "r1", "c"] = 0
    counts.loc[(counts["run"] == "r1") & (counts["problem_id"] == 7), "c"] = 1  # one problem, once
    table = passk_table(
        counts.assign(benchmark="gsm"), [1], uncertainty=Uncertainty(100, levels=0.9), extrapolate_to=10_000
    )
    past = table[table["source"] != "estimator"]
    refused = past[past["source"] == "refused"]
    assert list(refused["run"]) == ["r0"] and refused["pass_at_k"].isna().all()
    assert (
        refused["note"]
        .iloc[0]
        .startswith("0 of 128 problems solved in 100 samples: pass@10000 is not identifiable from this run alone")
    )
    one = past[past["run"] == "r1"]
    assert len(one) and (one["lower"] < 1e-9).any() and one["note"].str.contains("rests on one problem").all()
    assert table.attrs["rules"] and "gsm:" in table.attrs["rules"][0]


def test_rounds_whose_first_solved_nothing_and_runs_that_solved_all_are_answered_as_they_are():
    """Samples drawn in rounds whose first round solved nothing: the power law's curve (the first round's) is 0, so
    it refuses and says why, where a family reads every round. A run that solved every problem (c = n - 1
    everywhere: pass@k = 1 from k = 2) forecasts 1, not a refusal."""
    rng = np.random.default_rng(6)
    c = rng.binomial(200, 0.05, 64)
    rounds = pd.DataFrame({"run": "r", "problem_id": range(64), "n_first": 10, "c_first": 0, "n": 200, "c": c})
    # the power law refuses it (its curve is the first round's); the joint model answers from every round, and says why
    joint = PassKPastN("power_k", n_boot=20).fit(rounds).predict([1000])
    assert list(joint["source"]) == ["joint"]
    assert "power_k refused (the first round's samples solved nothing" in joint["note"][0]
    beta = PassKPastN("beta", n_boot=0).fit(rounds).predict([20])
    assert beta["source"].iloc[0] == "beta" and 0 < beta["pass_at_k"].iloc[0] < 1
    easy = pd.DataFrame({"run": "r", "problem_id": range(64), "n": 100, "c": 99})
    rows = PassKPastN(n_boot=50).fit(easy).predict([1000, 10_000])
    assert (rows["source"] == "power_k").all()
    np.testing.assert_allclose(rows[["pass_at_k", "lower", "upper"]].to_numpy(), 1.0)


def test_a_chosen_family_on_its_bound_widens_to_every_candidate_and_says_so(monkeypatch):
    import dataclasses

    import benchcast.generative.past_n as past_n
    import benchcast.generative.per_run as per_run

    counts = pd.DataFrame({"run": "r", "problem_id": range(300), "n": 1000, "c": [1000] * 297 + [999, 500, 3]})
    real = past_n.fit_family
    # the family's fit as it comes back when a shape runs to its limit (whatever the optimiser says of convergence)
    on_bound = lambda *a, **k: dataclasses.replace(real(*a, **k), on_bound=["log_a"])  # noqa: E731
    for module in (past_n, per_run):  # the candidate's fit (per_run) and its bootstrap refits (past_n)
        monkeypatch.setattr(module, "fit_family", on_bound)
    both = PassKPastN(("beta", "power_k"), n_boot=50)
    both.fit(counts).chosen_ = "beta"  # force the doubtful one, as a benchmark's backtest could choose it
    wide = both.predict([10_000])
    assert "beta: " in wide["note"].iloc[0] and "log_a on its bound" in wide["note"].iloc[0]
    power = np.exp(-np.exp(fit_candidate("power_k", counts["n"], counts["c"], [10_000]).x[0]))
    assert wide["lower"].iloc[0] <= min(power, wide["pass_at_k"].iloc[0])
    assert wide["upper"].iloc[0] >= max(power, wide["pass_at_k"].iloc[0])
    assert "spans every candidate's forecast" in wide["note"].iloc[0]


def test_unknown_candidates_and_unfitted_forecasters_are_refused():
    with pytest.raises(DataError, match="unknown candidate 'gamma'"):
        PassKPastN("gamma").fit(pd.DataFrame({"run": ["r"], "n": [10], "c": [1]}))
    with pytest.raises(DataError, match="not fitted"):
        PassKPastN().predict([100])


def _stubborn_ladder(tmp_path):
    """Two runs that solved every problem every time and three that solved nothing: no joint distribution can
    hold (the solved runs' shapes run to the family's limit)."""
    rows = []
    for i, solved in enumerate([0, 0, 0, 50, 50]):
        rows += [{"run": f"r{i}", "benchmark": "b", "problem_id": j, "n": 50, "c": solved} for j in range(40)]
    counts, meta = tmp_path / "counts.csv", tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(counts, index=False)
    pd.DataFrame({"run": [f"r{i}" for i in range(5)], "flops": np.logspace(19, 21, 5)}).to_csv(meta, index=False)
    return counts, meta


def test_a_ladder_of_all_or_nothing_runs_prints_no_impossible_number(tmp_path):
    counts, meta = _stubborn_ladder(tmp_path)
    out = run_cli(
        "passk",
        str(counts),
        "--k",
        "1",
        "--extrapolate-to",
        "10000",
        "--metadata",
        str(meta),
        "--n-boot",
        "20",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    rows = pd.DataFrame(json.loads(out.stdout))
    values = rows[["pass_at_k", "lower", "upper"]].to_numpy(float)
    assert not np.any(np.isfinite(values) & ((values < 0) | (values > 1)))
    nothing = rows[rows["run"].isin(["r0", "r1", "r2"]) & (rows["source"] != "estimator")]
    assert set(nothing["run"]) == {"r0", "r1", "r2"}  # each answered from the ladder or refused in its row
    assert ((nothing["source"] == "joint") | ((nothing["source"] == "refused") & (nothing["note"] != ""))).all()


def test_counts_where_nothing_was_ever_solved_asked_past_n_are_refused_in_their_rows(tmp_path):
    """Once a traceback (AttributeError: 'Pandas' object has no attribute 'pass_at_k'): every row a refusal."""
    path = tmp_path / "none.csv"
    pd.DataFrame({"run": ["a"] * 20 + ["b"] * 20, "problem_id": list(range(20)) * 2, "n": 10, "c": 0}).to_csv(path)
    out = run_cli("passk", str(path), "--k", "1,100", "--n-boot", "0")
    assert out.exit_code == 0, out.stderr
    flat = " ".join(out.stdout.split())
    assert "refused: a on none: 0 of 20 problems solved in 10 samples" in flat and "no run solved any problem" in flat
    rows = json.loads(run_cli("passk", str(path), "--k", "1,100", "--n-boot", "0", "--json").stdout)
    assert {r["source"] for r in rows if r["k"] == 100} == {"refused"}


def test_a_value_outside_zero_one_is_an_error_never_a_row():
    from benchcast.generative.past_n import _require_probabilities

    with pytest.raises(DataError, match="not a probability"):
        _require_probabilities(pd.DataFrame({"pass_at_k": [0.3, -1.5e111]}))
    _require_probabilities(pd.DataFrame({"pass_at_k": [0.0, 1.0], "lower": [0.0, 0.9], "upper": [0.1, 1.0]}))
