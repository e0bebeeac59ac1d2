"""What a fit of the real data refuses to select rather than answer wrongly: a pass@k benchmark at several k with no
k chosen (pooled, the k would be one curve of different quantities) and a loss or likelihood named as the score."""

from __future__ import annotations

import numpy as np
import pytest

import benchcast as bc
from benchcast.errors import SelectionError


def test_a_pass_at_k_benchmark_at_several_k_is_refused_without_a_k(apple):
    with pytest.raises(SelectionError, match=r"k = 1, 2, 4, 8, 16, 32, 64, 128; choose k with --k"):
        bc.fit(apple, "power_floor", "humaneval-py", None, tpr=20)
    with pytest.raises(SelectionError, match="fitted one k at a time"):
        bc.fit(apple, "power_floor", "humaneval-py", "pass@k", tpr=20)
    one = bc.fit(apple, "power_floor", "humaneval-py", "pass@8", tpr=20)
    assert one.spec.k == 8 and set(one.points["k"]) == {8.0}


@pytest.mark.parametrize(("benchmark", "metric"), [("sciq", "brier"), ("c4", "loss"), ("arc_easy", "loglikelihood")])
def test_a_loss_or_likelihood_is_refused_as_the_score(apple, benchmark, metric):
    with pytest.raises(SelectionError, match=rf"metric {metric!r} is a loss or likelihood .*--proxy {benchmark}:"):
        bc.fit(apple, "power", benchmark, metric, tpr=20)


def test_a_forecast_at_one_k_names_its_k(apple):
    """Two forecasts of one benchmark at k = 1 and k = 8: each says its k, and pass@8 lies above pass@1."""
    made = [
        bc.forecast(
            bc.fit(apple, "power_floor", "mbpp", f"pass@{k}", tpr=20), flops=1e23, uncertainty=bc.Uncertainty(0)
        )
        for k in (1, 8)
    ]
    assert [fc.metric for fc in made] == ["pass@1", "pass@8"]
    assert [fc.to_dict()["metric"] for fc in made] == ["pass@1", "pass@8"]
    assert list(made[1].to_frame()["metric"]) == ["pass@8"]
    assert np.all(made[1].prediction > made[0].prediction)


def _two_recipes(recipes: tuple[str, str]):
    """Two ladders of four sizes at TPR 20, named by a recipe column; the second scores 0.05 above the first."""
    import pandas as pd

    rows = []
    for i, (shift, recipe) in enumerate(zip((0.0, 0.05), recipes, strict=True)):
        for n in (1e8, 3e8, 1e9, 3e9):
            flops = 6 * n * 20 * n
            rows.append({"run": f"{recipe}{i}-{n:.0e}", "params": n, "tokens": 20 * n, "flops": flops, "recipe": recipe,
                         "value": 0.3 + 0.04 * np.log10(flops / 1e18) + shift})  # fmt: skip
    return bc.validate(pd.DataFrame(rows).assign(benchmark="arc_easy", metric="acc"), "two recipes")


def test_runs_of_one_size_that_differ_in_a_text_column_are_said_to_be_pooled():
    """Two recipes in one file fitted without a choice are pooled as replicate seeds: said, with the column and
    compare's --by; one recipe's name on every run (seeds of one recipe) says nothing."""
    with pytest.warns(
        bc.errors.DataWarning, match=r"8 runs share an N and D .* column 'recipe' \(2 values: 'a', 'b'\)"
    ):
        bc.fit(_two_recipes(("a", "b")), "power", "arc_easy", "acc")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", bc.errors.DataWarning)
        bc.fit(
            _two_recipes(("a", "a")).assign(run=lambda t: t["run"] + t.index.astype(str)), "power", "arc_easy", "acc"
        )


def test_loss_metrics_are_told_from_scores_by_their_names():
    """Every metric of the shared data sets: the losses, likelihoods and perplexities (whole words for short marks),
    not the scores."""
    from benchcast.data.schema import is_loss_metric

    losses = ["brier", "loss", "ppl", "task_ppl", "c4_ppl", "soft_log", "bpb", "neg_loglikelihood_norm", "perplexity"]
    scores = ["acc", "acc_norm", "len_norm", "exact_match", "pass@k", "soft", "centered", "apply_rate", "acc,none"]
    assert [is_loss_metric(m) for m in losses] == [True] * len(losses)
    assert [is_loss_metric(m) for m in scores] == [False] * len(scores)


def test_a_k_that_is_not_a_whole_number_is_refused():
    with pytest.raises(bc.errors.BenchcastError, match="k must be a whole number of attempts"):
        bc.FitSpec("power", "mbpp", "pass@k", k=8.5)
