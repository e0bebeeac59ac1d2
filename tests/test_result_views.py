"""Every public result type shows itself the one way: ``to_dict()`` is JSON, ``str()`` and
``_repr_html_()`` show its table and the numbers a reader needs (built from real, small fits)."""

import json
import warnings
from dataclasses import replace
from importlib import resources

import numpy as np
import pandas as pd
import pytest
from conftest import law_table

import benchcast as bc
from benchcast import FitSpec, Uncertainty
from benchcast.evaluation.bench import Dataset, bench
from benchcast.fitting.diagnostics import FitDiagnostics
from benchcast.generative.kscan import KScan, kscan
from benchcast.generative.past_n import passk_table
from benchcast.generative.tables import OptimalPlan, PassKTable
from benchcast.laws.envelope import Envelope
from benchcast.studies.example import ExampleResult
from benchcast.studies.krajewski2025 import Reproduction
from benchcast.utils.display import ResultView, format_cell


@pytest.fixture(scope="module")
def ladder() -> pd.DataFrame:
    return bc.load(resources.files("benchcast") / "example_data" / "ladder.csv")


@pytest.fixture(scope="module")
def fitted(ladder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bc.FitWarning)
        return bc.fit(ladder, "power", "arc_easy", "acc_norm")


def shows(view: ResultView, *numbers) -> dict:
    """Assert the views of ``view`` hold a table and each number (as a table cell shows it); return to_dict()."""
    assert isinstance(view, ResultView)
    page, text = view._repr_html_(), str(view)
    assert "<table" in page and view.title in text
    for number in numbers:
        cell = format_cell(number)
        assert cell in page and cell in text, (cell, text)
    doc = view.to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    return doc


def test_fit_result_and_its_diagnostics(fitted):
    d = fitted.diagnostics
    assert isinstance(d, FitDiagnostics) and d.n_used == 15 and d.converged
    doc = shows(fitted)
    assert str(fitted) == fitted.report()  # what the CLI prints, its numbers as lmfit's report shows them
    for name, value in fitted.params.items():
        assert format_cell(value) in fitted._repr_html_() and f"{value:.6g}" in str(fitted)
        assert format_cell(fitted.stderr[name]) in fitted._repr_html_() and f"{fitted.stderr[name]:.3g}" in str(fitted)
    assert doc["diagnostics"]["n_used"] == d.n_used
    page = fitted._repr_html_()
    assert "converged: yes" in page and "at_bound" in page
    assert list(fitted.to_frame().columns) == ["parameter", "value", "stderr", "at_bound"]
    assert shows(d, d.n_used, d.rmse, d.r2) == doc["diagnostics"]


def test_fit_notes_flag_parameters_at_bound():
    flops = np.geomspace(1e18, 1e22, 12)
    table = law_table("compute", [0.0, 2e5, 0.26], {"flops": flops, "k": np.ones(12)}, metric="pass@k")
    result = bc.fit(table, "compute", "synthetic", "pass@k", 1)  # E0 >= 0 is a constraint: no warning
    frame = result.to_frame().set_index("parameter")
    assert frame.loc["E0", "at_bound"] and not frame.loc["alpha", "at_bound"]
    assert any(note.startswith("information: the constraint E0 ≥ 0 is active") for note in result.notes)
    assert "the constraint E0 ≥ 0 is active" in result._repr_html_()


