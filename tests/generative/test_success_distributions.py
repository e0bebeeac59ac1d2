"""Distributions of per-problem success past the samples drawn (issue 33 §1): families fitted by likelihood
with each problem's own n, a run that solved nothing placed on its ladder, fitted to aggregate curves."""

from __future__ import annotations

import json

import mpmath
import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from benchcast import Uncertainty
from benchcast.errors import DataError
from benchcast.generative.families import get_family
from benchcast.generative.ladder import fit_joint
from benchcast.generative.past_n import passk_table
from benchcast.generative.success import fit_curve, fit_family


def _truth(p, ks):
    return 1 - np.mean((1 - p[:, None]) ** np.asarray(ks, float)[None, :], axis=0)


def test_beta_pass_at_k_past_n_is_exact_against_mpmath():
    fam = get_family("beta")
    z = np.log([0.37, 4.2])
    for k in (1, 7, 1000, 10**5):
        exact = 1 - mpmath.beta(0.37, 4.2 + k) / mpmath.beta(0.37, 4.2)
        assert float(-np.expm1(fam.log_miss([k], z))[0]) == pytest.approx(float(exact), rel=1e-10)


def test_zero_inflated_and_mixture_closed_forms_match_numerical_integration():
    from scipy.integrate import quad
    from scipy.stats import beta

    zi, mix = get_family("zi_beta"), get_family("beta_mix")
    z_zi = np.array([np.log(0.25 / 0.75), np.log(0.6), np.log(3.0)])
    z_mix = np.array([np.log(0.4 / 0.6), np.log(0.3), np.log(9.0), np.log(2.0), np.log(2.0)])
    for k in (1.0, 50.0):
        rest = quad(lambda p, k=k: (1 - p) ** k * beta.pdf(p, 0.6, 3.0), 0, 1, points=[1e-6, 1e-3])[0]
        assert np.exp(zi.log_miss([k], z_zi))[0] == pytest.approx(0.25 + 0.75 * rest, rel=1e-6)
        first = quad(lambda p, k=k: (1 - p) ** k * beta.pdf(p, 0.3, 9.0), 0, 1, points=[1e-6, 1e-3])[0]
        second = quad(lambda p, k=k: (1 - p) ** k * beta.pdf(p, 2.0, 2.0), 0, 1)[0]
        assert np.exp(mix.log_miss([k], z_mix))[0] == pytest.approx(0.4 * first + 0.6 * second, rel=1e-6)
    # the marginal of c of n sums to one over c, per family
    n = np.full(31, 30.0)
    c = np.arange(31.0)
    for fam, z in ((zi, z_zi), (mix, z_mix)):
        assert np.exp(fam.log_marginal(n, c, z)).sum() == pytest.approx(1.0, rel=1e-10)


def test_each_family_recovers_its_own_parameters_from_counts():
    rng = np.random.default_rng(3)
    m = 3000
    p = rng.beta(0.5, 4.0, m)
    fit = fit_family("beta", np.full(m, 200), rng.binomial(200, p)).to_dict()
    assert fit["a"] == pytest.approx(0.5, rel=0.12) and fit["b"] == pytest.approx(4.0, rel=0.2)
    p = np.where(rng.random(m) < 0.3, 0.0, rng.beta(0.8, 3.0, m))
    fit = fit_family("zi_beta", np.full(m, 200), rng.binomial(200, p)).to_dict()
    assert fit["pi"] == pytest.approx(0.3, abs=0.04) and fit["a"] == pytest.approx(0.8, rel=0.2)


