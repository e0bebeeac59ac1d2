"""benchcast.compare (issue 52): recipes at a planned run from the one forecaster, the probability of each order, the
effective-compute multiplier, the simplest alternative beside it, and the refusals by name."""

import json

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast import FitSpec, Uncertainty
from benchcast.data.example import recipe_ladders
from benchcast.errors import BenchcastError

N_BOOT = 40
PLANNED = 4e21  # twice the ladder's largest run


@pytest.fixture(scope="module")
def ladders() -> pd.DataFrame:
    """Recipe B is truly 2x as compute-efficient as A (same exponent), on one benchmark."""
    return bc.validate(recipe_ladders({"A": 1.0, "B": 2.0}, sizes=12, seed=3, benchmarks=("hellaswag",)), "synthetic")


@pytest.fixture(scope="module")
def comparison(ladders):
    return bc.compare(
        ladders,
        "recipe",
        "hellaswag",
        flops=PLANNED,
        reference="A",
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )


def test_the_truly_better_recipe_wins_and_its_multiplier_interval_holds_two(comparison):
    pair = comparison.pairs.iloc[0]
    assert (pair["a"], pair["b"]) == ("A", "B")
    assert 0.0 <= pair["p_a_better"] < 0.5 and pair["decision"] != "A"  # B wins (or it is not decided)
    rows = comparison.recipes.set_index("recipe")
    assert rows.at["B", "rank"] == 1 and rows.at["A", "rank"] == 2
    b = comparison.multipliers.set_index("recipe").loc["B"]
    assert b["reference"] == "A" and not (b["lower_censored"] or b["upper_censored"] or b["point_censored"])
    assert np.isfinite([b["lower"], b["upper"]]).all() and b["lower"] <= 2.0 <= b["upper"]
    assert b["upper"] / b["lower"] < 4 and b["lower"] <= b["multiplier"] <= b["upper"] and b["multiplier"] > 1


def test_a_curve_that_never_reaches_the_score_gives_a_bound_not_a_number():
    table = bc.validate(recipe_ladders({"A": 1.0, "D": 0.01}, sizes=12, seed=3, benchmarks=("hellaswag",)), "synthetic")
    out = bc.compare(
        table,
        "recipe",
        "hellaswag",
        flops=1e22,
        reference="A",
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    assert out.pairs.iloc[0]["decision"] == "A"  # 100x the compute apart: certain
    d = out.multipliers.set_index("recipe").loc["D"]
    assert d["point_censored"] == "<" and d["lower_censored"] and not d["upper_censored"]
    assert 0 < d["lower"] <= d["multiplier"] <= d["upper"] < 1 and "reach" in d["note"]
    assert f"< 1/{1 / d['lower']:.3g}" in str(out)
    doc = json.loads(json.dumps(out.to_dict(), allow_nan=False))
    assert all(m["lower"] is not None and m["upper"] is not None for m in doc["multipliers"])


def test_a_reference_without_a_forecast_is_refused_with_a_note(ladders):
    few = ladders[ladders["recipe"] == "A"].head(2).assign(recipe="C", run=lambda f: "C-" + f["run"])
    table = pd.concat([ladders, few], ignore_index=True)
    out = bc.compare(
        table,
        "recipe",
        "hellaswag",
        flops=PLANNED,
        reference="C",
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    m = out.multipliers
    assert m["multiplier"].isna().all() and (m["reference"] == "C").all()
    assert m["note"].str.contains("reference C has no forecast on hellaswag").all()
    assert "reference C has no forecast" in str(out)


def test_each_recipe_forecast_is_the_default_forecast_of_its_runs(ladders, comparison):
    alone = bc.forecast_default(
        ladders[ladders["recipe"] == "B"],
        "hellaswag",
        flops=PLANNED,
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    row = comparison.recipes.set_index("recipe").loc["B"]
    assert row["prediction"] == pytest.approx(float(alone.prediction[0]), rel=1e-9)
    lower, upper = alone.interval(0.9)
    assert row["lower"] == pytest.approx(float(lower[0]), rel=1e-6) and row["upper"] == pytest.approx(float(upper[0]))


def test_the_simplest_alternative_and_the_views(comparison):
    rows = comparison.recipes
    assert rows["baseline"].notna().all() and set(rows["baseline_rank"]) == {1.0, 2.0}
    pair = comparison.pairs.iloc[0]
    assert pair["baseline_a_better"] == 0.0 and not pair["disagree"]  # B, twice as efficient, is better at the top
    assert rows["baseline_flops"].nunique() == 1 and (rows["baseline_note"] == "").all()
    text = str(comparison)
    assert "p_a_better" in text and "common random numbers" in text and "undecided" in text
    assert "<table" in comparison._repr_html_()
    doc = json.loads(json.dumps(comparison.to_dict(), allow_nan=False))
    assert {"recipes", "pairs", "multipliers"} <= set(doc) and 0 <= doc["pairs"][0]["p_a_better"] <= 1


def test_a_recipe_with_too_few_runs_is_reported_and_left_out_of_the_pairs(ladders):
    few = ladders[ladders["recipe"] == "A"].head(2).assign(recipe="C", run=lambda f: "C-" + f["run"])
    table = pd.concat([ladders, few], ignore_index=True)
    out = bc.compare(
        table,
        "recipe",
        "hellaswag",
        flops=PLANNED,
        n_jobs=1,
        errors="independent",
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    row = out.recipes.set_index("recipe").loc["C"]
    assert np.isnan(row["prediction"]) and row["note"].startswith("no forecast")
    # the terminal table says why in C's own row, not only in the notes under it (its flags cell was empty)
    table = out.rich_items()[0]
    cells = dict(zip(table.columns[1]._cells, table.columns[-1]._cells, strict=True))
    assert cells["C"] == row["note"]
    with_c = out.pairs[(out.pairs["a"] == "C") | (out.pairs["b"] == "C")]
    assert len(with_c) == 2 and with_c["p_a_better"].isna().all() and with_c["reason"].str.contains("C").all()
    assert "independent" in str(out)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda t: t.drop(columns="recipe"), "no column 'recipe'"),
        (lambda t: t.assign(recipe="A"), "holds 1 recipe"),
        (lambda t: t.assign(benchmark=np.where(t["recipe"] == "A", "hellaswag", "arc_easy")), "share no benchmark"),
    ],
)
def test_bad_recipe_columns_are_refused_by_name(ladders, change, words):
    with pytest.raises(BenchcastError, match=words):
        bc.compare(
            change(ladders), "recipe", "hellaswag", flops=PLANNED, uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9)
        )


