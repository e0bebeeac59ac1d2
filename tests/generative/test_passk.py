"""pass@k estimator (exact, stable), bootstrap, beta extrapolation, bounds, sample readers."""

import itertools
import json

import mpmath
import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from benchcast import Uncertainty
from benchcast.errors import DataError
from benchcast.generative.passk import (
    bootstrap_pass_at_k,
    pass_at_k,
    pass_at_k_per_problem,
)
from benchcast.generative.past_n import passk_table
from benchcast.generative.samples import read_counts
from benchcast.generative.success import fit_family


def brute_force(n, c, k):
    """Fraction of k-subsets of n samples (c correct) that contain a correct one."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 10])
def test_exact_against_enumeration(n):
    for c in range(n + 1):
        ks = np.arange(1, n + 1)
        got = pass_at_k_per_problem([n], [c], ks)[0]
        want = [brute_force(n, c, k) for k in ks]
        assert np.allclose(got, want, rtol=0, atol=1e-14), (n, c)


def mp_pass(n, c, k):
    mpmath.mp.dps = 60
    if n - c < k:
        return mpmath.mpf(1)
    return 1 - mpmath.binomial(n - c, k) / mpmath.binomial(n, k)


@pytest.mark.parametrize(
    "n, c, k",
    [
        (10_000, 1, 1),
        (10_000, 5000, 1),
        (10_000, 9999, 1),
        (10_000, 1, 10_000),
        (10_000, 0, 10_000),
        (10_000, 1, 9_999),
        (10_000, 3, 5_000),
        (10_000, 1, 100),
        (10_000, 17, 2048),
        (10_000, 2, 9_000),
    ],
)
def test_stable_at_ten_thousand(n, c, k):
    got = pass_at_k_per_problem([n], [c], [k])[0, 0]
    assert np.isfinite(got)
    want = float(mp_pass(n, c, k))
    assert got == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_vectorised_over_problems_and_k():
    n = np.array([20, 20, 20, 30])
    c = np.array([0, 3, 20, 7])
    ks = [1, 2, 10, 20]
    per = pass_at_k_per_problem(n, c, ks)
    assert per.shape == (4, 4)
    assert np.allclose(per[:, 0], c / n)  # pass@1 = c/n
    assert np.allclose(per[0], 0) and np.allclose(per[2], 1)
    assert np.allclose(pass_at_k(n, c, ks), per.mean(axis=0))
    with pytest.raises(DataError, match="k must lie"):
        pass_at_k(n, c, [21])
    with pytest.raises(DataError, match="0 <= c <= n"):
        pass_at_k([5], [6], [1])


def test_bootstrap_interval_and_determinism():
    rng = np.random.default_rng(0)
    n = np.full(200, 50)
    c = rng.binomial(50, rng.beta(0.5, 2.0, 200))
    a = bootstrap_pass_at_k(n, c, [1, 8], uncertainty=Uncertainty(500, 3, levels=0.95))
    b = bootstrap_pass_at_k(n, c, [1, 8], uncertainty=Uncertainty(500, 3, levels=0.95))
    pd.testing.assert_frame_equal(a, b)
    assert (a["lower"] <= a["pass_at_k"]).all() and (a["pass_at_k"] <= a["upper"]).all()
    assert a["stderr"].iloc[0] == pytest.approx(np.std(c / n, ddof=1) / np.sqrt(200), rel=0.15)


def test_beta_model_recovers_and_extrapolates():
    rng = np.random.default_rng(1)
    a_true, b_true = 0.3, 3.0
    p = rng.beta(a_true, b_true, 4000)
    n = np.full(p.size, 100)
    c = rng.binomial(100, p)
    model = fit_family("beta", n, c)
    fitted = model.to_dict()
    assert fitted["a"] == pytest.approx(a_true, rel=0.1) and fitted["b"] == pytest.approx(b_true, rel=0.15)
    # closed form against the population truth E[1 - (1 - p)^k] by quadrature of the true Beta
    from scipy import integrate, stats

    for k in (1, 10, 1000, 10_000):
        truth = integrate.quad(lambda q, k=k: (1 - (1 - q) ** k) * stats.beta.pdf(q, a_true, b_true), 0, 1, limit=200)[
            0
        ]
        assert model.pass_at_k([k])[0] == pytest.approx(truth, rel=0.06)
    assert model.pass_at_k([50])[0] == pytest.approx(pass_at_k(n, c, [50])[0], rel=0.05)


def test_passk_table_marks_extrapolation():
    counts = pd.DataFrame(
        {"run": "r", "benchmark": "b", "problem_id": [str(i) for i in range(50)], "n": 20, "c": np.arange(50) % 5}
    )
    table = passk_table(counts, [1, 4, 16, 64], uncertainty=Uncertainty(100, levels=0.9), extrapolate_to=1000)
    assert set(table.loc[table["source"] == "estimator", "k"]) == {1, 4, 16}
    modelled = table[table["source"] != "estimator"]  # one candidate, chosen by the backtest in k
    assert modelled["source"].nunique() == 1 and (modelled["extrapolation"] > 1).all()
    assert 64 in set(modelled["k"]) and modelled["k"].max() == 1000
    assert modelled["pass_at_k"].is_monotonic_increasing


def test_readers(tmp_path):
    per_problem = tmp_path / "pp.csv"
    pd.DataFrame({"problem_id": [1, 2], "n": [10, 10], "c": [3, 0]}).to_csv(per_problem, index=False)
    counts = read_counts(per_problem, benchmark="gsm8k", run="m1")
    assert list(counts["c"]) == [3, 0] and set(counts["benchmark"]) == {"gsm8k"}
    per_sample = tmp_path / "ps.jsonl"
    pd.DataFrame({"problem_id": ["a", "a", "a", "b"], "correct": ["true", "False", "1", "0"], "run": "m"}).to_json(
        per_sample, orient="records", lines=True
    )
    counts = read_counts(per_sample)
    assert counts.set_index("problem_id")[["n", "c"]].to_dict("index") == {"a": {"n": 3, "c": 2}, "b": {"n": 1, "c": 0}}
    log = tmp_path / "samples_gsm8k.jsonl"
    with log.open("w") as handle:
        handle.write(json.dumps({"doc_id": 0, "resps": [["x", "y", "z", "w"]], "exact_match": [1, 0, 0, 1]}) + "\n")
        handle.write(
            json.dumps({"doc_id": 1, "resps": [["x", "y"]], "filtered_resps": ["x", "y"], "exact_match": 0.5}) + "\n"
        )
    # line 2 scores only its first generation (a mean of 0.5 says nothing about the other) and has
    # no target to grade them against: refused, never c = round(0.5 * 2)
    with pytest.raises(DataError, match="per-generation correctness cannot be determined"):
        read_counts(log, benchmark="gsm8k")
    log.write_text(log.read_text().splitlines()[0] + "\n")
    counts = read_counts(log, benchmark="gsm8k")
    assert list(counts["n"]) == [4] and list(counts["c"]) == [2]
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"problem_id": [1], "n": [3], "c": [5]}).to_csv(bad, index=False)
    with pytest.raises(DataError, match="c = 5 correct of n = 3"):
        read_counts(bad)
    bad.write_text("problem_id,correct\n1,maybe\n")
    with pytest.raises(DataError, match="'correct' must be 0/1"):
        read_counts(bad)


def test_passk_cli(tmp_path):
    path = tmp_path / "pp.csv"
    pd.DataFrame({"problem_id": range(30), "n": 16, "c": np.arange(30) % 4}).to_csv(path, index=False)
    proc = run_cli("passk", path, "--k", "1,2,4,8,16,64", "--extrapolate-to", "10000", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    est = {r["k"]: r["pass_at_k"] for r in rows if r["source"] == "estimator"}
    assert est[1] == pytest.approx(np.mean((np.arange(30) % 4) / 16))
    assert max(r["k"] for r in rows) == 10000
    proc = run_cli("passk", tmp_path / "none.csv")
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
