"""bench's proper scores: the interval score and the weighted interval score, on the log of the score."""

import numpy as np
import pandas as pd
import pytest

from benchcast.evaluation.bench import leaderboard, metrics
from benchcast.evaluation.bench_result import LEADERBOARD_COLUMNS, interval_score, weighted_interval_score


def test_interval_score_hand_computed():
    lower, upper = np.array([0.4, 0.4, 0.4]), np.array([0.5, 0.5, 0.5])
    true = np.array([0.45, 0.3, 0.6])  # inside, below, above
    width = np.log(0.5 / 0.4)
    got = interval_score(true, lower, upper, 0.9)
    np.testing.assert_allclose(
        got, 100 * np.array([width, width + 20 * np.log(0.4 / 0.3), width + 20 * np.log(0.6 / 0.5)])
    )
    # at 50 % a miss costs 2 / 0.5 = 4 times its distance
    assert interval_score(0.3, 0.4, 0.5, 0.5) == pytest.approx(100 * (width + 4 * np.log(0.4 / 0.3)))
    # a bound at 0 is read as the floor, so that the score stays finite
    assert np.isfinite(interval_score(0.3, 0.0, 0.5, 0.9))


def test_interval_score_is_relative_and_rewards_the_true_quantiles():
    """The same relative intervals score the same at any score level; and over outcomes drawn from a
    lognormal, the interval at its true quantiles beats a narrower and a wider one (propriety)."""
    assert interval_score(0.045, 0.04, 0.05, 0.9) == pytest.approx(interval_score(0.45, 0.4, 0.5, 0.9))
    rng = np.random.default_rng(0)
    y = 0.5 * np.exp(0.1 * rng.standard_normal(200_000))
    z = 1.6448536
    scores = {
        factor: interval_score(y, 0.5 * np.exp(-factor * z * 0.1), 0.5 * np.exp(factor * z * 0.1), 0.9).mean()
        for factor in (0.7, 1.0, 1.4)
    }
    assert scores[1.0] < scores[0.7] and scores[1.0] < scores[1.4]


def test_weighted_interval_score_and_metrics():
    true, predicted = np.array([0.5, 0.5]), np.array([0.5, 0.55])
    intervals = {0.5: (np.array([0.45, 0.6]), np.array([0.55, 0.7])), 0.9: (np.array([0.4, 0.4]), np.array([0.6, 0.6]))}
    wis = weighted_interval_score(true, predicted, intervals)
    expected = (
        50 * np.abs(np.log(true / predicted))
        + 0.25 * interval_score(true, *intervals[0.5], 0.5)
        + 0.05 * interval_score(true, *intervals[0.9], 0.9)
    ) / 2.5
    np.testing.assert_allclose(wis, expected)
    m = metrics(true, predicted, np.array([True, True]), intervals)
    assert m["is50"] == pytest.approx(interval_score(true, *intervals[0.5], 0.5).mean())
    assert m["is90"] == pytest.approx(100 * np.log(0.6 / 0.4))  # both inside: the width alone
    assert m["wis"] == pytest.approx(wis.mean())
    none = metrics(true, predicted, np.array([True, True]), {})
    assert np.isnan(none["is50"]) and np.isnan(none["is90"]) and np.isnan(none["wis"])


def test_leaderboard_shows_the_weighted_interval_score():
    base = {"dataset": "d", "metric": "acc", "cutoff": 1.0, "strategy": "s", "status": "ok"}
    rows = pd.DataFrame(
        [
            {
                **base,
                "benchmark": "a",
                "mre": 1.0,
                "coverage50": 1.0,
                "coverage90": 1.0,
                "is50": 10.0,
                "is90": 20.0,
                "wis": 3.0,
            },
            {
                **base,
                "benchmark": "b",
                "mre": 3.0,
                "coverage50": 0.0,
                "coverage90": 0.5,
                "is50": 30.0,
                "is90": 40.0,
                "wis": 5.0,
            },
        ]
    )
    board = leaderboard(rows).set_index("strategy")
    assert board.loc["s", "wis"] == pytest.approx(4.0) and board.loc["s", "is90"] == pytest.approx(30.0)
    assert "wis" in LEADERBOARD_COLUMNS