def test_recommendation(ladder):
    rec = bc.recommend(
        ladder,
        FitSpec("power", "arc_easy", metric="acc_norm"),
        laws=["power", "power_floor"],
        target_flops=3e21,
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert rec.supported
    forecast = rec.forecast.records()[0]["prediction"]
    doc = shows(rec, *rec.ranking["inner_mre"], *rec.ranking["tau"])
    for number in (f"{forecast:.4f}", f"{rec.nested_mre:.2f} % MRE"):  # the advice's numbers
        assert number in str(rec) and number in rec._repr_html_()
    assert doc["weights"] == rec.weights and len(doc["ranking"]) == 2
    assert list(rec.to_frame().columns)[:4] == ["law", "inner MRE %", "inner MSLE", "weight"]


def test_forecast_of_several_targets():
    from benchcast.forecasting.bootstrap import Uncertainty
    from benchcast.forecasting.forecast import Forecast, ForecastMeta, make_forecast
    from benchcast.forecasting.targets import planned_runs

    unc = Uncertainty(10, levels=(0.9,))
    made = make_forecast(
        "arc_easy", "ensemble", planned_runs(flops=1e22), [0.8123], [()], unc, meta=ForecastMeta({"power_floor": 0.5})
    )
    made = replace(made, points=made.points.assign(lower90=0.7512, upper90=0.8834))
    meta = ForecastMeta(note="no forecast: no law has support")
    none = make_forecast("arc_easy", "ensemble", planned_runs(flops=1e19), [np.nan], [()], unc, meta=meta)
    result = Forecast.concat([made, none])
    doc = shows(result, 0.8123, 0.7512, 0.8834)
    assert doc["forecasts"][1]["prediction"] is None and doc["strategy"] == "ensemble"
    text = str(result)
    assert "nan" not in text and "—" in text and "no law has support" in text and "power_floor 0.50" in text


def test_recommendation_without_support():
    flops = np.geomspace(1e18, 1e21, 20)
    table = bc.validate(
        pd.DataFrame(
            {
                "run": [f"r{i}" for i in range(20)],
                "flops": flops,
                "benchmark": "hellaswag",
                "metric": "acc_norm",
                "value": 0.25 + 0.001 * np.sin(np.arange(20)),
            }
        )
    )
    rec = bc.recommend(table, FitSpec("power", "hellaswag", metric="acc_norm"), laws=["power"])
    doc = shows(rec)
    assert not doc["supported"] and "No forecast for hellaswag" in str(rec)


def test_bench_result(ladder):
    data = Dataset("ladder", ladder, (("arc_easy", "acc_norm"),), (3e20,))
    result = bench(
        [data],
        ["power", "power[bootstrap]"],
        laws=("power",),
        candidates=("power",),
        uncertainty=Uncertainty(10),
        n_jobs=1,
    )
    board = result.leaderboard.set_index("strategy")
    doc = shows(result)
    for number in (board.loc["power", "mre"], board.loc["power", "width90"]):  # str(): what bench prints, to 3 digits
        assert format_cell(number) in result._repr_html_() and f"{number:.3g}" in str(result)
    assert "bench leaderboard" in result.title
    assert len(doc["rows"]) == len(result.rows) == 2 and doc["leaderboard"][0]["strategy"] == "power"
    assert list(result.to_frame()["strategy"]) == ["power", "power[bootstrap]"]


def test_reproduction_view():
    direct = pd.DataFrame({"benchmark": ["arc_easy", "average"], "power_mre": [1.25, 1.25]})
    study = Reproduction({"direct": direct, "nd": pd.DataFrame()}, {}, {}, 3.5, failures=["nd/x: too few points"])
    # str() is what `reproduce` prints: its tables carry their own titles, with no heading above them
    page, text = study._repr_html_(), str(study)
    assert "<table" in page and study.title in page and "1.25" in page and "1.25" in text
    assert "Direct laws per benchmark" in text and "nothing to show" in text
    doc = study.to_dict()
    assert doc["direct"][0]["power_mre"] == 1.25 and doc["seconds"] == 3.5
    assert "1 job(s) could not run" in str(study) and "nd" in study.notes[0]


def test_kscan_result():
    flops = np.repeat(np.geomspace(1e18, 1e22, 10), 3)
    ks = np.tile([1.0, 4.0, 16.0], 10)
    table = law_table("compute", [0.1, 2e5, 0.26], {"flops": flops, "k": ks}, metric="pass@k", noise=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bc.FitWarning)
        scan = kscan(table, "compute", "synthetic")
    assert isinstance(scan, KScan) and len(scan.fits) == 3
    table_, fits = scan  # unpacks as (table, fits)
    assert table_ is scan.table and fits is scan.fits
    alpha = scan.table["alpha"]
    doc = shows(scan, *alpha, scan.table["r2"].iloc[0])
    assert doc["trend_per_doubling"]["alpha"] == pytest.approx(scan.trends()["alpha"])
    assert "change per doubling of k" in str(scan)


def test_passk_table():
    rng = np.random.default_rng(0)
    counts = pd.DataFrame(
        {"run": "r1", "benchmark": "code", "problem_id": [f"p{i}" for i in range(30)], "n": 10}
    ).assign(c=rng.binomial(10, 0.3, 30))
    table = passk_table(counts, [1, 4], uncertainty=Uncertainty(20, levels=0.9))
    result = PassKTable(table, "samples.csv", 30, 20)
    page, text = result._repr_html_(), str(result)  # the title wraps above the narrow table in text
    assert "<table" in page and result.title in page and "30 problems" in text
    for number in (*table["pass_at_k"], *table["upper"]):
        assert format_cell(number) in page and format_cell(number) in text
    doc = result.to_dict()
    assert doc["rows"] == json.loads(json.dumps(table.to_dict("records"))) and doc["n_problems"] == 30


def test_optimal_plan():
    plan = OptimalPlan(Envelope(E0=0.1, N0=400.0, beta=0.34, D0=2000.0, gamma=0.28).plan(1e22, 3e9))
    page, text = plan._repr_html_(), str(plan)
    assert "<table" in page and plan.title in text and "C = 1e+22" in plan.title
    for key in ("optimal_params", "penalty", "effective_flops"):  # the values are written to 6 digits
        cell = f"{plan.plan[key]:.6g}"
        assert cell in page and cell in text, (key, cell)
    assert f"{np.exp(-plan.plan['neg_log_passk']):.6g}" in text  # pass@k added to -log pass@k
    assert plan.to_dict() == plan.plan and list(plan.to_frame().columns) == ["quantity", "value"]


def test_example_result():
    benchmarks = [
        {
            "benchmark": "arc_easy",
            "metric": "acc_norm",
            "params": {"a": 1.0},
            "n_train": 13,
            "n_test": 4,
            "train_r2": 0.987,
            "test_mae": 0.0123,
            "test_mre": 2.345,
        },
    ]
    forecasts = [
        {"benchmark": "arc_easy", "run": "r16", "flops": 3e21, "true": 0.61, "predicted": 0.6234, "truth_law": 0.618}
    ]
    result = ExampleResult("power", 2e20, benchmarks, forecasts, "out/example.png", "out")
    doc = shows(result, 2.345, 0.987)
    assert "0.6234" in str(result) and "Forecasts for the held-out runs" in str(result)
    assert "figure: out/example.png" in str(result) and "out/example.png" in result._repr_html_()
    assert doc["benchmarks"] == benchmarks and doc["threshold"] == 2e20


def test_comparisons_of_several_laws(ladder):
    """What backtest and sweep print for several laws shows as one page in a notebook."""
    from benchcast.evaluation.backtest import compare_backtests
    from benchcast.evaluation.sweep import compare_sweeps

    specs = [bc.FitSpec(law, "arc_easy", "acc_norm") for law in ("power", "power_floor")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both = compare_backtests(ladder, specs, threshold=2e20)
        swept = compare_sweeps(ladder, specs, thresholds=[1e20, 2e20], progress=False)
    page = both._repr_html_()
    assert page.count("<table") >= 1 and "power_floor" in page and "power_floor" in str(both)
    assert "<table" in swept._repr_html_() and "power_floor" in str(swept)
    json.dumps(both.to_dict()), json.dumps(swept.to_dict())


def test_every_result_type_is_a_view_checked_here():
    """Each ResultView of the package is exercised by a test of this file or of its package's tests:
    a new result type must be added here (and given a test) to pass."""
    import importlib
    import pkgutil

    import benchcast

    for module in pkgutil.walk_packages(benchcast.__path__, "benchcast."):
        if not module.name.startswith(("benchcast.cli", "benchcast.collect", "benchcast.__main__")):
            importlib.import_module(module.name)

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    found = {cls.__name__ for cls in subclasses(ResultView) if cls.__module__.startswith("benchcast.")}
    checked = {
        "FitResult",
        "FitDiagnostics",
        "Recommendation",
        "BenchResult",
        "Reproduction",
        "KScan",
        "PassKTable",
        "OptimalPlan",
        "ExampleResult",
        "BacktestComparison",
        "SweepComparison",  # above
        "Forecast",
        "Plan",  # tests/forecasting/test_intervals_planning.py, tests/cli/test_plan_from_data.py
        "PassKPastN",  # tests/generative/test_past_n.py
        "BacktestResult",
        "Sweep",
        "CutoffResult",  # tests/evaluation/test_backtest.py
        "Comparison",
        "CompareBacktest",  # tests/forecasting/test_compare.py, tests/fitting/test_shared_shape.py
        "RichView",  # the base of the CLI-printed views
    }
    assert found == checked, (found - checked, checked - found)
