import json
import warnings

import numpy as np
import pytest

import benchcast as bc
from benchcast.errors import ArtifactError, InsufficientDataError
from benchcast.fitting.diagnostics import REQUIRED_DIAGNOSTICS, bound_findings, plain_message


@pytest.mark.parametrize(
    "law, metric, k",
    [("power", "acc_norm", None), ("bnsl", "acc_norm", None), ("nd", "acc_norm", None), ("compute", "pass@k", 8)],
)
def test_save_load_predicts_identically(apple, tmp_path, law, metric, k):
    bench = "arc_easy" if k is None else "humaneval-py"
    result = bc.fit(apple, law, bench, metric, k, max_flops=6e21)
    path = result.save(tmp_path / "fit.json")
    loaded = bc.load_fit(path)
    query = {"params": np.array([1e9, 5e9]), "tokens": np.array([2e10, 1e11])}
    # bit for bit: the artifact stores every parameter exactly (JSON's shortest repr round-trips a float)
    assert np.array_equal(loaded.predict(**query), result.predict(**query))
    assert loaded.params == result.params
    assert loaded.data_fingerprint == result.data_fingerprint and loaded.data_fingerprint.startswith("sha256:")
    doc = json.loads(path.read_text())
    assert doc["format"] == "benchcast-fit" and doc["format_version"] == 2 and doc["benchcast_version"]
    assert doc["law"] == law and doc["settings"]["benchmark"] == bench
    assert loaded.report() == result.report()


def test_diagnostics_keep_the_artifact_format(apple, tmp_path):
    """FitDiagnostics is written as the same 'diagnostics' mapping as ever, and older or hand-written
    artifacts holding only the required keys (nulls where a value was not finite) still load."""
    result = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21)
    path = result.save(tmp_path / "fit.json")
    doc = json.loads(path.read_text())
    assert list(doc["diagnostics"]) == [
        *("loss", "n_used", "n_dropped", "dropped_reasons", "converged", "message", "at_bound", "rmse", "r2"),
        *("flops_min", "flops_max", "decades", "n_starts", "n_evaluations", "n_distinct"),
    ]
    loaded = bc.load_fit(path)
    assert loaded.diagnostics == result.diagnostics and loaded.to_dict() == doc
    doc["diagnostics"] = {key: doc["diagnostics"][key] for key in REQUIRED_DIAGNOSTICS} | {"r2": None, "other": 1}
    path.write_text(json.dumps(doc))
    old = bc.load_fit(path)
    assert old.diagnostics.n_used == result.diagnostics.n_used and old.diagnostics.n_starts is None
    assert np.isnan(old.diagnostics.r2) and np.isnan(old.diagnostics.decades) and "Parameters:" in old.report()
    # what the artifact did not record is said to be unknown, never shown as a number
    assert "starts and evaluations not recorded" in old.report() and "compute range: not recorded" in old.report()
    assert np.array_equal(old.predict(flops=[1e22]), result.predict(flops=[1e22]))
    del doc["diagnostics"]["loss"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="'diagnostics' must hold loss"):
        bc.load_fit(path)


@pytest.mark.parametrize(("key", "value"), [("n_distinct", "five"), ("n_used", 10.5), ("n_starts", -1)])
def test_a_count_that_is_not_one_is_refused_by_its_key(apple, tmp_path, key, value):
    path = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21).save(tmp_path / "fit.json")
    doc = json.loads(path.read_text())
    doc["diagnostics"][key] = value
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=rf"diagnostics\.{key} must be a count .*got {value!r}"):
        bc.load_fit(path)


def test_fingerprint_changes_with_data(apple):
    a = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=6e21)
    b = bc.fit(apple, "power", "arc_easy", "acc_norm", max_flops=1e21)
    assert a.data_fingerprint != b.data_fingerprint


def test_bad_artifacts(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        bc.load_fit(bad)
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ArtifactError, match="not a benchcast fit"):
        bc.load_fit(bad)
    bad.write_text(json.dumps({"format": "benchcast-fit", "format_version": 99}))
    with pytest.raises(ArtifactError, match="newer"):
        bc.load_fit(bad)


def test_save_does_not_clobber_on_failure(apple, tmp_path, monkeypatch):
    path = tmp_path / "fit.json"
    path.write_text("precious")
    result = bc.fit(apple, "power", "arc_easy", "acc_norm")
    monkeypatch.setattr(bc.FitResult, "to_dict", lambda self: {"x": object()})
    with pytest.raises(TypeError):
        result.save(path)
    assert path.read_text() == "precious"
    assert list(tmp_path.iterdir()) == [path]


