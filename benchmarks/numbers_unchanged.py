"""A change that should move no number (speed work, issue #31; the one forecast table and harness, issue #38):
every forecast and bound before and after.

Runs ``bench`` on its presets and ``reproduce krajewski2025`` with two source trees (same seeds and
replicates, each as a subprocess with its own ``PYTHONPATH``) and prints the distribution of the change
of every held-out forecast and interval bound, and of the leaderboards, naming every move above 1 %::

    git worktree add ../before 9cbb07b
    python benchmarks/numbers_unchanged.py --before ../before/src [--presets apple-dclm apple-c4] [--no-reproduce]

Outputs of each tree go to ``--out`` (default a temporary folder), kept for inspection.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "apple-downstream"
DCLM = DATA / "metrics_dclm_data_mixture.subset.csv"
PRESETS = ("apple-dclm", "apple-c4", "apple-dclm-tpr")
KEY = ["run", "dataset", "benchmark", "metric", "strategy", "cutoff"]
VALUES = ["prediction", "lower50", "upper50", "lower90", "upper90"]  # bench named the point "predicted" before #51


def run(src: Path, args: list[str], out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchcast", *args, "--out", str(out)], env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"{src}: benchcast {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def relative(a: pd.Series, b: pd.Series) -> np.ndarray:
    a, b = a.to_numpy(float), b.to_numpy(float)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0.0, np.abs(a - b) / np.maximum(np.abs(b), 1e-12))


def describe(name: str, change: np.ndarray) -> str:
    n = len(change)
    shares = [
        (label, np.mean(change <= bound))
        for label, bound in (("identical", 0.0), ("<=1e-9", 1e-9), ("<=1e-6", 1e-6), ("<=1 %", 0.01))
    ]
    cells = " | ".join(f"{share:.1%}" for _, share in shares)
    return f"| {name} | {n} | {cells} | {np.max(change, initial=0):.2e} |"


def compare_tables(label: str, before: pd.DataFrame, after: pd.DataFrame, key: list[str], values: list[str]) -> list:
    merged = before.merge(after, on=key, how="outer", suffixes=("_before", "_after"), indicator=True)
    lost = merged[merged["_merge"] != "both"]
    if len(lost):
        print(f"{label}: {len(lost)} rows in one version only:\n{lost[key + ['_merge']].head(10).to_string()}")
    merged = merged[merged["_merge"] == "both"]
    lines, moves = [], []
    for value in values:
        if f"{value}_before" not in merged:
            continue
        change = relative(merged[f"{value}_after"], merged[f"{value}_before"])
        lines.append(describe(f"{label} {value}", change))
        for i in np.flatnonzero(change > 0.01):
            row = merged.iloc[i]
            where = ", ".join(f"{k}={row[k]}" for k in key)
            before, after = row[f"{value}_before"], row[f"{value}_after"]
            moves.append(f"{label} {value}: {where}: {before:.4g} -> {after:.4g} ({change[i]:.1%})")
    return lines, moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="src folder of the earlier tree")
    parser.add_argument("--after", type=Path, default=ROOT / "src")
    parser.add_argument("--presets", nargs="*", default=list(PRESETS))
    parser.add_argument("--no-reproduce", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--n-boot", type=int, default=None, help="replicates for both trees (default: bench's)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="numbers-unchanged-"))
    print(f"load at start: {os.getloadavg()[0]:.2f}; outputs in {out}")
    header = "| table | rows | identical | <= 1e-9 | <= 1e-6 | <= 1 % | largest |\n|---|---|---|---|---|---|---|"
    lines, moves = [], []
    for preset in args.presets:
        folders = {}
        for side, src in (("before", args.before), ("after", args.after)):
            folders[side] = out / side / preset
            if (folders[side] / "bench_predictions.csv").exists():  # a kept run of this tree (--out): read, not rerun
                continue
            boot = [] if args.n_boot is None else ["--n-boot", str(args.n_boot)]
            seconds = run(src.resolve(), ["bench", "--preset", preset, "--data", str(DATA), *boot], folders[side])
            print(f"bench {preset} {side}: {seconds:.1f} s")
        before, after = (pd.read_csv(folders[s] / "bench_predictions.csv") for s in ("before", "after"))
        before, after = (f.rename(columns={"predicted": "prediction"}) for f in (before, after))
        got, moved = compare_tables(f"bench {preset}", before, after, KEY, VALUES)
        lines += got
        moves += moved
        board_before, board_after = (pd.read_csv(folders[s] / "bench_leaderboard.csv") for s in ("before", "after"))
        key = [c for c in ("dataset", "strategy") if c in board_before.columns]
        numbers = [c for c in board_before.columns if c not in key and pd.api.types.is_numeric_dtype(board_before[c])]
        got, moved = compare_tables(f"leaderboard {preset}", board_before, board_after, key, numbers)
        lines += got
        moves += moved
    if not args.no_reproduce:
        folders = {}
        for side, src in (("before", args.before), ("after", args.after)):
            folders[side] = out / side / "reproduce"
            seconds = run(src.resolve(), ["reproduce", "krajewski2025", "--data", str(DCLM)], folders[side])
            print(f"reproduce {side}: {seconds:.1f} s")
        for path in sorted(folders["before"].glob("*.csv")):
            other = folders["after"] / path.name
            if not other.exists():
                print(f"reproduce: {path.name} only before")
                continue
            before, after = pd.read_csv(path), pd.read_csv(other)
            numbers = [c for c in before.columns if pd.api.types.is_float_dtype(before[c])]
            key = [c for c in before.columns if c not in numbers]
            if not numbers or before[key].duplicated().any():
                continue
            got, moved = compare_tables(f"reproduce {path.stem}", before, after, key, numbers)
            lines += got
            moves += moved
    print(header)
    print("\n".join(lines))
    print(f"\nmoves above 1 %: {len(moves)}")
    print("\n".join(moves))
    print(f"load at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
