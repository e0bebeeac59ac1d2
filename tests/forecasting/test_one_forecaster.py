"""One question, one answer, with default settings (issue 30): every command that shows a forecast gets it from
the one forecaster (``forecasting.ensemble.Ensemble.predict``) with the one table of defaults
(``benchcast.defaults``), so the same runs, benchmark and target give the same point (rtol 1e-9) and the same 90 %
bounds (1e-6) whichever command asks — no ``n_boot`` given anywhere.

The runs: DCLM, arc_easy acc_norm, TPR 20, 3e18 <= C <= 6e21 (bench's apple-dclm cell); the targets: its
held-out runs above 6e21. The default (the ensemble) through ``forecast DATA``, ``recommend``, the report,
``plan DATA`` and bench; a fixed law (``power_floor``) through ``backtest``, ``fit`` + ``forecast``, ``plan`` and
bench.
"""

import json

import numpy as np
import pytest
from conftest import run_cli

from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.evaluation.bench import Dataset, bench
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.answers import forecast_default, recommend
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.planning import plan_default
from benchcast.report.analysis import analyse_benchmark

BENCHMARK, METRIC, TPR, FLOOR, CUTOFF = "arc_easy", "acc_norm", 20.0, 3e18, 6e21
POINT, BOUND = 1e-9, 1e-6
SELECTION = ["--tpr", "20", "--min-flops", "3e18"]


@pytest.fixture(scope="module")
def train(apple):
    flops = apple["flops"]
    return apple[(flops >= FLOOR) & (flops <= CUTOFF)]


@pytest.fixture(scope="module")
def benched(apple):
    data = Dataset("dclm", apple, ((BENCHMARK, METRIC),), (CUTOFF,), tpr=TPR, min_flops=FLOOR)
    result = bench([data], ["ensemble", "power_floor"], laws=("power_floor",), n_jobs=1, progress=False)
    assert result.settings["n_boot"] == DEFAULT_REPLICATES
    points = result.predictions.sort_values("flops")
    return {name: points[points["strategy"] == name].reset_index(drop=True) for name in ("ensemble", "power_floor")}


@pytest.fixture(scope="module")
def target(benched):
    row = benched["ensemble"].iloc[-1]  # the furthest held-out run
    assert row["decades"] > 0.5 and np.isfinite(row["lower90"])
    return float(row["flops"])


def _same(a: dict, b: dict):
    assert a["prediction"] == pytest.approx(b["prediction"], rel=POINT)
    assert a["lower"] == pytest.approx(b["lower"], abs=BOUND)
    assert a["upper"] == pytest.approx(b["upper"], abs=BOUND)


def _bench_row(benched, name, target) -> dict:
    row = benched[name].drop_duplicates("flops").set_index("flops").loc[target]
    return {"prediction": row["prediction"], "lower": row["lower90"], "upper": row["upper90"]}


def test_default_is_one_answer_from_forecast_recommend_report_and_bench(train, benched, target):
    answers = {"bench": _bench_row(benched, "ensemble", target)}
    # every answer is a row of the one forecast table (Forecast.to_frame), bench's with the truth beside it
    spec = FitSpec("power", BENCHMARK, metric=METRIC, tpr=TPR)
    made = {
        "forecast DATA": forecast_default(train, spec, flops=[target]),
        "recommend": recommend(train, spec, target_flops=target).forecast,
        "report": analyse_benchmark(train, BENCHMARK, METRIC, target_flops=[target], tpr=TPR).forecast,
    }
    answers.update({name: forecast.to_frame().iloc[0] for name, forecast in made.items()})
    first = answers.pop("bench")
    assert first["lower"] < first["prediction"] < first["upper"]
    for name, answer in answers.items():
        assert answer["prediction"] == pytest.approx(first["prediction"], rel=POINT), name
        assert answer["lower90"] == pytest.approx(first["lower"], abs=BOUND), name
        assert answer["upper90"] == pytest.approx(first["upper"], abs=BOUND), name
    rows = list(answers.values())
    assert all(row["flags"] == rows[0]["flags"] for row in rows)
    assert all(forecast.meta.weights == made["report"].meta.weights for forecast in made.values())  # one per forecast


def test_plan_data_inverts_the_same_forecast(train, benched, target):
    """plan DATA at the forecast's score gives back the target's compute, and its interval's ends are where the
    forecast's own 90 % bounds reach that score."""
    row = _bench_row(benched, "ensemble", target)
    plan = plan_default(train, FitSpec("power", BENCHMARK, metric=METRIC, tpr=TPR), target=float(row["prediction"]))
    assert np.log10(plan.needed / target) == pytest.approx(0.0, abs=2e-4)
    assert plan.metric == METRIC and plan.to_dict()["metric"] == METRIC  # which of the benchmark's metrics
    assert plan.lower < target < plan.upper
    # the ensemble plan DATA inverts: every selected run (a compute inside them is read off the same curve)
    ensemble = Ensemble().fit(train, FitSpec("power", BENCHMARK, METRIC, tpr=TPR), progress=False)
    # a bound's crossing, net of its Monte-Carlo noise (it moves between computes a few % apart): the mean of
    # the forecast's upper bound around the plan's lower end is the target
    near = plan.lower * np.array([0.98, 0.99, 1.0, 1.01, 1.02])
    _, upper = ensemble.predict(near, tpr=TPR).interval(0.9)
    assert np.mean(upper) == pytest.approx(row["prediction"], abs=1e-2)
    assert ensemble.predict([plan.lower / 3], tpr=TPR).interval(0.9)[1][0] < row["prediction"] - 1e-2


def test_fixed_law_is_one_answer_from_backtest_forecast_and_bench(apple_path, benched, target, tmp_path):
    answers = {"bench": _bench_row(benched, "power_floor", target)}
    law = ["--law", "power_floor", "-b", BENCHMARK, "-m", METRIC]
    out = run_cli("backtest", apple_path, *law, "--threshold", str(CUTOFF), *SELECTION, "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = [r for r in doc[0]["predictions"] if r["side"] == "test"]
    held = next(r for r in rows if r["flops"] == pytest.approx(target, rel=1e-12))
    answers["backtest"] = {"prediction": held["prediction"], "lower": held["lower90"], "upper": held["upper90"]}
    fit = tmp_path / "pf.json"
    made = run_cli("fit", apple_path, *law, "--max-flops", str(CUTOFF), *SELECTION, "--out", fit)
    assert made.exit_code == 0, made.stderr
    out = run_cli("forecast", fit, "--flops", str(target), "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    answers["forecast ARTIFACT"] = {
        "prediction": doc["prediction"][0],
        "lower": doc["lower"][0],
        "upper": doc["upper"][0],
    }
    first = answers["bench"]
    assert first["lower"] < first["prediction"] < first["upper"]
    for answer in answers.values():
        _same(answer, first)
