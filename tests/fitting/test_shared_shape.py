"""The shape recipes measured on few sizes share (issue 52): fitted back, chosen by held-out error, stated."""

import json

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast import Uncertainty
from benchcast.data.example import recipe_ladders
from benchcast.errors import BenchcastError
from benchcast.fitting.shared_shape import choose_shape, common_draws, fit_shape, shape_draws


def _points(sizes: int, noise: float, seed: int = 0, recipes: int = 3) -> np.ndarray:
    """Recipes on one slope (0.4 per decade), offsets 0, 0.3, 0.6..., plus noise: (recipe, x, z)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(19, 21, sizes)
    return np.array([(r, xi, 10 + 0.3 * r - 0.4 * xi + rng.normal(0, noise)) for r in range(recipes) for xi in x])


def _two_sizes(multipliers: dict, seed: int, **options) -> pd.DataFrame:
    """Recipe ladders on their two larger sizes of three (the smallest is within the near-chance margin)."""
    table = recipe_ladders(multipliers, sizes=3, seed=seed, **options)
    return bc.validate(table[table["params"] > table["params"].min()], "synthetic")


def test_the_shared_slope_is_fitted_back_and_its_draws_are_joint():
    shape = fit_shape(_points(4, 0.01), "shared")
    assert shape.coef[-1] == pytest.approx(0.4, abs=0.03)
    assert shape.coef[1] - shape.coef[0] == pytest.approx(0.3, abs=0.03)
    common = common_draws(shape, 500, np.random.default_rng(0))
    z, residual = shape_draws(shape, 1, np.array([20.0, 22.0]), common, np.random.default_rng(1))
    assert z.shape == (500, 2) and residual.shape == (500, 1)
    assert np.all(np.diff(np.median(z, axis=0)) < 0)  # z falls with compute: the score rises


def test_two_sizes_cannot_test_the_shapes_and_say_so():
    kind, words = choose_shape(_points(2, 0.01))
    assert kind == "anchored" and "no recipe has 3 sizes" in words


def test_three_sizes_choose_by_held_out_error():
    kind, words = choose_shape(_points(3, 0.05, recipes=6))  # one slope: a line per recipe only adds noise
    assert kind != "separate" and "squared log-ratio error forecasting each recipe's largest size" in words
    x = np.linspace(19, 21, 3)
    apart = np.array([(r, xi, 10 - (0.2 + 0.3 * r) * xi) for r in range(3) for xi in x])  # slopes 0.2, 0.5, 0.8
    assert choose_shape(apart)[0] == "separate"
    assert fit_shape(_points(2, 0.01)[:4], "separate") is None  # no residual degree of freedom


def test_a_recipe_sweep_on_two_sizes_borrows_the_shape_and_finds_the_multiplier():
    table = _two_sizes({"A": 1.0, "B": 2.0, "C": 1.0}, seed=2, benchmarks=("hellaswag",), top=1e9)
    out = bc.compare(
        table, "recipe", "hellaswag", flops=1e22, reference="A", uncertainty=Uncertainty(n_boot=50, levels=0.9)
    )
    assert out.recipes["method"].str.startswith("shared exponent").all()
    b = out.multipliers.set_index("recipe").loc["B"]
    assert b["lower"] <= 2.0 <= b["upper"]
    p = out.pairs.set_index(["a", "b"])["p_a_better"]
    assert ((p >= 0) & (p <= 1)).all() and p.loc[("A", "B")] < 0.5


def test_the_backtest_of_decisions_scores_its_pairs_beside_the_simplest_alternative():
    table = bc.validate(recipe_ladders({"A": 1.0, "B": 2.0, "D": 0.5}, sizes=4, seed=4, top=1e9), "synthetic")
    result = bc.compare_backtest(
        table, "recipe", ["arc_easy", "hellaswag"], uncertainty=Uncertainty(n_boot=50, levels=0.9)
    )
    scores = result.scores.set_index("benchmark")
    assert list(scores.index) == ["arc_easy", "hellaswag", "pooled"] and scores.at["pooled", "pairs"] == 6
    # 2x apart on a clear ladder: every order is right, the Brier score small
    assert scores.at["pooled", "decision_accuracy"] == 1.0 and scores.at["pooled", "baseline_accuracy"] == 1.0
    assert scores.at["pooled", "brier"] < 0.05
    assert "backtest of the decisions" in str(result) and "<table" in result._repr_html_()
    assert json.loads(json.dumps(result.to_dict(), allow_nan=False))["scores"][-1]["benchmark"] == "pooled"


def test_a_comparison_is_the_same_given_its_seed():
    table = _two_sizes({"A": 1.0, "B": 1.2}, seed=6, benchmarks=("hellaswag",))
    first, again = (
        bc.compare(table, "recipe", "hellaswag", flops=1e22, uncertainty=Uncertainty(n_boot=20, seed=3, levels=0.9))
        for _ in range(2)
    )
    assert first.pairs["p_a_better"].tolist() == pytest.approx(again.pairs["p_a_better"].tolist(), rel=1e-12)
    assert first.multipliers["lower"].tolist() == pytest.approx(again.multipliers["lower"].tolist(), rel=1e-12)
    other = bc.compare(table, "recipe", "hellaswag", flops=1e22, uncertainty=Uncertainty(n_boot=20, seed=4, levels=0.9))

    def drawn(c):  # what the draws give: the pair's probability and every multiplier's interval
        return [*c.pairs["p_a_better"], *c.multipliers["lower"], *c.multipliers["upper"]]

    assert drawn(other) != drawn(first)  # another seed, other draws (p lies inside (0, 1) here)
    assert 0 < first.pairs["p_a_better"].iloc[0] < 1


def _three_sizes(seed: int = 5):
    return recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=seed, benchmarks=("hellaswag",))


def test_sizes_are_counted_by_parameters_not_by_compute():
    table = _three_sizes()
    jittered = table.assign(tokens=table["tokens"] * 1.004, run=table["run"] + "-j")  # a second run of each size
    jittered["flops"] = 6 * jittered["params"] * jittered["tokens"]  # its own compute: six computes, three sizes
    table = bc.validate(pd.concat([table, jittered], ignore_index=True), "synthetic")
    out = bc.compare(table, "recipe", "hellaswag", flops=1e22, uncertainty=Uncertainty(n_boot=20, levels=0.9))
    assert out.recipes["method"].str.startswith(("shared", "anchored", "separate")).all()  # 3 sizes: the joint fit


def test_the_joint_fit_refuses_an_unknown_chance_level_and_says_why():
    table = bc.validate(_three_sizes().drop(columns="q_rand").assign(benchmark="mytask"), "synthetic")
    with pytest.raises(BenchcastError) as refused:  # no recipe has a forecast: refused, with the reason
        bc.compare(
            table, "recipe", "mytask", flops=1e22, shape="shared", uncertainty=Uncertainty(n_boot=20, levels=0.9)
        )
    said = str(refused.value)
    assert "no recipe of 'recipe' has a forecast" in said and "chance level unknown" in said
    assert "needs two or more recipes" not in said  # the real reason, not a dof


def test_the_joint_fit_drops_runs_by_the_margin_rule():
    table = bc.validate(_three_sizes().assign(margin=0.95), "synthetic")  # every run within chance + 0.95
    with pytest.raises(BenchcastError, match=r"no run above chance \+ margin \(0.252 \+ 0.95\)"):
        bc.compare(
            table, "recipe", "hellaswag", flops=1e22, shape="shared", uncertainty=Uncertainty(n_boot=20, levels=0.9)
        )
