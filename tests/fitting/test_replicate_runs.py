"""Replicate runs (seeds of one N and D, kept as distinct runs) are one covariate point: a fit, a batch of subsets,
a bootstrap replicate and the proxy diagnostic each need more distinct points than free parameters, not more rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast.errors import InsufficientDataError
from benchcast.fitting.engine.batch import minimize_subsets
from benchcast.fitting.engine.search import minimize_law
from benchcast.forecasting.bootstrap import fit_replicates
from benchcast.laws import get_law
from benchcast.studies.proxy import proxy_diagnostic

SIZES = np.array([1e8, 3e8, 1e9, 3e9])


def _ladder(sizes, seeds: int = 2) -> pd.DataFrame:
    """Each size trained ``seeds`` times at TPR 20, arc_easy acc rising with compute, each seed a little off."""
    rows = []
    for i, n in enumerate(sizes):
        for s in range(seeds):
            flops = 6 * n * 20 * n
            value = 0.3 + 0.04 * np.log10(flops / 1e18) + 0.004 * (s - 0.5) + 0.001 * i
            rows.append({"run": f"r{i}s{s}", "params": n, "tokens": 20 * n, "flops": flops, "value": value})
    return bc.validate(pd.DataFrame(rows).assign(tpr=20.0, benchmark="arc_easy", metric="acc"), "replicate runs")


def test_a_law_on_replicate_runs_needs_more_distinct_points_than_free_parameters():
    """power_floor (3 free) on 6 runs at 3 sizes: refused, naming the distinct count; 4 sizes are fitted."""
    with pytest.raises(InsufficientDataError, match=r"6 usable points at 3 distinct flops value\(s\)"):
        bc.fit(_ladder(SIZES[:3]), law="power_floor", benchmark="arc_easy", metric="acc")
    assert np.all(np.isfinite(bc.fit(_ladder(SIZES), law="power_floor", benchmark="arc_easy", metric="acc").theta))


def _scores(X: dict) -> np.ndarray:
    """Scores rising with compute, the two runs at the smallest compute a little apart."""
    return 0.3 + 0.02 * np.log10(X["flops"] / 1e18) + np.r_[0.003, -0.003, np.zeros(len(X["flops"]) - 2)]


def test_a_fit_on_replicate_runs_is_flagged_by_its_distinct_points():
    """power_floor on 10 runs at 5 sizes: 5 distinct points are fewer than two per free parameter, so flagged, though
    10 rows would not be."""
    from benchcast.forecasting import flags

    result = bc.fit(_ladder(np.geomspace(1e8, 3e9, 5)), law="power_floor", benchmark="arc_easy", metric="acc")
    (flag,) = [f for f in flags.fit_flags(result) if f.kind == flags.FEW_POINTS]
    assert "3 parameters to 10 points at 5 distinct values" in flag.reason


def test_the_engine_counts_distinct_points_alone_and_in_a_batch():
    """4 points at 3 flops cannot determine power_floor's 3 free parameters: refused by the one solve and in the
    batch's slot, while 5 points at 4 flops are fitted."""
    law = get_law("power_floor")
    tied = {"flops": np.array([1e18, 1e18, 1e19, 1e20])}
    more = {"flops": np.array([1e18, 1e18, 1e19, 1e20, 1e21])}
    with pytest.raises(InsufficientDataError, match=r"4 point\(s\) at 3 distinct covariate value\(s\)"):
        minimize_law(law, tied, _scores(tied))
    short, ok = minimize_subsets(law, [tied, more], [_scores(tied), _scores(more)], [np.arange(4), np.arange(5)])
    assert isinstance(short, InsufficientDataError) and np.all(np.isfinite(ok.theta))


def test_a_bootstrap_replicate_drawing_few_distinct_points_fails_not_fits():
    """A replicate whose draws cover three runs but two sizes cannot fit power (2 free): it is failed, while one
    drawing three sizes is refitted."""
    result = bc.fit(_ladder(SIZES), law="power", benchmark="arc_easy", metric="acc")
    runs = list(result.points["run"])
    counts = np.zeros((2, len(runs)))
    counts[0, [runs.index(r) for r in ("r0s0", "r0s1", "r1s0")]] = [3, 3, 2]  # 3 runs, 2 sizes
    counts[1, [runs.index(r) for r in ("r0s0", "r1s0", "r2s1")]] = [3, 3, 2]  # 3 runs, 3 sizes
    thetas, _, _, failed = fit_replicates(result, counts)
    assert failed.tolist() == [True, False]
    assert np.all(np.isnan(thetas[0])) and np.all(np.isfinite(thetas[1]))


