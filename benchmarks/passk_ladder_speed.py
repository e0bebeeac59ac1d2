"""Time ``benchcast passk`` with the joint ladder model on the issue's size: 40 runs x 500 problems x n = 1000.

A simulated ladder (study 5 of ``passk_past_n.py``, code-contest bases: 75 % log-uniform [1e-7, 1e-3]) is written
as per-problem counts with each run's FLOPs in a metadata file, and the command is timed end to end (start-up,
reading, the backtest in k with its origins across runs, the fit, the bootstrap over problems) with
``--family joint`` and, with ``--auto``, ``--family auto`` (every per-run candidate judged too). The machine's
load average is printed beside each time: on a shared machine a time is only as good as the load it ran under.

    python benchmarks/passk_ladder_speed.py [--runs 40] [--problems 500] [--n 1000] [--n-boot 200] [--auto]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from passk_past_n import ladder_counts  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--problems", type=int, default=500)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--n-boot", type=int, default=200)
    parser.add_argument("--auto", action="store_true", help="Also time --family auto.")
    args = parser.parse_args()
    counts, compute, _, _ = ladder_counts(
        "code contests: 75% log-uniform [1e-7, 1e-3]", args.n, 0, args.runs, args.problems
    )
    with tempfile.TemporaryDirectory() as folder:
        data, meta = Path(folder) / "counts.csv", Path(folder) / "runs.csv"
        counts.assign(benchmark="code").to_csv(data, index=False)
        pd.DataFrame({"run": list(compute), "flops": list(compute.values())}).to_csv(meta, index=False)
        binary = Path(sys.executable).with_name("benchcast")
        for family in ("joint", "auto") if args.auto else ("joint",):
            command = [
                str(binary),
                "passk",
                str(data),
                "--k",
                "1,10,100",
                "--extrapolate-to",
                str(100 * args.n),
                "--family",
                family,
                "--metadata",
                str(meta),
                "--n-boot",
                str(args.n_boot),
                "--json",
            ]
            load = os.getloadavg()[0]
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - start
            rows = pd.read_json(__import__("io").StringIO(done.stdout)) if done.returncode == 0 else pd.DataFrame()
            past = rows[rows["source"] != "estimator"] if len(rows) else rows
            print(
                f"--family {family}: {seconds:.1f} s (exit {done.returncode}; load {load:.1f} at the start, "
                f"{os.getloadavg()[0]:.1f} at the end); {args.runs} runs x {args.problems} problems x n = {args.n}; "
                f"rows past n {len(past)}, sources {past['source'].value_counts().to_dict() if len(past) else {}}"
            )
            if done.returncode:
                print(done.stderr[-2000:])
            values = past[["pass_at_k", "lower", "upper"]].to_numpy(float) if len(past) else np.zeros((0, 3))
            print("  values outside [0, 1]:", int((np.isfinite(values) & ((values < 0) | (values > 1))).sum()))


if __name__ == "__main__":
    main()
