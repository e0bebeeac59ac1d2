"""Cold fits of several subsets solved as one batch (``fit_subsets``, issue 31 §1): each subset's fit is
its one-by-one ``fit_rows`` fit, on the DCLM ladder's rolling origins."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from benchcast.errors import DataError, InsufficientDataError
from benchcast.fitting.api import fit_rows
from benchcast.fitting.engine.batch import minimize_subsets
from benchcast.fitting.engine.loss import make_loss
from benchcast.fitting.engine.search import minimize_law
from benchcast.fitting.engine.solver import _weighted_loss
from benchcast.fitting.spec import FitSpec, design
from benchcast.fitting.stages import fit_subsets
from benchcast.laws import get_law, to_target

ORIGINS = (0.2, 0.4, 0.6, 0.8, 1.0)  # decades below the largest fitted run, as rolling origins place them
# (law, benchmark, tpr): nd_floor separates N from D, so it is fitted where the ladder spans TPRs
CASES = [
    ("power", "arc_easy", 20.0),
    ("power_floor", "arc_easy", 20.0),
    ("bnsl_monotone", "arc_easy", 20.0),
    ("power_floor", "hellaswag", 20.0),
    ("bnsl_monotone", "hellaswag", 20.0),
    ("nd_floor", "arc_easy", None),
]


def _origins(rows, spec):
    """The rolling origins' masks over ``rows`` (runs up to the largest used run / 10**delta)."""
    flops = rows["flops"].to_numpy(float)
    top = fit_rows(rows, spec, quiet=True).points["flops"].max()
    return flops, [flops <= top / 10**delta * (1 + 1e-9) for delta in ORIGINS]


def _batched_and_alone(rows, spec, masks):
    """The subsets' fits solved together (``fit_subsets``) and one by one (``fit_rows``, each with its compute bound)."""
    flops = rows["flops"].to_numpy(float)
    alone = [
        fit_rows(rows[m].reset_index(drop=True), replace(spec, max_flops=float(flops[m].max())), quiet=True)
        for m in masks
    ]
    return fit_subsets(rows, spec, masks), alone


