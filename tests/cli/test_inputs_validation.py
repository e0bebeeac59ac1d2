"""No silent nonsense on the data side: sizes, Apple run identity, scores, duplicates, chance levels."""

import warnings

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.data.chance import chance_level, estimate_chance
from benchcast.errors import DataError, DataWarning


def tidy(**overrides) -> pd.DataFrame:
    base = {"run": ["a", "b"], "params": [1e8, 2e8], "tokens": [2e9, 4e9], "benchmark": ["x", "x"]}
    base |= {"metric": ["acc", "acc"], "value": [0.3, 0.4]}
    return pd.DataFrame(base | overrides)


@pytest.mark.parametrize("text", ["inf", "1e400", "-inf"])
def test_infinite_sizes_are_refused(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(f"run,flops,benchmark,metric,value\na,{text},x,acc,0.5\n")
    with pytest.raises(DataError, match="t.csv: column 'flops' must be"):
        bc.load(path)


def test_boolean_and_datetime_columns_are_not_sizes(tmp_path):
    frame = tidy(params=[True, True])
    with pytest.raises(DataError, match="'params' must be numeric.*bool"):
        bc.validate(frame, "t.parquet")
    frame = tidy(tokens=pd.to_datetime(["2024-01-01", "2024-01-02"]))
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    with pytest.raises(DataError, match="t.parquet: column 'tokens' must be numeric.*datetime"):
        bc.load(path)
    with pytest.raises(DataError, match="'value' must be numeric"):
        bc.validate(tidy(value=[True, False]), "t")


def test_zero_tpr_is_refused(tmp_path):
    path = tmp_path / "apple.csv"
    path.write_text(",tokens,benchmark,metric_type,score,tpr\n0,2e9,arc_easy,acc,0.4,0\n")
    with pytest.raises(DataError, match="apple.csv: column 'tpr' must be positive.*row 0"):
        bc.load(path)
    with pytest.raises(DataError, match="'tpr' must be positive"):
        bc.validate(tidy(tpr=[0.0, 20.0]), "t")


def test_apple_runs_do_not_depend_on_row_order(apple_path, apple, tmp_path):
    shuffled = tmp_path / "shuffled.csv"
    pd.read_csv(apple_path).sample(frac=1.0, random_state=7).to_csv(shuffled, index=False)
    table = bc.load(shuffled)
    assert table["run"].nunique() == 149
    key = ["run", "benchmark", "metric", "k"]
    pd.testing.assert_frame_equal(
        table.sort_values(key).reset_index(drop=True), apple.sort_values(key).reset_index(drop=True)
    )


def test_apple_header_only_file(tmp_path):
    path = tmp_path / "apple.csv"
    path.write_text(",tokens,benchmark,metric_type,score,tpr\n")
    with pytest.raises(DataError, match="apple.csv: the file has a header but no rows"):
        bc.load(path)


def test_score_range_check_ignores_case():
    with pytest.raises(DataError, match=r"'ACC_NORM'.*\[0, 1\].*1.7"):
        bc.validate(tidy(metric=["ACC_NORM", "ACC_NORM"], value=[0.5, 1.7]), "t")


def test_conflicting_duplicates_are_refused_and_exact_ones_kept_once():
    frame = tidy(run=["a", "a"], params=[1e8, 1e8], tokens=[2e9, 2e9], value=[0.3, 0.35])
    with pytest.raises(DataError, match=r"run 'a', benchmark 'x', metric acc appears 2 times.*0.3, 0.35"):
        bc.validate(frame, "t")
    frame = tidy(run=["a", "a"], params=[1e8, 1e8], tokens=[2e9, 2e9], value=[0.3, 0.3])
    with pytest.warns(DataWarning, match="1 row.*repeat an earlier row exactly"):
        table = bc.validate(frame, "t")
    assert len(table) == 1
    # pass@k rows of one run at different k are not duplicates
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = bc.validate(tidy(run=["a", "a"], metric=["pass@1", "pass@2"], params=[1e8] * 2, tokens=[2e9] * 2))
    assert sorted(table["k"]) == [1, 2]


@pytest.mark.parametrize("metric", ["pass@1.5", "pass@0", "pass@", "pass@-2"])
def test_malformed_pass_at_k_is_refused(metric):
    with pytest.raises(DataError, match="pass@k needs a positive integer k"):
        bc.validate(tidy(metric=[metric, "acc"]), "t")


def test_negative_stderr_is_refused():
    with pytest.raises(DataError, match=r"'stderr' must be >= 0.*run 'b'.*-0.01"):
        bc.validate(tidy(stderr=[0.01, -0.01]), "t")


def test_unreadable_tidy_files_name_the_file(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataError, match="empty.csv.*empty"):
        bc.load(empty)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("run,flops,benchmark,metric,value\ncaf\xe9,1e20,x,acc,0.5\n".encode("latin-1"))
    with pytest.raises(DataError, match="latin.csv.*UTF-8"):
        bc.load(latin, format="tidy")
    with pytest.raises(DataError, match="latin.csv.*UTF-8"):
        bc.load(latin)  # format detection reads the header too


def test_chance_levels_from_data_defaults_and_unknown():
    table = bc.validate(tidy(q_rand=[0.2, 0.2]), "t")
    assert chance_level("x", "acc", table=table) == (0.2, "data (q_rand column)")
    assert chance_level("x", "acc", 0.1, table=table).source == "given"
    with pytest.raises(DataError, match="several chance levels"):
        bc.validate(tidy(q_rand=[0.2, 0.25]), "t")
    with pytest.raises(DataError, match=r"'q_rand' must lie in \[0, 1\)"):
        bc.validate(tidy(q_rand=[1.0, 1.0]), "t")
    level = chance_level("mystery_mc", "acc_norm")
    assert not level.known and level.source.startswith("unknown") and level.value == 0.0
    assert chance_level("arc_easy", "acc_norm") == (0.291, "Krajewski et al. 2025 default")
    assert chance_level("arc_easy", "acc_norm").known
    assert chance_level("gsm8k", "exact_match/flexible-extract").value == 0.0
    assert chance_level("hendrycksTest-anatomy", "acc").value == 0.25  # MMLU subtask, 4 choices
    assert chance_level("c4", "loss").known  # not a score: no chance level to worry about
    assert chance_level("logiqa", "acc").value == 0.25 and chance_level("wsc", "acc").value == 0.5


def test_estimate_chance_is_the_mean_of_the_cheapest_runs():
    frame = pd.DataFrame(
        {
            "run": list("abcd"),
            "flops": [1e18, 2e18, 3e18, 4e18],
            "benchmark": "m",
            "metric": "acc_norm",
            "value": [0.26, 0.24, 0.28, 0.5],
        }
    )
    assert estimate_chance(bc.validate(frame), "m", "acc_norm") == pytest.approx(np.mean([0.26, 0.24, 0.28]))
    with pytest.raises(DataError, match="no rows"):
        estimate_chance(bc.validate(frame), "m", "acc")


def test_a_run_has_one_size():
    with pytest.raises(DataError, match="run 'a' has different 'params' values"):
        bc.validate(tidy(run=["a", "a"], metric=["acc", "acc_norm"]), "t")


@pytest.mark.parametrize("column, blank", [("run", None), ("benchmark", np.nan), ("metric", "  "), ("metric", None)])
def test_a_missing_name_is_refused_not_read_as_nan(column, blank):
    """A missing or blank run, benchmark or metric cell would become the text 'nan' (pandas 2) or
    stay missing (pandas 3) and form a run or benchmark of its own: refused, naming column and row."""
    values = {"run": ["a", "b"], "benchmark": ["x", "x"], "metric": ["acc", "acc"]}[column]
    with pytest.raises(DataError, match=f"t.csv: column '{column}' has no value in row 1"):
        bc.validate(tidy(**{column: [values[0], blank]}), "t.csv")


def test_apple_row_without_a_benchmark_is_refused(tmp_path):
    path = tmp_path / "apple.csv"
    path.write_text(",tokens,benchmark,metric_type,score,tpr\n0,2e9,arc_easy,acc,0.4,20\n1,2e9,,acc,0.5,20\n")
    with pytest.raises(DataError, match="apple.csv: column 'benchmark' has no value in row 1"):
        bc.load(path)


# -- bad input at the API boundary: one paragraph naming what is wrong, exit status 2 ------------------


def _cli(*args, cwd=None, env=None):
    from conftest import run_cli

    return run_cli(*args, cwd=cwd, env=env)


def _refused(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    # a progress line may come first under load; the refusal is a line of its own
    assert any(line.startswith("error:") for line in proc.stderr.splitlines()), proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.fixture
def ladder_csv(tmp_path):
    from conftest import law_table

    flops = np.geomspace(1e19, 1e22, 12)
    table = law_table("power", [2000.0, 0.17], {"flops": flops}, benchmark="arc", noise=0.005)
    path = tmp_path / "ladder.csv"
    table.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("column", ["run", "fitted"])
def test_forecast_on_an_artifact_whose_points_lack_a_column(ladder_csv, tmp_path, column):
    """'run' names the resampled runs, 'fitted' gives the bootstrap its residuals."""
    import json

    fit = tmp_path / "fit.json"
    assert _cli("fit", ladder_csv, "-b", "arc", "-o", fit).returncode == 0
    doc = json.loads(fit.read_text())
    del doc["points"][column]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    _refused(_cli("forecast", broken, "-C", "1e23", "--boot", "10"), "broken.json", "training points", f"'{column}'")
    with pytest.raises(bc.BenchcastError, match="lack column"):
        bc.FitResult.load(broken)


def test_recommend_refuses_an_unknown_law(ladder_csv):
    _refused(_cli("recommend", ladder_csv, "-b", "arc", "--law", "no_such_law"), "unknown law 'no_such_law'")
    _refused(_cli("recommend", ladder_csv, "-b", "arc", "--law", "power_flor"), "Did you mean 'power_floor'")


def test_recommend_with_a_target_below_every_run(ladder_csv):
    proc = _cli("recommend", ladder_csv, "-b", "arc", "--target-flops", "1e17")
    _refused(proc, "none of the 12 runs selected for arc", "below the target 1e+17 FLOPs", "1e+19 .. 1e+22")
    assert "unknown benchmark" not in proc.stderr


def test_out_whose_parent_is_a_file(ladder_csv, tmp_path):
    from benchcast.utils.io import atomic_write_text, output_folder

    blocker = tmp_path / "afile"
    blocker.write_text("x")
    _refused(_cli("fit", ladder_csv, "-b", "arc", "-o", blocker / "sub" / "fit.json"), f"{blocker} is a file")
    _refused(
        _cli("backtest", ladder_csv, "-b", "arc", "--threshold", "1e21", "-o", blocker / "o"), f"{blocker} is a file"
    )
    with pytest.raises(bc.BenchcastError, match="afile is a file, not a folder"):
        atomic_write_text(blocker / "t.csv", "")
    with pytest.raises(bc.BenchcastError, match="afile is a file, not a folder"), output_folder(blocker / "o"):
        pass
    with pytest.raises(bc.BenchcastError, match="is a folder"):
        atomic_write_text(tmp_path, "")


def test_fit_accepts_the_path_of_a_data_file(ladder_csv):
    from_table = bc.fit(bc.load(ladder_csv), "power", "arc", q_rand=0.0)
    for given in (ladder_csv, str(ladder_csv)):
        assert bc.fit(given, "power", "arc", q_rand=0.0).params == from_table.params
    with pytest.raises(DataError, match="expected a table"):
        bc.fit({"run": ["a"]}, "power", "arc")


def test_the_validation_module_checks_each_argument_kind():
    from benchcast import validation as v

    assert v.check_level(0.9) == 0.9 and v.check_replicates(0, allow_zero=True) == 0
    assert v.check_positive("flops", None) is None and v.check_positive("flops", 1e21) == 1e21
    assert v.check_count("k", 8.0) == 8 and v.check_thresholds([2e21, 1e21]) == (1e21, 2e21)
    assert v.check_law("power", bc.available_laws()) == "power" and v.check_interval("bootstrap") == "bootstrap"
    bad = [
        (lambda: v.check_level(1.0), "strictly between 0 and 1"),
        (lambda: v.check_level(np.float64(90.0)), "got 90 (90 %? give 0.9)."),  # no np.float64(...) repr
        (lambda: v.check_level("0.9"), "got '0.9'"),
        (lambda: v.check_replicates(5, allow_zero=False), "at least 10"),
        (lambda: v.check_replicates(2.5, allow_zero=True), "must be an integer"),
        (lambda: v.check_interval("wide"), "unknown interval 'wide'"),
        (lambda: v.check_positive("tpr", -1.0), "tpr must be a positive finite number"),
        (lambda: v.check_score("target", 1.2), "target must lie in (0, 1)"),
        (lambda: v.check_count("k", 1.5), "k must be an integer >= 1"),
        (lambda: v.check_thresholds([]), "positive finite FLOPs"),
        (lambda: v.check_law("powr", bc.available_laws()), "Did you mean 'power'"),
        (lambda: v.check_columns(pd.DataFrame({"a": [1]}), ["run"], "x.csv: the rows"), "rows lack column(s) 'run'"),
    ]
    for call, message in bad:
        with pytest.raises(bc.BenchcastError) as caught:
            call()
        assert message in str(caught.value)


# -- options a command cannot honour are refused, never dropped ----------------------------------------


@pytest.fixture
def power_fit(ladder_csv, tmp_path):
    fit = tmp_path / "fit.json"
    assert _cli("fit", ladder_csv, "-b", "arc", "-o", fit).returncode == 0
    return fit


@pytest.mark.parametrize(
    "options, needles",
    [
        (["--tpr", "20"], ["--tpr", "fit artifact", "--forecast-tpr"]),
        (["--forecast-tpr", "20"], ["--forecast-tpr", "'power'", "drop --forecast-tpr"]),
        (["--k", "4"], ["--k", "'power'", "drop --k"]),
        (["--flops", "1e23"], ["--flops", "'power'", "drop --flops"]),
        (["--n-boot", "0", "--level", "0.5", "--seed", "3"], ["--level, --seed:", "--n-boot 0"]),
        (["--n-boot", "0", "--interval", "bootstrap"], ["--interval:", "--n-boot 0"]),
    ],
)
def test_plan_refuses_options_it_cannot_honour(power_fit, options, needles):
    _refused(_cli("plan", power_fit, "--target", "0.7", *options), *needles)


def test_plan_without_an_interval_still_plans(power_fit):
    proc = _cli("plan", power_fit, "--target", "0.7", "--n-boot", "0")
    assert proc.returncode == 0, proc.stderr


def test_forecast_n_boot_help_states_its_minimum():
    proc = _cli("forecast", "--help", env={"COLUMNS": "250"})
    assert "at least 10" in proc.stdout and "(0: none)" not in proc.stdout, proc.stdout


@pytest.mark.parametrize(
    "options, needles",
    [
        (["--level", "0.8", "--n-boot", "50"], ["--level, --n-boot:", "--target-flops"]),
        (["--interval", "bootstrap", "--ray", "auto"], ["--interval, --ray:", "--target-flops"]),  # --jobs beside
        (["--interval", "bootstrap", "--jobs", "2"], ["--interval, --jobs:", "--target-flops"]),  # --ray: refused first
        (["--target-flops", "1e23", "--n-boot", "0", "--level", "0.8"], ["--level:", "--n-boot 0"]),
        (["--law", "power", "--proxy", "dclm:loss"], ["--proxy", "'power' does not use one"]),
    ],
)
def test_recommend_refuses_options_it_cannot_honour(ladder_csv, options, needles):
    _refused(_cli("recommend", ladder_csv, "-b", "arc", *options), *needles)


@pytest.mark.parametrize(
    "options",
    [["-b", "arc"], ["-m", "acc"], ["-C", "1e23"], ["--law", "power"], ["--tpr", "20"], ["--forecast-tpr", "40"]]
    + [["--n-boot", "50"], ["--seed", "1"], ["--jobs", "2"], ["--format", "tidy"], ["--metadata", "m.yaml"]],
)
def test_report_from_refuses_the_data_options(tmp_path, options):
    proc = _cli("report", "--from", tmp_path, *options, "-o", tmp_path / "r.html")
    _refused(proc, options[0], "outputs already written")


@pytest.mark.parametrize("command", ["backtest", "sweep", "cutoff"])
def test_proxy_is_refused_for_laws_without_one(ladder_csv, command):
    _refused(_cli(command, ladder_csv, "-b", "arc", "--law", "power", "--proxy", "dclm:loss"), "--proxy", "'power'")
    _refused(
        _cli(command, ladder_csv, "-b", "arc", "--law", "power", "--law", "nd", "--proxy", "dclm:loss"),
        "none of the laws given (power, nd)",
    )


def test_backtest_refuses_max_k_without_k(ladder_csv):
    _refused(_cli("backtest", ladder_csv, "-b", "arc", "--max-k", "8"), "--max-k:", "--protocol threshold")


def test_sweep_out_says_when_it_wrote_nothing(tmp_path):
    from conftest import law_table

    table = law_table("power", [2000.0, 0.17], {"flops": np.geomspace(1e17, 1e19, 8)}, benchmark="arc", noise=0.005)
    path = tmp_path / "small.csv"
    table.to_csv(path, index=False)
    proc = _cli("sweep", path, "-b", "arc", "--n-boot", "0", "-o", tmp_path / "out")
    assert f"--out {tmp_path / 'out'}: nothing written" in proc.stderr, proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["score-gold", "sample"])
def test_collect_refuses_sizes_beside_a_runs_file(tmp_path, command):
    args = ["--model", "m", "--problems", "p.jsonl", "-o", tmp_path / "o.csv", "--runs", "runs.yaml"]
    _refused(_cli(command, *args, "--params", "1e8"), "--params/--tokens", "--runs runs.yaml")


def test_collect_refuses_shards_without_ray(tmp_path):
    args = ["--model", "m", "--problems", "p.jsonl", "-o", tmp_path / "o.csv", "--shards", "4"]
    _refused(_cli("sample", *args), "--shards 4", "--ray")


def test_jobs_are_refused_beside_ray(power_fit, ladder_csv):
    _refused(_cli("plan", power_fit, "--target", "0.7", "-j", "2", "--ray", "auto"), "--jobs:", "--ray auto")
    _refused(_cli("sweep", ladder_csv, "-b", "arc", "-j", "2", "--ray", "local"), "--jobs:", "--ray local")


def test_passk_refuses_what_it_would_drop(tmp_path):
    samples = tmp_path / "counts.csv"
    samples.write_text("run,problem_id,n,c\nr1,p1,10,3\nr1,p2,10,5\n")
    _refused(_cli("passk", samples, "--k", "1,2", "--n-boot", "0", "--seed", "4"), "--seed:", "--n-boot 0")
    _refused(_cli("passk", samples, "--k", "1,2", "--run", "other"), "--run 'other'", "(r1)")
    proc = _cli("passk", samples, "--k", "1,2", "--run", "r1", "--n-boot", "0")  # the file's own name: harmless
    assert proc.returncode == 0, proc.stderr


def test_selecting_from_an_empty_table_says_it_is_empty():
    """Not "unknown benchmark 'arc_easy'. Available: ." with nothing listed."""

    from benchcast.data.table import select

    empty = pd.DataFrame(columns=["run", "benchmark", "metric", "value", "flops"])
    with pytest.raises(bc.SelectionError, match="the table is empty"):
        select(empty, "arc_easy", "acc_norm")


# -- issue 49: the reason kept when a command fails, and edge values refused by name ----------------------


def test_warnings_gathered_before_a_failure_are_printed_with_it(tmp_path):
    path = tmp_path / "t.csv"
    tidy(run=["a", "a"], params=[1e8, 1e8], tokens=[2e9, 2e9], value=[0.3, 0.3]).to_csv(path, index=False)
    out = _cli("fit", path, "-b", "nosuch")
    _refused_after_warning = out.stderr.split("error:")
    assert out.returncode == 2 and len(_refused_after_warning) == 2, out.stderr
    assert "repeat an earlier row exactly" in _refused_after_warning[0]
    assert "unknown benchmark 'nosuch'" in _refused_after_warning[1]


@pytest.fixture(scope="module")
def example_csv() -> str:
    from benchcast.data.example import example_path

    return str(example_path())


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("inspect", "{data}", "--column", "stderr=bogus"), ("column 'stderr' is renamed to 'bogus'", "stderr")),
        (("bench", "--data", "{data}", "--cutoffs", "0"), ("--cutoffs must be an integer >= 1, got 0",)),
        (
            ("bench", "--data", "{data}", "-b", "hellaswag:acc_norm", "--holdout-tpr", "37"),
            ("--holdout-tpr) 37 is none of the data's tokens-per-parameter ratios (20",),
        ),
        (("backtest", "{data}", "-b", "hellaswag", "--threshold", "nan"), ("--threshold", "got nan")),
    ],
)
def test_edge_values_are_refused_naming_the_option(example_csv, args, needles):
    _refused(_cli(*(a.format(data=example_csv) for a in args)), *needles)


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [("report", "--forecast-tpr", "0"), ("plan", "--forecast-tpr", "-1"), ("forecast", "--tpr", "nan")],
)
def test_size_options_are_checked_before_the_data_is_read(example_csv, tmp_path, command, option, value):
    args = {"report": ("-b", "hellaswag", "-C", "1e23", "-o", str(tmp_path / "r.html")), "plan": ("--target", "0.6")}
    args |= {"forecast": ("-b", "hellaswag", "-C", "1e23")}
    out = _cli(command, example_csv, *args[command], option, value, *(() if command == "forecast" else ("-b", "x")))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    text = " ".join(out.stderr.replace("│", " ").split())
    assert f"Invalid value for '{option}'" in text and "must be a positive finite number" in text, text
    assert not (tmp_path / "r.html").exists()


