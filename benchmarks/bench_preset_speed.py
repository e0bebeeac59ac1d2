"""Time ``benchcast bench --preset apple-dclm`` (the issue asks for under 3 minutes on 2 cores).

Reports wall time and the CPU time of this process and its workers (CPU seconds / 2 is the wall
time two free cores would need when the machine is shared).

    python benchmarks/bench_preset_speed.py [--data FILE] [--preset apple-dclm] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from benchcast.evaluation.bench import bench
from benchcast.studies.legacy import HOLDOUT
from benchcast.studies.presets import locate, preset_dataset

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--preset", default="apple-dclm")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    dataset = preset_dataset(args.preset, args.data or locate(args.preset))
    start, cpu = time.perf_counter(), cpu_seconds()
    result = bench([dataset], n_jobs=args.jobs, progress=False, choosers=(HOLDOUT,))
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    print(
        json.dumps(
            {
                "preset": args.preset,
                "jobs": args.jobs,
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "cells": int(len(result.rows)),
            }
        )
    )


if __name__ == "__main__":
    main()
