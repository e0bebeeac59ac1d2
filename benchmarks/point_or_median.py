"""Issue #39, item 5: where the bootstrap is skewed, the default's point (the members' blend at their fits) can fall
outside its own 50 % interval. Is the point better replaced by the draws' median, or kept and flagged? Decided by a
proper score: the weighted interval score (WIS, the point's term included) of the held-out runs, both ways.

Ladders and splits (the training side alone chooses and fits; the held-out runs are only scored):
  dclm      TPR 20, fit 3e18 <= C <= 6e21, forecast above
  c4        TPR 20, fit 3e18 <= C <= 2e21, forecast above
  dclm-tpr  every TPR, fit C <= 6e21 below TPR 160, forecast the rest (SPEC protocol 2)
  size      every TPR, fit the models under 5B, forecast the larger (--holdout-params 5e9)
  pythia    the 8 final checkpoints, fit the models under 2B, forecast 2.8B-12B

    python benchmarks/point_or_median.py [--n-boot 200] [--write]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from two_stage_nd import markdown  # benchmarks/ is the script's folder

from benchcast.data.readers import load
from benchcast.evaluation.bench_result import weighted_interval_score
from benchcast.evaluation.evaluate import LargerModels, Threshold, ThresholdOrTPR, evaluate
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.targets import frame_runs
from benchcast.studies.presets import APPLE_12, APPLE_C4_8

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
PYTHIA = (
    ("arc_easy", "acc"),
    ("arc_easy", "acc_norm"),
    ("piqa", "acc"),
    ("piqa", "acc_norm"),
    ("sciq", "acc"),
    ("sciq", "acc_norm"),
    ("lambada_openai", "acc"),
)
LADDERS = {
    "dclm": ("metrics_dclm_data_mixture", APPLE_12, Threshold(6e21), 20.0),
    "c4": ("metrics_c4_mixture", APPLE_C4_8, Threshold(2e21), 20.0),
    "dclm-tpr": ("metrics_dclm_data_mixture", APPLE_12, ThresholdOrTPR(6e21, 160.0), None),
    "size": ("metrics_dclm_data_mixture", APPLE_12, LargerModels(5e9), None),
    "pythia": ("pythia", PYTHIA, LargerModels(2e9), None),
}


def table_of(name: str) -> pd.DataFrame:
    """The ladder's file, read as the package reads it."""
    if name == "pythia":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load(DATA / "pythia" / "zero-shot", "lm-eval", metadata=ROOT / "examples/pythia/runs.yaml")
    return load(DATA / "apple-downstream" / f"{name}.subset.csv", "apple")


def cell(table, benchmark, metric, splitter, tpr, unc, min_flops) -> pd.DataFrame | None:
    """One benchmark's held-out runs: truth, point, the draws' median and the 50/90 % bounds."""
    spec = FitSpec("power", benchmark, metric, tpr=tpr, min_flops=min_flops)
    try:
        frame, models = evaluate(spec, table, splitter, forecaster=Ensemble(), uncertainty=unc, return_models=True)
    except Exception as error:  # noqa: BLE001 - a cell without a forecast is reported, not fatal
        print(f"  {benchmark} {metric}: {error}", file=sys.stderr)
        return None
    held = frame[(frame["side"] == "test") & np.isfinite(frame["prediction"])].reset_index(drop=True)
    if not len(held) or models[0] is None:
        return None
    runs, extra = frame_runs(held.assign(value=held["true"]))
    forecast = models[0].predict(runs, unc, extra=extra)
    lower, upper = forecast.interval(1e-6)  # a central interval of width ~0: the draws' median
    return pd.DataFrame(
        {
            "benchmark": f"{benchmark} {metric}",
            "true": held["true"],
            "point": forecast.prediction,
            "median": (lower + upper) / 2,
            "lower50": forecast.interval(0.5)[0],
            "upper50": forecast.interval(0.5)[1],
            "lower90": forecast.interval(0.9)[0],
            "upper90": forecast.interval(0.9)[1],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="write benchmarks/point_or_median.md")
    args = parser.parse_args()
    unc = Uncertainty(args.n_boot, 0, levels=(0.5, 0.9), n_jobs=2)
    rows = []
    for name, (file, benchmarks, splitter, tpr) in LADDERS.items():
        table = table_of(file)
        low = None if name == "pythia" else 3e18
        cells = [c for b, m in benchmarks if (c := cell(table, b, m, splitter, tpr, unc, low)) is not None]
        held = pd.concat(cells, ignore_index=True)
        held = held[np.isfinite(held[["median", "lower50", "upper50", "lower90", "upper90"]]).all(axis=1)]
        bands = {0.5: (held["lower50"], held["upper50"]), 0.9: (held["lower90"], held["upper90"])}
        outside = (held["point"] < held["lower50"]) | (held["point"] > held["upper50"])
        wis_point = weighted_interval_score(held["true"], held["point"], bands)
        wis_median = weighted_interval_score(held["true"], held["median"], bands)
        wis_hybrid = np.where(outside, wis_median, wis_point)  # the median only where the point is outside
        rows.append(
            {
                "ladder": name,
                "cells": held["benchmark"].nunique(),
                "forecasts": len(held),
                "point outside its 50 %": int(outside.sum()),
                "WIS point": float(np.mean(wis_point)),
                "WIS median": float(np.mean(wis_median)),
                "WIS median where outside": float(np.mean(wis_hybrid)),
                "WIS point (outside only)": float(np.mean(wis_point[outside])) if outside.any() else np.nan,
                "WIS median (outside only)": float(np.mean(wis_median[outside])) if outside.any() else np.nan,
            }
        )
        print(pd.DataFrame(rows[-1:]).round(3).to_string(index=False), flush=True)
    table = pd.DataFrame(rows).round(3)
    print(markdown(table.set_index("ladder")))
    if args.write:
        path = Path(__file__).with_suffix(".md")
        text = path.read_text() if path.exists() else ""
        head = text.split("<!-- table -->")[0] if text else "# Point or median (issue #39, item 5)\n\n"
        path.write_text(f"{head}<!-- table -->\n{markdown(table.set_index('ladder'))}\n")


if __name__ == "__main__":
    main()
