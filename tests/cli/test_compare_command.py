"""`benchcast compare` (issue 52): the recipe column from the file, refusals by name with exit 2, JSON and a figure."""

import json

import pytest

from benchcast.data.example import recipe_ladders
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def ladder_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("compare") / "recipes.csv"
    recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=5, benchmarks=("hellaswag",)).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--by", "mixture"], "no column 'mixture'"),
        (["--by", "metric"], "holds 1 recipe"),
        (["--by", "recipe", "--flops", "1e22", "--params", "1e9", "--tokens", "2e10"], "not both"),
        (["--by", "recipe", "--reference", "Z"], "reference 'Z'"),
    ],
)
def test_bad_input_is_refused_by_name(ladder_file, args, words):
    flops = [] if "--flops" in args else ["--flops", "1e22"]
    out = run_cli("compare", ladder_file, "-b", "hellaswag", *args, *flops)
    assert out.exit_code == 2, out.stderr
    assert words in " ".join(out.stderr.split()) and "Traceback" not in out.stderr


def test_three_sizes_take_the_joint_fit_and_print_json_and_a_figure(ladder_file, tmp_path):
    fig = tmp_path / "compare.png"
    out = run_cli(
        "compare",
        ladder_file,
        "--by",
        "recipe",
        "-b",
        "hellaswag",
        "--flops",
        "1e22",
        "--n-boot",
        "50",
        "--json",
        "--out",
        fig,
    )
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["recipes"][0]["method"].startswith(("shared", "anchored", "separate"))  # the joint fit, stated
    p = doc["pairs"][0]["p_a_better"]
    assert 0 <= p < 0.5  # B, twice as efficient, wins
    a = next(m for m in doc["multipliers"] if m["recipe"] == "A")
    assert a["reference"] == "B" and not a["upper_censored"] and a["point_censored"] == ""
    assert a["lower"] <= 0.5 <= a["upper"] < 1  # A is worth half of B's compute, and less than B for certain
    assert a["lower"] <= a["multiplier"] <= a["upper"]
    # three sizes, a line per recipe: some of A's law draws never reach B's score within the curves' reach, so the
    # lower end is a bound (stated), not a number
    assert a["lower_censored"] and "reach" in a["note"]
    assert fig.stat().st_size > 10_000


def test_the_backtest_flag_scores_the_decisions(ladder_file, tmp_path):
    four = tmp_path / "four.csv"  # four sizes: two above the near-chance margin below the one held out
    recipe_ladders({"A": 1.0, "B": 2.0}, sizes=4, seed=5, benchmarks=("hellaswag",)).to_csv(four, index=False)
    out = run_cli("compare", four, "--by", "recipe", "-b", "hellaswag", "--backtest", "--n-boot", "50", "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    pooled = doc["scores"][-1]
    assert pooled["benchmark"] == "pooled" and pooled["pairs"] == 1 and pooled["decision_accuracy"] == 1.0  # 2x apart
    refused = run_cli("compare", ladder_file, "--by", "recipe", "-b", "hellaswag", "--backtest", "--flops", "1e22")
    assert refused.exit_code == 2 and "--backtest forecasts the held-out budget itself" in refused.stderr


def test_two_recipes_that_share_run_names_are_compared_from_one_file(tmp_path):
    # two recipes' files joined (as the guide joins the Apple DCLM and C4 ladders): the same run names in both
    table = recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=5, benchmarks=("hellaswag",))
    table = table.assign(run=table["run"].str.split("-").str[-1])  # A-20M and B-20M both named 20M
    assert table.duplicated(["run", "benchmark", "metric"]).any()
    path = tmp_path / "joined.csv"
    table.to_csv(path, index=False)
    out = run_cli("compare", path, "--by", "recipe", "-b", "hellaswag", "--flops", "1e22", "--n-boot", "30", "--json")
    assert out.exit_code == 0, out.stderr
    assert "'<recipe>/<run>'" in " ".join(out.stderr.split())
    doc = json.loads(out.stdout)
    assert sorted(r["recipe"] for r in doc["recipes"]) == ["A", "B"] and all(r["n_runs"] == 3 for r in doc["recipes"])
    assert doc["pairs"][0]["p_a_better"] < 0.5  # B, twice as efficient, wins as with distinct names


def test_a_column_of_sizes_is_refused_not_compared(tmp_path):
    table = recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=5, benchmarks=("hellaswag",))
    path = tmp_path / "scale.csv"
    table.assign(scale=table["run"].str.split("-").str[-1]).to_csv(path, index=False)
    out = run_cli("compare", path, "--by", "scale", "-b", "hellaswag", "--flops", "1e22", "--n-boot", "20")
    said = " ".join(out.stderr.split())
    assert out.exit_code == 2 and "Traceback" not in out.stderr, out.stderr
    assert "no recipe of 'scale' has a forecast" in said and "holds runs of one size" in said
    assert "None" not in said and "--by" in said


def test_two_benchmarks_write_a_figure_each(tmp_path):
    path = tmp_path / "two.csv"
    recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=5, benchmarks=("hellaswag", "arc_easy")).to_csv(
        path, index=False
    )
    fig = tmp_path / "compare.png"
    args = ["compare", path, "--by", "recipe", "-b", "hellaswag", "-b", "arc_easy", "--flops", "1e22", "--n-boot", "20"]
    out = run_cli(*args, "--out", fig)
    assert out.exit_code == 0, out.stderr
    written = sorted(p.name for p in tmp_path.glob("compare_*.png"))
    assert written == ["compare_arc_easy.png", "compare_hellaswag.png"] and not fig.exists()
    assert all((tmp_path / name).read_bytes()[:4] == b"\x89PNG" for name in written)
