"""bench: the two-step method (K6 two-stage, the task's own log-likelihood as the proxy) as strategies."""

import numpy as np
import pytest

import benchcast as bc
from benchcast.errors import SelectionError
from benchcast.evaluation.bench import Dataset, bench, make_cells
from benchcast.evaluation.strategies import law_outcome


def split_for(data, benchmark, metric, cutoff=None):
    """(training table, held-out rows) of one benchmark in the data set's split at ``cutoff`` (default: the first)."""
    cells, _ = make_cells([data])
    return next(
        (c.train, c.held)
        for c in cells
        if (c.benchmark, c.metric) == (benchmark, metric) and (cutoff is None or c.cutoff == cutoff)
    )


TWO_STAGE = ("two_stage_linear", "two_stage_logistic")
LAWS = ("power_floor", *TWO_STAGE)
CUTOFF = 6e21
KWARGS = {
    "laws": LAWS,
    "candidates": ("power_floor",),
    "uncertainty": bc.Uncertainty(10),
    "n_jobs": 1,
    "progress": False,
}


def dataset(table):
    benchmarks = (("arc_easy", "acc_norm"), ("winogrande", "acc"))
    return Dataset("dclm", table, benchmarks, (CUTOFF,), tpr=20.0, min_flops=3e18)


def test_a_two_stage_fit_reads_the_tasks_own_loglikelihood_by_default(apple):
    result = bc.fit(apple, "two_stage_linear", "arc_easy", "acc_norm", tpr=20)
    assert result.spec.proxy == "arc_easy:loglikelihood"  # the law's default_proxy, resolved by design
    named = bc.fit(apple, "two_stage_linear", "arc_easy", "acc_norm", tpr=20, proxy="dclm:loss")
    assert named.spec.proxy == "dclm:loss" and named.params != result.params
    assert bc.fit(apple, "power", "arc_easy", "acc_norm", tpr=20).spec.proxy is None  # no proxy where none is read
    with pytest.raises(SelectionError, match="'winogrande:loglikelihood' by default"):
        bc.fit(apple, "two_stage_linear", "winogrande", "acc", tpr=20)


def test_two_stage_strategies_forecast_from_compute_alone(apple):
    """A held-out run's forecast needs only its compute: stage 1 maps C to the proxy, so scrambling every
    score and log-likelihood above the cutoff changes no forecast and no interval."""
    data = dataset(apple)
    train, held = split_for(data, "arc_easy", "acc_norm", CUTOFF)
    queries = held[["run", "flops", "params", "tokens", "tpr", "k"]]  # the held-out covariates, never the scores
    assert "proxy" not in queries and "value" not in queries
    outcome = law_outcome(train, bc.FitSpec("two_stage_logistic", "arc_easy", "acc_norm", tpr=20.0), 0, 0)
    assert outcome.fit.spec.proxy == "arc_easy:loglikelihood"
    assert np.isfinite(outcome.fit.predict_frame(queries)).all()

    before = bench([data], list(LAWS), **KWARGS)
    scrambled = apple.copy()
    above = scrambled["flops"] > CUTOFF
    loglik = above & (scrambled["metric"] == "loglikelihood")
    assert loglik.any()
    scrambled.loc[above, "value"] = np.random.default_rng(1).uniform(0.3, 0.9, int(above.sum()))
    scrambled.loc[loglik, "value"] = -np.random.default_rng(2).uniform(0.5, 3.0, int(loglik.sum()))
    after = bench([dataset(scrambled)], list(LAWS), **KWARGS)
    cols = ["prediction", "lower50", "upper50", "lower90", "upper90"]
    assert len(before.predictions) == len(after.predictions) > 0
    # bit for bit: the claim is that the held-out values never enter the forecast (same runs, same arithmetic)
    np.testing.assert_array_equal(before.predictions[cols].to_numpy(), after.predictions[cols].to_numpy())

    rows = before.rows.set_index(["benchmark", "strategy"])
    for law in TWO_STAGE:
        assert rows.loc[("arc_easy", law), "status"] == "ok"
        assert rows.loc[("arc_easy", law), "mre"] < 10  # measured: 3-4 % on the three TPR-20 runs above 6e21
        # no log-likelihood for winogrande: the cell fails, saying which proxy it looked for
        assert "winogrande:loglikelihood" in rows.loc[("winogrande", law), "status"]
    board = before.leaderboard.set_index("strategy")
    assert set(TWO_STAGE) <= set(board.index)
    assert (board.loc[list(TWO_STAGE), "failed"] == 1).all()
