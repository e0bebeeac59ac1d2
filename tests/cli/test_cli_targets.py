"""`forecast`, `recommend` and `report` take a planned run as --params N --tokens D (issue 24, item 1):
the same answer as the compute C = 6 N D for compute laws, N and D themselves for laws of N and D, the
run's N, D, C and TPR in every output, and a clear error for a contradictory or half-given run."""

import json

import pytest
from conftest import run_cli as run

from benchcast.data.example import example_path

COMMON = ["-b", "arc_easy", "-m", "acc_norm", "--n-boot", "10", "--json"]


def test_forecast_of_a_planned_run_is_the_forecast_at_its_compute():
    """The default strategy's laws are compute laws: --params N --tokens D = --flops 6ND, and says so."""
    data = example_path()
    by_size = run("forecast", data, "--params", "1e10", "--tokens", "2e11", *COMMON)
    by_compute = run("forecast", data, "--flops", "1.2e22", *COMMON)
    assert by_size.returncode == 0 and by_compute.returncode == 0, by_size.stderr + by_compute.stderr
    row, expected = json.loads(by_size.stdout)["forecasts"][0], json.loads(by_compute.stdout)["forecasts"][0]
    for key in ("prediction", "lower", "upper"):
        assert row[key] == expected[key]
    assert (row["flops"], row["params"], row["tokens"], row["tpr"], row["given"]) == (
        1.2e22,
        1e10,
        2e11,
        20.0,
        "params_tokens",
    )
    assert expected["params"] is None and expected["tpr"] is None and expected["given"] == "flops"
    ignores = "C = 6ND (ignores tokens per parameter)"
    assert row["covariates"] == {"power_floor": ignores, "bnsl_monotone": ignores}
    assert "TPR" not in row["flags"]  # TPR 20: the ladder's own
    printed = run("forecast", data, "--params", "1e10", "--tokens", "2e11", *COMMON[:-1])
    assert printed.returncode == 0, printed.stderr
    text = " ".join(printed.stdout.split())
    assert "C (FLOPs) ┃ N ┃ D ┃ TPR" in text and f"covariates: power_floor: {ignores}" in text


def test_recommend_gives_a_law_of_n_and_d_the_planned_run(apple_path):
    """recommend --law nd: --params N --tokens D = --target-flops 6ND placed at the selection's TPR 20
    (N and D are the split's exactly); a compute law beside it says it ignores the allocation."""
    args = ["recommend", apple_path, "--law", "nd", "--law", "power_floor", "--tpr", "20", *COMMON]
    by_size = run(*args, "--params", "2e10", "--tokens", "4e11")
    by_compute = run(*args, "--target-flops", "4.8e22")
    assert by_size.returncode == 0 and by_compute.returncode == 0, by_size.stderr + by_compute.stderr
    forecast, expected = json.loads(by_size.stdout)["forecast"], json.loads(by_compute.stdout)["forecast"]
    for key in ("prediction", "lower", "upper"):
        assert forecast[key] == pytest.approx(expected[key], rel=1e-12)
    assert forecast["covariates"] == {"nd": "N, D", "power_floor": "C = 6ND (ignores tokens per parameter)"}
    assert expected["covariates"] == {"nd": "N, D (C split at TPR 20)", "power_floor": "C"}
    assert (forecast["flops"], forecast["params"], forecast["tokens"], forecast["tpr"]) == (4.8e22, 2e10, 4e11, 20.0)
    far = run(*args, "--params", "7e9", "--tokens", "4e12")  # TPR 571: beyond the TPR-20 runs fitted
    assert far.returncode == 0, far.stderr
    assert (
        "flagged: target TPR 571 lies outside the fitted runs' TPR (20); power_floor (compute only) ignore(s) the "
        "allocation; nd extrapolate(s) in TPR"
    ) in json.loads(far.stdout)["forecast"]["flags"]


