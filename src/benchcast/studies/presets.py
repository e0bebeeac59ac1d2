"""Bench presets: the Apple data sets with the settings the default strategy was chosen on.

The data file is given by the caller (a file, or a folder that holds the preset's file): nothing
here depends on where the package or the repository lies."""

from __future__ import annotations

import os
from pathlib import Path

from benchcast.data.readers import load
from benchcast.errors import BenchcastError, did_you_mean
from benchcast.evaluation.bench import Dataset
from benchcast.studies.krajewski2025 import BENCHMARKS

APPLE_12 = BENCHMARKS  # the twelve benchmarks of the Krajewski et al. 2025 reproduction
# C4: the 7 general benchmarks and TriviaQA, which has 13 training runs (3e18..2e21) above chance +
# 0.05 on C4 against WebQS's 5 (chosen on the training side only, before any forecast was made)
APPLE_C4_8 = (*APPLE_12[:7], ("triviaqa_1shot", "exact_match"))
PRESETS = {
    "apple-dclm": {
        "file": "metrics_dclm_data_mixture.subset.csv",
        "benchmarks": APPLE_12,
        "cutoffs": (6e21,),
        "tpr": 20.0,
        "min_flops": 3e18,
    },
    # K4's protocol on every TPR of the DCLM file: fit 3e18 <= C <= 6e21 below TPR 160, forecast the
    # runs above 6e21 and every TPR-160 run (compute-only laws see several TPRs as one curve in C)
    "apple-dclm-tpr": {
        "file": "metrics_dclm_data_mixture.subset.csv",
        "benchmarks": APPLE_12,
        "cutoffs": (6e21,),
        "tpr": None,
        "min_flops": 3e18,
        "holdout_tprs": (160.0,),
    },
    "apple-c4": {
        "file": "metrics_c4_mixture.subset.csv",
        "benchmarks": APPLE_C4_8,
        "cutoffs": (2e21,),
        "tpr": 20.0,
        "min_flops": 3e18,
    },
}


def _preset(name: str) -> dict:
    if name not in PRESETS:
        raise BenchcastError(
            f"unknown preset {name!r}; expected one of {', '.join(PRESETS)}.{did_you_mean(name, PRESETS)}"
        )
    return PRESETS[name]


def locate(name: str, folders: list[str | Path] | None = None) -> Path:
    """The preset's data file in the first of ``folders`` that holds it (default: $BENCHCAST_DATA, then a checkout's
    shared data folder, from its root or beside it)."""
    if folders is None:
        env = [os.environ["BENCHCAST_DATA"]] if os.environ.get("BENCHCAST_DATA") else []
        folders = [*env, "shared/data/apple-downstream", "../shared/data/apple-downstream"]
    preset = _preset(name)
    candidates = [Path(folder) / preset["file"] for folder in folders]
    for path in candidates:
        if path.is_file():
            return path
    raise BenchcastError(
        f"preset {name!r} needs the Apple file {preset['file']}; looked in "
        f"{', '.join(str(c.parent) for c in candidates) or 'no folder'}. Give it with --data FILE."
    )


def preset_dataset(name: str, data: str | Path) -> Dataset:
    """A preset's data set, read from ``data``."""
    preset = _preset(name)
    path = Path(data)
    if path.is_dir():
        path = locate(name, [path])
    return Dataset(name, load(path, "apple"), **{key: v for key, v in preset.items() if key != "file"})
