"""The chance filter in the user's hands: --margin on every command that fits, and a flag where it leaves out
more than a third of the runs (DCLM winogrande: 82 of 149 at the default 0.05)."""

import json

import pytest
from conftest import DCLM, require_shared, run_cli

import benchcast as bc
from benchcast.data.chance import with_margins
from benchcast.fitting.spec import FitSpec, design

PLANNED = ("--params", "7e9", "--tokens", "4e12", "--n-boot", "20", "--json")


@pytest.fixture(scope="module")
def dclm() -> str:
    return str(require_shared(DCLM))


def _point(stdout: str) -> dict:
    return json.loads(stdout)["forecasts"][0]


def test_a_filter_that_leaves_out_a_third_is_flagged_and_margin_moves_it(dclm):
    default = run_cli("forecast", dclm, "-b", "winogrande", "-m", "acc", *PLANNED)
    assert default.exit_code == 0, default.stderr
    point = _point(default.stdout)
    assert "the chance filter left out 82 of 149 runs" in point["flags"]
    assert point["dropped"]["nd_floor"].startswith("82 (score <= chance 0.5 + 0.05: 70")
    given = run_cli("forecast", dclm, "-b", "winogrande", "-m", "acc", "--margin", "winogrande=0.02", *PLANNED)
    assert given.exit_code == 0, given.stderr
    point = _point(given.stdout)
    assert point["dropped"]["nd_floor"].startswith("47 (score <= chance 0.5 + 0.02: 35")
    assert "chance filter" not in point["flags"]  # 47 of 149: less than a third


def test_a_margin_for_one_benchmark_leaves_the_others_alone(dclm):
    table = with_margins(bc.load(dclm), {"winogrande": 0.0})
    spec = FitSpec("power", "arc_easy", "acc_norm", tpr=20.0)
    assert design(table, spec)[1].margin == pytest.approx(0.05)
    assert design(table, spec.replace(benchmark="winogrande", metric="acc"))[1].margin == 0.0
    # a spec's own margin wins over the table's
    assert design(table, spec.replace(benchmark="winogrande", metric="acc", margin=0.1))[1].margin == 0.1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("winogrande=1.5", "--margin 'winogrande=1.5': a value must lie in [0, 1)"),
        ("nosuch=0.1", "--margin names benchmark 'nosuch', which is not in the data"),
        ("x=abc", "--margin 'x=abc': 'abc' is not a number"),
    ],
)
def test_bad_margins_are_refused_by_name(dclm, value, message):
    out = run_cli("fit", dclm, "-b", "winogrande", "-m", "acc", "--margin", value)
    assert out.exit_code == 2 and message in " ".join(out.stderr.split())
    assert "Traceback" not in out.stderr


def test_margin_is_refused_with_a_fit_artifact(tmp_path, dclm):
    artifact = tmp_path / "fit.json"
    fitted = run_cli("fit", dclm, "-b", "arc_easy", "-m", "acc_norm", "--tpr", "20", "--out", str(artifact))
    assert fitted.exit_code == 0, fitted.stderr
    out = run_cli("forecast", str(artifact), "--flops", "1e23", "--margin", "0.1")
    assert out.exit_code == 2 and "--margin" in out.stderr
