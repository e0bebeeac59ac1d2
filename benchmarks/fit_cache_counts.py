"""How many law fits bench and the report's validation need, and how many the fit cache of one command makes (issue
#51, item 4). No fit is run: the cells are made and each strategy's laws counted, a fit being one (law, training side).

    python benchmarks/fit_cache_counts.py

"old" is what bench fitted before the cache: every law of its list and every cell's ladder laws, in every cell.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchcast.cli.bench import _tpr_candidates
from benchcast.data.readers import load
from benchcast.evaluation import strategies as st
from benchcast.evaluation.bench import Dataset, make_cells
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.selection import ladder_laws
from benchcast.report.law_choice import BACKTEST_FRACTION
from benchcast.report.profile import profile_thresholds
from benchcast.studies.presets import PRESETS, preset_dataset

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "apple-downstream"


def count(cells, strategies) -> tuple[int, int]:
    """(cell, law) pairs the strategies need, and the fits made: one per (law, training side)."""
    needed, fits = 0, set()
    for cell in cells:
        laws = dict.fromkeys(law for strategy in strategies for law in strategy.needs(cell))
        needed += len(laws)
        fits |= {(law, cell.side()) for law in laws}
    return needed, len(fits)


def old(cells, laws) -> int:
    """What bench fitted before: every law of ``laws`` and every cell's ladder laws, in every cell."""
    return len(cells) * len(set(laws) | {law for c in cells for law in (*c.candidates, *c.fallbacks)})


def report_cells(table):
    """The report's validation and profile cells of the 12 DCLM benchmarks at TPR 20 (the default strategy)."""
    for bench, metric in PRESETS["apple-dclm"]["benchmarks"]:
        spec = FitSpec("power", bench, metric, seed=0)
        rows, _ = design(table, replace(spec, tpr=20.0))
        log_c = np.log10(rows["flops"].to_numpy(float))
        validation = float(10 ** (log_c.max() - BACKTEST_FRACTION * (log_c.max() - log_c.min())))
        data = Dataset(bench, table, ((bench, metric),), (validation, *profile_thresholds(table, spec, 20.0)), 20.0)
        yield from make_cells([data], *ladder_laws(rows))[0]


def main() -> None:
    warnings.simplefilter("ignore")
    for name in PRESETS:
        data = preset_dataset(name, DATA)
        laws = tuple(dict.fromkeys((*st.FIXED_LAWS, *_tpr_candidates(data))))
        cells, _ = make_cells([data])
        print(
            f"bench --preset {name}: old {old(cells, laws)}; needed, fitted {count(cells, st.default_strategies(laws))}"
        )
    data = preset_dataset("apple-dclm", DATA)
    cells, _ = make_cells([data])
    print(f"bench --preset apple-dclm -s ensemble: old {old(cells, st.FIXED_LAWS)}; {count(cells, [st.Combine()])}")
    cells, _ = make_cells([replace(data, cutoffs=(3.3e21, 3.6e21))])  # two cutoffs between the same runs
    both = count(cells, st.default_strategies(st.FIXED_LAWS))
    print(f"bench --preset apple-dclm --threshold 3.3e21 --threshold 3.6e21: old {old(cells, st.FIXED_LAWS)}; {both}")
    table = load(DATA / "metrics_dclm_data_mixture.subset.csv", "apple")
    made = count(list(report_cells(table)), [st.Combine()])
    print(f"report validation + profile, 12 DCLM benchmarks: needed, fitted {made}")


if __name__ == "__main__":
    main()
