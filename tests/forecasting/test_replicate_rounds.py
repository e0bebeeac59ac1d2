"""Replicates in rounds until the 90 % bounds' Monte-Carlo error is below the target (#51 item 6), the same replicates
whatever the rounds, and a presolved law's replicates batched (its stage refitted per replicate) as well as cold refits.
"""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import benchcast as bc
from benchcast.data.example import load_example
from benchcast.fitting.engine.search import minimize_law
from benchcast.forecasting.bootstrap import BOUND_NOISE, ROUND, _Data, _next_round, bootstrap, resample_counts


def test_rounds_project_the_replicates_the_noise_needs():
    assert _next_round(0, 100, None) == 100 and _next_round(0, 1500, None) == ROUND  # a small ask: all at once
    assert _next_round(ROUND, 1500, BOUND_NOISE / 2) == 0  # below the target: stop
    # twice the target at 250 replicates projects 1000 (error ~ 1/sqrt(B)): 750 more, in whole rounds
    assert _next_round(ROUND, 1500, 2 * BOUND_NOISE) == 3 * ROUND
    assert _next_round(ROUND, 1500, 10 * BOUND_NOISE) == 1500 - ROUND and _next_round(1000, 1500, np.inf) == 500


def test_a_bootstrap_stops_below_the_noise_target_with_the_replicates_of_a_smaller_ask():
    table = load_example()
    result = bc.fit(table, "power_floor", "arc_easy", "acc_norm")
    boot = bootstrap(result, bc.Uncertainty(1500, 1), n_jobs=1, progress=False)
    made = len(boot.failed)
    assert made < 1500 and made % ROUND == 0 and boot.asked == 1500
    assert boot.bound_noise() <= BOUND_NOISE
    # replicate i is the same whatever the rounds: the first `made` of a plain ask of `made`
    alone = bootstrap(result, bc.Uncertainty(made, 1), n_jobs=1, progress=False)
    assert np.allclose(boot.fitted_thetas, alone.fitted_thetas, equal_nan=True) and alone.asked == made
    # more noise (a tenth of the runs' scale) is not below the target at the first round
    assert bootstrap(result, bc.Uncertainty(ROUND, 1), n_jobs=1, progress=False).bound_noise() > 0


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = Path(__file__).resolve().parents[1] / "data" / "training_logs_ladder.py"
    spec = importlib.util.spec_from_file_location("training_logs_ladder", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    exports, runs = module.write_ladder(tmp_path_factory.mktemp("ladder"), published=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bc.load(exports, metadata=runs)


def test_presolved_replicates_reach_the_cold_refit_loss(exported):
    """two_stage_nd's replicates: stage 1 refitted to each resample, stage 2 one batched solve; each ends at the loss
    of a cold fit of its resample (or lower), with its own stage 1."""
    result = bc.fit(exported, "two_stage_nd", "hellaswag_val", "len_norm")
    assert result.law_object.replicate_strategy(result.spec.loss) == "batched"
    boot = bootstrap(result, bc.Uncertainty(12, 3), n_jobs=1, progress=False)
    assert boot.usable.all()
    data = _Data.of(result)
    for row, counts in enumerate(resample_counts(result, 3, range(12))):
        cold = minimize_law(data.law, *data.take(counts), loss=result.spec.loss, seed=result.spec.seed)
        assert boot.losses[row] <= cold.loss * (1 + 1e-6)
        assert np.allclose(boot.fitted_thetas[row, :5], cold.theta[:5], rtol=1e-9)  # the resample's own stage 1
        assert not np.allclose(boot.fitted_thetas[row, :5], result.theta[:5], rtol=1e-6)


def test_the_vectorised_stage_1_is_the_stage_1_of_each_resample():
    from benchcast.laws.two_stage_nd import fit_stage1

    rng = np.random.default_rng(0)
    params = np.exp(rng.uniform(19, 22, 24))
    tokens = params * rng.choice([10, 20, 50], 24)
    loss = 0.5 + 40 / params**0.3 + 150 / tokens**0.3 + rng.normal(0, 0.003, 24)
    weights = rng.multinomial(24, np.full(24, 1 / 24), size=5).astype(float)
    each = [fit_stage1(*(np.repeat(v, w.astype(int)) for v in (params, tokens, loss))) for w in weights]
    assert np.allclose(fit_stage1(params, tokens, loss, weights), each, rtol=1e-7)
