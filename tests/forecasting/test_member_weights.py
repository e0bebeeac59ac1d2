"""The default's member weights come from the rolling-origin evidence (issue #39, item 4): equal where the origins
cannot tell the laws apart, by inverse error where they can, and the choice says which."""

import numpy as np
import pandas as pd
import pytest

from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.selection import evidence_words, separated, weights_for

ORIGINS = [0.2, 0.4, 0.6, 0.8, 1.0, "above", "below"]  # five along compute, two along TPR


def per_origin(a, b) -> pd.DataFrame:
    return pd.DataFrame({"nd_floor": a, "power_floor_tpr": b}, index=ORIGINS[: len(a)])


def test_origins_that_agree_separate_the_laws_and_weight_them_by_inverse_error():
    errors = per_origin([1e-4, 2e-4, 1.5e-4, 1e-4, 3e-4], [4e-4, 9e-4, 5e-4, 6e-4, 8e-4])  # a lower at every origin
    assert separated(errors)
    weights = weights_for("ensemble", errors.mean(), errors)
    assert weights["nd_floor"] > 0.7 and weights.sum() == pytest.approx(1.0)
    assert weights["nd_floor"] == pytest.approx(weights_for("stack", errors.mean())["nd_floor"])
    assert "separate the members: weights by inverse error" in evidence_words("ensemble", errors)


def test_origins_that_disagree_keep_equal_weights_and_say_so():
    # a's mean is lower, but the origins split: the paired difference is within its scatter
    errors = per_origin([1e-4, 7e-4, 1e-4, 6e-4, 2e-4], [5e-4, 2e-4, 6e-4, 1e-4, 5e-4])
    assert errors["nd_floor"].mean() < errors["power_floor_tpr"].mean() and not separated(errors)
    assert np.allclose(weights_for("ensemble", errors.mean(), errors), 0.5)
    assert "cannot separate the members: equal weights" in evidence_words("ensemble", errors)
    # too few origins to judge: equal, however far apart
    assert not separated(per_origin([1e-5, 1e-5], [1e-3, 1e-3]))


@pytest.mark.parametrize(("benchmark", "apart"), [("arc_easy", True), ("hellaswag", False)])
def test_the_default_on_a_ladder_states_what_its_evidence_says_and_weights_by_it(apple, benchmark, apart):
    """Every DCLM run (TPR 10-160): laws of N and D, 5 origins along compute and 2 along TPR. On ARC-Easy the origins
    separate nd_floor from power_floor_tpr, on HellaSwag they do not (measured when this default was chosen)."""
    made = Ensemble().fit(apple, FitSpec("power", benchmark, "acc_norm", min_flops=3e18))
    words = [f for f in made.choice_.failures if "rolling-origin errors" in f]
    assert words == [
        "the rolling-origin errors at 7 origins (5 along compute, 2 along TPR) "
        + ("separate the members: weights by inverse error" if apart else "cannot separate the members: equal weights")
    ]
    weights = pd.Series(made.weights_)
    inverse = 1 / made.choice_.ranking.set_index("law").loc[weights.index, "inner_msle"]
    expected = inverse / inverse.sum() if apart else pd.Series(0.5, index=weights.index)
    assert np.allclose(weights, expected) and (apart != np.allclose(weights, 0.5))


def test_a_ladder_at_one_tpr_names_only_its_compute_origins(apple):
    made = Ensemble().fit(apple, FitSpec("power", "arc_easy", "acc_norm", tpr=20, min_flops=3e18))
    words = [f for f in made.choice_.failures if "rolling-origin errors" in f]
    assert len(words) == 1 and "along compute)" in words[0] and "TPR" not in words[0]


def test_a_point_outside_its_own_50_percent_interval_is_flagged_with_the_draws_median():
    """Issue #39, item 5: the point is kept (the median in its place lost WIS on DCLM and across TPRs) and flagged."""
    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.forecasting.draws import ScoreDraws
    from benchcast.forecasting.flags import SKEWED
    from benchcast.forecasting.forecast import make_forecast
    from benchcast.forecasting.targets import planned_runs

    rng = np.random.default_rng(0)
    skewed = 0.70 - rng.exponential(0.05, 400)  # a long lower tail: the median well below 0.70
    centred = 0.70 + rng.normal(0, 0.02, 400)
    draws = ScoreDraws(np.column_stack([skewed, centred]))
    made = make_forecast(
        "b",
        "ensemble",
        planned_runs(flops=[1e22, 2e22]),
        [0.70, 0.70],
        [(), ()],
        Uncertainty(400),
        draws=(("prediction", np.array([0, 1]), draws),),
    )
    flags = [[f for f in point if f.kind == SKEWED] for point in made.flags]
    assert len(flags[0]) == 1 and not flags[1]  # only the point outside its 50 % interval
    median = float(np.median(skewed))
    assert f"{median:.4g}" in flags[0][0].reason and not flags[0][0].refuses
    assert made.prediction[0] == pytest.approx(0.70)  # the point is kept
