"""Issue 50 part A: an error model that cannot blow up (the TPR term from origins at a meaningful distance, pooled,
shrunk toward the prior, a measured scale far from it stated) and an uninformative interval that is never silent
(forecasts and plans)."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast import FitSpec
from benchcast.forecasting import extrapolation as x
from benchcast.forecasting.answers import forecast_default
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.flags import UNINFORMATIVE, plan_interval_flags, uninformative
from benchcast.forecasting.targets import PlannedRuns
from tests.conftest import law_table

PRIOR = x.Prior(np.log(0.05), 0.1, 0.127, ("a", "b", "c"), np.log(0.06))
THETA = [1800.0, 0.38, 3300.0, 0.39]


def _split_ladder(noise: float) -> pd.DataFrame:
    """A ladder at 10, 20, 40 and two pairs of ratios 1.2 % apart (100, 101.2; 200, 202.4): too far apart for one ratio
    group, 0.005 decade of TPR apart, so an origin that holds one of a pair out forecasts it at a near-zero distance."""
    tprs = (10.0, 20.0, 40.0, 100.0, 101.2, 200.0, 202.4)
    nd = np.array([(n, t * n) for n in np.geomspace(5e7, 3e9, 6) for t in tprs])
    return law_table("nd", THETA, {"params": nd[:, 0], "tokens": nd[:, 1]}, q_rand=0.25, noise=noise, seed=1)


def _tpr_errors(errors_by_side: dict) -> pd.DataFrame:
    """Rolling-origin forecasts along TPR: side -> [(distance in decades of TPR, log error)]."""
    rows = [
        {
            "axis": "tpr",
            "origin_decades": np.nan,
            "side": side,
            "run": f"{side}{i}",
            "k": 1.0,
            "decades": 0.0,
            "tpr_decades": d,
            "true": 0.5 * np.exp(e),
            "predicted": 0.5,
            "converged": True,
        }
        for side, points in errors_by_side.items()
        for i, (d, e) in enumerate(points)
    ]
    return pd.DataFrame(rows)


def test_an_origin_at_a_rounding_split_does_not_divide_its_error_by_its_distance():
    # the half of a split group held out at 1e-4 decades: per-point division gave 0.01 / 1e-4 = 100 per decade
    near = _tpr_errors({"above": [(1e-4, 0.01)] * 4, "below": [(0.3, 0.03)] * 4})
    own, reach = x.tpr_scale(near)
    assert own == pytest.approx(0.1) and reach == pytest.approx(0.3)  # the near origin is left out
    model = x.estimate(near, PRIOR)
    lo, hi = sorted([own, PRIOR.tau_tpr])
    assert lo <= model.tau_tpr <= hi  # between its own and the prior's
    assert x.tpr_scale(_tpr_errors({"above": [(1e-4, 0.01)]}))[0] is None  # nothing at a meaningful distance


def test_the_tpr_term_is_shrunk_toward_the_prior_by_the_decades_its_origins_reach():
    few = x.estimate(_tpr_errors({"below": [(0.1, 0.1)]}), PRIOR)  # 1 per decade from 0.1 decade
    more = x.estimate(_tpr_errors({"below": [(0.3, 0.3)], "above": [(0.6, 0.6)]}), PRIOR)  # 1 per decade, 0.9 decades
    assert few.own_tau_tpr == pytest.approx(1.0) and more.own_tau_tpr == pytest.approx(1.0)
    assert PRIOR.tau_tpr < few.tau_tpr < more.tau_tpr < 1.0
    weight = 0.1 / (0.1 + x.PRIOR_TPR_DECADES)
    assert few.tau_tpr == pytest.approx(np.exp(weight * np.log(1.0) + (1 - weight) * np.log(PRIOR.tau_tpr)))


def test_a_scale_far_from_the_prior_is_a_finding_the_forecast_states():
    far = x.estimate(_tpr_errors({"below": [(0.3, 0.9)], "above": [(0.3, -0.9)]}), PRIOR)  # 3 per decade
    near = x.estimate(_tpr_errors({"below": [(0.3, 0.03)], "above": [(0.3, -0.03)]}), PRIOR)  # 0.1 per decade
    assert len(far.findings) == 1 and "TPR extrapolation error" in far.findings[0] and "above" in far.findings[0]
    assert f"uses {far.tau_tpr:.3g}" in far.findings[0] and far.to_dict()["findings"] == list(far.findings)
    assert near.findings == ()


@pytest.mark.filterwarnings("ignore")
def test_rounding_split_ratio_groups_give_a_bounded_tau_and_an_informative_forecast():
    """Issue 50's symptom 1: ratios a hair apart (rounding splits are one group now; these are 1.2 % apart) no longer
    divide an error by a near-zero distance, and the blown-up scale, forced in, is flagged with its cause."""
    result = bc.fit(_split_ladder(0.01), "nd", "synthetic", "acc", q_rand=0.25)
    errors = x.rolling_origin(result)
    tpr = x.log_errors(errors, "tpr")
    assert tpr["d"].min() < 0.01  # two ratios 1.2 % apart: one origin sits next to its data
    old = np.sqrt(((tpr["e"] / tpr["d"]) ** 2).groupby(tpr["side"]).mean().mean())  # the per-point division
    ensemble = Ensemble.of_fit(result, errors)
    model = ensemble.error_model_
    # the per-point division is driven by the 0.005-decade origin; the floor leaves it out and the pooled scale stays
    # within a few times the prior's 0.127
    assert old > 10 * model.tau_tpr and model.tau_tpr < 0.5
    runs = PlannedRuns(np.array([6 * 7e9 * 4e12]), np.array([7e9]), np.array([4e12]), np.ones(1, bool))
    made = ensemble.predict(runs, Uncertainty(30, interval="extrapolation"))
    lower, upper = made.interval(0.9)
    assert 0.25 < lower[0] < made.prediction[0] < upper[0] < 1.0
    assert not any(f.kind == UNINFORMATIVE for f in made.flags[0])
    # the same forecast with the scale the issue measured on a lab ladder (81.5 per decade): [0, 1], flagged with its cause
    blown = ensemble.predict(
        runs, Uncertainty(30, interval="extrapolation"), error_model=x.ErrorModel(0.03, tau_tpr=81.5)
    )
    (flag,) = [f for f in blown.flags[0] if f.kind == UNINFORMATIVE]
    assert flag.reason.startswith("uninformative: ") and "mostly the TPR-extrapolation error" in flag.reason
    shown = blown.to_dict()["forecasts"][0]["flags"]
    assert (
        shown.startswith("flagged: ") and UNINFORMATIVE in shown and UNINFORMATIVE in str(blown.rich_items()[0].columns)
    )
    assert "uninformative" in [f["kind"] for f in blown.to_dict()["flags"][0]]


def test_the_uninformative_rule():
    assert uninformative(0.0, 1.0, 0.25).reason.endswith(
        "wider than the range from chance (0.25) to 1 (it touches 0 and 1), more than 50 %"
    )
    assert uninformative(0.30, 0.70, 0.25) is not None  # 53 % of 0.25 .. 1
    assert uninformative(0.60, 0.90, 0.25) is None  # 40 %
    assert uninformative(0.2, 0.6, 0.0) is None and uninformative(math.nan, 1.0, 0.25) is None
    terms = {"bootstrap": (0.02, "0.02"), "TPR-extrapolation": (2.0, "3/decade x 0.7 = 2")}
    assert "mostly the TPR-extrapolation error" in uninformative(0.0, 1.0, 0.25, terms).reason
    # a chance that is not finite is taken as 0 (the range 0 .. 1), and the reason says so
    assert uninformative(0.5, 0.52, math.nan) is None and uninformative(0.2, 0.6, math.inf) is None
    flag = uninformative(0.2, 0.8, math.nan)
    assert flag is not None and "nan" not in flag.reason
    assert "60 % of the range from chance (chance unknown, taken as 0) to 1" in flag.reason


def test_a_plan_interval_beyond_a_decade_is_flagged_with_its_one_sided_answer():
    (flag,) = plan_interval_flags(2.55e23, 7.257e18, math.inf, 0.9)
    assert flag.kind == UNINFORMATIVE and "7.26e+18 .. not within 1e40 FLOPs" in flag.reason
    assert flag.reason.endswith("at least 7.26e+18 FLOPs (95 % one-sided bound); no upper bound")
    (flag,) = plan_interval_flags(1e23, 1e20, 5e23, 0.9)
    assert "at most 5e+23 FLOPs (95 % one-sided bound)" in flag.reason
    assert plan_interval_flags(1e23, 2e22, 6e23, 0.9) == () and plan_interval_flags(1e23, None, None, 0.9) == ()


@pytest.mark.slow
def test_dclm_hellaswag_at_a_7b_on_4t_tokens_is_informative(apple):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = forecast_default(
            apple,
            FitSpec("power", "hellaswag", metric="acc_norm"),
            params=[7e9],
            tokens=[4e12],
            n_jobs=1,
            uncertainty=Uncertainty(n_boot=30, levels=0.9),
        )
    lower, upper = out.interval(0.9)
    assert upper[0] - lower[0] < 0.25 and not any(f.kind == UNINFORMATIVE for f in out.flags[0])
    assert out.meta.error_model["tau_tpr"] < 0.3
