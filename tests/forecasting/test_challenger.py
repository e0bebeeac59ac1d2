"""two_stage_nd joins the default only where the data holds its proxy loss and its rolling-origin error wins."""

import warnings

import pytest
from conftest import DCLM, require_shared

import benchcast as bc
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.ensemble import Ensemble


@pytest.fixture(scope="module")
def dclm():
    return bc.load(require_shared(DCLM))


def _fit(table, benchmark, metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Ensemble().fit(table, FitSpec("power", benchmark, metric), progress=False)


def test_it_joins_where_its_rolling_origin_error_wins(dclm):
    # the multi-TPR protocol's training side (below TPR 160, 3e18..6e21): the laws of N and D, the gold log-likelihood;
    # judged along compute and TPR, it wins on ARC-Easy (on every run of hellaswag it does not: its TPR origins)
    train = dclm[dclm["tokens"] / dclm["params"] < 150]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ens = Ensemble().fit(train, FitSpec("power", "arc_easy", "acc_norm", min_flops=3e18, max_flops=6e21))
    ranking = ens.choice_.ranking.set_index("law")
    assert "two_stage_nd" in ens.weights_
    assert ranking.loc["two_stage_nd", "inner_msle"] < ranking.drop("two_stage_nd")["inner_msle"].min()


def test_it_stays_out_where_it_does_not_win(dclm):
    ens = _fit(dclm, "arc_challenge", "acc_norm")
    assert "two_stage_nd" not in ens.weights_ and set(ens.weights_) == {"nd_floor", "power_floor_tpr"}
    assert any("two_stage_nd: its rolling-origin error does not beat" in f for f in ens.choice_.failures)


def test_without_its_proxy_it_is_no_candidate(dclm):
    scores = dclm[dclm["metric"] != "loglikelihood"]
    ens = _fit(scores, "hellaswag", "acc_norm")
    assert "two_stage_nd" not in ens.members_ and set(ens.weights_) == {"nd_floor", "power_floor_tpr"}
