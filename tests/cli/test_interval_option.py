"""``--interval bootstrap|extrapolation`` on sweep, cutoff and reproduce: the kind asked for is the kind
used and recorded in --json and the CSV outputs, a wrong kind is refused naming the option, and
--interval with --n-boot 0 (no interval at all) is refused as backtest refuses it."""

import json

import pandas as pd
import pytest
from conftest import run_cli as run

from benchcast.data.example import example_path

LADDER = ["-b", "arc_easy", "-m", "acc_norm"]


def test_sweep_records_the_interval_it_used(tmp_path):
    proc = run("sweep", example_path(), *LADDER, "--n-boot", "10", "--interval", "bootstrap", "-o", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["intervals"].startswith("bootstrap interval coverage from 10 bootstrap replicates")
    assert doc["sweep"] and {row["interval"] for row in doc["sweep"]} == {"bootstrap"}
    assert set(pd.read_csv(tmp_path / "sweep.csv")["interval"]) == {"bootstrap"}
    terminal = run("sweep", example_path(), *LADDER, "--n-boot", "10", "--interval", "bootstrap")
    assert terminal.returncode == 0 and "bootstrap interval coverage in --json" in terminal.stdout


def test_sweep_default_interval_is_extrapolation_and_none_without_boot():
    with_boot = json.loads(run("sweep", example_path(), *LADDER, "--n-boot", "10", "--json").stdout)
    assert {row["interval"] for row in with_boot["sweep"]} == {"extrapolation"}
    without = json.loads(run("sweep", example_path(), *LADDER, "--json").stdout)
    assert all("interval" not in row for row in without["sweep"]) and "not computed" in without["intervals"]


def test_cutoff_records_the_interval_it_used(tmp_path):
    proc = run("cutoff", example_path(), *LADDER, "--n-boot", "10", "--interval", "bootstrap", "-o", tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["interval"] == "bootstrap" and {row["interval"] for row in result["cutoffs"]} == {"bootstrap"}
    # a cutoff too small for any bootstrap refit has no interval, and says why, rather than failing the command
    missing = [row for row in result["cutoffs"] if row["coverage90"] is None]
    assert all("no bootstrap refit is usable" in row["interval_note"] for row in missing)
    assert any(row["coverage90"] is not None for row in result["cutoffs"])
    assert set(pd.read_csv(tmp_path / "cutoff-power-arc_easy.csv")["interval"]) == {"bootstrap"}
    terminal = run("cutoff", example_path(), *LADDER, "--n-boot", "10", "--interval", "bootstrap")
    assert terminal.returncode == 0 and "bootstrap intervals" in terminal.stdout
    default = json.loads(run("cutoff", example_path(), *LADDER, "--n-boot", "10", "--json").stdout)
    assert default[0]["interval"] == "extrapolation"
    none = json.loads(run("cutoff", example_path(), *LADDER, "--n-boot", "0", "--json").stdout)
    assert none[0]["interval"] is None and all("interval" not in row for row in none[0]["cutoffs"])


@pytest.mark.parametrize(
    "command",
    [
        ["sweep", example_path(), *LADDER],
        ["cutoff", example_path(), *LADDER],
        ["reproduce", "krajewski2025", "--data", example_path()],
    ],
    ids=["sweep", "cutoff", "reproduce"],
)
def test_interval_refused_when_wrong_or_without_bootstrap(command):
    wrong = run(*command, "--n-boot", "10", "--interval", "bayes")
    assert wrong.returncode == 2 and "--interval" in wrong.stderr and "bayes" in wrong.stderr
    assert "extrapolation, bootstrap" in wrong.stderr
    off = run(*command, "--n-boot", "0", "--interval", "bootstrap")
    assert off.returncode == 2 and "--interval:" in off.stderr and "--n-boot 0" in off.stderr


def test_reproduce_records_the_interval_it_used(apple_path, tmp_path):
    out = tmp_path / "repro"
    args = ["reproduce", "krajewski2025", "--data", apple_path, "-b", "sciq", "--sweep-threshold", "6e21"]
    proc = run(*args, "--n-boot", "10", "--interval", "bootstrap", "-j", "1", "-o", out, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["intervals"] == {"n_boot": 10, "interval": "bootstrap"}
    assert doc["direct"][0]["interval"] == "bootstrap" and doc["direct"][0]["power_coverage90"] is not None
    assert pd.read_csv(out / "direct.csv")["interval"].iloc[0] == "bootstrap"
    assert json.loads((out / "README.json").read_text())["intervals"]["interval"] == "bootstrap"