def test_a_dollar_in_a_benchmark_name_is_drawn_as_written():
    """'$arc^^e$' (a benchmark, a legend entry) is no mathtext: the figure is drawn, its log ticks still mathtext."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchcast.plots.style import figure_bytes

    fig, ax = plt.subplots()
    ax.plot([1e20, 1e22], [0.3, 0.5], label="$arc^^e$ runs")
    ax.set(xscale="log", title="$arc^^e$: forecast")
    ax.legend()
    assert figure_bytes(fig, "png")[:4] == b"\x89PNG"
    assert any("$" in t.get_text() and t.get_parse_math() for t in ax.xaxis.get_ticklabels())
    plt.close(fig)


def test_a_colour_bar_inside_a_panel_keeps_its_log_ticks_as_mathtext():
    """A colour bar drawn as an inset of its panel (the TPR bar of a forecast over ratios): its log ticks are ticks,
    drawn as 10^1, not as the text '$\\mathdefault{10^{1}}$'."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    from benchcast.plots.style import figure_bytes

    fig, ax = plt.subplots()
    dots = ax.scatter([1e20, 1e21, 1e22], [0.3, 0.4, 0.5], c=[10.0, 40.0, 160.0], norm=LogNorm())
    bar = fig.colorbar(dots, cax=ax.inset_axes((0.04, 0.9, 0.28, 0.03)), orientation="horizontal")
    assert figure_bytes(fig, "png")[:4] == b"\x89PNG"
    labels = [t for t in bar.ax.xaxis.get_ticklabels() if "$" in t.get_text()]
    assert labels and all(t.get_parse_math() for t in labels)
    plt.close(fig)