def test_fit_result_explains_itself(apple):
    result = bc.fit(apple, "power", "lbpp", "pass@1", max_flops=6e21)
    d = result.diagnostics
    assert d.n_used + d.n_dropped == len(bc.select(apple, "lbpp", "pass@1", max_flops=6e21))
    assert result.settings["margin"] == 0.02  # LBPP's smaller margin above chance
    assert all("chance" in reason for reason in d.dropped_reasons)
    report = result.report()
    for word in ("Fit: law power", "Parameters:", "alpha", "RMSE", "dropped"):
        assert word in report


def test_refuses_thin_support_and_warns(apple):
    with pytest.raises(InsufficientDataError, match="more distinct points than free parameters"):
        bc.fit(apple, "bnsl", "arc_easy", "acc_norm", tpr=20, max_flops=2.5e18)
    with pytest.warns(bc.FitWarning, match="decades of compute"):
        bc.fit(apple, "power", "arc_easy", "acc_norm", min_flops=1e21, max_flops=6e21)


def test_a_constraint_reached_is_information_not_a_warning():
    """E0 >= 0 is the law's own constraint (an irreducible error is not negative): a fit reaching it
    says so once, as information, and raises no warning."""
    flops = np.geomspace(1e18, 1e22, 12)
    from conftest import law_table

    table = law_table("compute", [0.0, 2e5, 0.26], {"flops": flops, "k": np.ones(12)}, metric="pass@k")
    with warnings.catch_warnings():
        warnings.simplefilter("error", bc.FitWarning)
        result = bc.fit(table, "compute", "synthetic", "pass@k", 1)
    assert "E0" in result.diagnostics.at_bound and not result.warnings
    assert result.bounds.constraints == (
        "the constraint E0 ≥ 0 is active (irreducible -log pass@k): the law's own bound, reached by the data",
    )
    assert str(result).count("E0 ≥ 0") == 1 and "(constraint active)" in str(result)


def test_a_search_limit_reached_is_a_warning_saying_what_to_try():
    """A parameter at a search limit (d1 at 1e30) is a warning naming the limit and what to try; on
    the same fit, a at its constraint a <= 1 is information."""
    law = bc.get_law("bnsl_monotone")
    params = {**law.example_params, "a": 1.0, "d1": 1e30}
    found = bound_findings(law, params, ("a", "d1"))
    assert found.flags == {"a": "constraint active", "d1": "at search limit"}
    assert found.constraints[0].startswith("the constraint a ≤ 1 is active")
    (limit,) = found.limits
    assert limit.startswith("parameter d1 reached the upper limit 1e+30 of its search range")
    assert "wider compute range" in limit and "fewer parameters" in limit


def test_solver_messages_are_said_in_benchcast_words(apple):
    result = bc.fit(apple, "power_floor", "arc_easy", "acc_norm", tpr=20)
    assert "`ftol`" not in str(result) and "termination condition" not in str(result)
    assert plain_message("trust-region finish: `ftol` termination condition is satisfied.") == (
        "trust-region finish: the loss stopped decreasing"
    )
    assert plain_message("L-BFGS-B: CONVERGENCE: REL_REDUCTION_OF_F_<=_FACTR*EPSMCH") == (
        "L-BFGS-B: the loss stopped decreasing"
    )
    assert plain_message("L-BFGS-B: CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL") == (
        "L-BFGS-B: the gradient vanished"
    )
    assert plain_message("closed form (least squares)") == "closed form (least squares)"


def test_bound_hits_tell_constraints_from_search_limits():
    from benchcast.plots.params import bound_hits

    values = [1.0, 0.5, 0.0]  # a at its constraint a <= 1, inside, at its lower search limit 0
    assert bound_hits("bnsl_monotone", "a", values).tolist() == [True, False, True]
    assert bound_hits("bnsl_monotone", "a", values, kind="constraint").tolist() == [True, False, False]
    assert bound_hits("bnsl_monotone", "a", values, kind="search").tolist() == [False, False, True]


def test_a_standard_error_the_data_do_not_give_is_not_shown_as_zero(apple):
    """The pseudo-inverse gives an unidentified direction a standard error of 0 (and a missing one
    is NaN): the report says 'not identified' rather than '+/- 0' or nothing."""
    import dataclasses

    result = bc.fit(apple, "power", "arc_easy", "acc_norm", tpr=20)
    degenerate = dataclasses.replace(result, stderr={"A": 0.0, "alpha": float("nan")})
    lines = {line.split("=")[0].strip(): line for line in str(degenerate).splitlines() if " = " in line}
    assert lines["A"].endswith("+/- not identified") and lines["alpha"].endswith("+/- not identified")
    assert "+/- 0 " not in str(degenerate) and "+/- not identified" not in str(result)