@pytest.fixture(scope="module")
def compared(apple):
    """Per case: the rows, the masks, the batched fits and the one-by-one fits (computed once)."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for law, benchmark, tpr in CASES:
            rows, spec = design(
                apple, FitSpec(law=law, benchmark=benchmark, metric="acc_norm", tpr=tpr, min_flops=3e18)
            )
            assert get_law(law).applicable(rows) == ""
            flops, masks = _origins(rows, spec)
            batched, alone = _batched_and_alone(rows, spec, masks)
            out[law, benchmark] = rows, masks, batched, alone
    return out


@pytest.mark.parametrize(("law", "benchmark"), [(law, benchmark) for law, benchmark, _ in CASES])
def test_each_rolling_origin_is_its_cold_fit(compared, law, benchmark):
    """Every origin's batched fit ends where its lone fit ends: forecasts of the runs ahead of the origin
    within rtol 1e-6 (measured: within 2e-14; the paths differ only by the rounding of sums over the
    other origins' points, which weigh 0), the same loss, convergence, points and spec. No origin of
    these cases reached a different optimum."""
    rows, masks, batched, alone = compared[law, benchmark]
    assert len(batched) == len(masks) == 5
    for mask, a, b in zip(masks, batched, alone, strict=True):
        ahead = rows[~mask].reset_index(drop=True)
        assert len(ahead) > 0
        np.testing.assert_allclose(a.predict_frame(ahead), b.predict_frame(ahead), rtol=1e-6)
        np.testing.assert_allclose(a.diagnostics.loss, b.diagnostics.loss, rtol=1e-9)
        assert a.converged == b.converged  # the same path (not a claim that real data converge everywhere)
        assert a.diagnostics.n_used == b.diagnostics.n_used
        assert a.diagnostics.n_used + a.diagnostics.n_dropped == int(mask.sum())
        assert a.dropped == b.dropped
        assert a.spec == b.spec
        assert a.points["run"].tolist() == b.points["run"].tolist()
        # the search's own account: the same stage won, from as many starts
        assert a.diagnostics.message.split(":")[0] == b.diagnostics.message.split(":")[0]
        assert a.diagnostics.n_starts == b.diagnostics.n_starts


def test_a_subset_too_small_to_fit_gets_its_error_in_its_slot(apple):
    """A mask with fewer points than parameters (and an empty one) gets the error its fit raises; the
    others are fitted, as alone."""
    rows, spec = design(
        apple, FitSpec(law="power_floor", benchmark="arc_easy", metric="acc_norm", tpr=20, min_flops=3e18)
    )
    flops = rows["flops"].to_numpy(float)
    small = flops <= np.sort(flops)[1]  # the two smallest runs: 2 points, 3 parameters
    masks = [small, np.zeros(len(rows), bool), flops <= np.median(flops)]
    out = fit_subsets(rows, spec, masks)
    assert isinstance(out[0], InsufficientDataError) and "only 2 usable points" in str(out[0])
    assert isinstance(out[1], InsufficientDataError) and "only 0 usable points" in str(out[1])
    alone = fit_rows(
        rows[masks[2]].reset_index(drop=True), replace(spec, max_flops=float(flops[masks[2]].max())), quiet=True
    )
    np.testing.assert_allclose(out[2].fitted.vector, alone.fitted.vector, rtol=1e-6)


def test_a_mask_that_is_not_one_boolean_per_row_is_refused(apple):
    rows, spec = design(apple, FitSpec(law="power", benchmark="arc_easy", metric="acc_norm", tpr=20))
    with pytest.raises(DataError, match=f"mask 1 must be a boolean array of one value per row \\({len(rows)}\\)"):
        fit_subsets(rows, spec, [np.ones(len(rows), bool), np.ones(3, bool)])
    with pytest.raises(DataError, match="mask 0"):
        fit_subsets(rows, spec, [np.ones(len(rows), int)])
    with pytest.raises(DataError, match="max_flops has 1 values for 2 masks"):
        fit_subsets(rows, spec, [np.ones(len(rows), bool)] * 2, max_flops=[1e21])


def test_one_subset_of_every_point_is_the_lone_fit_bit_for_bit(apple):
    """Bit-identity is the claim here: a stack of one member with no zero-weighted point does the lone
    fit's arithmetic (same points, weights, box and probes), so it ends exactly where minimize_law ends."""
    rows, spec = design(apple, FitSpec(law="bnsl_monotone", benchmark="hellaswag", metric="acc_norm", tpr=20))
    law = get_law(spec.law)
    X = {"flops": rows["flops"].to_numpy(float)}
    y = to_target(law.target, rows["value"].to_numpy(float), spec.q_rand)
    (batched,) = minimize_subsets(law, [X], [y], [np.arange(len(y))])
    alone = minimize_law(law, X, y, with_stderr=False)
    assert np.array_equal(batched.theta, alone.theta)
    assert (batched.loss, batched.n_evaluations, batched.message) == (alone.loss, alone.n_evaluations, alone.message)


def test_a_point_of_weight_zero_need_not_be_finite():
    """A stack's row carries other subsets' points at weight 0 (and a replicate the runs it did not draw):
    a prediction there that is not finite leaves the row's loss its weighted points' loss."""
    loss = make_loss("huber", 0.01)
    pred = np.array([[0.1, 0.2, np.inf], [0.1, 0.2, np.inf], [0.1, 0.2, 0.3]])
    w = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.5, 0.5, 0.0]])
    with np.errstate(invalid="ignore"):  # the solver runs in this state
        value = _weighted_loss(loss, pred, np.zeros(3), w)
    assert value[0] == value[2] == pytest.approx(0.5 * loss.per_point(np.array([0.1, 0.2])).sum())
    assert value[1] == 1e10  # a weighted point not finite: the row is not finite (PENALTY)


