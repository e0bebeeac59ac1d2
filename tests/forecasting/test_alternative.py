"""The simplest alternative beside every forecast (#50 item 4): power on a ladder at fixed ratios, power on each
compute budget's best run (the envelope) on an IsoFLOP sweep, with both one's rolling-origin errors."""

import numpy as np
import pandas as pd
import pytest

import benchcast as bc
from benchcast import Uncertainty
from benchcast.data.example import load_example
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.alternative import alternative_law, compare, fit_alternative, is_isoflop
from benchcast.forecasting.answers import forecast_default, recommend
from benchcast.forecasting.ensemble import Ensemble
from benchcast.laws import get_law


def isoflop_sweep(tmp_path) -> pd.DataFrame:
    """Eight budgets, five sizes each (N* / 4 .. 4 N*), scored from a Chinchilla loss: the best run of a budget is its
    compute-optimal size."""
    rng = np.random.default_rng(0)
    rows = []
    for budget in np.geomspace(1e18, 3e21, 8):
        optimal = np.sqrt(budget / (6 * 20))
        for n in optimal * np.geomspace(0.25, 4, 5):
            d = budget / (6 * n)
            loss = 1.7 + 400 / n**0.34 + 410 / d**0.28
            value = 0.25 + 0.75 * np.exp(-(loss - 1.7) / 0.6) + rng.normal(0, 0.002)
            rows.append(
                {
                    "run": f"{budget:.2g}-{n:.3g}",
                    "params": n,
                    "tokens": d,
                    "flops": budget,
                    "benchmark": "arc_easy",
                    "metric": "acc_norm",
                    "value": value,
                }
            )
    path = tmp_path / "sweep.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return bc.load(path)


def test_the_ladder_s_shape_decides_the_alternative(tmp_path, apple):
    sweep = isoflop_sweep(tmp_path)
    rows, _ = design(sweep, FitSpec("power", "arc_easy", "acc_norm"))
    assert is_isoflop(rows) and alternative_law(rows) == "power_envelope"
    example, _ = design(load_example(), FitSpec("power", "arc_easy", "acc_norm"))
    assert not is_isoflop(example) and alternative_law(example) == "power"
    dclm = {tpr: design(apple, FitSpec("power", "arc_easy", "acc_norm", tpr=tpr))[0] for tpr in (20.0, None)}
    assert not is_isoflop(dclm[20.0]) and is_isoflop(dclm[None])  # the grid of sizes x ratios read as budgets
    # the envelope keeps each budget's best run, and drops the rest saying why
    reasons = get_law("power_envelope").row_filter(rows)
    kept = rows[reasons == ""]
    assert len(kept) == 8 and kept["flops"].nunique() == 8
    best = rows.loc[rows.groupby("flops")["value"].idxmax()]
    assert set(kept["run"]) == set(best["run"])
    assert set(reasons[reasons != ""]) == {"not the best run of its compute budget (the envelope)"}


def test_forecast_and_recommend_show_the_alternative_beside_the_default(tmp_path):
    sweep = isoflop_sweep(tmp_path)
    made = forecast_default(
        sweep,
        FitSpec("power", "arc_easy", metric="acc_norm"),
        params=[2e10],
        tokens=[4e11],
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    record = made.records()[0]
    assert record["alternative"]["law"] == "power_envelope"
    assert 0.25 < record["alternative"]["prediction"] < 1 and record["alternative"]["n_points"] > 0
    text = " ".join(str(made).split())
    assert "power_envelope (simplest)" in text and "simplest alternative power_envelope: rolling-origin MRE" in text
    rec = recommend(
        load_example(),
        FitSpec("power", "arc_easy", metric="acc_norm"),
        target_flops=1e22,
        uncertainty=Uncertainty(n_boot=0, levels=0.9),
    )
    assert rec.versus is not None and rec.versus.law == "power" and rec.to_dict()["alternative"]["n_points"] > 0
    assert "power, the simplest alternative:" in " ".join(str(rec).split())


def test_the_comparison_is_on_the_same_rolling_origin_points(tmp_path):
    """An alternative is scored on the points the default forecast from the same origins; where one is the other,
    neither is favoured."""
    table = load_example()
    spec = FitSpec("power", "arc_easy", "acc_norm")
    default = Ensemble().fit(table, spec, progress=False)
    alternative = fit_alternative(table, spec)
    versus = compare(default, alternative)
    wide = default.errors_
    assert 0 < versus.n_points <= len(wide[wide["axis"] == "compute"]) and versus.n_origins >= 3
    assert np.isfinite(versus.mre) and np.isfinite(versus.mre_alternative)
    same = compare(alternative, alternative)
    assert same.mre == pytest.approx(same.mre_alternative) and same.favours == ""
