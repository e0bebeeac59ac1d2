"""Figures at the target's ratio (issue #39, item 6): a forecast of planned runs at several tokens-per-parameter ratios
draws one curve and 50/90 % band per ratio, each through its targets."""

import numpy as np
import pytest
from conftest import run_cli

from benchcast import FitSpec, Uncertainty
from benchcast.forecasting.answers import forecast_default

BENCHMARK, METRIC = "hellaswag", "acc_norm"
PARAMS, TOKENS = [7e9, 13e9], [4e12, 5e12]  # TPR 571 and 385: beyond every DCLM run (10-160)


@pytest.fixture(scope="module")
def with_curves(apple):
    return forecast_default(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC, min_flops=3e18),
        params=PARAMS,
        tokens=TOKENS,
        curves=True,
        uncertainty=Uncertainty(n_boot=40, levels=0.9),
    )


def test_each_target_lies_on_the_curve_of_its_own_ratio(with_curves):
    fc = with_curves
    assert len(fc.curves) == 2  # one per ratio
    for i, (n, d) in enumerate(zip(PARAMS, TOKENS, strict=True)):
        along = next(c for label, c in fc.curves.items() if label == f"TPR {d / n:.4g}")
        p = along.points
        assert np.allclose(p["tokens"] / p["params"], d / n, rtol=1e-9)  # the whole curve at the target's ratio
        at = int(np.argmin(np.abs(np.log(p["flops"].to_numpy(float) / fc.points["flops"][i]))))
        assert p["flops"][at] == pytest.approx(fc.points["flops"][i], rel=1e-9)
        assert along.prediction[at] == pytest.approx(fc.prediction[i], rel=1e-9)
        # the band through the target is the target's own interval (the draws are common to the points)
        lower, upper = along.interval(0.9)
        target_lower, target_upper = fc.interval(0.9)
        assert lower[at] == pytest.approx(target_lower[i], abs=1e-6)
        assert upper[at] == pytest.approx(target_upper[i], abs=1e-6)
    # the two ratios' curves differ: the over-trained run's curve is not the other's
    first, second = fc.curves.values()
    assert first.points["flops"][0] == pytest.approx(second.points["flops"][0], rel=1e-12)  # both from the smallest run
    assert abs(first.prediction[0] - second.prediction[0]) > 1e-3


def test_forecast_out_draws_the_figure_and_an_artifact_refuses_it(apple_path, tmp_path):
    figure = tmp_path / "fig.png"
    args = ["forecast", str(apple_path), "-b", BENCHMARK, "-m", METRIC, "--n-boot", "20", "--min-flops", "3e18"]
    done = run_cli(*args, "-N", "7e9", "-D", "4e12", "--out", str(figure))
    assert done.exit_code == 0, done.stderr
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fit_file = tmp_path / "fit.json"
    assert (
        run_cli("fit", str(apple_path), "-b", BENCHMARK, "-m", METRIC, "--tpr", "20", "-o", str(fit_file)).exit_code
        == 0
    )
    refused = run_cli("forecast", str(fit_file), "-C", "1e23", "--out", str(tmp_path / "other.png"))
    assert refused.exit_code == 2 and "--out" in refused.stderr and not (tmp_path / "other.png").exists()
