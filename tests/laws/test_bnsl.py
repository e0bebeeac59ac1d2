"""The two stated forms of BNSL: the paper's unrestricted law and the monotone, bounded variant."""

import json
import warnings

import numpy as np
import pytest
from conftest import law_table
from scipy.optimize import lsq_linear

import benchcast as bc
from benchcast.errors import ArtifactError
from benchcast.fitting.engine.projection import box_least_squares
from benchcast.fitting.spec import FitSpec, design

GRID = np.geomspace(1e17, 1e26, 2000)
FORMS = ("bnsl", "bnsl_monotone")


def _paper_formula(coef, flops):
    """Eq. 1 of Krajewski et al. as printed, with the coefficients in the paper's units."""
    return coef["a"] + coef["b"] * flops ** (-coef["c0"]) * (1 + (flops / coef["d1"]) ** (1 / coef["f1"])) ** (
        -coef["c1"] * coef["f1"]
    )


def _random_box_vectors(law, n, seed):
    rng = np.random.default_rng(seed)
    columns = []
    for p in law.parameters:
        if p.log:
            columns.append(np.exp(rng.uniform(np.log(p.lower), np.log(p.upper), n)))
        else:
            columns.append(rng.uniform(p.lower, p.upper, n))
    return np.column_stack(columns)


@pytest.mark.parametrize("name", FORMS)
def test_reparameterisation_keeps_the_papers_predictions(name):
    law = bc.get_law(name)
    flops = np.geomspace(3e18, 6e21, 15)
    rng = np.random.default_rng(0)
    for _ in range(20):
        theta = _random_box_vectors(law, 1, int(rng.integers(1 << 30)))[0]
        theta[4] = np.exp(rng.uniform(np.log(1e18), np.log(1e22)))  # a break where powers stay finite
        theta[5] = rng.uniform(0.2, 3.0)
        coef = law.paper_coefficients(theta)
        expected = _paper_formula(coef, flops)
        assert np.allclose(law.forward(theta, {"flops": flops}), expected, rtol=1e-9, atol=1e-12)
        # b_ref is the gap Q(1e18) - a
        assert law.forward(theta, {"flops": np.array([1e18])})[0] - theta[0] == pytest.approx(theta[1], abs=1e-12)


def test_monotone_form_holds_its_constraints_for_every_vector_in_its_box():
    law = bc.get_law("bnsl_monotone")
    thetas = _random_box_vectors(law, 3000, seed=1)
    curves = law.forward(thetas, {"flops": GRID})
    assert curves.shape == (3000, GRID.size)
    finite = np.isfinite(curves)
    steps = np.diff(np.where(finite, curves, np.nan), axis=1)
    assert np.nanmin(steps) >= -1e-12, "a curve falls with compute"
    assert np.nanmax(curves) <= 1.0 + 1e-12
    limits = np.array([law.limit(t, 0.0)[0] for t in thetas])
    assert np.all(limits <= 1.0 + 1e-12)
    assert np.all(curves[finite.all(axis=1)][:, -1] <= limits[finite.all(axis=1)] + 1e-9)


def test_unrestricted_form_can_fall_and_exceed_one():
    """The paper's form has no sign constraints: inside its box are curves the monotone one excludes."""
    law = bc.get_law("bnsl")
    falling = np.array([0.5, 0.3, 0.2, 0.1, 1e20, 1.0])  # b_ref > 0, c0 > 0: the score falls with compute
    curve = law.forward(falling, {"flops": GRID})
    assert curve[-1] < curve[0]
    rising_past_one = np.array([1.2, -0.9, 0.1, 0.2, 1e20, 1.0])
    assert law.limit(rising_past_one, 0.0)[0] == pytest.approx(1.2)


def test_unrestricted_fit_recovers_a_law_outside_the_monotone_box():
    """c0 < 0 and a > 1, as in some of the paper's published fits: recovered without noise."""
    flops = np.geomspace(3e18, 6e21, 40)
    theta = np.array([1.1, -0.35, -0.08, 0.4, 3e20, 0.6])
    table = law_table("bnsl", theta, {"flops": flops})
    result = bc.fit(table, "bnsl", "synthetic", "acc")
    truth = bc.get_law("bnsl").forward(theta, {"flops": flops})
    assert result.diagnostics.loss < 1e-10
    assert np.max(np.abs(result.predict(flops=flops) - truth)) < 1e-4
    assert result.params["c0"] < 0


def test_monotone_fit_of_a_falling_curve_is_flat_not_falling():
    """Data that fall with compute: the constrained fit can at best be flat (b_ref * c0 <= 0 holds)."""
    flops = np.geomspace(3e18, 6e21, 30)
    score = 0.6 - 0.02 * np.log(flops / 3e18)
    table = law_table("bnsl", np.array([0.5, 0.0, 0.0, 0.0, 1e20, 1.0]), {"flops": flops})
    table["value"] = np.interp(table["flops"], flops, score)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bc.fit(table, "bnsl_monotone", "synthetic", "acc")
    curve = result.predict(flops=GRID)
    assert np.min(np.diff(curve)) >= -1e-12
    assert result.params["b_ref"] <= 0 and result.params["c0"] >= 0