def test_report_shows_the_planned_run(tmp_path):
    out = tmp_path / "report.html"
    proc = run(
        "report",
        example_path(),
        "-b",
        "arc_easy:acc_norm",
        "--params",
        "1e10",
        "--tokens",
        "2e11",
        "--n-boot",
        "10",
        "-o",
        out,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    bench = json.loads(proc.stdout)["benchmarks"][0]
    row = bench["forecasts"][0]
    assert (row["flops"], row["params"], row["tokens"], row["tpr"], row["given"]) == (
        1.2e22,
        1e10,
        2e11,
        20.0,
        "params_tokens",
    )
    ignores = "C = 6ND (ignores tokens per parameter)"
    assert bench["covariates"] == {"power_floor": ignores, "bnsl_monotone": ignores}
    page = out.read_text(encoding="utf-8")
    # the summary names the planned run by a short key (its words above the table, not in every header)
    assert "forecast @ T1" in page and "T1 = 1e+10 parameters on 2e+11 tokens (C = 1.2e+22 FLOPs, TPR 20)" in page
    assert "Covariates each law was given at the targets: power_floor: C = 6ND" in page


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["forecast", "DATA", "-b", "arc_easy", "--flops", "1e22", "--params", "1e9", "--tokens", "2e10"], "not both"),
        (["forecast", "DATA", "-b", "arc_easy", "--params", "1e9"], "--params was given without --tokens"),
        (["forecast", "DATA", "-b", "arc_easy", "--tokens", "2e10"], "--tokens was given without --params"),
        (
            ["forecast", "DATA", "-b", "arc_easy", "--params", "1e9", "--params", "2e9", "--tokens", "2e10"],
            "got 2 --params and 1 --tokens",
        ),
        (["forecast", "DATA", "-b", "arc_easy", "--params", "1e9", "--tokens", "0"], "tokens must be positive"),
        (["recommend", "DATA", "-b", "arc_easy", "--tokens", "2e10"], "--tokens was given without --params"),
        (
            ["recommend", "DATA", "-b", "arc_easy", "--target-flops", "1e22", "--params", "1e9", "--tokens", "2e10"],
            "by their compute (--target-flops C) or as planned runs",
        ),
        (["report", "DATA", "-b", "arc_easy", "-C", "1e22", "--params", "1e9", "--tokens", "2e10"], "not both"),
        (["report", "DATA", "-b", "arc_easy", "--params", "1e9"], "--params was given without --tokens"),
        (["report", "--from", ".", "--params", "1e9", "--tokens", "2e10"], "-N/--params"),
    ],
)
def test_a_contradictory_or_half_given_run_is_refused(args, message):
    proc = run(*(example_path() if a == "DATA" else a for a in args))
    assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
    assert message in " ".join(proc.stderr.split()) and "Traceback" not in proc.stderr


def test_a_fit_artifact_refuses_compute_with_a_planned_run(tmp_path):
    artifact = tmp_path / "fit.json"
    fitted = run("fit", example_path(), "-l", "power", "-b", "arc_easy", "-m", "acc_norm", "--out", artifact)
    assert fitted.returncode == 0, fitted.stderr
    proc = run("forecast", artifact, "--flops", "1e22", "--params", "1e9", "--tokens", "2e10")
    assert proc.returncode == 2 and "not both" in proc.stderr
    by_size = run("forecast", artifact, "--params", "1e10", "--tokens", "2e11", "--n-boot", "10", "--json")
    by_compute = run("forecast", artifact, "--flops", "1.2e22", "--n-boot", "10", "--json")
    assert by_size.returncode == 0 and by_compute.returncode == 0, by_size.stderr + by_compute.stderr
    assert json.loads(by_size.stdout)["prediction"] == json.loads(by_compute.stdout)["prediction"]
    # the example ladder is at TPR 20, as this run: the law says what it was given, and nothing is flagged
    assert json.loads(by_size.stdout)["notes"] == [
        "planned runs placed at C = 6 N D (the fitted runs' FLOPs are 6 N D)"
    ]
    assert json.loads(by_size.stdout)["covariates"] == {"power": "C = 6ND (ignores tokens per parameter)"}
    assert "notes" not in json.loads(by_compute.stdout)
    far = run("forecast", artifact, "--params", "7e9", "--tokens", "4e12", "--n-boot", "10")
    assert far.returncode == 0, far.stderr
    text = " ".join(far.stdout.split())
    assert "N=7e+09, D=4e+12, TPR 571" in text
    assert "flagged: target TPR 571 lies outside the fitted runs' TPR (20); power (compute only) ignore(s)" in text


def test_recommend_reads_benchmark_colon_metric_as_forecast_does():
    """-b NAME:METRIC is -b NAME -m METRIC (the README's form), for recommend as for forecast; a different -m beside
    it is refused."""
    data = example_path()
    common = ["--law", "power", "--law", "power_floor", "--target-flops", "1e22", "--n-boot", "10", "--json"]
    colon = run("recommend", data, "-b", "arc_easy:acc_norm", *common)
    split = run("recommend", data, "-b", "arc_easy", "-m", "acc_norm", *common)
    assert colon.returncode == 0 and split.returncode == 0, colon.stderr + split.stderr
    assert json.loads(colon.stdout)["forecast"]["prediction"] == json.loads(split.stdout)["forecast"]["prediction"]
    both = run("recommend", data, "-b", "arc_easy:acc_norm", "-m", "acc", *common)
    assert both.returncode == 2 and "names metric 'acc_norm' and -m names 'acc'" in both.stderr


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        (
            ["--params", "7000", "--tokens", "4e12"],
            "--params 7000 is below 1e+05, smaller than any language model - it looks like millions of parameters?",
        ),
        (["--params", "7e9", "--tokens", "4000"], "--tokens 4000 is below 1e+05"),
    ],
)
def test_a_planned_run_in_millions_gets_the_unit_hint(given, hint):
    for command in ("forecast", "recommend"):
        out = run(command, example_path(), "-b", "arc_easy:acc_norm", *given, "--n-boot", "10")
        assert out.returncode == 2 and hint in out.stderr, out.stderr
