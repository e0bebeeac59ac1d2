"""A pass@k row no samples could give beside its run's smaller k (the Apple files' lbpp and mbpp: pass@2..128 of 1
where pass@1 is 0, in 28 runs each) is left out of every fit, counted with its reason, not fitted silently."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.data.table import INCONSISTENT_K, inconsistent_k

KS = (1, 2, 4, 8)


def test_a_row_outside_pass_j_and_k_over_j_pass_j_is_inconsistent():
    rows = pd.DataFrame(
        {
            "run": ["ok"] * 4 + ["corrupt"] * 4 + ["falls"] * 4,
            "k": [*KS] * 3,
            # 1 - (1 - p)^k at p = 0.1; pass@1 of 0 beside pass@2.. of 1; a pass@4 below pass@2
            "value": [0.1, 0.19, 0.3439, 0.5695, 0.0, 1.0, 1.0, 1.0, 0.2, 0.3, 0.25, 0.5],
        }
    )
    bad = inconsistent_k(rows)
    assert not bad[:4].any()  # an exact curve: at (k/j) pass@j only where p is tiny, never above
    assert bad[4:8].tolist() == [False, True, True, True]  # the smallest k is the anchor
    assert bad[8:].tolist() == [False, False, True, True]  # and not read past the break


def _ladder(corrupt: str) -> pd.DataFrame:
    rows = []
    for i, n in enumerate(np.geomspace(1e8, 1e10, 9)):
        p = 0.02 * (n / 1e8) ** 0.5
        for k in KS:
            value = 1 - (1 - p) ** k
            if f"r{i}" == corrupt and k > 1:
                value = 1.0
            rows.append({"run": f"r{i}", "params": n, "tokens": 20 * n, "flops": 120 * n * n, "k": k, "value": value})
    frame = pd.DataFrame(rows).assign(tpr=20.0, benchmark="lbpp", metric="pass@k")
    return bc.validate(frame, "pass@k ladder")


@pytest.mark.parametrize("law", ["power_floor", "passk_compute"])
def test_a_fit_leaves_the_inconsistent_rows_out_and_says_why(law):
    """A per-k law at k = 8 and a law across k both drop r3's impossible rows, by name in the fit's reasons."""
    spec = {"benchmark": "lbpp", "metric": "pass@k"} | ({"k": 8} if law == "power_floor" else {})
    clean, corrupt = (bc.fit(_ladder(which), law=law, **spec) for which in ("", "r3"))
    assert INCONSISTENT_K not in clean.diagnostics.dropped_reasons
    assert corrupt.diagnostics.dropped_reasons[INCONSISTENT_K] == (1 if law == "power_floor" else 3)
    assert "r3" not in set(corrupt.points["run"][corrupt.points["k"] > 1])
    assert corrupt.diagnostics.n_used == clean.diagnostics.n_used - corrupt.diagnostics.dropped_reasons[INCONSISTENT_K]


def test_rounded_values_a_good_row_after_a_bad_one_and_other_metrics_are_not_condemned():
    """A weak run's exact curve rounded to 3 decimals sits on the (k/j) bound and stays (55 % of such runs were
    condemned without the rounding allowance); a run is not read past its first impossible row, though pass@4 and
    pass@8 fit pass@1; a metric with a k that is not pass@k (a majority vote may fall as k grows) is not judged."""
    from math import comb

    n, c = 128, 1  # one success in 128 samples: the estimator at its exact Bernoulli bound
    exact = [1 - comb(n - c, k) / comb(n, k) for k in KS]
    rows = pd.DataFrame({"run": "weak", "k": KS, "value": np.round(exact, 3)})
    assert not inconsistent_k(rows).any()
    after = pd.DataFrame({"run": "r", "k": KS, "value": [0.1, 0.9, 0.3439, 0.5695]})
    assert inconsistent_k(after).tolist() == [False, True, True, True]
    table = _ladder("")
    vote = table[table["k"] <= 2].assign(metric="maj")
    vote.loc[vote["k"] == 2, "value"] *= 0.5  # falls with k: no pass@k, so no reason to leave it out
    fit = bc.fit(bc.validate(vote, "vote"), law="power", benchmark="lbpp", metric="maj", k=2)
    assert (
        INCONSISTENT_K not in fit.diagnostics.dropped_reasons
        and fit.diagnostics.n_used + fit.diagnostics.n_dropped == 9
    )


def test_a_held_out_inconsistent_row_is_not_scored_as_the_truth():
    """A backtest leaves r8's impossible pass@8 of 1 out of its errors, as it leaves it out of fits (mbpp's held-out
    rows of 1 were scored against forecasts of 0.2): the row is forecast, and marked unusable."""
    table = _ladder("r8")
    spec = bc.FitSpec("power_floor", "lbpp", "pass@k", k=8)
    cut = float(table.loc[table["run"] == "r6", "flops"].iloc[0])
    frame = bc.evaluate(spec, table, bc.Threshold(cut), uncertainty=bc.Uncertainty(n_boot=0))
    held = frame[frame["side"] == "test"].set_index("run")
    assert held.loc["r8", "true"] == 1.0 and not held.loc["r8", "usable"] and held.loc["r7", "usable"]
    assert np.isfinite(held.loc["r8", "prediction"])