def test_a_reference_that_is_no_recipe_is_refused(ladders):
    with pytest.raises(BenchcastError, match="reference 'Z'"):
        bc.compare(ladders, "recipe", "hellaswag", flops=PLANNED, reference="Z")


def _group(ladders: pd.DataFrame) -> pd.DataFrame:
    """The ladders' hellaswag scores as two MMLU subtasks (a task group, ``mmlu_val``, the mean of both)."""
    one = ladders.assign(benchmark="mmlu_stem_val")
    two = ladders.assign(benchmark="mmlu_humanities_val", value=ladders["value"] * 0.98)
    return pd.concat([one, two], ignore_index=True).drop(columns="q_rand").assign(q_rand=0.25)


def test_a_task_group_is_compared_and_backtested(ladders):
    table = _group(ladders)
    out = bc.compare(
        table, "recipe", "mmlu_val", flops=PLANNED, n_jobs=1, uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9)
    )
    assert out.recipes["prediction"].notna().all() and set(out.recipes["benchmark"]) == {"mmlu_val"}
    said = out.recipes.iloc[0]["warnings"]  # the forecast's own warnings are kept, not swallowed
    assert any("unweighted mean of its 2 subtasks" in w for w in said) and "warning: benchmark 'mmlu_val'" in str(out)
    result = bc.compare_backtest(
        table, "recipe", "mmlu_val", n_jobs=1, uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9)
    )
    pooled = result.scores.set_index("benchmark").loc["pooled"]
    assert pooled["pairs"] == 1 and pooled["answered"] == 1  # the group's held-out runs are the truth


def test_a_recipe_missing_a_benchmark_is_a_reason_not_an_abort(ladders):
    table = pd.concat([ladders, ladders[ladders["recipe"] == "A"].assign(benchmark="arc_easy")], ignore_index=True)
    result = bc.compare_backtest(
        table, "recipe", ["hellaswag", "arc_easy"], n_jobs=1, uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9)
    )
    scores = result.scores.set_index("benchmark")
    assert scores.at["hellaswag", "pairs"] == 1 and scores.at["arc_easy", "pairs"] == 0
    # the levels are scored too, beside the simplest alternative's (on hellaswag's two recipes; arc_easy's B has none)
    assert scores.at["hellaswag", "n_levels"] == 2 and np.isfinite(scores.at["hellaswag", "level_mae"])
    assert np.isfinite(scores.at["hellaswag", "baseline_level_mae"])
    arc = result.pairs[result.pairs["benchmark"] == "arc_easy"].iloc[0]
    assert "B:" in arc["truth_note"]


