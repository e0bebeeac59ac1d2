"""Each fit once per process (benchcast.utils.memo): a solve asked again with the same law, points and settings is
the stored one, a copy; any other law, point, setting or patched method is solved afresh."""

from __future__ import annotations

import numpy as np

import benchcast as bc
from benchcast.data.example import example_path
from benchcast.fitting.engine.search import minimize_law
from benchcast.utils import memo

FLOPS = np.geomspace(1e18, 1e21, 10)


def test_a_forecast_asked_twice_is_solved_once_and_is_the_same():
    memo.clear()
    table = bc.load(example_path())
    spec = bc.FitSpec("power", "arc_easy", metric="acc_norm")
    first = bc.forecast_default(table, spec, flops=[1e22], uncertainty=bc.Uncertainty(n_boot=30, levels=0.9))
    made = memo.counts()
    assert made["made"] > 0 and made["reused"] == 0
    again = bc.forecast_default(table, spec, flops=[1e22], uncertainty=bc.Uncertainty(n_boot=30, levels=0.9))
    assert memo.counts()["made"] == made["made"]  # nothing solved again
    assert memo.counts()["reused"] >= made["made"]
    assert again.to_frame().equals(first.to_frame())
    other_seed = bc.forecast_default(table, spec, flops=[1e22], uncertainty=bc.Uncertainty(30, seed=1, levels=0.9))
    assert memo.counts()["made"] > made["made"]  # the replicates of another seed are new
    assert other_seed.to_frame()["prediction"].equals(first.to_frame()["prediction"])  # the fit is not


def test_a_stored_solve_is_a_copy_and_a_patched_method_is_another_key(monkeypatch):
    law = bc.get_law("power")
    X = {"flops": FLOPS}
    y = law.forward(np.array([np.log(2.0), 0.12]), X) + np.random.default_rng(0).normal(0, 0.01, FLOPS.size)
    first = minimize_law(law, X, y)
    kept = first.theta.copy()
    first.theta[:] = np.nan  # a caller's change stays its own
    second = minimize_law(bc.get_law("power"), X, y)  # a new law object of the same class: the same solve
    assert memo.counts()["reused"] == 1
    np.testing.assert_array_equal(second.theta, kept)
    minimize_law(law, X, y + 1e-3)  # other points
    minimize_law(law, X, y, seed=1)  # another setting
    monkeypatch.setattr(type(law), "closed_form", lambda self, X, y: None)  # a patched method: solved afresh
    minimize_law(law, X, y)
    assert memo.counts() == {"made": 4, "reused": 1}


def test_arguments_that_cannot_be_digested_are_solved_each_time():
    calls = []
    stored = memo.memoized(lambda value: memo.digest(value))(lambda value: calls.append(value) or len(calls))
    assert stored(np.arange(3.0)) == stored(np.arange(3.0)) == 1
    unsortable = {1: 0.0, "a": 0.0}  # keys of two types: no order to digest them in
    assert stored(unsortable) == 2 and stored(unsortable) == 3


def test_errors_are_not_stored_and_the_least_recently_used_solve_is_dropped_first(monkeypatch):
    calls = []

    def solve(value):
        calls.append(value)
        if value < 0:
            raise ValueError(value)
        return [ValueError("caught")] if value == 0 else [value]

    stored = memo.memoized(lambda value: memo.digest(value), keep=lambda out: not isinstance(out[0], Exception))(solve)
    for _ in range(2):  # neither an error raised nor an answer holding a caught one is kept
        assert isinstance(stored(0)[0], ValueError)
        try:
            stored(-1)
        except ValueError:
            pass
    assert calls == [0, -1, 0, -1]
    assert memo.counts() == {"made": 2, "reused": 0}  # an answer not kept is still a solve made; an error is not
    monkeypatch.setattr(memo, "MAX_ENTRIES", 2)
    memo.clear()
    stored(1), stored(2), stored(1), stored(3)  # 1 used again, so 2 is the least recently used
    calls.clear()
    stored(1), stored(3), stored(2)
    assert calls == [2]


def test_subsets_with_a_caught_error_are_not_stored():
    from benchcast.fitting.engine.batch import minimize_subsets

    def stored_batches() -> int:
        return sum(name.endswith("minimize_subsets") for name, _ in memo._STORE)

    memo.clear()
    law, X = bc.get_law("power_floor"), {"flops": FLOPS}
    y = 0.3 + 0.01 * np.log(FLOPS / 1e18)
    empty = {"flops": FLOPS[:0]}  # no points: the solve of this subset fails, and the batch catches it
    for _ in range(2):
        ok, failed = minimize_subsets(law, [X, empty], [y, y[:0]], [np.arange(10), np.arange(0)])
        assert np.all(np.isfinite(ok.theta)) and isinstance(failed, Exception)
        assert stored_batches() == 0  # the batch with an error solved afresh each time
    minimize_subsets(law, [X], [y], [np.arange(10)])
    assert stored_batches() == 1


def _stored_in_worker(_):
    return len(memo._STORE)


def test_a_pool_worker_starts_with_an_empty_store():
    """Under the fork start method a worker is a copy of this process, store included (forkserver's is not)."""
    from benchcast.utils.parallel import parallel_map

    memo.clear()
    minimize_law(bc.get_law("power"), {"flops": FLOPS}, 0.3 + 0.01 * np.log(FLOPS / 1e18))
    assert len(memo._STORE) == 1
    assert parallel_map(_stored_in_worker, [0, 1], n_jobs=2, progress=False) == [0, 0]


def test_the_replicates_of_the_same_points_under_another_index_are_reused():
    """The replicates' key digests the points' values, not their row labels: a fit whose points are relabelled is
    the same question."""
    from dataclasses import replace

    from benchcast.forecasting.bootstrap import bootstrap

    memo.clear()
    result = bc.fit(bc.load(example_path()), "power_floor", "arc_easy", metric="acc_norm")
    first = bootstrap(result, bc.Uncertainty(n_boot=20))
    made = memo.counts()["made"]
    relabelled = replace(result, points=result.points.set_axis(np.arange(len(result.points)) + 100))
    again = bootstrap(relabelled, bc.Uncertainty(n_boot=20))
    assert memo.counts()["made"] == made and memo.counts()["reused"] >= 1
    np.testing.assert_array_equal(again.thetas, first.thetas)
