"""The default's laws follow the ladder (laws of N and D across TPRs, of compute otherwise, each law
saying which it is), and a strategy forecasts with the members that have support, a fallback where none
has it, and "no support" only where nothing fits."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchcast import FitSpec, Uncertainty
from benchcast.forecasting.ensemble import Member
from benchcast.forecasting.selection import (
    DEFAULT_POOL,
    FALLBACK_POOL,
    across_tprs,
    choose,
    ladder_laws,
    members_with_support,
)
from benchcast.laws import available_laws, get_law
from benchcast.laws.questions import spans_tprs


def _runs(params, tokens) -> pd.DataFrame:
    params, tokens = np.asarray(params, float), np.asarray(tokens, float)
    return pd.DataFrame({"params": params, "tokens": tokens, "tpr": tokens / params, "metric": "acc"})


SIZES = np.geomspace(1e8, 3e9, 6)
FIXED_TPR = _runs(SIZES, 20 * SIZES)
FIXED_TOKENS = _runs(SIZES, np.full(6, 3e11))  # Pythia's shape: TPR falls with size, one curve in C
MULTI_TPR = _runs(np.repeat(SIZES, 3), np.repeat(SIZES, 3) * np.tile([10.0, 40.0, 80.0], 6))


def test_a_ladder_spans_tprs_only_where_tpr_varies_at_one_size():
    assert spans_tprs(MULTI_TPR)
    assert not spans_tprs(FIXED_TPR) and not spans_tprs(FIXED_TOKENS)


def test_the_candidates_follow_the_ladder_as_each_law_declares():
    compute_laws, compute_fallback = ladder_laws(FIXED_TOKENS)
    nd_laws, nd_fallback = ladder_laws(MULTI_TPR)
    assert compute_laws == ("power_floor", "bnsl_monotone") and compute_fallback == ("power",)
    # two_stage_nd: a challenger, fitted where the data holds its proxy loss (selection.CHALLENGERS)
    assert set(nd_laws) == {"nd_floor", "power_floor_tpr", "two_stage_nd"} and nd_fallback == ("nd",)
    assert all(get_law(law).models_tpr for law in (*nd_laws, *nd_fallback))
    assert not any(get_law(law).models_tpr for law in (*compute_laws, *compute_fallback))
    assert set(DEFAULT_POOL + FALLBACK_POOL) <= set(available_laws())


def test_a_law_of_compute_across_tprs_is_flagged():
    assert "across several tokens-per-parameter ratios" in across_tprs(MULTI_TPR, "power")
    assert across_tprs(MULTI_TPR, "nd_floor") == "" and across_tprs(FIXED_TPR, "power") == ""


def test_laws_of_n_and_d_do_not_apply_to_a_fixed_token_ladder():
    assert "fixed-TPR or fixed-token" in get_law("nd_floor").applicable(FIXED_TOKENS)
    assert get_law("power_floor_tpr").applicable(MULTI_TPR) == ""


def _errors(origins, offset: float = 0.0) -> pd.DataFrame:
    """Rolling-origin forecasts at ``origins`` (decades below the top), four points ahead of each."""
    frames = []
    for delta in origins:
        flops = np.geomspace(1e21, 1e22, 4)
        true = np.linspace(0.5, 0.6, 4)
        frames.append(
            pd.DataFrame(
                {
                    "origin_decades": delta,
                    "origin": 1e22 / 10**delta,
                    "run": [f"r{i}" for i in range(4)],
                    "k": np.nan,
                    "flops": flops,
                    "decades": np.log10(flops / (1e22 / 10**delta)),
                    "true": true,
                    "predicted": true * (1 + offset + 0.01 * delta),
                    "converged": True,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def test_members_with_support_leave_out_only_the_unsupported_law():
    errors = {"a": _errors([0.2, 0.4, 0.6]), "b": _errors([0.2]), "c": _errors([0.2, 0.4, 0.6, 0.8], 0.02)}
    assert members_with_support(errors) == ["a", "c"]
    assert members_with_support({"b": errors["b"], "d": pd.DataFrame()}) == []


def _outcome(law: str, origins=(0.2, 0.4, 0.6), error: str = "") -> Member:
    """A law's fit as the one law choice reads it: its rolling-origin forecasts, and a stand-in fit (the runs it
    spans, its diagnostics) where it was fitted."""
    if error:
        return Member(law, None, error=error)
    fit = SimpleNamespace(
        spec=SimpleNamespace(benchmark="b"),
        points=pd.DataFrame({"flops": np.geomspace(1e18, 1e22, 9)}),
        dropped=[],
        diagnostics=SimpleNamespace(n_used=9, dropped="0", decades=4.0),
        converged=True,
        bounds=SimpleNamespace(columns=lambda: {}),
    )
    return Member(law, fit, _errors(origins))


def _choose(strategy, outcomes, candidates, fallbacks=()):
    pool = {law: outcomes[law] for law in (*candidates, *fallbacks) if law in outcomes}
    return choose(pool, strategy, fallbacks=fallbacks, judge_length=bool(fallbacks))


@pytest.mark.parametrize("strategy", ["ensemble", "stack", "select"])
def test_a_selector_forecasts_with_the_members_that_have_support(strategy):
    outcomes = {"power_floor": _outcome("power_floor"), "bnsl_monotone": _outcome("bnsl_monotone", error="failed")}
    choice = _choose(strategy, outcomes, ("power_floor", "bnsl_monotone"))
    assert choice.supported and choice.weights == {"power_floor": 1.0}
    assert any("bnsl_monotone: failed" in failure for failure in choice.failures)


def test_without_supported_candidates_the_fallback_forecasts_alone_and_nothing_fitted_is_no_support():
    outcomes = {
        "power_floor": _outcome("power_floor", origins=()),
        "bnsl_monotone": _outcome("bnsl_monotone", origins=(0.2,)),
        "power": _outcome("power", origins=(0.2,)),
    }
    candidates = ("power_floor", "bnsl_monotone")
    choice = _choose("ensemble", outcomes, candidates, fallbacks=("power",))
    assert choice.supported and choice.weights == {"power": 1.0}
    assert "the fallback power forecasts alone" in "; ".join(choice.failures)
    assert not _choose("ensemble", outcomes, candidates).supported  # no fallback given
    outcomes["power"] = _outcome("power", error="too few points")
    assert not _choose("ensemble", outcomes, candidates, fallbacks=("power",)).supported


def test_a_law_declares_the_ladder_length_it_needs():
    from types import SimpleNamespace

    from benchcast.forecasting.selection import too_short

    def fit(low, high):
        return SimpleNamespace(points=pd.DataFrame({"flops": [low * 10, high]}), dropped=[{"flops": low}])

    assert "needs 2" in too_short("bnsl_monotone", fit(1e19, 3e20))  # 1.5 decades, the lowest run dropped
    assert too_short("bnsl_monotone", fit(1e18, 3e21)) == ""
    assert too_short("power_floor", fit(1e19, 3e20)) == "" and too_short("bnsl_monotone", None) == ""


def test_bench_takes_each_data_sets_candidates_from_its_ladder(apple):
    from benchcast.evaluation.bench import Dataset, make_cells

    pairs = (("arc_easy", "acc_norm"),)
    several = Dataset("tpr", apple, pairs, (6e21,), None, 3e18, (160.0,))
    one = Dataset("tpr20", apple, pairs, (6e21,), 20.0, 3e18)
    ((cell,), _), ((cell20,), _) = make_cells([several]), make_cells([one])
    assert (cell.candidates, cell.fallbacks) == (("nd_floor", "power_floor_tpr", "two_stage_nd"), ("nd",))
    assert (cell20.candidates, cell20.fallbacks) == (("power_floor", "bnsl_monotone"), ("power",))


def test_a_short_ladder_forecasts_with_the_fallback_and_says_where_its_interval_comes_from(apple):
    """DCLM at TPR 20 cut to 1.5 decades: gsm8k's candidates have no support there (BNSL's break needs
    2 decades, power_floor too few usable origins); power forecasts it, its interval from its own origins shrunk
    toward the cross-ladder prior, or the prior alone (the source says which)."""
    import warnings

    from benchcast.forecasting.answers import recommend

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # near-chance fits: their warnings are not under test
        rec = recommend(
            apple,
            FitSpec("power", "gsm8k_cot_llama", metric="exact_match", tpr=20, min_flops=3e19),
            target_flops=1e21,
            uncertainty=Uncertainty(n_boot=10, levels=0.9),
        )
    assert rec.supported and rec.weights == {"power": 1.0}
    notes = " ".join(rec.failures)
    assert "bnsl_monotone: the runs span" in notes and "the fallback power forecasts alone" in notes
    assert 0 < rec.forecast.records()[0]["prediction"] < 1
    source = rec.forecast.records()[0]["extrapolation"]["source"]
    assert source in ("own+prior (3 ladders)", "prior (3 ladders)")
    assert (
        rec.forecast.records()[0]["lower"]
        < rec.forecast.records()[0]["prediction"]
        < rec.forecast.records()[0]["upper"]
    )


def test_bench_decides_a_cutoffs_ladder_on_its_training_runs_only(apple):
    """Runs above the cutoff are held out: their TPRs must not choose the candidates (recommend sees only
    the runs below its target). Here the training runs are all at TPR 20, the held-out ones at several."""
    from benchcast.evaluation.bench import Dataset, make_cells
    from benchcast.forecasting.selection import ladder_laws

    table = apple[np.isclose(apple["tpr"], 20.0) | (apple["flops"] > 1e20)]
    data = Dataset("mixed", table, (("arc_easy", "acc_norm"),), (1e20,), None, 3e18)
    ((cell,), _) = make_cells([data])
    assert (cell.seen["flops"] <= 1e20).all() and np.allclose(cell.seen["tpr"], 20.0)
    assert (cell.candidates, cell.fallbacks) == (("power_floor", "bnsl_monotone"), ("power",))
    everyone = table.drop_duplicates("run")
    assert ladder_laws(everyone[everyone["flops"] >= 3e18]) == (
        ("nd_floor", "power_floor_tpr", "two_stage_nd"),
        ("nd",),
    )
