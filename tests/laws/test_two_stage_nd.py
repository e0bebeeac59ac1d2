"""The two-step law in N and D (two_stage_nd): stage 1 Chinchilla loss, stage 2 sigmoid, both refitted per replicate."""

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import DCLM, require_shared

import benchcast as bc
from benchcast import Uncertainty
from benchcast.errors import BenchcastError
from benchcast.forecasting.bootstrap import bootstrap
from benchcast.laws.two_stage_nd import fit_stage1

TRUE = {"E": 0.55, "A": 60.0, "alpha": 0.33, "B": 180.0, "beta": 0.30}


def _ladder(seed: int = 0) -> pd.DataFrame:
    """Runs at 5 sizes x 4 TPRs whose bits per byte follow TRUE and whose accuracy is a sigmoid of it, with noise."""
    rng = np.random.default_rng(seed)
    params = np.repeat(np.geomspace(1.5e8, 3e9, 5), 4)
    tokens = params * np.tile([10.0, 20.0, 50.0, 100.0], 5)
    bpb = TRUE["E"] + TRUE["A"] / params ** TRUE["alpha"] + TRUE["B"] / tokens ** TRUE["beta"]
    bpb = bpb + rng.normal(0, 0.002, bpb.size)
    acc = 0.25 + 0.75 / (1 + np.exp(9.0 * (bpb - 0.95))) + rng.normal(0, 0.004, bpb.size)
    runs = [f"r{i}" for i in range(params.size)]
    common = {"run": runs, "params": params, "tokens": tokens, "benchmark": "hellaswag_val"}
    return pd.concat(
        [
            pd.DataFrame({**common, "metric": "len_norm", "value": acc}),
            pd.DataFrame({**common, "metric": "bpb", "value": bpb}),
        ]
    )


def test_stage1_recovers_the_chinchilla_form():
    table = _ladder()
    rows = table[table["metric"] == "bpb"]
    e, a, alpha, b, beta = fit_stage1(rows["params"].to_numpy(), rows["tokens"].to_numpy(), rows["value"].to_numpy())
    assert alpha == pytest.approx(TRUE["alpha"], abs=0.08) and beta == pytest.approx(TRUE["beta"], abs=0.08)
    big_n, big_d = 1.3e10, 5e12
    truth = TRUE["E"] + TRUE["A"] / big_n ** TRUE["alpha"] + TRUE["B"] / big_d ** TRUE["beta"]
    assert e + a / big_n**alpha + b / big_d**beta == pytest.approx(truth, rel=0.01)


def test_the_law_reads_the_data_s_bits_per_byte_and_forecasts_from_n_and_d():
    table = bc.validate(_ladder())
    result = bc.fit(table, "two_stage_nd", "hellaswag_val", "len_norm")
    assert result.spec.proxy == "hellaswag_val:bpb"  # the data's bits per byte, found without being named
    big_n, big_d = 1.3e10, 5e12
    bpb = TRUE["E"] + TRUE["A"] / big_n ** TRUE["alpha"] + TRUE["B"] / big_d ** TRUE["beta"]
    truth = 0.25 + 0.75 / (1 + np.exp(9.0 * (bpb - 0.95)))
    assert float(np.ravel(result.predict(params=big_n, tokens=big_d))[0]) == pytest.approx(truth, abs=0.01)


def test_a_replicate_refits_both_stages():
    table = bc.validate(_ladder())
    result = bc.fit(table, "two_stage_nd", "hellaswag_val", "len_norm")
    boot = bootstrap(result, n_jobs=1, progress=False, uncertainty=Uncertainty(n_boot=30, seed=1))
    thetas = boot.thetas[np.isfinite(boot.thetas).all(axis=1)]  # the replicates behind the interval
    assert np.std(thetas[:, 2]) > 1e-4 and np.std(thetas[:, 4]) > 1e-4  # stage 1 exponents move per replicate
    assert np.std(thetas[:, 6]) > 1e-4  # and stage 2's steepness


