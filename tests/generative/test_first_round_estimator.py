"""Samples drawn in rounds (``sample --budget``): a problem's later n depends on its first round's outcome,
so the unbiased pass@k estimator reads the first round alone; the model past n reads every round."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchcast import Uncertainty
from benchcast.errors import DataError
from benchcast.generative.passk import pass_at_k
from benchcast.generative.past_n import passk_table
from benchcast.generative.samples import read_counts


def _rounds_file(tmp_path, seed=0):
    """40 problems, 8 first-round samples each; the problems with no success in round 0 get 24 more."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.4, 3.0, 40)
    rows = []
    for i, rate in enumerate(p):
        first = rng.random(8) < rate
        rows += [{"problem_id": f"q{i}", "round": 0, "correct": bool(v)} for v in first]
        if not first.any():
            rows += [{"problem_id": f"q{i}", "round": 1, "correct": bool(v)} for v in rng.random(24) < rate]
    path = tmp_path / "rounds.csv"
    pd.DataFrame(rows).assign(run="r", benchmark="b").to_csv(path, index=False)
    return path


def test_the_estimator_reads_the_first_round_and_the_model_every_round(tmp_path):
    counts = read_counts(_rounds_file(tmp_path))
    assert (counts["n_first"] == 8).all() and (counts["n"] >= 8).all() and (counts["n"] > 8).any()
    table = passk_table(
        counts, [1, 4, 8, 16], uncertainty=Uncertainty(0, levels=0.9), extrapolate_to=800, family="beta"
    )
    estimated = table[table["source"] == "estimator"].set_index("k")["pass_at_k"]
    assert list(estimated.index) == [1, 4, 8]  # up to the first round's n, not the larger n of later rounds
    expected = pass_at_k(counts["n_first"].to_numpy(), counts["c_first"].to_numpy(), [1, 4, 8])
    np.testing.assert_allclose(estimated.to_numpy(), expected, rtol=1e-12)
    # pooled over rounds the estimator is biased up: a late success counts for a problem sampled because it failed
    pooled = pass_at_k(counts["n"].to_numpy(), counts["c"].to_numpy(), [1])[0]
    assert pooled != pytest.approx(expected[0], abs=1e-9)
    assert 16 in set(table.loc[table["source"] == "beta", "k"])


def test_rounds_without_a_first_round_or_with_bad_rounds_are_refused(tmp_path):
    path = _rounds_file(tmp_path)
    frame = pd.read_csv(path)
    late = frame[frame["round"] == 1]["problem_id"].iloc[0]
    frame[~((frame["problem_id"] == late) & (frame["round"] == 0))].to_csv(path, index=False)
    with pytest.raises(DataError, match=f"problem '{late}' has samples from later rounds but none from round 0"):
        read_counts(path)
    frame.assign(round=frame["round"].astype(float) - 0.5).to_csv(path, index=False)
    with pytest.raises(DataError, match="column 'round' must hold rounds 0, 1, 2"):
        read_counts(path)


def test_a_single_round_file_reads_as_before(tmp_path):
    path = tmp_path / "one.csv"
    pd.DataFrame({"problem_id": ["a", "a", "b"], "round": 0, "correct": [True, False, False]}).to_csv(path, index=False)
    counts = read_counts(path)
    assert "n_first" not in counts and list(counts["n"]) == [2, 1]
