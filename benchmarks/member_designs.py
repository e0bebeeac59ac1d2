"""Issue #39, item 4: is the default at least as good as the simplest alternative at the question's distance?

Runs ``benchcast bench`` on seven splits of three ladders and scores every strategy on the cells where all of them
forecast (flagged cells included: the question is the forecast at that distance, and the flags are read apart):

  dclm    apple-dclm preset: TPR 20, fit 3e18..6e21, forecast above (one decade up, the paper's question)
  c4      apple-c4 preset: TPR 20, fit 3e18..2e21
  tpr     apple-dclm-tpr preset: every TPR, fit <= 6e21 below TPR 160, forecast the rest (SPEC protocol 2)
  size    DCLM, every TPR: fit the models under 5B, forecast the 5-18B ones (--holdout-params 5e9)
  pythia  the 8 final Pythia checkpoints: fit the models under 2B, forecast 2.8B, 6.9B and 12B
  t7      DCLM: --like-target 7e9 4e12 (a 7B on 4T tokens, TPR 571: the largest runs and highest TPRs held out)
  t13     DCLM: --like-target 13e9 5e12 (a 13B on 5T tokens, TPR 385)

The strategies: ``ensemble`` (the default), ``switch`` (the default, or the simplest alternative alone where the
cell's rolling origins favour it: issue #50 item 4), ``stack`` (weights by inverse rolling-origin error, always),
``select`` (the best alone), each candidate law alone, ``power`` (compute alone: what a user would fit instead) and
``power_envelope`` (the same law on each compute budget's best run: the simplest alternative on an IsoFLOP sweep).

    python benchmarks/member_designs.py [--out /tmp/member_designs] [--fresh] [--write]

``--out`` keeps each split's bench rows; a second call reads them (``--fresh`` runs bench again: do so after any
change to the package).

Load: two workers on a 2-core machine, about 6 minutes for the seven runs (load 2-3).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from two_stage_nd import markdown  # benchmarks/ is the script's folder

ROOT = Path(__file__).resolve().parents[1]
APPLE = ROOT.parent / "shared" / "data" / "apple-downstream"
DCLM = str(APPLE / "metrics_dclm_data_mixture.subset.csv")
PYTHIA = [
    "--data",
    str(ROOT.parent / "shared" / "data" / "pythia" / "zero-shot"),
    "--metadata",
    str(ROOT / "examples" / "pythia" / "runs.yaml"),
]
SPLITS = {
    "dclm": ["--preset", "apple-dclm", "--data", str(APPLE)],
    "c4": ["--preset", "apple-c4", "--data", str(APPLE)],
    "tpr": ["--preset", "apple-dclm-tpr", "--data", str(APPLE)],
    "size": ["--data", DCLM, "--min-flops", "3e18", "--holdout-params", "5e9"],
    "pythia": [*PYTHIA, "--holdout-params", "2e9"],
    "t7": ["--data", DCLM, "--min-flops", "3e18", "--like-target", "7e9", "4e12"],
    "t13": ["--data", DCLM, "--min-flops", "3e18", "--like-target", "13e9", "5e12"],
}
LAWS = ("power", "power_envelope", "power_floor", "bnsl_monotone", "nd_floor", "power_floor_tpr")
SHOWN = ("ensemble", "switch", "stack", "select", *LAWS)
KEY = ["benchmark", "metric", "cutoff"]


def run(split: str, out: Path, fresh: bool = False, n_boot: int | None = None, laws=LAWS) -> pd.DataFrame:
    """bench on one split (its rows kept under ``out``, read again unless ``fresh``); its per-cell rows."""
    folder = out / split
    if fresh or not (folder / "bench_rows.csv").exists():
        laws = [arg for law in laws for arg in ("-l", law)]
        strategies = [arg for name in (*SHOWN, "ensemble[bootstrap]") for arg in ("-s", name)]
        replicates = ["--n-boot", str(n_boot)] if n_boot else []
        command = [
            sys.executable,
            "-m",
            "benchcast",
            "bench",
            *SPLITS[split],
            *laws,
            *strategies,
            *replicates,
            "-j",
            "2",
            "-o",
            str(folder),
        ]
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        print(f"{split}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return pd.read_csv(folder / "bench_rows.csv")


def scored(rows: pd.DataFrame, split: str) -> pd.DataFrame:
    """Per strategy, means over the cells every shown strategy forecast: WIS, MRE, coverage, the worst benchmark's
    90 % coverage, the mean and median 90 % width, and the cells flagged uninformative."""
    rows = rows[rows["strategy"].isin(SHOWN)]
    ok = rows[rows["status"] == "ok"].pivot_table(index=KEY, columns="strategy", values="wis")
    ok = ok[[s for s in SHOWN if s in ok and ok[s].notna().any()]].dropna()
    out = []
    for strategy in ok.columns:
        cells = rows[rows["strategy"] == strategy].set_index(KEY).loc[ok.index]
        out.append(
            {
                "split": split,
                "strategy": strategy,
                "cells": len(cells),
                "wis": cells["wis"].mean(),
                "wis_median": cells["wis"].median(),
                "mre": cells["mre"].mean(),
                "mre_median": cells["mre"].median(),
                "coverage90": cells["coverage90"].mean(),
                "coverage50": cells["coverage50"].mean(),
                "cov90_worst": cells.groupby("benchmark")["coverage90"].mean().min(),
                "width90": cells["width90"].mean(),
                "width90_median": cells["width90"].median(),
                "flagged": int(cells["flagged"].sum()),
                "uninformative": int(cells["flags"].fillna("").str.contains("uninformative").sum()),
                "wins_vs_power": int((cells["wis"] < ok["power"].loc[cells.index]).sum()) if "power" in ok else np.nan,
                "wins_mre_vs_power": int(
                    (cells["mre"] < rows[rows["strategy"] == "power"].set_index(KEY).loc[cells.index, "mre"]).sum()
                )
                if "power" in ok
                else np.nan,
            }
        )
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/member_designs"))
    parser.add_argument("--write", action="store_true", help="write the table into benchmarks/member_designs.md")
    parser.add_argument("--fresh", action="store_true", help="run bench again where --out holds an earlier run")
    parser.add_argument("--n-boot", type=int, default=None, help="bootstrap replicates per law fit (bench's default)")
    parser.add_argument("--laws", nargs="*", default=list(LAWS), help="the laws benched alone (default: all five)")
    parser.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    args = parser.parse_args()
    runs = [scored(run(split, args.out, args.fresh, args.n_boot, args.laws), split) for split in args.splits]
    table = pd.concat(runs, ignore_index=True)
    text = markdown(table.round(3).set_index("split"))
    print(text)
    if args.write:
        path = Path(__file__).with_suffix(".md")
        head = path.read_text().split("<!-- table -->")[0]
        path.write_text(f"{head}<!-- table -->\n{text}\n")


if __name__ == "__main__":
    main()
