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


@pytest.fixture(scope="module")
def with_one_at_chance(tmp_path_factory) -> str:
    """The example ladder and a benchmark whose every run scores its chance level: nothing can be fitted to it."""
    import pandas as pd

    table = pd.read_csv(example_path())
    flat = table[table["benchmark"] == "hellaswag"].assign(benchmark="flat", value=0.25, q_rand=0.25)
    path = tmp_path_factory.mktemp("flat") / "ladder.csv"
    pd.concat([table, flat]).to_csv(path, index=False)
    return str(path)


@pytest.mark.slow  # two forecasts of the ladder: ~6 s
def test_each_benchmark_is_answered_or_refused_in_its_own_row(with_one_at_chance):
    """One benchmark with no usable runs, one unknown: the other is still answered; exit 3 says some were refused."""
    asked = ("-b", "arc_easy", "-b", "flat", "-b", "nosuch", "--flops", "1e22", *COMMON)
    out = run_cli("forecast", with_one_at_chance, *asked, "--json")
    assert out.exit_code == 3, out.stderr
    answers = {a["benchmark"]: a for a in json.loads(out.stdout)}
    assert list(answers) == ["arc_easy", "flat", "nosuch"]
    assert "refused" not in answers["arc_easy"] and 0 < answers["arc_easy"]["forecasts"][0]["prediction"] < 1
    assert "no law has support" in answers["flat"]["refused"]
    assert "unknown benchmark 'nosuch'" in answers["nosuch"]["refused"]
    assert "2 of 3 benchmarks refused (flat, nosuch" in out.stderr
    table = run_cli("forecast", with_one_at_chance, *asked)
    assert table.exit_code == 3
    rows = {line.split("│")[1].strip(): line for line in table.stdout.splitlines() if line.startswith("│")}
    assert "refused" in rows["flat"] and "refused" in rows["nosuch"] and "refused" not in rows["arc_easy"]
    assert "nosuch: refused: unknown benchmark 'nosuch'" in table.stdout


def test_every_benchmark_refused_is_exit_2(with_one_at_chance):
    out = run_cli("plan", with_one_at_chance, "-b", "flat", "-b", "nosuch", "--target", "0.6", *COMMON)
    assert out.exit_code == 2 and "none of the 2 benchmarks was answered" in out.stderr, out.stderr


def test_forecast_and_plan_over_several_benchmarks_check_them_across_k(ladder, monkeypatch):
    """Both commands pass their answers through the one across-k rule (``answers.consistent_in_k``) and print what it
    returns: a flag it adds is in the --json (the rule itself: tests/forecasting/test_flags.py)."""
    from dataclasses import replace

    import benchcast.forecasting.answers as answers
    from benchcast.forecasting.flags import ACROSS_K, Flag

    seen, mark = [], Flag(ACROSS_K, "marked by the test", False)

    def marked(outs):
        seen.append([type(o).__name__ for o in outs])
        first = outs[0]
        return [first.with_flags([(mark,)]) if hasattr(first, "with_flags") else replace(first, flags=(mark,))]

    monkeypatch.setattr(answers, "consistent_in_k", lambda outs: marked(outs) + list(outs[1:]))
    forecast = run_cli("forecast", ladder, "-b", "arc_easy", "-b", "hellaswag", "--flops", "1e22", *COMMON, "--json")
    assert forecast.exit_code == 0, forecast.stderr
    first, second = json.loads(forecast.stdout)
    assert "marked by the test" in first["forecasts"][0]["flags"] and "marked" not in second["forecasts"][0]["flags"]
    plan = run_cli("plan", ladder, "-b", "arc_easy", "-b", "hellaswag", "--target", "0.6", *COMMON, "--json")
    assert plan.exit_code == 0, plan.stderr
    assert [f["kind"] for f in json.loads(plan.stdout)[0]["flags"]][-1] == ACROSS_K
    assert seen == [["Forecast", "Forecast"], ["Plan", "Plan"]]