@pytest.mark.parametrize("law", ["power_floor", "bnsl_monotone"])
def test_subsets_in_any_pattern_are_their_cold_fits(apple, law):
    """Masks need not be nested nor ordered: random halves of the runs (each point in some masks and not
    others) are fitted as alone, within the solver's tolerance."""
    rows, spec = design(apple, FitSpec(law=law, benchmark="arc_easy", metric="acc_norm", tpr=20, min_flops=3e18))
    rng = np.random.default_rng(3)
    masks = [rng.random(len(rows)) < 0.6 for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batched, alone = _batched_and_alone(rows, spec, masks)
    for a, b in zip(batched, alone, strict=True):
        np.testing.assert_allclose(a.predict(flops=[1e22, 1e23]), b.predict(flops=[1e22, 1e23]), rtol=1e-6)
        np.testing.assert_allclose(a.diagnostics.loss, b.diagnostics.loss, rtol=1e-9)


def test_a_law_with_presolved_parameters_fits_each_subset_alone(apple):
    """two_stage_logistic presolves its proxy stage per subset, so its subsets are not stacked: each is
    minimize_law's own fit, bit for bit (the claim here is that it is the same code path)."""
    spec = FitSpec(law="two_stage_logistic", benchmark="arc_easy", metric="acc_norm", tpr=20, proxy="dclm:loss")
    rows, spec = design(apple, spec)
    flops = rows["flops"].to_numpy(float)
    masks = [flops <= flops.max() / 10**delta * (1 + 1e-9) for delta in (0.5, 1.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batched, alone = _batched_and_alone(rows, spec, masks)
    for a, b in zip(batched, alone, strict=True):
        assert np.array_equal(a.fitted.vector, b.fitted.vector)
        assert a.diagnostics.n_evaluations == b.diagnostics.n_evaluations


def test_subsets_beyond_one_stack_are_solved_in_several(apple, monkeypatch):
    """More subsets than a stack holds are split into stacks; each is still its cold fit."""
    import benchcast.fitting.engine.batch as batch

    monkeypatch.setattr(batch, "MAX_STACK", 2)
    rows, spec = design(
        apple, FitSpec(law="power_floor", benchmark="arc_easy", metric="acc_norm", tpr=20, min_flops=3e18)
    )
    flops, masks = _origins(rows, spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batched, alone = _batched_and_alone(rows, spec, masks)
    assert len(batched) == 5
    for a, b in zip(batched, alone, strict=True):
        np.testing.assert_allclose(a.fitted.vector, b.fitted.vector, rtol=1e-6)
        assert a.diagnostics.n_evaluations == b.diagnostics.n_evaluations


def test_subsets_of_the_same_runs_are_solved_once_and_keep_their_own_bounds(apple, monkeypatch):
    """Two origins between the same compute levels select the same runs: the engine solves that subset once,
    and each fit records its own compute bound."""
    import benchcast.fitting.stages as stages

    rows, spec = design(apple, FitSpec(law="power_floor", benchmark="arc_easy", metric="acc_norm", tpr=20.0))
    flops = rows["flops"].to_numpy(float)
    low, high = np.unique(flops)[-3:-1]  # two adjacent compute levels below the largest
    masks = [flops <= low, flops <= low, flops <= high]
    solved = []
    monkeypatch.setattr(
        stages,
        "minimize_subsets",
        lambda law, Xs, *a, **k: solved.append(len(Xs)) or minimize_subsets(law, Xs, *a, **k),
    )
    fits = fit_subsets(rows, spec, masks, max_flops=[low, (low + high) / 2, high])
    assert solved == [2]
    assert np.array_equal(fits[0].fitted.theta, fits[1].fitted.theta)
    assert not np.array_equal(fits[0].fitted.theta, fits[2].fitted.theta)
    assert [f.spec.max_flops for f in fits] == [low, (low + high) / 2, high]
