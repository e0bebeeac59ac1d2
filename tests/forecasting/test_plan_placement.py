"""``plan ARTIFACT`` whose answer lies among the fitted runs says so, as ``plan DATA`` does, and an answer below
them is flagged once (issue 32 item 1 on the merged code: ``plan arc.json --target 0.6`` answered 3.1e20 FLOPs,
inside DCLM's runs at TPR 20, without a word)."""

from __future__ import annotations

import pytest

import benchcast as bc
from benchcast import Uncertainty
from benchcast.forecasting.flags import BELOW_DATA, INTERPOLATION


@pytest.fixture(scope="module")
def arc20(apple):
    return bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21, tpr=20.0)


def test_a_plan_inside_the_fitted_runs_is_an_interpolation(arc20):
    out = bc.plan(arc20, 0.6, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert 1e18 < out.needed < 5.7e21  # measured 3.1e20: inside the fitted runs
    assert out.metric == "acc_norm"  # a fit's plan names its metric too
    assert [f.kind for f in out.flags] == [INTERPOLATION]


def test_a_plan_below_the_fitted_runs_is_flagged_once(arc20):
    out = bc.plan(arc20, 0.3, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert out.needed < 1e18  # measured 3.9e16
    assert [f.kind for f in out.flags] == [BELOW_DATA]
    assert "1.41 decades of compute below the smallest fitted run" in out.flags[0].reason


def test_a_plan_beyond_the_fitted_runs_has_no_placement(arc20):
    out = bc.plan(arc20, 0.85, uncertainty=Uncertainty(n_boot=0, levels=0.9))
    assert out.needed > 5.7e21
    assert not {INTERPOLATION, BELOW_DATA, "at a fitted run"} & {f.kind for f in out.flags}
