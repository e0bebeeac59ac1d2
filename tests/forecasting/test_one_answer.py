"""One answer per question: recommend, forecast (on a data file), report and bench give the same
forecast and interval for the same runs, benchmark, target and settings (issue 23, item 1).

Each pair is compared to 1e-12: they share one implementation (forecasting.strategy.blend_forecast),
so any difference is a second path creeping back. The DCLM ladder, arc_easy acc_norm at TPR 20,
10 bootstrap replicates per law (the report's analysis is the session's ``arc_easy_report``).
"""

import numpy as np
import pytest

from benchcast import FitSpec, Uncertainty
from benchcast.evaluation.bench import Dataset, bench
from benchcast.forecasting.answers import forecast_default, recommend

BENCHMARK, METRIC, TPR, TARGET, N_BOOT = "arc_easy", "acc_norm", 20.0, 1e23, 10  # as arc_easy_report
RTOL = 1e-12


@pytest.fixture(scope="module")
def recommended(apple):
    rec = recommend(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC, tpr=TPR),
        target_flops=TARGET,
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, seed=0, levels=0.9),
    )
    assert rec.supported and set(rec.weights) == {"power_floor", "bnsl_monotone"}
    return rec.forecast.records()[0]


def test_forecast_on_a_data_file_is_recommends_forecast(apple, recommended):
    out = forecast_default(
        apple,
        FitSpec("power", BENCHMARK, metric=METRIC, tpr=TPR),
        flops=[TARGET],
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, seed=0, levels=0.9),
    )
    row = out.records()[0]
    for key in ("prediction", "lower", "upper"):
        assert row[key] == pytest.approx(recommended[key], rel=RTOL)
    assert row["lower"] < row["prediction"] < row["upper"]
    assert row["weights"] == recommended["weights"] and set(row["weights"]) == {"power_floor", "bnsl_monotone"}
    assert "—" not in str(out) and "nan" not in str(out)


def test_report_draws_recommends_forecast(arc_easy_report, recommended):
    report = arc_easy_report  # analyse_benchmark(apple, BENCHMARK, METRIC, target_flops=[TARGET], tpr=TPR, ...)
    row = report.forecast.records()[0]
    assert row["prediction"] == pytest.approx(recommended["prediction"], rel=RTOL)
    assert row["lower90"] == pytest.approx(recommended["lower"], rel=RTOL)
    assert row["upper90"] == pytest.approx(recommended["upper"], rel=RTOL)
    # the page draws the strategy: its members with their weights, each member's curve, the blend between them
    assert report.weights == recommended["weights"] and not report.choice.named
    shown = ", ".join(f"{law} {w:.2f}" for law, w in sorted(report.weights.items(), key=lambda item: -item[1]))
    assert report.strategy == f"ensemble ({shown})"
    blended = sum(report.weights[law] * np.asarray(curve) for law, curve in report.member_curves.items())
    np.testing.assert_allclose(report.curve, blended, rtol=RTOL)
    lower90, upper90 = report.bands[0.9]
    assert np.all(lower90 <= upper90) and len(lower90) == len(report.grid) == len(report.curve)


def test_bench_forecasts_a_held_out_run_as_recommend_does(apple):
    """bench's ensemble at a held-out run = recommend on the runs at or below the cutoff, at that run's
    compute, with either interval."""
    cutoff = 6e21
    data = Dataset("dclm", apple, ((BENCHMARK, METRIC),), (cutoff,), tpr=TPR)
    result = bench(
        [data], ["ensemble", "ensemble[bootstrap]"], uncertainty=Uncertainty(N_BOOT, seed=0), n_jobs=1, progress=False
    )
    train = apple[apple["flops"] <= cutoff]
    for name, interval in (("ensemble", "extrapolation"), ("ensemble[bootstrap]", "bootstrap")):
        points = result.predictions[result.predictions["strategy"] == name].sort_values("flops")
        point = points.iloc[-1]  # the furthest held-out run
        assert len(points) > 2 and point["decades"] > 0.5
        rec = recommend(
            train,
            FitSpec("power", BENCHMARK, metric=METRIC, tpr=TPR),
            target_flops=float(point["flops"]),
            n_jobs=1,
            uncertainty=Uncertainty(n_boot=N_BOOT, seed=0, interval=interval, levels=0.9),
        )
        assert point["prediction"] == pytest.approx(rec.forecast.records()[0]["prediction"], rel=RTOL)
        assert point["lower90"] == pytest.approx(rec.forecast.records()[0]["lower"], rel=RTOL)
        assert point["upper90"] == pytest.approx(rec.forecast.records()[0]["upper"], rel=RTOL)
