"""The floor on the extrapolation error (TAU_FLOOR) is stated where it binds, and the ranking shows the measured tau."""

import json

from conftest import DCLM, require_shared, run_cli

from benchcast.forecasting.extrapolation import TAU_FLOOR, ErrorModel


def test_the_floor_is_stated_only_where_it_binds():
    below = ErrorModel(tau=0.0076, source="own+benchmarks (10)+prior (3 ladders)", own_tau=2e-5)
    assert "2e-05 per decade) is below the floor 0.001 and counts as 0.001 before pooling" in below.floor_note
    assert below.to_dict()["floor"] == below.floor_note
    above = ErrorModel(tau=0.03, own_tau=0.03)
    assert above.floor_note == "" and "floor" not in above.to_dict()
    assert ErrorModel(tau=TAU_FLOOR).floor_note == ""  # no own measurement: nothing floored
    # an own error of exactly 0 per decade says what it means, not only '0' (OLMo's hellaswag read as 'no error')
    zero = ErrorModel(tau=0.0076, own_tau=0.0).floor_note
    assert "(0 per decade: its origins' errors do not grow with the distance) is below the floor" in zero


def test_recommend_shows_the_measured_tau_and_says_the_floor_binds():
    out = run_cli(
        "recommend",
        str(require_shared(DCLM)),
        "-b",
        "sciq",
        "-m",
        "acc_norm",
        "--tpr",
        "20",
        "--target-flops",
        "1e23",
        "--n-boot",
        "20",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    ranking = {r["law"]: r for r in json.loads(out.stdout)["ranking"]}
    floored = [law for law, r in ranking.items() if r["tau"] < TAU_FLOOR]
    assert floored, "sciq's power_floor erred less than the floor per decade on DCLM"
    text = run_cli(
        "recommend",
        str(require_shared(DCLM)),
        "-b",
        "sciq",
        "-m",
        "acc_norm",
        "--tpr",
        "20",
        "--target-flops",
        "1e23",
        "--n-boot",
        "20",
    )
    assert f"tau /decade of {', '.join(floored)} is below 0.001; an interval counts it as 0.001" in text.stdout
    assert all(r["tau"] >= TAU_FLOOR for law, r in ranking.items() if law not in floored)  # the note names only those
