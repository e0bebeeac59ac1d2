"""What the terminal says where a value does not exist, where a bound is reached and where a data
set has many subtasks: no 'nan' text, a constraint said once as information, subtasks grouped."""

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from benchcast.cli import app
from benchcast.cli.core import subtask_families

ROOT = Path(__file__).resolve().parents[2]
PYTHIA = ROOT.parent / "shared" / "data" / "pythia" / "zero-shot"
FINAL = ROOT / "examples" / "pythia" / "runs.yaml"
WIDE = {"COLUMNS": "250"}


def invoke(*args):
    result = CliRunner().invoke(app, [str(a) for a in args], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def test_no_nan_text_where_a_value_does_not_exist(apple_path, tmp_path):
    """One k (no trend over k), beta rows (no interval), a fit and its forecasts."""
    fit_file = tmp_path / "arc.json"
    outputs = {
        "fit": invoke("fit", apple_path, "-l", "power", "-b", "arc_easy", "-m", "acc_norm", "--out", fit_file),
        "predict": invoke("predict", fit_file, "--flops", "1e22"),
        "kscan": invoke("kscan", apple_path, "--law", "gold", "-b", "triviaqa_1shot", "-m", "exact_match"),
        "passk": invoke("passk", ROOT / "examples" / "samples.csv", "--k", "1,8", "--extrapolate-to", "1000"),
        "inspect": invoke("inspect", apple_path),
    }
    for command, output in outputs.items():
        assert not re.search(r"\bnan\b", output, re.IGNORECASE), (command, output)  # also 'nan%', '(nan)', '+nan'
    assert "not estimated (fits at fewer than two k)" in outputs["kscan"]
    # past n the chosen candidate has its own interval: the bootstrap over problems widened by the error per decade
    assert "added to the bootstrap over problems" in " ".join(outputs["passk"].split())
    assert "termination condition" not in outputs["fit"]


def test_a_constraint_is_said_once_and_is_not_a_warning(apple_path):
    output = invoke("fit", apple_path, "-l", "bnsl_monotone", "-b", "arc_challenge", "-m", "acc")
    assert output.count("the constraint a ≤ 1 is active") == 1
    # the fit's one warning is that a law of compute alone read the file's five TPRs as one curve (issue 32)
    before, _, warned = output.lower().partition("warnings:")
    assert "(constraint active)" in output and "warning" not in before
    assert "constraint" not in warned and "compute alone fitted across 5" in " ".join(warned.split())


def test_a_search_limit_warning_is_printed_once(apple_path):
    """The unrestricted BNSL on DCLM gsm8k: its exponent before the break runs to -3."""
    output = invoke("fit", apple_path, "-l", "bnsl", "-b", "gsm8k_cot_llama", "-m", "exact_match", "--tpr", "20")
    assert output.count("parameter c0 reached the lower limit -3 of its search range") == 1


def test_subtasks_are_grouped_into_families():
    names = ["arc_easy", "arc_challenge", *(f"hendrycksTest-{s}" for s in "abcdef"), "crows_pairs_english"]
    names += [f"crows_pairs_english_{s}" for s in ("age", "gender", "race", "religion")]
    families = subtask_families(names)
    assert families == {
        "crows_pairs_english_*": [
            "crows_pairs_english",
            *(f"crows_pairs_english_{s}" for s in ("age", "gender", "race", "religion")),
        ],
        "hendrycksTest-*": [f"hendrycksTest-{s}" for s in "abcdef"],
    }


@pytest.mark.skipif(not PYTHIA.exists(), reason=f"shared data not found at {PYTHIA}")
def test_inspect_of_pythia_shows_the_usable_benchmarks_and_the_families():
    grouped = invoke("inspect", PYTHIA, "--metadata", FINAL)
    assert "hendrycksTest-* (MMLU): 57 subtasks" in grouped and "crows_pairs_* (CrowS-Pairs): 22 subtasks" in grouped
    assert "hendrycksTest-anatomy" not in grouped and "│ arc_easy" in grouped
    assert "--all lists every row" in grouped
    every = invoke("inspect", PYTHIA, "--metadata", FINAL, "--all")
    assert "hendrycksTest-anatomy" in every and "subtasks" not in every