def test_draws_without_a_score_are_dropped_and_an_even_pair_counts_half():
    from benchcast.evaluation.compare_backtest import _scores
    from benchcast.forecasting.compare_draws import _pairs

    frame = pd.DataFrame({"recipe": ["A", "B"], "baseline": [0.5, 0.6]})
    draws = {"A": np.array([1.0, np.nan, 1.0, np.nan]), "B": np.array([0.0, 2.0, 0.0, 2.0])}
    grid = (np.array([1.0, 10.0]), np.array([0.1, 0.2]))
    row = _pairs(frame, draws, {"A": grid, "B": grid}, 10.0, 0.9, "x").iloc[0]
    assert row["p_a_better"] == 1.0 and "2 of 4" in row["reason"]  # was 0.5: a NaN counted as "b better"
    even = pd.DataFrame(
        {
            "p_a_better": [0.5, 0.9],
            "truth_a_better": [1.0, 1.0],
            "baseline_a_better": [1.0, 1.0],
            "decision": ["undecided", "A"],
        }
    )
    assert _scores("x", even, None)[3] == pytest.approx(0.75)  # p = 1/2 counts half, as the baseline's tie


@pytest.mark.parametrize(
    ("benchmark", "words"),
    [
        ("hellaswg", "unknown benchmark 'hellaswg'. Did you mean 'hellaswag'"),
        ("hellaswag:acc_nrm", "no metric 'acc_nrm'. Did you mean 'acc_norm'"),
    ],
)
def test_a_typo_gets_the_selection_error_forecast_gives(ladders, benchmark, words):
    with pytest.raises(BenchcastError) as compared:
        bc.compare(ladders, "recipe", benchmark, flops=PLANNED, uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9))
    with pytest.raises(BenchcastError) as forecast:
        name, _, metric = benchmark.partition(":")
        bc.forecast_default(
            ladders,
            FitSpec("power", name, metric=metric or None),
            flops=PLANNED,
            uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
        )
    assert words in str(compared.value) and str(compared.value) == str(forecast.value)
    assert "share no benchmark" not in str(compared.value)


