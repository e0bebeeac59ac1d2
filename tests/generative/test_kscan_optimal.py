"""The pass@k laws across k on real data, cutoff stability, and the compute-optimal envelope."""

import json

import numpy as np
import pytest
from conftest import law_table, run_cli
from scipy.optimize import minimize_scalar

import benchcast as bc
from benchcast.evaluation.cutoff import cutoff_backtest, settling
from benchcast.generative.kscan import kscan
from benchcast.laws.envelope import Envelope


def test_kscan_compute_on_humaneval(apple):
    scan, fits = kscan(apple, "compute", "humaneval-py")
    assert list(scan["k"]) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert all(f.diagnostics.r2 > 0.95 for f in fits)
    # the irreducible error shrinks with k and the exponent steepens at large k
    assert scan["E0"].iloc[0] > scan["E0"].iloc[-1]
    assert scan["alpha"].iloc[-1] > scan["alpha"].iloc[2]


def test_kscan_params_tokens_and_gold(apple):
    scan, fits = kscan(apple, "params_tokens", "mbpp", [1, 16])
    assert len(fits) == 2 and {"N0", "beta", "D0", "gamma"} <= set(scan.columns)
    scan, fits = kscan(apple, "gold", "triviaqa_1shot", metric="exact_match")
    assert len(fits) == 1 and fits[0].diagnostics.r2 > 0.9
    assert fits[0].params["kappa"] > 0


def test_cutoff_stability_compute_law(apple):
    cut = cutoff_backtest(apple, bc.FitSpec("compute", "humaneval-py", k=1), tpr=20, progress=False)
    assert len(cut) > 10 and cut["extrapolation_decades"].max() > 2
    settled = settling(cut, ["E0", "C0", "alpha"])
    # the exponent settles well before the last cutoff: later fits agree with the final one
    assert settled["alpha"]["settled_before_final"]
    assert settled["alpha"]["training_decades"] < cut["training_decades"].max() - 0.5


def test_settling_point_on_data_from_a_known_law():
    """Data from one exact S1 law: every cutoff recovers the same parameters, so they settle at the
    first cutoff; data whose exponent changes at a known compute settle only after it."""
    flops = np.geomspace(1e18, 1e22, 20)
    exact = law_table("compute", [0.1, 2e5, 0.26], {"flops": flops, "k": np.ones(20)}, metric="pass@k")
    cut = cutoff_backtest(exact, bc.FitSpec("compute", "synthetic", "pass@k", k=1), progress=False)
    settled = settling(cut, ["E0", "C0", "alpha"])
    for name in ("E0", "C0", "alpha"):
        assert settled[name]["training_decades"] == cut["training_decades"].iloc[0], name
    # a steeper exponent beyond 1e20 FLOPs: the fitted alpha cannot settle before cutoffs pass 1e20
    neglog = np.where(flops < 1e20, 2e5 * flops**-0.26, 2e5 * 1e20**-0.26 * (flops / 1e20) ** -0.6)
    broken = law_table("compute", [0.0, 1.0, 0.0], {"flops": flops, "k": np.ones(20)}, metric="pass@k")
    broken.loc[broken["metric"] == "pass@k", "value"] = np.exp(-neglog)
    cut = cutoff_backtest(broken, bc.FitSpec("compute", "synthetic", "pass@k", k=1), progress=False)
    settled = settling(cut, ["alpha"])
    first_settled = cut.sort_values("cutoff_flops")["cutoff_flops"].iloc[
        int(
            np.flatnonzero(cut.sort_values("cutoff_flops")["training_decades"] == settled["alpha"]["training_decades"])[
                0
            ]
        )
    ]
    assert first_settled > 1e20


ENV = Envelope(E0=0.1, N0=400.0, beta=0.34, D0=2000.0, gamma=0.28)


@pytest.mark.parametrize("flops", [1e19, 1e21, 1e24])
def test_envelope_is_the_constrained_minimum(flops):
    def reducible(log_n):
        n = np.exp(log_n)
        return float(ENV.reducible(n, flops / 6 / n))

    res = minimize_scalar(reducible, bounds=(np.log(1e5), np.log(1e13)), method="bounded", options={"xatol": 1e-12})
    assert np.exp(res.x) == pytest.approx(ENV.optimal_params(flops), rel=1e-4)
    assert res.fun == pytest.approx(float(ENV.envelope_reducible(flops)), rel=1e-9)
    # a misallocated run pays exactly the penalty P(x), and C_eff reproduces its score
    for x in (0.25, 3.0):
        n = x * ENV.optimal_params(flops)
        assert float(ENV.reducible(n, flops / 6 / n)) == pytest.approx(
            float(ENV.envelope_reducible(flops) * ENV.penalty(x)), rel=1e-10
        )
        assert float(ENV.envelope_reducible(ENV.effective_flops(flops, n))) == pytest.approx(
            float(ENV.reducible(n, flops / 6 / n)), rel=1e-10
        )
    assert ENV.penalty(1.0) == pytest.approx(1.0) and ENV.penalty(0.5) > 1 and ENV.penalty(2.0) > 1


def test_envelope_matches_s1_fit_on_compute_optimal_data():
    flops = np.geomspace(1e18, 1e23, 30)
    n_opt = ENV.optimal_params(flops)
    d_opt = flops / 6 / n_opt
    theta = [ENV.E0, ENV.N0, ENV.beta, ENV.D0, ENV.gamma]
    table = law_table("params_tokens", theta, {"params": n_opt, "tokens": d_opt, "k": np.ones(30)}, metric="pass@k")
    s1 = bc.fit(table, "compute", "synthetic", "pass@k", 1)
    assert s1.params["alpha"] == pytest.approx(ENV.alpha_eff, rel=1e-4)
    assert s1.params["C0"] == pytest.approx(ENV.C0_eff, rel=1e-3)
    assert s1.params["E0"] == pytest.approx(ENV.E0, rel=1e-4)
    s2 = bc.fit(
        law_table(
            "params_tokens",
            theta,
            {
                "params": np.repeat(n_opt, 3) * np.tile([0.3, 1, 3], 30),
                "tokens": np.repeat(d_opt, 3) / np.tile([0.3, 1, 3], 30),
                "k": np.ones(90),
            },
            metric="pass@k",
        ),
        "params_tokens",
        "synthetic",
        "pass@k",
        1,
    )
    env = s2.fitted.envelope()
    assert env.alpha_eff == pytest.approx(ENV.alpha_eff, rel=1e-3)


def test_optimal_cli(apple, tmp_path):
    out = tmp_path / "s2.json"
    bc.fit(apple, "params_tokens", "humaneval-py", "pass@k", 1).save(out)
    proc = run_cli("optimal", out, "--flops", "1e22", "--params", "1e9", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["optimal_params"] * plan["optimal_tokens"] * 6 == pytest.approx(1e22)
    assert plan["penalty"] >= 1 and plan["effective_flops"] <= 1e22 * (1 + 1e-9)
    power = tmp_path / "p.json"
    bc.fit(apple, "power", "arc_easy", "acc_norm").save(power)
    proc = run_cli("optimal", power, "--flops", "1e22")
    assert proc.returncode == 2 and "params_tokens" in proc.stderr
