"""The selection value of the default answers (#51): a FitSpec's law and seed are refused where the answer would not use
them, never overridden without a word."""

import pytest

import benchcast as bc
from benchcast.data.example import load_example
from benchcast.errors import BenchcastError


def test_a_selection_naming_another_law_or_seed_is_refused_not_overridden():
    table = load_example()
    no_interval = bc.Uncertainty(n_boot=0)
    with pytest.raises(BenchcastError, match="chooses its own laws.*'bnsl'"):
        bc.forecast_default(table, bc.FitSpec("bnsl", "arc_easy", "acc_norm"), flops=[1e22], uncertainty=no_interval)
    with pytest.raises(BenchcastError, match="seed 3 differs from the uncertainty's 0"):
        bc.forecast_default(
            table, bc.FitSpec("power", "arc_easy", "acc_norm", seed=3), flops=[1e22], uncertainty=no_interval
        )
    # the placeholder law, and a seed that agrees with the uncertainty's, are the same answer as the benchmark's name
    by_spec = bc.forecast_default(
        table,
        bc.FitSpec("power", "arc_easy", "acc_norm", seed=2),
        flops=[1e22],
        uncertainty=bc.Uncertainty(n_boot=0, seed=2),
    )
    by_name = bc.forecast_default(
        table, bc.FitSpec("power", "arc_easy", "acc_norm"), flops=[1e22], uncertainty=bc.Uncertainty(n_boot=0, seed=2)
    )
    assert by_spec.prediction[0] == pytest.approx(by_name.prediction[0], rel=1e-12)
    assert 0 < by_spec.prediction[0] < 1