def test_a_proxy_on_three_runs_at_two_proxy_values_is_refused():
    """The link's two parameters through two distinct proxy values fit exactly: refused in its row, not R^2 1."""
    rows = [("a", "acc", 0.4), ("b", "acc", 0.5), ("c", "acc", 0.6), ("a", "brier", 0.7), ("b", "brier", 0.7)]
    rows.append(("c", "brier", 0.5))
    table = pd.DataFrame(rows, columns=["run", "metric", "value"]).assign(benchmark="arc_easy", tpr=20.0)
    table["params"] = table["run"].map({"a": 1e8, "b": 2e8, "c": 4e8})
    table["tokens"] = 20 * table["params"]
    table["flops"] = 6 * table["params"] * table["tokens"]
    table = bc.validate(table, "hand-made")
    row = proxy_diagnostic(table, "arc_easy", "acc", "arc_easy:brier")
    assert row["n"] == 3 and np.isnan(row["r2"])
    assert "3 point(s) at 2 distinct covariate value(s)" in row["refused"]


def test_a_fit_saved_without_its_points_is_flagged_by_its_rows(tmp_path):
    """A fit whose artifact holds no points (it predicts; bootstrapping says it cannot) gets its flags from the
    rows it was fitted on, not a KeyError for the missing covariates."""
    import json

    from benchcast.fitting.result import FitResult
    from benchcast.forecasting import flags

    result = bc.fit(_ladder(np.geomspace(1e8, 3e9, 5), seeds=1), law="power_floor", benchmark="arc_easy", metric="acc")
    doc = json.loads(result.save(tmp_path / "fit.json").read_text())
    doc.pop("points")
    del doc["diagnostics"]["n_distinct"]  # an artifact older than the count, saved without its points
    bare = FitResult.from_dict(doc)
    assert bare.diagnostics.n_distinct is None
    (flag,) = [f for f in flags.fit_flags(bare) if f.kind == flags.FEW_POINTS]
    assert "3 parameters to 5 points (" in flag.reason
    fc = bc.forecast(bare, flops=1e22, uncertainty=bc.Uncertainty(n_boot=0))
    assert np.isfinite(fc.to_frame()["prediction"].iloc[0])


def test_a_fit_saved_without_its_points_keeps_its_distinct_count_and_flag(tmp_path):
    """The artifact records the distinct count: loaded without its points, the fit on 10 runs at 5 sizes is still
    flagged at 5 distinct values, not judged by its 10 rows."""
    import json

    from benchcast.forecasting import flags

    result = bc.fit(_ladder(np.geomspace(1e8, 3e9, 5)), law="power_floor", benchmark="arc_easy", metric="acc")
    assert result.diagnostics.n_distinct == 5 and result.diagnostics.n_used == 10
    path = tmp_path / "fit.json"
    result.save(path)
    doc = json.loads(path.read_text())
    doc.pop("points")
    path.write_text(json.dumps(doc))
    loaded = bc.load_fit(path)
    assert loaded.points.empty and loaded.diagnostics.n_distinct == 5
    assert flags.fit_flags(loaded) == flags.fit_flags(result)
    assert any("at 5 distinct values" in f.reason for f in flags.fit_flags(loaded))


def test_an_artifact_older_than_the_distinct_count_is_flagged_from_its_points(tmp_path):
    """An artifact without ``n_distinct`` but with its points: the flag counts the points' 5 distinct values."""
    import json

    from benchcast.forecasting import flags

    result = bc.fit(_ladder(np.geomspace(1e8, 3e9, 5)), law="power_floor", benchmark="arc_easy", metric="acc")
    path = tmp_path / "fit.json"
    result.save(path)
    doc = json.loads(path.read_text())
    del doc["diagnostics"]["n_distinct"]
    path.write_text(json.dumps(doc))
    loaded = bc.load_fit(path)
    assert loaded.diagnostics.n_distinct == 5 and len(loaded.points) == 10  # counted once, on loading
    assert any("at 5 distinct values" in f.reason for f in flags.fit_flags(loaded))


@pytest.mark.parametrize(("sizes", "few"), [(5, True), (7, False)])
def test_the_fits_note_and_the_forecasts_flag_judge_few_points_by_one_rule(sizes, few):
    """power_floor (3 free) at 5 distinct sizes is both noted weakly constrained and flagged few points; at 7 neither
    (the note asked for 2 x 3 + 3 = 9 points before, so the fit said weakly constrained where the forecast had no
    flag)."""
    from benchcast.forecasting import flags

    result = bc.fit(_ladder(np.geomspace(1e8, 3e9, sizes)), law="power_floor", benchmark="arc_easy", metric="acc")
    noted = any("weakly constrained" in w for w in result.warnings)
    flagged = any(f.kind == flags.FEW_POINTS for f in flags.fit_flags(result))
    assert noted == flagged == few