def test_the_joint_fit_flags_a_recipe_as_forecast_flags_its_own_fit():
    table = bc.validate(recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=5, benchmarks=("hellaswag",)), "synthetic")
    one = table[table["recipe"] == "A"].nlargest(1, "flops").assign(recipe="C", run="C-one")
    table = pd.concat([table, one], ignore_index=True)
    top = float(table["flops"].max())
    # the planned run 0.5 % above the largest runs: each recipe's own largest run is in the fit, as forecast flags it
    at = bc.compare(
        table,
        "recipe",
        "hellaswag",
        flops=top * 1.005,
        shape="shared",
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    rows = at.recipes.set_index("recipe")
    assert rows["prediction"].notna().all()
    assert all(any(f.kind == "at a fitted run" for f in rows.at[r, "flags"]) for r in "ABC")
    far = bc.compare(
        table,
        "recipe",
        "hellaswag",
        flops=top * 10,
        shape="shared",
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    rows = far.recipes.set_index("recipe")
    assert rows.at["A", "flags"] == () and rows.at["B", "flags"] == ()  # three sizes each, an extrapolation: unflagged
    (borrowed,) = rows.at["C", "flags"]  # one run: its forecast is never unflagged
    assert borrowed.kind == "slope borrowed" and "borrowed from the other recipes" in borrowed.reason
    assert "flagged: slope borrowed" in str(far)
    # five decades beyond: the 90 % band (prior-only extrapolation error) spans over half of chance .. 1, and the row
    # is flagged uninformative by the rule make_forecast applies (flags.uninformative), naming the band it read
    wide = bc.compare(
        table,
        "recipe",
        "hellaswag",
        flops=top * 1e5,
        shape="shared",
        n_jobs=1,
        uncertainty=Uncertainty(n_boot=N_BOOT, levels=0.9),
    )
    rows = wide.recipes.set_index("recipe")
    for r in "AB":
        (flag,) = [f for f in rows.at[r, "flags"] if f.kind == "uninformative"]
        assert f"interval {rows.at[r, 'lower']:.3g} .. {rows.at[r, 'upper']:.3g}" in flag.reason
        assert "of the range from chance (0.252) to 1" in flag.reason and not flag.refuses
    assert "uninformative" in str(wide)


def test_long_recipe_names_that_share_a_prefix_are_never_cut_alike():
    prefix = "cc_v4_resiliparse_rw_v2_bff_minngram20_"  # 39 characters, as the DCLM recipes share
    renames = {"A": prefix + "10shards_shard3_OH_eli5", "B": prefix + "32shards_shard3_OH_eli5"}
    table = bc.validate(recipe_ladders({"A": 1.0, "B": 2.0}, sizes=3, seed=5, benchmarks=("hellaswag",)), "synthetic")
    out = bc.compare(
        table.assign(recipe=table["recipe"].map(renames)),
        "recipe",
        "hellaswag",
        flops=1e22,
        uncertainty=Uncertainty(n_boot=20, levels=0.9),
    )
    text = str(out)
    assert "…" not in text  # wrapped, not cut to the shared prefix
    flat = "".join(text.split())
    assert all(name in flat for name in renames.values())
    from benchcast.plots.compare import unique_labels

    labels = unique_labels([*renames.values(), "dolma"], 24)
    assert len(set(labels)) == 3 and labels[2] == "dolma" and all(len(x) <= 25 for x in "\n".join(labels).split("\n"))
    figure = out.plot()
    ticks = [t.get_text() for t in figure.axes[1].get_yticklabels()]
    assert len(set(ticks)) == 2 and all(
        t.replace("\n", "").rstrip("…") in name for t, name in zip(ticks, renames.values(), strict=True)
    )


def test_many_recipes_show_their_neighbours_in_rank_and_json_keeps_every_pair():
    """Twelve recipes make 66 pairs: the terminal lists the 11 of recipes next in rank (and says so), --json all 66."""
    multipliers = {f"R{i:02d}": 1.3**i for i in range(12)}
    table = bc.validate(recipe_ladders(multipliers, sizes=4, seed=5, benchmarks=("hellaswag",)), "synthetic")
    result = bc.compare(
        table, "recipe", "hellaswag", flops=PLANNED, n_jobs=1, uncertainty=Uncertainty(n_boot=20, levels=0.9)
    )
    assert len(result.pairs) == 66 and len(result.to_dict()["pairs"]) == 66
    text = " ".join(str(result).split())
    assert "pairs of recipes next in rank: 11 of 66 (--json lists all)" in text
    pairs = text.split("pairs of recipes next in rank")[1].split("effective-compute multipliers")[0]
    ranked = list(result.recipes.sort_values("rank", kind="stable")["recipe"])
    assert f"{ranked[0]} │ {ranked[1]}" in pairs or f"{ranked[1]} │ {ranked[0]}" in pairs
    assert f"{ranked[0]} │ {ranked[2]} " not in pairs and f"{ranked[2]} │ {ranked[0]} " not in pairs
    # the figure draws the ten best-ranked and says so; every recipe stays in the tables
    import matplotlib.pyplot as plt

    fig = result.plot()
    curves, matrix = fig.axes[:2]
    assert curves.get_title().startswith("the 10 best-ranked of 12 recipes")
    assert sorted(t.get_text() for t in matrix.get_yticklabels()) == sorted(ranked[:10])
    plt.close(fig)


def test_the_backtest_scores_the_forecast_levels_beside_the_baselines():
    """compare --backtest scored decisions only, so a forecast high on every recipe (DCLM's 6.9B hellaswag, +0.08)
    went unseen: the levels' bias, error and coverage are scored, with the baseline's error on the same recipes."""
    from benchcast.evaluation.compare_backtest import _levels

    recipes = pd.DataFrame(
        {
            "prediction": [0.70, 0.62, 0.55, np.nan],
            "lower": [0.66, 0.60, 0.50, np.nan],
            "upper": [0.74, 0.64, 0.60, np.nan],
            "baseline": [0.60, 0.55, 0.52, 0.40],
            "truth": [0.65, 0.61, 0.52, 0.45],
        }
    )
    bias, mae, baseline_mae, covered, n = _levels(recipes)
    assert n == 3 and bias == pytest.approx((0.05 + 0.01 + 0.03) / 3) and mae == pytest.approx(bias)
    assert baseline_mae == pytest.approx((0.05 + 0.06 + 0.0) / 3) and covered == pytest.approx(2 / 3)


def test_the_backtest_counts_its_pairs_without_truth_per_benchmark():
    """compare --backtest on 64 DCLM recipes printed a line per pair without truth (9,800 lines above its table):
    one line per benchmark now, its count and first reasons."""
    from types import SimpleNamespace

    from benchcast.evaluation.compare_backtest import CompareBacktest

    why = [f"r{i}: no run at 5.7e+21 FLOPs" for i in range(5)]
    pairs = pd.DataFrame(
        {
            "benchmark": ["arc"] * 6 + ["hs"] * 2,
            "truth_note": [why[0], why[1], why[2], why[3], why[4], ""] + ["", ""],
        }
    )
    (line,) = CompareBacktest._no_truth(SimpleNamespace(pairs=pairs))
    assert line.startswith("arc: 5 of 6 pairs have no truth (r0: no run at 5.7e+21 FLOPs; r1:")
    assert "; and 2 more; --json: each)" in line