@pytest.mark.parametrize(
    "bench, metric",
    [("gsm8k_cot_llama", "exact_match"), ("triviaqa_1shot", "exact_match"), ("humaneval-py", "pass@1")],
)
def test_monotone_fits_on_real_data_are_non_decreasing_and_at_most_one(apple, bench, metric):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bc.fit(apple, "bnsl_monotone", bench, metric, tpr=20, min_flops=3e18, max_flops=6e21)
    curve = result.predict(flops=GRID)
    assert np.min(np.diff(curve)) >= -1e-12
    assert np.max(curve) <= 1.0
    assert result.fitted.limit()[0] <= 1.0
    # the constraint on a is active on GSM8K: the fit says it sits on a bound
    if bench == "gsm8k_cot_llama":
        assert "a" in result.diagnostics.at_bound


def test_monotone_limit_when_flat_beyond_the_break():
    law = bc.get_law("bnsl_monotone")
    theta = np.array([0.9, -0.4, 0.3, 0.0, 1e20, 0.8])  # c_inf = 0: flat beyond the break
    value, why = law.limit(theta, 0.0)
    assert "flat" in why
    assert value == pytest.approx(law.forward(theta, {"flops": np.array([1e40])})[0], abs=1e-12)
    assert value < theta[0]


def test_bnsl_margin_is_chance_except_lbpp(apple):
    for name in FORMS:
        _, spec = design(apple, FitSpec(name, "lbpp", "pass@1", tpr=20))
        assert spec.margin == 0.02
        _, spec = design(apple, FitSpec(name, "arc_easy", "acc_norm", tpr=20))
        assert spec.margin == 0.0
    _, spec = design(apple, FitSpec("power", "arc_easy", "acc_norm", tpr=20))
    assert spec.margin == 0.05


def test_box_least_squares_matches_scipy():
    rng = np.random.default_rng(5)
    for _ in range(30):
        basis = rng.normal(size=(1, 2, 25))
        target = rng.normal(size=(1, 25)) * 3
        lower, upper = np.array([-0.3, -1.0]), np.array([0.4, 0.0])
        ours = box_least_squares(basis, target, lower, upper, np.zeros(2))[0]
        reference = lsq_linear(basis[0].T, target[0], bounds=(lower, upper), tol=1e-14).x
        assert np.allclose(ours, reference, atol=1e-8)


def test_laws_command_lists_constraints():
    from typer.testing import CliRunner

    from benchcast.cli import app

    runner = CliRunner()
    proc = runner.invoke(app, ["laws", "--json"])
    assert proc.exit_code == 0, proc.output
    described = {d["name"]: d for d in json.loads(proc.output)}
    assert any("b_ref <= 0" in c for c in described["bnsl_monotone"]["constraints"])
    assert any("d1 > 0" in c for c in described["bnsl"]["constraints"])
    assert described["power"]["constraints"] == []
    proc = runner.invoke(app, ["laws"], env={"COLUMNS": "300"})
    assert proc.exit_code == 0 and "constraints" in proc.output and "bnsl_monotone" in proc.output


def test_unrestricted_fit_on_the_breaks_range_says_so(arc_easy_bnsl):
    """ARC-Easy: the unrestricted optimum widens its break to the edge of the range the runs can
    inform (f1 = their log-range), and the fit says so - a finding of the law's range for these
    runs, named in its report - rather than presenting it as an interior optimum."""
    result = arc_easy_bnsl  # bc.fit(apple, "bnsl", "arc_easy", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)
    law = result.law_object
    flops = result.points["flops"].to_numpy()
    box = law.search_box({"flops": flops})
    assert result.diagnostics.at_bound == ("f1",)
    assert result.params["f1"] == pytest.approx(box["f1"][1], rel=1e-6)
    assert result.params["f1"] == pytest.approx(np.log(flops.max() / flops.min()), rel=1e-6)
    assert result.bounds.flags == {"f1": "constraint active"}
    assert "on the law's range for these runs" in result.report()


def test_artifact_with_the_old_meaning_of_b_is_refused(tmp_path):
    """b was once the unnormalised coefficient at 1e18 FLOPs: such an artifact must not load as b_ref."""
    flops = np.geomspace(3e18, 6e21, 30)
    table = law_table("bnsl_monotone", np.array([0.8, -0.4, 0.05, 0.4, 1e20, 0.7]), {"flops": flops})
    result = bc.fit(table, "bnsl_monotone", "synthetic", "acc")
    doc = result.to_dict()
    assert bc.FitResult.from_dict(doc).params == pytest.approx(result.params)
    doc["params"]["b"] = doc["params"].pop("b_ref")
    with pytest.raises(ArtifactError, match="b_ref"):
        bc.FitResult.from_dict(doc)
