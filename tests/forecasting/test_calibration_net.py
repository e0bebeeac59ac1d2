"""The extrapolation term is added net of the bootstrap's own spread (draws.net_sd, draws.combine)."""

import numpy as np
import pytest

from benchcast.forecasting import calibration as cal
from benchcast.forecasting.draws import DRAWS, combine, net_sd


def lognormal_draws(sd: float, n: int = 4000, points: int = 2, seed: int = 0) -> np.ndarray:
    return 0.5 * np.exp(sd * np.random.default_rng(seed).standard_normal((n, points)))


def test_net_sd_is_what_the_bootstrap_leaves_of_the_total():
    boot = lognormal_draws(0.05)
    total = np.array([0.13, 0.03])
    net = net_sd(boot, total)
    assert net[0] == pytest.approx(np.sqrt(0.13**2 - 0.05**2), rel=0.02)
    assert net[1] == 0.0  # the bootstrap alone is wider than the extrapolation error: nothing is added
    # a draw without spread leaves the whole extrapolation error to add, and a nan replicate is skipped
    flat = np.full((20, 2), 0.5)
    flat[3, 1] = np.nan
    np.testing.assert_allclose(net_sd(flat, total), total)


def test_combined_draws_have_the_larger_of_the_two_spreads_not_their_sum():
    spread = cal.Spread(0.1, 0.0, 5, 50, "own")
    boot = lognormal_draws(0.05, n=2000)
    far, near = 2.0, 0.3  # tau d = 0.2 (above the bootstrap's 0.05) and 0.03 (below it)
    draws = combine(boot, np.array([far, near]), spread, seed=1)
    assert len(draws) == np.ceil(DRAWS / 2000) * 2000
    log_sd = np.log(draws).std(axis=0)
    assert log_sd[0] == pytest.approx(0.2, rel=0.05)  # sqrt(0.05^2 + 0.2^2) = 0.206 before
    assert log_sd[1] == pytest.approx(0.05, rel=0.05)  # the bootstrap as it is
    # the bootstrap as it is, up to the last bit of exp(log(x)) (36 of 2000 draws differ by 1 ulp on this CPU)
    np.testing.assert_allclose(draws[:2000, 1], boot[:, 1], rtol=1e-14, atol=0)


def test_the_mean_gets_the_term_the_prediction_gets():
    """A mean's draws are narrower than a run's: netted against their own spread they would get a
    larger term and could come out wider than the run's interval; netted against the run's, both get
    the same one."""
    spread = cal.Spread(0.1, 0.0, 5, 50, "own")
    run = lognormal_draws(0.08, n=2000, points=1, seed=2)
    mean = lognormal_draws(0.02, n=2000, points=1, seed=3)
    decades = np.array([1.0])
    own = combine(mean, decades, spread, seed=1)
    shared = combine(mean, decades, spread, seed=1, reference=run)
    assert np.log(own).std() == pytest.approx(0.1, rel=0.05)
    assert np.log(shared).std() == pytest.approx(np.sqrt(0.02**2 + 0.1**2 - 0.08**2), rel=0.05)
    assert np.log(shared).std() < np.log(combine(run, decades, spread, seed=1)).std()
