"""The CLI, run in-process as a user runs it (`run_cli`; one test starts the installed entry point as a
new process); user errors exit 2 without a traceback."""

import json
import subprocess
import sys

import pytest
from conftest import run_cli as run

F = None


@pytest.fixture(scope="module")
def data(apple_path):
    return apple_path


def test_help_lists_commands():
    """A new process, as a shell starts it (`python -m benchcast` runs the console script's main())."""
    proc = subprocess.run([sys.executable, "-m", "benchcast", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    for command in ("fit", "predict", "laws", "inspect", "example", "backtest"):
        assert command in proc.stdout
    version = subprocess.run([sys.executable, "-m", "benchcast", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("benchcast ")


@pytest.mark.parametrize(
    "args",
    [
        ["--law", "power", "--benchmark", "arc_easy", "--metric", "acc_norm", "--max-flops", "6e21"],
        ["--law", "nd", "--benchmark", "arc_easy", "--metric", "acc_norm", "--max-flops", "6e21"],
        ["--law", "bnsl", "--benchmark", "arc_easy", "--metric", "acc_norm", "--max-flops", "6e21"],
        ["--law", "passk_compute", "--benchmark", "humaneval-py"],
        ["--law", "compute", "--benchmark", "humaneval-py", "--k", "8"],
    ],
)
def test_fit_on_real_data_json(data, args):
    proc = run("fit", data, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["law"] == args[1] and doc["diagnostics"]["n_used"] > 5
    assert all(isinstance(v, float) for v in doc["params"].values())


def test_fit_then_predict(data, tmp_path):
    out = tmp_path / "fit.json"
    assert run("fit", data, "--law", "power", "-b", "arc_easy", "-m", "acc_norm", "--out", out).returncode == 0
    proc = run("predict", out, "--flops", "1e22", "--json")
    assert proc.returncode == 0
    value = json.loads(proc.stdout)["prediction"][0]
    proc2 = run("predict", out, "--params", "1e9", "--tokens", str(1e22 / 6e9), "--json")
    assert json.loads(proc2.stdout)["prediction"][0] == pytest.approx(value, rel=1e-12)


def test_laws_and_inspect(data):
    laws = json.loads(run("laws", "--json").stdout)
    names = {law["name"] for law in laws}
    assert {
        "power",
        "power_floor",
        "bnsl",
        "nd",
        "passk_compute",
        "two_stage_linear",
        "two_stage_logistic",
        "compute",
        "params_tokens",
        "gold",
    } <= names
    info = json.loads(run("inspect", data, "--json").stdout)
    assert info["runs"] == 149 and "humaneval-py" in info["benchmarks"]


def _bad_csv(tmp_path, text):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "content, args, message",
    [
        ("run,params,tokens,benchmark,metric\na,1e8,1e9,x,acc\n", [], "missing required column"),
        ("run,params,tokens,benchmark,metric,value\na,huge,1e9,x,acc,0.5\n", [], "'params' must be numeric"),
        ("run,params,tokens,benchmark,metric,value\na,1e8,0,x,acc,0.5\n", [], "'tokens' must be positive"),
        ("run,params,tokens,benchmark,metric,value\na,1e8,1e9,x,acc,1.5\n", [], "must lie in [0, 1]"),
    ],
)
def test_bad_input_exits_2(tmp_path, content, args, message):
    proc = run("fit", _bad_csv(tmp_path, content), "--law", "power", "-b", "x", "-m", "acc", *args)
    assert proc.returncode == 2
    assert message in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["-b", "arc_eazy", "-m", "acc"], "Did you mean 'arc_easy'"),
        (["-b", "arc_easy", "-m", "acc_nrom"], "Did you mean 'acc_norm'"),
        (["-b", "arc_easy", "-m", "acc", "--max-flops", "1e10"], "no rows"),
        (["-b", "arc_easy", "-m", "acc", "--law", "powr"], "unknown law 'powr'"),
        (["-b", "humaneval-py", "--law", "compute"], "choose k"),
        (["-b", "arc_easy", "-m", "acc", "--format", "xlsx"], "unknown format"),
    ],
)
def test_selection_errors_exit_2(data, args, message):
    proc = run("fit", data, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr


def test_missing_file_and_bad_fit_file(tmp_path):
    proc = run("fit", tmp_path / "none.csv", "-b", "x")
    assert proc.returncode == 2 and "no such file" in proc.stderr
    bad = tmp_path / "f.json"
    bad.write_text("[]")
    proc = run("predict", bad, "--flops", "1e21")
    assert proc.returncode == 2 and "not a benchcast fit" in proc.stderr and "Traceback" not in proc.stderr


def test_predict_needs_covariates(data, tmp_path):
    out = tmp_path / "nd.json"
    run("fit", data, "--law", "nd", "-b", "arc_easy", "-m", "acc_norm", "--out", out)
    proc = run("predict", out, "--flops", "1e22")
    assert proc.returncode == 2 and "needs --params" in proc.stderr


def test_help_shows_literal_brackets():
    """Help text is Rich markup: an unescaped '[ray]' is dropped as a tag, and the install hint
    read "pip install 'benchcast'". Every bracketed word of every command's help must show."""
    import re

    from typer.main import get_command
    from typer.testing import CliRunner

    from benchcast.cli import app

    checked = 0
    for name, command in get_command(app).commands.items():
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        words = {w.replace("\\[", "[") for t in texts for w in re.findall(r"\\?\[[^\]\s]*\]", t)}
        if not words:
            continue
        shown = " ".join(CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "400"}).output.split())
        for word in words:
            assert word in shown, f"{name} --help drops {word!r}"
            checked += 1
    assert checked >= 6  # the --ray option of sweep, bench, forecast, plan, recommend, reproduce


