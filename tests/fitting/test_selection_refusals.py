"""What a fit of the real data refuses to select rather than answer wrongly: a pass@k benchmark at several k with no
k chosen (pooled, the k would be one curve of different quantities) and a loss or likelihood named as the score."""

from __future__ import annotations

import numpy as np
import pytest

import benchcast as bc
from benchcast.errors import SelectionError


def test_a_pass_at_k_benchmark_at_several_k_is_refused_without_a_k(apple):
    with pytest.raises(SelectionError, match=r"k = 1, 2, 4, 8, 16, 32, 64, 128; choose k with --k"):
        bc.fit(apple, "power_floor", "humaneval-py", None, tpr=20)
    with pytest.raises(SelectionError, match="fitted one k at a time"):
        bc.fit(apple, "power_floor", "humaneval-py", "pass@k", tpr=20)
    one = bc.fit(apple, "power_floor", "humaneval-py", "pass@8", tpr=20)
    assert one.spec.k == 8 and set(one.points["k"]) == {8.0}


@pytest.mark.parametrize(("benchmark", "metric"), [("sciq", "brier"), ("c4", "loss"), ("arc_easy", "loglikelihood")])
def test_a_loss_or_likelihood_is_refused_as_the_score(apple, benchmark, metric):
    with pytest.raises(SelectionError, match=rf"metric {metric!r} is a loss or likelihood .*--proxy {benchmark}:"):
        bc.fit(apple, "power", benchmark, metric, tpr=20)


def test_a_forecast_at_one_k_names_its_k(apple):
    """Two forecasts of one benchmark at k = 1 and k = 8: each says its k, and pass@8 lies above pass@1."""
    made = [
        bc.forecast(
            bc.fit(apple, "power_floor", "mbpp", f"pass@{k}", tpr=20), flops=1e23, uncertainty=bc.Uncertainty(0)
        )
        for k in (1, 8)
    ]
    assert [fc.metric for fc in made] == ["pass@1", "pass@8"]
    assert [fc.to_dict()["metric"] for fc in made] == ["pass@1", "pass@8"]
    assert list(made[1].to_frame()["metric"]) == ["pass@8"]
    assert np.all(made[1].prediction > made[0].prediction)
