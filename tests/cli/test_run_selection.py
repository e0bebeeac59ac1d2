"""A researcher's own ladder, safely (issue 32, items 1-4), run in-process on a ladder built here like a real
one: 5 sizes x 3 token multipliers whose ratios are those of rounded sizes (10.02, 20.013, 39.97), FLOPs
counted as 1.3 x 6 N D, and 7B and 13B runs in the same file.

1. every command that fits takes the same run selection, and a target at a fitted run, inside the fitted
   runs or below them is flagged;
2. a planned run (--params/--tokens) sits at the file's own FLOPs convention (or --flops-per-6nd), said;
3. --tpr matches within 1 %, and lists the ratios present when none does;
4. a NaN score is a row dropped with its reason, counted.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from benchcast.cli import app

SIZES = (190e6, 300e6, 470e6, 760e6, 1.3e9)
TPRS = (10.02, 20.013, 39.97)  # a ladder's ratios: of rounded sizes, not exactly 10, 20, 40
FACTOR = 1.3  # the file counts FLOPs as 1.3 x 6 N D (attention and embeddings, say)
N13, D13 = 13202396160.0, 5e12  # the 13B run of the file (r16)
N_SMALL, D_SMALL = 1.3e9, 1.3e9 * 20.013  # the 1.3B run at TPR 20 (r13)


def ladder(nan: bool = False) -> pd.DataFrame:
    """The ladder's tidy rows: one benchmark, its chance level in a column; with ``nan``, run r03's score NaN
    and no 7B and 13B runs."""
    rng = np.random.default_rng(0)
    runs = [(n, n * t) for n in SIZES for t in TPRS]
    if not nan:
        runs += [(6.9e9, 6.9e9 * 20.013), (N13, D13)]
    rows = []
    for i, (n, d) in enumerate(runs):
        c = FACTOR * 6 * n * d
        acc = 0.25 + 0.6 / (1 + (c / 3e20) ** -0.35) + rng.normal(0, 0.004)
        rows.append(dict(run=f"r{i:02d}", params=n, tokens=d, flops=c, benchmark="hellaswag", metric="acc", value=acc))
    frame = pd.DataFrame(rows).assign(q_rand=0.25)
    if nan:
        frame.loc[3, "value"] = np.nan
    return frame


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ladder")
    paths = {"ladder": folder / "ladder.csv", "nan": folder / "nan.csv"}
    ladder().to_csv(paths["ladder"], index=False)
    ladder(nan=True).to_csv(paths["nan"], index=False)
    return paths


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def as_json(result) -> dict | list:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- item 1: one run selection everywhere, and targets that are no forecast flagged ---------------------------


def _options(command: str) -> set[str]:
    click_app = typer.main.get_command(app)
    return {opt for param in click_app.commands[command].params for opt in param.opts}


@pytest.mark.parametrize("command", ["fit", "forecast", "recommend", "report"])
def test_every_command_that_fits_takes_the_run_selection_of_fit(command):
    assert {"--tpr", "--min-flops", "--max-flops"} <= _options(command)


def test_report_flags_a_target_that_is_a_fitted_run_and_max_flops_leaves_it_out(files, tmp_path):
    """The issue's case: the 13B target is the file's 13B run, which report fitted: said, with what to do."""
    common = ["-b", "hellaswag", "-m", "acc", "-N", N13, "-D", D13, "--n-boot", 20, "--json"]
    fitted = as_json(run("report", files["ladder"], *common, "-o", tmp_path / "a.html"))["benchmarks"][0]
    row = fitted["forecasts"][0]
    assert "the target is fitted run 'r16'" in row["flags"] and "--max-flops" in row["flags"]
    assert any("fitted run 'r16'" in w for w in fitted["warnings"])
    assert row["decades"] == pytest.approx(0.0, abs=1e-9)  # at the run itself, not 0.11 decades below it
    held = run("report", files["ladder"], *common, "--max-flops", 1e22, "-o", tmp_path / "b.html")
    row = as_json(held)["benchmarks"][0]["forecasts"][0]
    assert "the target is fitted run" not in row["flags"]
    assert row["decades"] == pytest.approx(np.log10(D13 * N13 / (6.9e9**2 * 20.013)), rel=1e-6)  # beyond the 7B run


def test_forecast_and_recommend_fit_only_runs_within_max_flops(files):
    common = ["-b", "hellaswag", "-m", "acc", "--tpr", 20, "--n-boot", 20, "--json"]
    row = as_json(run("forecast", files["ladder"], "--flops", 1e22, "--max-flops", 3e20, *common))["forecasts"][0]
    # the largest run fitted is the largest at or below 3e20: 1.3B at TPR 20 (2.64e20 FLOPs)
    assert "beyond the largest fitted run (2.64e+20 FLOPs" in row["flags"]
    rec = as_json(run("recommend", files["ladder"], "--target-flops", 1e22, "--max-flops", 3e20, *common))
    assert rec["forecast"]["prediction"] == pytest.approx(row["prediction"], rel=1e-12)  # one answer


def test_forecasts_inside_or_below_the_fitted_runs_are_flagged(files, tmp_path):
    fit_file = tmp_path / "power.json"
    assert run("fit", files["ladder"], "-b", "hellaswag", "-m", "acc", "--tpr", 20, "--out", fit_file).exit_code == 0
    out = as_json(
        run("forecast", fit_file, "--flops", 1e20, "--flops", 1e17, "--flops", 1e23, "--n-boot", 20, "--json")
    )
    inside, below, beyond = ([f["kind"] for f in point] for point in out["flags"])
    assert "interpolation" in inside and "below the data" in below
    assert not {"interpolation", "below the data", "at a fitted run"} & set(beyond)
    predicted = as_json(run("predict", fit_file, "--flops", 1e17, "--json"))
    reason = predicted["flags"][0][0]["reason"]
    assert predicted["flags"][0][0]["kind"] == "below the data" and reason.startswith("1.75 decades of compute below")


# -- item 2: a planned run sits at the file's FLOPs convention -------------------------------------------------


def test_a_planned_run_sits_at_the_files_own_flops_convention(files):
    common = ["-b", "hellaswag", "-m", "acc", "-N", N_SMALL, "-D", D_SMALL, "--n-boot", 20, "--json"]
    row = as_json(run("forecast", files["ladder"], *common))["forecasts"][0]
    assert row["flops"] == pytest.approx(FACTOR * 6 * N_SMALL * D_SMALL, rel=1e-9)  # the r13 run's own FLOPs
    assert row["flops_convention"].startswith("C = 1.3 x 6 N D: the file's own convention")
    given = as_json(run("forecast", files["ladder"], *common, "--flops-per-6nd", 1))["forecasts"][0]
    assert given["flops"] == pytest.approx(6 * N_SMALL * D_SMALL, rel=1e-12)
    assert given["flops_convention"] == "C = 1 x 6 N D (given: --flops-per-6nd)"
    printed = run("forecast", files["ladder"], *common[:-1])
    assert "planned runs placed at C = 1.3 x 6 N D" in printed.stdout


def test_an_artifact_forecast_places_a_planned_run_by_the_fits_runs_and_draws_it_there(files, tmp_path):
    from benchcast.fitting.result import FitResult
    from benchcast.forecasting.answers import forecast
    from benchcast.plots.results import forecast_x

    fit_file = tmp_path / "power.json"
    assert run("fit", files["ladder"], "-b", "hellaswag", "-m", "acc", "--tpr", 20, "--out", fit_file).exit_code == 0
    out = forecast(FitResult.load(fit_file), n_boot=20, params=N_SMALL, tokens=D_SMALL)
    assert out.flags[0][0].kind == "at a fitted run"  # the r13 run, at its own 1.3 x 6ND FLOPs
    assert out.remarks[0].startswith("planned runs placed at C = 1.3 x 6 N D: the fit's runs' convention")
    x, label = forecast_x(out.query, out.runs.flops)
    assert x[0] == pytest.approx(FACTOR * 6 * N_SMALL * D_SMALL, rel=1e-9) and "6 N D (FLOPs)" not in label
    by_compute = forecast(FitResult.load(fit_file), n_boot=20, flops=FACTOR * 6 * N_SMALL * D_SMALL)
    assert out.prediction[0] == pytest.approx(by_compute.prediction[0], rel=1e-12)  # a compute law: that C


def test_flops_per_6nd_without_a_planned_run_is_refused(files):
    result = run("forecast", files["ladder"], "-b", "hellaswag", "-m", "acc", "--flops", 1e22, "--flops-per-6nd", 1.2)
    assert result.exit_code == 2
    assert "--flops-per-6nd" in result.output and "--params N --tokens D" in result.output


# -- item 3: --tpr within a stated tolerance -------------------------------------------------------------------


def test_tpr_matches_a_ladders_ratio_within_one_percent(files):
    fit = as_json(run("fit", files["ladder"], "-b", "hellaswag", "-m", "acc", "--tpr", 20, "--json"))
    assert fit["diagnostics"]["n_used"] == 6  # the five sizes and the 7B at 20.013 tokens per parameter


def test_tpr_that_matches_nothing_lists_the_ratios_present(files):
    result = run("fit", files["ladder"], "-b", "hellaswag", "-m", "acc", "--tpr", 25)
    assert result.exit_code == 2
    assert "tpr=25 (matched within 1%)" in result.output
    assert "ratios present are 10.02, 20.013, 39.97, 378.72" in result.output and "--tpr" in result.output


# -- item 4: a NaN score is a dropped row, counted with its reason ---------------------------------------------


def test_a_nan_score_is_counted_as_dropped_with_its_reason(files):
    fit = as_json(run("fit", files["nan"], "--law", "nd_floor", "-b", "hellaswag", "-m", "acc", "--json"))
    assert (fit["diagnostics"]["n_used"], fit["diagnostics"]["n_dropped"]) == (14, 1)
    assert fit["diagnostics"]["dropped_reasons"] == {"score is NaN": 1}
    assert [d["run"] for d in fit["dropped"]] == ["r03"]
    printed = run("fit", files["nan"], "--law", "nd_floor", "-b", "hellaswag", "-m", "acc")
    assert "points: 14 used, 1 dropped (score is NaN: 1)" in printed.stdout
    assert as_json(run("inspect", files["nan"], "--json"))["rows_without_value"] == 1
    assert "1 row(s) without a value (a NaN score)" in run("inspect", files["nan"]).stdout


def test_a_nan_score_is_counted_only_where_its_run_is_selected(files):
    """The drop follows the run selection (--tpr, --min-flops) and the runs a forecast sees."""
    at_20 = as_json(run("fit", files["nan"], "-b", "hellaswag", "-m", "acc", "--tpr", 20, "--json"))
    assert at_20["diagnostics"]["n_dropped"] == 0  # r03 is at TPR 10
    at_10 = as_json(run("fit", files["nan"], "-b", "hellaswag", "-m", "acc", "--tpr", 10, "--json"))
    assert at_10["diagnostics"]["dropped_reasons"] == {"score is NaN": 1}
    above = as_json(run("fit", files["nan"], "-b", "hellaswag", "-m", "acc", "--min-flops", 1e19, "--json"))
    assert above["diagnostics"]["n_dropped"] == 0  # r03 has 7.0e18 FLOPs


def test_a_backtest_counts_a_held_out_run_without_a_score_and_scores_the_rest(files):
    table = ladder(nan=True)
    table.loc[table["run"] == "r14", "value"] = np.nan  # the largest run, held out
    from benchcast import load
    from benchcast.evaluation.backtest import backtest
    from benchcast.fitting.spec import FitSpec

    path = files["nan"].with_name("nan_top.csv")
    table.to_csv(path, index=False)
    bt = backtest(load(path), FitSpec("nd_floor", "hellaswag", "acc"), threshold=2e20)
    assert bt.metrics["n_test_without_score"] == 1 and bt.metrics["n_test"] == 1  # r13 is scored, r14 counted
    assert np.isfinite(bt.metrics["test_mre"])
    assert bt.fit.diagnostics.dropped_reasons == {"score is NaN": 1}  # r03, on the training side
    assert bt.drop_notes() == [
        "nd_floor: 1 training row(s) dropped (score is NaN)",
        "nd_floor: 1 held-out run(s) without a score (NaN), not scored",
    ]
    printed = run(
        "backtest", path, "--law", "nd_floor", "-b", "hellaswag", "-m", "acc", "--threshold", 2e20, "--n-boot", 0
    )
    assert "nd_floor: 1 training row(s) dropped (score is NaN)" in printed.stdout