def test_unequal_n_enters_the_likelihood_per_problem():
    """Half the problems drawn 1000 times, half 20 times: the fit with each problem's own n recovers the truth;
    treating every n as the largest (as an equal-n shortcut would) puts the mean far off."""
    rng = np.random.default_rng(5)
    m = 2000
    p = rng.beta(0.6, 6.0, m)
    n = np.where(np.arange(m) % 2 == 0, 1000, 20)
    c = rng.binomial(n, p)
    own = fit_family("beta", n, c).to_dict()
    same = fit_family("beta", np.full(m, 1000), c).to_dict()
    mean = lambda f: f["a"] / (f["a"] + f["b"])  # noqa: E731
    assert mean(own) == pytest.approx(0.6 / 6.6, rel=0.08)
    assert mean(same) < 0.7 * mean(own)


def test_a_run_that_solved_nothing_is_refused_alone_and_placed_by_its_ladder():
    rng = np.random.default_rng(2)
    frames, flops = [], {}
    for i, log_c in enumerate(np.linspace(19, 23, 6)):
        mean = 1 / (1 + np.exp(-(-9.5 + 1.6 * (log_c - 19))))
        p = rng.beta(mean * 2, (1 - mean) * 2, 300)
        run = f"r{i}"
        c = rng.binomial(50, p)
        if i == 0:
            c[:] = 0  # the smallest run solved nothing
        frames.append(pd.DataFrame({"run": run, "benchmark": "b", "problem_id": range(300), "n": 50, "c": c}))
        flops[run] = 10**log_c
    counts = pd.concat(frames, ignore_index=True)
    with pytest.raises(DataError, match="no problem was ever solved"):
        fit_family("beta", counts.loc[counts.run == "r0", "n"], counts.loc[counts.run == "r0", "c"])
    table = passk_table(
        counts, [1], uncertainty=Uncertainty(0, levels=0.9), extrapolate_to=1000, compute=flops, family="power_k"
    )
    rows = table[table["k"] == 1000].set_index("run")
    assert rows.loc["r0", "source"] == "joint" and "placed on the ladder by its compute" in rows.loc["r0", "note"]
    assert rows.loc["r5", "source"] != "joint"  # a run that solved something keeps the chosen forecaster
    # the placed forecast follows the ladder: below the next run's and above zero
    assert 0 < rows.loc["r0", "pass_at_k"] < rows.loc["r1", "pass_at_k"] < rows.loc["r5", "pass_at_k"]


def test_the_ladder_refuses_a_run_it_cannot_place_and_says_why():
    counts = pd.DataFrame({"run": ["a"] * 3 + ["b"] * 3, "problem_id": [0, 1, 2] * 2, "n": 10, "c": [0, 0, 0, 2, 0, 1]})
    assert "fewer than two runs that solved something" in fit_joint(counts, {"a": 1e20, "b": 1e21}).refusal("a")
    assert "compute is unknown" in fit_joint(counts, {"b": 1e21}).refusal("a")
    assert fit_joint(counts, None).refusal("b") == ""  # a run that solved something is placed by its own counts
    three = pd.concat([counts, counts[counts.run == "b"].assign(run="c", c=[4, 1, 2])], ignore_index=True)
    far = fit_joint(three, {"a": 1e10, "b": 1e20, "c": 1e21})
    assert "outside the ladder's range" in far.refusal("a")
    assert fit_joint(three, {"a": 1e19, "b": 1e20, "c": 1e21}).refusal("a") == ""


def test_a_curve_fit_forecasts_pass_at_k_at_eight_times_its_last_k():
    rng = np.random.default_rng(4)
    p = rng.beta(0.35, 5.0, 20000)
    ks = np.arange(1, 17)
    fit = fit_curve(ks, _truth(p, ks), "beta")
    assert fit.pass_at_k([128])[0] == pytest.approx(_truth(p, [128])[0], abs=0.01)
    with pytest.raises(DataError, match="needs pass@k at 3 or more k"):
        fit_curve([1, 2], [0.1, 0.2], "beta")
    with pytest.raises(DataError, match="in \\[0, 1\\)"):
        fit_curve([1, 2, 4], [0.1, 0.2, 1.0], "beta")


