"""-b repeatable on forecast and plan: one table, one JSON list, each benchmark's answer the one -b alone gives."""

import json

import pytest
from conftest import run_cli

from benchcast.data.example import example_path

COMMON = ("--n-boot", "20", "--seed", "3")


@pytest.fixture(scope="module")
def ladder() -> str:
    return str(example_path())


def test_forecast_of_several_benchmarks_is_each_ones_forecast(ladder):
    both = run_cli("forecast", ladder, "-b", "arc_easy", "-b", "hellaswag", "--flops", "1e22", *COMMON, "--json")
    assert both.exit_code == 0, both.stderr
    answers = json.loads(both.stdout)
    assert [a["benchmark"] for a in answers] == ["arc_easy", "hellaswag"]
    for answer in answers:
        alone = run_cli("forecast", ladder, "-b", answer["benchmark"], "--flops", "1e22", *COMMON, "--json")
        expected = json.loads(alone.stdout)["forecasts"][0]
        for key in ("prediction", "lower", "upper"):
            assert answer["forecasts"][0][key] == pytest.approx(expected[key], rel=1e-9)
    table = run_cli("forecast", ladder, "-b", "arc_easy", "-b", "hellaswag:acc_norm", "--flops", "1e22", *COMMON)
    assert table.exit_code == 0, table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2 and "arc_easy" in rows[0] and "hellaswag" in rows[1]  # one table, a row each
    assert "hellaswag: weights at 1e+22 FLOPs" in table.stdout  # then each benchmark's notes, named


def test_plan_of_several_benchmarks_is_one_json_list(ladder):
    out = run_cli("plan", ladder, "-b", "arc_easy", "-b", "hellaswag", "--target", "0.6", *COMMON, "--json")
    assert out.exit_code == 0, out.stderr
    plans = json.loads(out.stdout)
    assert [p["benchmark"] for p in plans] == ["arc_easy", "hellaswag"]
    alone = json.loads(run_cli("plan", ladder, "-b", "hellaswag", "--target", "0.6", *COMMON, "--json").stdout)
    assert plans[1]["needed"] == pytest.approx(alone["needed"], rel=1e-9)
    assert 0 < plans[0]["lower"] <= plans[0]["needed"] <= plans[0]["upper"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [(("-b", "arc_easy", "-b", "arc_easy"), "a benchmark is given twice"), (("-b", ":acc"), "expected BENCHMARK")],
)
def test_bad_benchmark_lists_are_refused(ladder, flags, message):
    out = run_cli("forecast", ladder, *flags, "--flops", "1e22", "--n-boot", "0")
    assert out.exit_code == 2 and message in out.stderr and "Traceback" not in out.stderr
