"""The Pythia suite: real lm-eval v0.3 files read unchanged with examples/pythia run metadata."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import benchcast as bc
from benchcast.data.table import runs as table_runs
from benchcast.errors import DataWarning
from benchcast.evaluation.backtest import backtest

ROOT = Path(__file__).resolve().parents[2]
PYTHIA = ROOT.parent / "shared" / "data" / "pythia" / "zero-shot"
FINAL = ROOT / "examples" / "pythia" / "runs.yaml"
CHECKPOINTS = ROOT / "examples" / "pythia" / "checkpoints.yaml"
TOKENS_PER_STEP = 2_097_152

pytestmark = pytest.mark.skipif(not PYTHIA.exists(), reason=f"shared data not found at {PYTHIA}")


@pytest.fixture(scope="module")
def final():
    return bc.load(PYTHIA, metadata=FINAL)


def test_final_checkpoints_are_placed_on_the_ladder(final):
    runs = table_runs(final).set_index("run")
    assert list(runs.index) == [
        "pythia-70m",
        "pythia-160m",
        "pythia-410m",
        "pythia-1b",
        "pythia-1.4b",
        "pythia-2.8b",
        "pythia-6.9b",
        "pythia-12b",
    ]
    assert runs.loc["pythia-70m", "params"] == 70_426_624
    assert runs.loc["pythia-12b", "params"] == 11_846_072_320
    assert (runs["tokens"] == 143_000 * TOKENS_PER_STEP).all()  # 299,892,736,000
    assert np.allclose(runs["flops"], 6 * runs["params"] * runs["tokens"])
    assert final["final"].all() and set(final["step"]) == {143000}
    # values exactly as lm-eval wrote them (v0.3: no ',filter' suffix)
    raw = json.loads((PYTHIA / "pythia-70m" / "70m_step143000.json").read_text())["results"]["arc_easy"]
    arc = bc.select(final, "arc_easy", "acc_norm").set_index("run").loc["pythia-70m"]
    assert arc["value"] == raw["acc_norm"] and arc["stderr"] == raw["acc_norm_stderr"]
    assert "ppl" in set(bc.select(final, "lambada_openai", "ppl")["metric"])


def test_every_checkpoint_with_its_step(final):
    with pytest.warns(DataWarning, match="skipped 8 step-0"):
        table = bc.load(PYTHIA, metadata=CHECKPOINTS, checkpoints="all")
    assert table["run"].nunique() == 8 * 26  # 27 checkpoints each, step 0 has no compute
    row = table[(table["run"] == "pythia-410m@step13000") & (table["benchmark"] == "piqa")].iloc[0]
    assert row["tokens"] == 13000 * TOKENS_PER_STEP and row["series"] == "pythia-410m" and not row["final"]
    # the 1B files are named 1b-bf16-5shot_step<N>.json; the step comes from revision=step<N>
    assert table[table["series"] == "pythia-1b"]["step"].nunique() == 26
    finals = table[table["final"]]
    assert sorted(finals["run"].unique()) == sorted(f"{r}@step143000" for r in final["run"].unique())


def test_forecasting_the_large_models_from_the_small_ones(final):
    """Fit the final checkpoints up to 1.4B (C <= 3e21) and predict 2.8B, 6.9B and 12B (measured)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = backtest(final, bc.FitSpec(law="power", benchmark="arc_easy", metric="acc_norm"), threshold=3e21)
    assert result.metrics["n_train"] == 5 and result.metrics["n_test"] == 3
    # measured: held-out MAE 0.026, MRE 4.2 % (the law overshoots the 6.9B and 12B models slightly)
    assert result.metrics["test_mae"] < 0.035 and result.metrics["test_mre"] < 6.0


def test_a_fit_reads_each_runs_final_checkpoint_by_default(final):
    """steps: all read as the fits read it: the 8 final checkpoints, named as their runs, the rest set aside."""
    with pytest.warns(DataWarning) as caught:
        table = bc.load(PYTHIA, metadata=CHECKPOINTS)
    said = " ".join(str(w.message) for w in caught)
    assert "200 earlier checkpoint(s) of 8 run(s) set aside" in said
    assert sorted(table["run"].unique()) == sorted(final["run"].unique())
    key = ["run", "benchmark", "metric"]
    both = table.merge(final, on=key, suffixes=("", "_final"))
    assert len(both) == len(final) and (both["value"] == both["value_final"]).all()


def test_the_v03_mmlu_subtasks_are_one_group_by_their_hyphenated_prefix(final):
    """lm-eval v0.3 names MMLU's subtasks hendrycksTest-<subject>: -b hendrycksTest is their unweighted mean."""
    from benchcast.data.table import select

    subtasks = sorted(b for b in final["benchmark"].unique() if b.startswith("hendrycksTest-"))
    assert len(subtasks) == 57
    with pytest.warns(DataWarning, match="unweighted mean of its 57 subtasks"):
        group = select(final, "hendrycksTest", "acc").set_index("run")["value"]
    parts = final[final["benchmark"].isin(subtasks) & (final["metric"] == "acc")]
    expected = parts.groupby("run")["value"].mean()
    assert len(group) == 8 and np.allclose(group.sort_index(), expected.loc[group.index].sort_index())
    from benchcast.data.table import task_group

    assert task_group(["x_a", "x-b", "x-c"], "x") == ["x-b", "x-c", "x_a"]  # either joint, in one group


def test_a_compute_law_is_flagged_where_the_target_s_tpr_is_not_the_ladders_at_its_compute(final):
    """Pythia's TPR goes with size (25 at 12B to 4,260 at 70M), so 7B on 4T tokens (TPR 571) lies inside the fitted
    TPR range, yet the runs near its compute were trained at TPR 25-44: power_floor reads it as one of theirs, flagged;
    the 6.9B run's own allocation (TPR 44) is not."""
    from benchcast.forecasting import flags as fl

    fit = bc.fit(final, "power_floor", "arc_easy", "acc_norm")
    far, own = (
        bc.forecast(fit, params=7e9, tokens=tokens, uncertainty=bc.Uncertainty(0)).to_frame()["flags"].iloc[0]
        for tokens in (4e12, 3.0e11)
    )
    (flag,) = [f for f in far if f.kind == fl.OUTSIDE_TPR]
    assert "lies 13" in flag.reason and "fitted runs nearest its compute" in flag.reason and not flag.refuses
    assert fl.OUTSIDE_TPR not in [f.kind for f in own]
