"""Issue #39 item 5: common random numbers across a forecast's points.

On DCLM (every run, TPR 10-160), the default ensemble of hellaswag forecasts a 13B-class model trained at TPR 380
along a grid of N (1.05e10 .. 1.15e10, D = 380 N), at the default replicate count, for seeds 0-4 (a benchmark other
than hellaswag, at 200 replicates: ``python benchmarks/common_random_numbers.py - arc_challenge 200``). It prints
how often the 90 % upper bound falls as N grows along the grid, and how far the bounds at N = 1.3e10 move between
seeds (max - min over the seeds). Run it with each tree's ``src`` on ``PYTHONPATH`` to compare them::

    PYTHONPATH=<tree>/src python benchmarks/common_random_numbers.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import benchcast as bc
from benchcast.defaults import DEFAULT_REPLICATES
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.ensemble import Ensemble
from benchcast.forecasting.targets import planned_runs

DCLM = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
GRID = np.linspace(1.05e10, 1.15e10, 11)
TPR, SEEDS, AT = 380.0, range(5), 1.3e10


def main() -> None:
    table = bc.load(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else DCLM)
    benchmark = sys.argv[2] if len(sys.argv) > 2 else "hellaswag"
    replicates = int(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_REPLICATES
    ensemble = Ensemble().fit(table, FitSpec("power", benchmark, "acc_norm"), progress=False)
    falls, at = [], []
    for seed in SEEDS:
        unc = Uncertainty(replicates, seed, n_jobs=1)
        grid = ensemble.predict(planned_runs(params=GRID, tokens=TPR * GRID), unc).intervals[0.9]
        falls.append(int((np.diff(grid[1]) < 0).sum()))
        point = ensemble.predict(planned_runs(params=[AT], tokens=[TPR * AT]), unc).intervals[0.9]
        at.append((float(point[0][0]), float(point[1][0])))
    lower, upper = np.array(at).T
    print(f"{benchmark}, {replicates} replicates per law; weights {ensemble.weights_}")
    print(f"upper bound falling along the {len(GRID)}-point grid, per seed: {falls}")
    print(f"at N = {AT:.3g}, TPR {TPR:g}: lower {np.round(lower, 4).tolist()}, upper {np.round(upper, 4).tolist()}")
    print(f"seed-to-seed range: lower {np.ptp(lower):.4f}, upper {np.ptp(upper):.4f}")


if __name__ == "__main__":
    main()