def test_paths_and_names_with_brackets_print_as_they_are(data, tmp_path):
    """Rich reads '[v2]' as a tag: unescaped, a folder 'runs[v2]' was printed as 'runs'."""
    folder = tmp_path / "runs[v2]"
    folder.mkdir()
    copy = folder / "data.csv"
    copy.write_bytes(open(data, "rb").read())
    assert f"{copy}:" in run("inspect", copy).stdout
    out = folder / "fit[a].json"
    proc = run("fit", copy, "--law", "power", "-b", "arc_easy", "-m", "acc_norm", "--max-flops", "6e21", "--out", out)
    assert proc.returncode == 0 and f"saved fit to {out}" in proc.stdout


def _refused(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    text = " ".join(proc.stderr.split())
    for needle in needles:
        assert needle in text, text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--preset", "apple-dclm", "--tpr", "20"], "--tpr cannot be combined with --preset"),
        (["--preset", "apple-dclm", "--min-flops", "1e19"], "--min-flops cannot be combined with --preset"),
        (["--preset", "apple-dclm", "--q-rand", "0.25"], "--q-rand cannot be combined with --preset"),
        (["--preset", "apple-dclm", "--format", "apple"], "--format cannot be combined with --preset"),
        (["--preset", "apple-dclm", "--metadata", "m.yaml"], "--metadata cannot be combined with --preset"),
        (["--preset", "apple-dclm", "--preset", "apple-c4", "--data", "x.csv"], "one --preset and one --data"),
        (["--preset", "apple-dclm", "--data", "x.csv", "--data", "y.csv"], "one --preset and one --data"),
        (["--data", "x.csv", "--format", "tidy", "--format", "apple"], "2 --format for 1 --data"),
        (["--data", "x.csv", "--metadata", "m.yaml", "--metadata", "n.yaml"], "2 --metadata for 1 --data"),
        (["--data", "x.csv", "--threshold", "1e21", "--cutoffs", "2"], "give one or the other"),
        (["--data", "x.csv", "-s", "power", "--candidate", "power_floor"], "none of the --strategy given"),
    ],
)
def test_bench_refuses_options_it_would_drop(args, message):
    _refused(run("bench", *args), message)


def test_bench_candidate_help_names_the_law_used():
    out = " ".join(run("bench", "--help").stdout.split())
    assert "bnsl_monotone" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["-b", "arc_easy", "-m", "acc", "--proxy", "c4:loss"], "--proxy is the covariate of two-stage laws"),
        (["-b", "arc_easy", "-m", "acc", "--max-k", "8"], "--max-k bounds the k"),
        (["-b", "arc_easy", "-m", "acc", "--gold-metric", "nll"], "--gold-metric names the gold law's covariate"),
        (["-b", "humaneval-py", "--law", "passk_compute", "--k", "4"], "fits every k at once"),
        (["-b", "arc_easy", "-m", "acc", "--metadata", "runs.yaml"], "read only for lm-eval results"),
    ],
)
def test_fit_refuses_options_the_law_or_data_cannot_use(data, args, message):
    _refused(run("fit", data, *args), message)


def test_predict_refuses_covariates_the_law_does_not_use(data, tmp_path):
    out = tmp_path / "fit.json"
    assert run("fit", data, "-b", "arc_easy", "-m", "acc", "--out", out).returncode == 0
    _refused(run("predict", out, "-C", "1e22", "--tokens", "1e10"), "function of flops, not of tokens")
    _refused(run("predict", out, "-C", "1e22", "--k", "4"), "not of k")
    _refused(run("predict", out, "-C", "1e22", "--gold", "2"), "not of gold")
    _refused(run("forecast", out, "-C", "1e22", "--gold", "2", "--boot", "10"), "not of gold")
    assert run("predict", out, "-N", "1e9", "-D", "2e10").returncode == 0  # C = 6 N D


def test_passk_refuses_options_without_their_partner(tmp_path):
    samples = tmp_path / "s.csv"
    samples.write_text("problem_id,n,c\n1,10,3\n2,10,5\n")
    _refused(run("passk", samples, "--per-token", "--out", tmp_path / "t.csv"), "give --gold too")
    _refused(run("passk", samples, "--metadata", tmp_path / "m.yaml"), "give --out too")