def test_bad_counts_and_unknown_families_are_refused():
    with pytest.raises(DataError, match="whole numbers"):
        fit_family("beta", [10, 10], [11, 2])
    with pytest.raises(DataError, match="NaN"):
        fit_family("beta", [10, np.nan], [1, 2])
    with pytest.raises(DataError, match="unknown family 'gamma'"):
        fit_family("gamma", [10], [1])


def test_passk_command_takes_a_family_and_refuses_an_unknown_one(tmp_path):
    rng = np.random.default_rng(9)
    path = tmp_path / "counts.csv"
    frame = pd.DataFrame({"problem_id": range(80), "n": 32, "c": rng.binomial(32, rng.beta(0.5, 3, 80))})
    frame.to_csv(path, index=False)
    ok = run_cli(
        "passk",
        str(path),
        "--k",
        "1,4",
        "--extrapolate-to",
        "320",
        "--n-boot",
        "0",
        "--family",
        "beta",
        "-b",
        "toy",
        "--run",
        "r",
        "--json",
    )
    assert ok.exit_code == 0, ok.stderr
    rows = json.loads(ok.stdout)
    assert {r["source"] for r in rows} == {"estimator", "beta"}
    bad = run_cli("passk", str(path), "--extrapolate-to", "320", "--family", "gamma", "-b", "toy", "--run", "r")
    assert bad.exit_code == 2 and "unknown candidate 'gamma'" in bad.stderr and "Traceback" not in bad.stderr


def _ladder_with_modelled_rows(tmp_path):
    rows = []
    for i, flops in enumerate(np.logspace(19, 23, 8)):
        for k in (1, 10, 100, 1000, 10000):
            value = 1 - np.exp(-(k**0.3) * (flops / 1e19) ** 0.25 * 0.02)
            source = "estimator" if k <= 100 else "zi_beta"
            rows.append(
                {
                    "run": f"r{i}",
                    "benchmark": "code",
                    "metric": "pass@k",
                    "k": k,
                    "value": value,
                    "flops": flops,
                    "source": source,
                }
            )
    path = tmp_path / "modelled.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_fit_and_kscan_on_modelled_pass_at_k_say_the_points_are_modelled(tmp_path):
    """`passk --out` rows past n (source = the family) reach `fit --k` and `kscan`, which mark them as modelled."""
    path = _ladder_with_modelled_rows(tmp_path)
    fitted = run_cli("fit", str(path), "--law", "compute", "-b", "code", "--k", "10000")
    assert fitted.exit_code == 0, fitted.stderr
    assert "8 of 8 points are pass@k modelled past the samples drawn (k = 10000) by a zi_beta" in fitted.stdout
    measured = run_cli("fit", str(path), "--law", "compute", "-b", "code", "--k", "10")
    assert measured.exit_code == 0 and "modelled past the samples" not in measured.stdout
    scan = run_cli("kscan", str(path), "--law", "compute", "-b", "code")
    assert scan.exit_code == 0, scan.stderr
    assert "modelled past the samples drawn (k = 1000)" in scan.stdout + scan.stderr


def _counts_ladder(tmp_path):
    rng = np.random.default_rng(2)
    rows, runs = [], []
    for i, log_c in enumerate(np.linspace(19, 23, 6)):
        mean = 1 / (1 + np.exp(-(-7.5 + 1.6 * (log_c - 19))))  # r0 made to solve nothing, the others solve some
        c = rng.binomial(50, rng.beta(mean * 2, (1 - mean) * 2, 100))
        if i == 0:
            c[:] = 0
        rows += [
            {"run": f"r{i}", "benchmark": "code", "problem_id": f"p{j}", "n": 50, "c": int(v)} for j, v in enumerate(c)
        ]
        runs.append({"run": f"r{i}", "flops": 10**log_c})
    counts, meta = tmp_path / "counts.csv", tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(counts, index=False)
    pd.DataFrame(runs).to_csv(meta, index=False)
    return counts, meta


