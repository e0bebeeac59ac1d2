"""CRPS from forecast draws (evaluation.scores): the sorted O(n log n) form against properscoring and against
the O(n^2) definition, exact small cases, and nan draws."""

import numpy as np
import properscoring
import pytest

from benchcast.errors import BenchcastError
from benchcast.evaluation.scores import crps_draws


def _brute(draws: np.ndarray, y: float, fair: bool = False) -> float:
    n = len(draws)
    pairs = np.abs(draws[:, None] - draws[None, :]).sum()
    return float(np.mean(np.abs(draws - y)) - pairs / (2 * (n * (n - 1) if fair else n * n)))


def test_crps_matches_properscoring_and_the_definition():
    rng = np.random.default_rng(0)
    draws, y = rng.gamma(2.0, 1.0, (300, 6)), rng.normal(2.0, 1.0, 6)
    np.testing.assert_allclose(crps_draws(draws, y), properscoring.crps_ensemble(y, draws.T), rtol=1e-12, atol=1e-14)
    for j in range(6):
        assert crps_draws(draws[:, j], y[j]) == pytest.approx(_brute(draws[:, j], y[j]), rel=1e-12)
        assert crps_draws(draws[:, j], y[j], fair=True) == pytest.approx(_brute(draws[:, j], y[j], True), rel=1e-12)


def test_exact_small_cases():
    # draws {0, 1}, y = 0.5: E|X - y| = 0.5, E|X - X'| = 0.5 (n^2) or 1 (n (n - 1))
    assert crps_draws(np.array([0.0, 1.0]), 0.5) == 0.25
    assert crps_draws(np.array([0.0, 1.0]), 0.5, fair=True) == 0.0
    # one draw: the absolute error
    assert crps_draws(np.array([[2.0]]), [5.0])[0] == 3.0
    # a point mass at the truth scores 0
    assert crps_draws(np.full(10, 0.3), 0.3) == pytest.approx(0.0, abs=1e-15)


def test_nan_draws_are_left_out_at_their_point_only():
    rng = np.random.default_rng(1)
    draws, y = rng.normal(size=(200, 3)), np.array([0.1, -0.2, 0.4])
    with_nan = draws.copy()
    with_nan[[5, 17], 1] = np.nan
    out = crps_draws(with_nan, y)
    assert out[1] == pytest.approx(properscoring.crps_ensemble(y[1], np.delete(draws[:, 1], [5, 17])), rel=1e-12)
    np.testing.assert_array_equal(out[[0, 2]], crps_draws(draws, y)[[0, 2]])
    empty = np.full((4, 2), np.nan)
    empty[:, 1] = 1.0
    assert np.isnan(crps_draws(empty, [0.0, 1.0])[0]) and crps_draws(empty, [0.0, 1.0])[1] == 0.0
    assert np.isnan(crps_draws(draws, [0.0, np.nan, 0.0])[1])
    with pytest.raises(BenchcastError, match="draws must be"):
        crps_draws(np.zeros((2, 2, 2)), 0.0)