def test_dclm_hellaswag_through_its_gold_log_likelihood():
    table = bc.load(require_shared(DCLM))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bc.fit(table, "two_stage_nd", "hellaswag", "acc_norm", max_flops=1e22)
    assert result.spec.proxy == "hellaswag:loglikelihood"  # no bits per byte there: the gold log-likelihood
    held = table[(table["benchmark"] == "hellaswag") & (table["metric"] == "acc_norm") & (table["flops"] > 1e22)]
    predicted = result.predict(params=held["params"].to_numpy(), tokens=held["tokens"].to_numpy())
    assert np.abs(predicted - held["value"].to_numpy()).max() < 0.03  # measured: 0.8 % MRE on these runs


def test_without_a_loss_column_it_is_refused():
    table = bc.validate(_ladder())
    scores = table[table["metric"] == "len_norm"]
    with pytest.raises(BenchcastError, match="proxy"):
        bc.fit(scores, "two_stage_nd", "hellaswag_val", "len_norm")


def test_the_report_says_stage_1_is_fitted_to_the_proxy():
    result = bc.fit(bc.validate(_ladder()), "two_stage_nd", "hellaswag_val", "len_norm")
    lines = {line.split("=")[0].strip(): line for line in result.report().splitlines() if " = " in line}
    for name in ("E", "A", "alpha", "B", "beta"):
        assert "stage 1, fitted to the proxy" in lines[name] and "not identified" not in lines[name]
    assert "+/-" in lines["k"]  # stage 2's standard errors, from the fit to the scores


def test_stage1_counts_distinct_n_and_d_not_runs():
    """Stage 1 fits 5 parameters: five N, D points run twice (ten runs) cannot determine it, and a reweighting that
    draws only five distinct points has none, while one drawing six does."""
    rows = _ladder()
    rows = rows[rows["metric"] == "bpb"]
    params, tokens, loss = (rows[c].to_numpy() for c in ("params", "tokens", "value"))
    five = np.arange(5)
    with pytest.raises(BenchcastError, match="10 runs at 5 distinct N and D"):
        fit_stage1(np.tile(params[five], 2), np.tile(tokens[five], 2), np.tile(loss[five], 2))
    weights = np.zeros((2, params.size))
    weights[0, five] = 3.0  # fifteen draws of five points
    weights[1, np.arange(6)] = 1.0
    stages = fit_stage1(params, tokens, loss, weights)
    assert np.isnan(stages[0]).all() and np.isfinite(stages[1]).all()


def test_the_compute_two_stage_law_needs_three_computes_for_its_proxy_line():
    """Four runs at two compute values, each with its own proxy: a line in log C through two computes is no fit."""
    law = bc.get_law("two_stage_linear")
    X = {"flops": np.array([1e19, 1e19, 1e20, 1e20]), "proxy": np.array([3.1, 3.0, 2.8, 2.75])}
    with pytest.raises(BenchcastError, match="2 distinct compute value"):
        law.presolve(X, np.array([0.3, 0.31, 0.4, 0.41]))
    X = {"flops": np.array([1e19, 1e20, 1e21]), "proxy": np.array([3.1, 2.8, 2.5])}
    assert law.presolve(X, np.array([0.3, 0.4, 0.5]))["alpha_L"] < 0  # three computes: the loss falls with C


def test_a_bootstrap_reweighting_of_the_compute_two_stage_law_needs_three_drawn_computes():
    """Six runs at three computes: a reweighting drawing two of them has no stage-1 line (nan, a failed refit), one
    drawing all three is solved, and a reweighting drawing a single compute does not stop the batch."""
    law = bc.get_law("two_stage_linear")
    X = {"flops": np.repeat([1e19, 1e20, 1e21], 2), "proxy": np.array([3.1, 3.05, 2.8, 2.78, 2.5, 2.52])}
    y = np.array([0.3, 0.31, 0.4, 0.41, 0.5, 0.49])
    weights = np.array([[1, 1, 2, 2, 0, 0], [1, 0, 1, 0, 1, 3], [3, 3, 0, 0, 0, 0]], float)
    thetas = law.closed_form_weighted(X, y, weights)
    assert np.isnan(thetas[0]).all() and np.isnan(thetas[2]).all()
    assert np.isfinite(thetas[1]).all() and thetas[1, 1] < 0