def test_passk_places_a_run_that_solved_nothing_by_its_run_size_or_refuses_it_in_its_row(tmp_path):
    counts, meta = _counts_ladder(tmp_path)
    alone = run_cli(
        "passk", str(counts), "--k", "1,8", "--extrapolate-to", "5000", "--n-boot", "0", "--family", "power_k", "--json"
    )
    assert alone.exit_code == 0
    refused = [r for r in json.loads(alone.stdout) if r["run"] == "r0" and r["source"] != "estimator"]
    assert [r["source"] for r in refused] == ["refused"] and "compute is unknown" in refused[0]["note"]
    out = run_cli(
        "passk",
        str(counts),
        "--k",
        "1,8",
        "--extrapolate-to",
        "5000",
        "--metadata",
        str(meta),
        "--n-boot",
        "20",
        "--family",
        "power_k",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    rows = pd.DataFrame(json.loads(out.stdout))
    r0 = rows[(rows["run"] == "r0") & (rows["source"] != "estimator")]
    assert len(r0) and (r0["k"].max() == 5000) and (r0["source"] == "joint").all()
    assert r0["pass_at_k"].is_monotonic_increasing
    assert ((r0["lower"] <= r0["pass_at_k"]) & (r0["pass_at_k"] <= r0["upper"])).all()  # placed, with an interval
    last = rows[(rows["run"] == "r5") & (rows["k"] == 5000)]
    assert float(last["pass_at_k"].iloc[0]) > float(r0["pass_at_k"].iloc[-1])
    text = run_cli(
        "passk",
        str(counts),
        "--k",
        "1",
        "--extrapolate-to",
        "500",
        "--metadata",
        str(meta),
        "--n-boot",
        "0",
        "--family",
        "power_k",
    )
    assert text.exit_code == 0 and "joint: logistic link" in " ".join(text.stdout.split())


def test_a_model_fit_on_its_bound_says_so_on_its_rows_and_in_the_cli(tmp_path):
    """299 of 300 problems solved in every one of 1000 samples: the beta's a runs to its bound, which the rows
    past n and the command's output name (whatever the optimiser reports of its convergence there)."""
    counts = pd.DataFrame(
        {"run": "r", "benchmark": "b", "problem_id": range(300), "n": 1000, "c": [1000] * 299 + [999]}
    )
    table = passk_table(counts, [1], uncertainty=Uncertainty(0, levels=0.9), extrapolate_to=10000, family="beta")
    modelled = table[table["source"] == "beta"]
    assert modelled["note"].str.contains("log_a on its bound").all()
    path = tmp_path / "easy.csv"
    counts.drop(columns=["run", "benchmark"]).to_csv(path, index=False)
    out = run_cli(
        "passk",
        str(path),
        "--k",
        "1",
        "--extrapolate-to",
        "10000",
        "--family",
        "beta",
        "--n-boot",
        "0",
        "-b",
        "b",
        "--run",
        "r",
    )
    assert out.exit_code == 0 and "log_a on its bound" in " ".join(out.stdout.split())


def test_rows_placed_on_the_ladder_count_their_own_runs_problems(tmp_path):
    """A placed run's ``problems`` is its own count, not the ladder's mean."""
    counts, meta = _counts_ladder(tmp_path)
    frame = pd.read_csv(counts)
    frame = frame[~((frame["run"] == "r0") & (frame["problem_id"].str[1:].astype(int) >= 60))]  # r0: 60 problems
    frame.to_csv(counts, index=False)
    out = run_cli(
        "passk",
        str(counts),
        "--k",
        "1",
        "--extrapolate-to",
        "5000",
        "--metadata",
        str(meta),
        "--n-boot",
        "0",
        "--family",
        "power_k",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    rows = pd.DataFrame(json.loads(out.stdout))
    borrowed = rows[(rows["run"] == "r0") & (rows["source"] == "joint")]
    assert len(borrowed) and (borrowed["problems"] == 60).all()
    assert (rows.loc[rows["run"] == "r5", "problems"] == 100).all()
