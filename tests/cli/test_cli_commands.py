"""Every analysis command run as a user runs it (in-process, `run_cli`) on a small synthetic ladder whose
true laws are known, so the printed numbers can be checked against them."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import law_table
from conftest import run_cli as run

import benchcast as bc

FLOPS = np.geomspace(1e18, 1e23, 16)
POWER = [5000.0, 0.19]  # -log Q = A C^-alpha on a generative metric (chance 0)
S1 = {1: [0.2, 3e4, 0.22], 4: [0.05, 1e4, 0.24]}  # compute law per k


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    path = tmp_path_factory.mktemp("ladder") / "ladder.csv"
    score = law_table("power", POWER, {"flops": FLOPS}, metric="exact_match", benchmark="qa")
    frames = [score]
    for k, theta in S1.items():
        rows = law_table("compute", theta, {"flops": FLOPS, "k": np.full(16, k)}, metric="pass@k", benchmark="code")
        frames.append(rows)
    pd.concat(frames, ignore_index=True)[["run", "flops", "benchmark", "metric", "k", "value"]].to_csv(
        path, index=False
    )
    return path


def test_sweep_finds_no_failure_on_an_exact_law(ladder, tmp_path):
    proc = run(
        "sweep", ladder, "-l", "power", "-b", "qa", "-m", "exact_match", "--n-boot", "0", "--out", tmp_path, "--json"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = [r for r in doc["sweep"] if r.get("test_mre") is not None]
    assert rows and max(r["test_mre"] for r in rows) < 1e-6  # exact data: every threshold succeeds
    assert (tmp_path / "sweep.csv").exists() and (tmp_path / "sweep.png").stat().st_size > 5000


def test_cutoff_recovers_the_law_at_every_cutoff(ladder, tmp_path):
    proc = run(
        "cutoff",
        ladder,
        "-l",
        "compute",
        "-b",
        "code",
        "-m",
        "pass@k",
        "--k",
        "4",
        "--n-boot",
        "0",
        "--out",
        tmp_path,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    cutoffs = json.loads(proc.stdout)[0]["cutoffs"]
    assert len(cutoffs) >= 5 and all(c["extrapolation_decades"] > 0 for c in cutoffs)
    for row in cutoffs:
        assert row["alpha"] == pytest.approx(S1[4][2], rel=1e-4) and row["mre"] < 1e-4


def test_kscan_reports_each_k(ladder, tmp_path):
    proc = run("kscan", ladder, "--law", "compute", "-b", "code", "--out", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    scan = {row["k"]: row for row in json.loads(proc.stdout)["scan"]}
    assert set(scan) == set(S1)
    for k, (floor, _scale, alpha) in S1.items():
        assert scan[k]["E0"] == pytest.approx(floor, rel=1e-4) and scan[k]["alpha"] == pytest.approx(alpha, rel=1e-4)
    assert (tmp_path / "kscan-compute-code.png").exists()


def test_optimal_and_its_argument_errors(tmp_path):
    n = np.geomspace(5e7, 3e9, 6)
    params = np.repeat(n, 3)
    tokens = params * np.tile([10.0, 40.0, 160.0], 6)
    table = law_table(
        "params_tokens",
        [0.1, 300.0, 0.3, 900.0, 0.28],
        {"params": params, "tokens": tokens, "k": np.ones(18)},
        metric="pass@k",
    )
    path = bc.fit(table, "params_tokens", "synthetic", "pass@k", 1).save(tmp_path / "s2.json")
    proc = run("optimal", path, "--flops", "1e22", "--params", "1e9", "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["optimal_params"] * plan["optimal_tokens"] * 6 == pytest.approx(1e22)
    for args, message in (
        (["--flops", "-1e22"], "flops must be a positive finite number"),
        (["--flops", "nan"], "flops must be a positive finite number"),
        (["--flops", "1e22", "--params", "0"], "params must be a positive finite number"),
        (["--flops", "1e20", "--params", "1e20"], "cannot train"),
    ):
        proc = run("optimal", path, *args)
        assert proc.returncode == 2 and message in " ".join(proc.stderr.split()), (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_plan_and_forecast_argument_errors(tmp_path):
    table = law_table("power", POWER, {"flops": FLOPS}, q_rand=0.25, metric="acc")
    path = bc.fit(table, "power", "synthetic", "acc", q_rand=0.25).save(tmp_path / "p.json")
    for command, args, message in (
        ("plan", ["--target", "0.2"], "at or below the chance level"),
        ("plan", ["--target", "0.8", "--level", "2"], "interval level must lie strictly between 0 and 1"),
        ("plan", ["--target", "0.8", "--n-boot", "1"], "at least 10 bootstrap replicates"),
        ("forecast", ["--flops", "1e22", "--n-boot", "0"], "at least 10 bootstrap replicates"),
        ("forecast", ["--flops", "nan"], "flops must be positive and finite"),
        ("forecast", ["--flops", "1e22", "--jobs", "-4"], ("greater than or equal to 1", "not in the range x>=1")),
    ):
        proc = run(command, path, *args)
        assert proc.returncode == 2, (command, args, proc.stdout, proc.stderr)
        text = " ".join(proc.stderr.split())  # Click words the range error differently across versions
        assert any(m in text for m in ([message] if isinstance(message, str) else message)), (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_chance_levels_on_every_fitting_command(tmp_path):
    """An unknown multiple-choice chance level is warned about on stderr; --q-rand sets it on every
    command that fits data, and naming a benchmark that is not in the data is an error."""
    flops = np.geomspace(1e18, 1e23, 14)
    score = 0.2 + 0.8 * np.exp(-5000.0 * flops**-0.19)
    path = tmp_path / "quizbowl.csv"
    pd.DataFrame(
        {"run": [f"r{i}" for i in range(14)], "flops": flops, "benchmark": "quizbowl", "metric": "acc", "value": score}
    ).to_csv(path, index=False)
    commands = {
        "fit": ["-b", "quizbowl", "-m", "acc"],
        "backtest": ["-b", "quizbowl", "-m", "acc", "--n-boot", "0", "--threshold", "1e21"],
        "sweep": ["-b", "quizbowl", "-m", "acc", "--n-boot", "0"],
        "cutoff": ["-b", "quizbowl", "-m", "acc", "--n-boot", "0"],
        "recommend": ["-b", "quizbowl", "-m", "acc", "-l", "power", "--n-boot", "0"],
    }
    for command, args in commands.items():
        plain = run(command, path, *args, "--json")
        assert plain.returncode == 0, (command, plain.stderr)
        assert "chance level of quizbowl (acc) is unknown" in " ".join(plain.stderr.split()), command
        given = run(command, path, *args, "--q-rand", "quizbowl=0.2", "--json")
        assert given.returncode == 0 and "unknown" not in given.stderr, (command, given.stderr)
    fitted = json.loads(run("fit", path, "-b", "quizbowl", "-m", "acc", "--q-rand", "0.2", "--json").stdout)
    assert fitted["settings"]["q_rand"] == 0.2 and fitted["params"]["alpha"] == pytest.approx(0.19, rel=1e-6)
    wrong = run("fit", path, "-b", "quizbowl", "-m", "acc", "--q-rand", "csq=0.2")
    assert wrong.returncode == 2 and "'csq', which is not in the data" in wrong.stderr


def test_forecast_on_a_data_file_is_recommends_answer(tmp_path):
    """`forecast DATA -b` forecasts the default strategy exactly as `recommend --target-flops` does;
    a fit artifact stays that law's forecast, and each input refuses the other's options."""
    from benchcast.data.example import example_path

    data = example_path()
    common = ["-b", "arc_easy", "-m", "acc_norm", "--n-boot", "10", "--json"]
    forecast = run("forecast", data, "--flops", "1e22", *common)
    recommend = run("recommend", data, "--target-flops", "1e22", *common)
    assert forecast.returncode == 0 and recommend.returncode == 0, forecast.stderr + recommend.stderr
    row = json.loads(forecast.stdout)["forecasts"][0]
    expected = json.loads(recommend.stdout)["forecast"]
    for key in ("prediction", "lower", "upper"):
        assert row[key] == pytest.approx(expected[key], rel=1e-12)
    assert set(row["weights"]) == {"power_floor", "bnsl_monotone"} and row["weights"] == expected["weights"]
    # the rule, end to end: equal weights where the note says the origins cannot separate the laws, else 1 / error
    advice = json.loads(recommend.stdout)
    note = next(f for f in advice["failures"] if "rolling-origin errors" in f)
    inverse = {r["law"]: 1 / r["inner_msle"] for r in advice["ranking"]}
    rule = {law: 0.5 for law in inverse} if "cannot separate" in note else inverse
    assert row["weights"] == pytest.approx({law: w / sum(rule.values()) for law, w in rule.items()}, rel=1e-9)
    artifact = tmp_path / "fit.json"
    assert run("fit", data, "-l", "power", "-b", "arc_easy", "-m", "acc_norm", "--out", artifact).returncode == 0
    refused = run("forecast", artifact, "--flops", "1e22", "-b", "arc_easy")
    assert refused.returncode == 2 and "-b/--benchmark" in refused.stderr and "fit artifact" in refused.stderr
    no_benchmark = run("forecast", data, "--flops", "1e22")
    assert no_benchmark.returncode == 2 and "not a fit artifact" in no_benchmark.stderr and "-b" in no_benchmark.stderr
    # a planned run is forecast from a data file too (tests/cli/test_cli_targets.py); the gold law's --gold is not
    gold = run("forecast", data, "-b", "arc_easy", "--flops", "1e22", "--gold", "1.5")
    assert gold.returncode == 2 and "--gold" in gold.stderr
    # the refusal names the option it cannot honour, not the --flops it was given ("give --flops C" before)
    assert "not by a gold log-likelihood: drop it" in gold.stderr and "give --flops" not in gold.stderr


def test_interval_option_on_backtest_and_report(tmp_path):
    from benchcast.data.example import example_path

    args = ["backtest", example_path(), "-b", "arc_easy", "-m", "acc_norm", "--threshold", "2e20", "--n-boot", "10"]
    proc = run(*args, "--interval", "bootstrap", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["metrics"]["interval"] == "bootstrap"
    wrong = run(*args, "--interval", "bayes")
    assert wrong.returncode == 2 and "bayes" in wrong.stderr
    off = run(*args[:-2], "--n-boot", "0", "--interval", "bootstrap")
    assert off.returncode == 2 and "--interval" in off.stderr
    report = run("report", "--from", tmp_path, "--interval", "bootstrap")
    assert report.returncode == 2 and "--interval" in report.stderr
