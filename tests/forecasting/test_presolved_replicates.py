"""A presolved law's replicates batched (its stage refitted per replicate, #51 item 6) fit as well as cold refits."""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import benchcast as bc
from benchcast.fitting.engine.search import minimize_law
from benchcast.forecasting.bootstrap import _Data, bootstrap, resample_counts


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
