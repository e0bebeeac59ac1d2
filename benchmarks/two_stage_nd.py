"""The two-step law in N and D (two_stage_nd) beside the default on DCLM's multi-TPR protocol (issue #40).

Runs `benchcast bench --preset apple-dclm-tpr` (fit TPR 10-80 up to 6e21 FLOPs, forecast the TPR 160 runs) twice:
the candidates without two_stage_nd (nd_floor, power_floor_tpr) and the default (two_stage_nd a challenger: a
member only where its rolling-origin error beats the others'), and writes the leaderboards and the per-benchmark
MRE and WIS of both ensembles and of each law alone to benchmarks/two_stage_nd.md.

    python benchmarks/two_stage_nd.py [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
LAWS = ["nd_floor", "power_floor_tpr", "power"]
RUNS = {
    "without two_stage_nd": [*(f"--law={law}" for law in LAWS), "--candidate=nd_floor", "--candidate=power_floor_tpr"],
    "default (two_stage_nd a challenger)": [*(f"--law={law}" for law in [*LAWS, "two_stage_nd"])],
}


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a Markdown table (index first), numbers as pandas prints them."""
    frame = frame.reset_index()
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join("" if pd.isna(v) else f"{v:g}" if isinstance(v, float) else str(v) for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([head, rule, *body])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="two_stage_nd-")))
    args = parser.parse_args()
    boards, rows, lines = {}, {}, []
    load = os.getloadavg()[0]
    for name, options in RUNS.items():
        out = args.out / name.replace(" ", "_")
        start = time.perf_counter()
        command = ["benchcast", "bench", "--preset", "apple-dclm-tpr", *options, "-o", str(out)]
        subprocess.run(command, check=True, capture_output=True)
        lines.append(f"- `{' '.join(command[:-2])}`: {time.perf_counter() - start:.0f} s")
        boards[name] = pd.read_csv(out / "bench_leaderboard.csv").set_index("strategy")
        rows[name] = pd.read_csv(out / "bench_rows.csv")
    columns = ["mre", "mae", "coverage90", "width90", "wis", "cells", "flagged", "mre_flagged", "coverage90_flagged"]
    board = pd.concat({k: v.loc[["ensemble", "stack", "select"], columns] for k, v in boards.items()})
    laws = rows["default (two_stage_nd a challenger)"]
    laws = laws[laws["strategy"].isin([*LAWS, "two_stage_nd"])]
    per = {m: laws.pivot_table(index="benchmark", columns="strategy", values=m).round(3) for m in ("mre", "wis")}
    for name, frame in rows.items():
        ensemble = frame.query("strategy == 'ensemble'").set_index("benchmark")
        for m in ("mre", "wis"):
            per[m].insert(0, f"ensemble, {name}", ensemble[m].round(3))
    text = [
        "# two_stage_nd beside the default on DCLM's multi-TPR protocol",
        "",
        f"Written by `python benchmarks/two_stage_nd.py` (1-minute load {load:.1f} at the start, 2 cores, seed 0,",
        "200 replicates per law):",
        "",
        *lines,
        "",
        "The baseline names its candidates, which turns off the default's fallback law (`nd`): LBPP, where neither",
        "candidate has support, is forecast by `nd` in the default run and by nothing in the baseline.",
        "",
        "## Leaderboard (mre, wis over unflagged cells; the flagged ones beside)",
        "",
        markdown(board.round(4)),
        "",
        "## Per benchmark: MRE (%) of the two ensembles and of each law alone",
        "",
        markdown(per["mre"]),
        "",
        "## Per benchmark: WIS",
        "",
        markdown(per["wis"]),
        "",
    ]
    (HERE / "two_stage_nd.md").write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    sys.exit(main())
