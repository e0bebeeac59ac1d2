"""Time the forecast on lab-sized ladders (issue #51 item 6), as a user waits for it: whole CLI processes.

Builds, in a scratch folder, the two ladders the issue names and runs:

* ``ladder30``: a 10-task forecast of two planned runs (7B on 140B tokens, 13B on 260B) on the 30-run ladder read from
  W&B exports as a lab publishes them (``tests/data/training_logs_ladder.write_ladder(published=True)``): the eight
  downstream tasks and the two corpus losses;
* ``like30``: ``bench --like-target 7e9 4e12`` on the same ladder and tasks (every strategy, at the one split like
  the target);
* ``iso90``: one benchmark (arc_easy acc_norm) forecast at 20B on 400B tokens from a 90-run IsoFLOP ladder, 9 compute
  budgets x 10 sizes (N*/8 .. 8 N*), scored by ``nd_floor`` at its ``example_params`` plus evaluation noise;
* ``example``: the README's ``forecast $LADDER -b arc_easy -b hellaswag --flops 1e22`` on the bundled ladder;
* ``dclm``: the README's ``forecast $DATA -b hellaswag:acc_norm -b winogrande:acc --params 7e9 --tokens 4e12``.

Each command's wall time and CPU time (its process and workers; CPU / 2 is what two free cores would need) are printed;
its ``--json`` output is kept (``--keep DIR``) so that two trees can be compared point by point. The load
(``uptime``) is printed before and after each command: timings taken beside other work are not the machine's.

    python benchmarks/lab_ladder_speed.py [--src SRC] [--only ladder30,like30] [--jobs 2] [--keep DIR] [--profile DIR]

``--src`` is the ``src`` folder put first on PYTHONPATH (default: this checkout's); ``--profile DIR`` runs each command
under cProfile (``-j 1`` then gives the whole picture in one process) and writes ``DIR/NAME.prof``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DCLM = ROOT.parent / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
TASKS = [
    *(f"{t}:len_norm" for t in ("hellaswag_val", "arc_easy_test", "arc_challenge_test")),
    "boolq_val:acc",
    *(f"mmlu_{s}_val:len_norm" for s in ("stem", "humanities", "social_sciences", "other")),
    "c4_en-validation:loss",
    "pile-validation:loss",
]


def isoflop_ladder(path: Path, seed: int = 0) -> Path:
    """9 budgets x 10 sizes (N*/8 .. 8 N*, N* at 20 tokens per parameter), scored by nd_floor's example."""
    sys.path.insert(0, str(ROOT / "src"))
    from benchcast.laws import get_law, to_score

    law = get_law("nd_floor")
    theta = np.array([law.example_params[p.name] for p in law.parameters])
    rng = np.random.default_rng(seed)
    rows = []
    for budget in np.geomspace(1e18, 1e21, 9):
        optimal = np.sqrt(budget / (6 * 20))
        for n in optimal * np.geomspace(1 / 8, 8, 10):
            d = budget / (6 * n)
            target = law.forward(theta[None], {"params": np.array([n]), "tokens": np.array([d])})[0, 0]
            value = float(to_score(law.target, target, 0.25)) + rng.normal(0, 0.004)
            rows.append(
                {
                    "run": f"iso-{budget:.2g}-{n:.3g}",
                    "params": n,
                    "tokens": d,
                    "flops": 6 * n * d,
                    "benchmark": "arc_easy",
                    "metric": "acc_norm",
                    "value": value,
                }
            )
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def commands(scratch: Path, jobs: int) -> dict[str, list[str]]:
    """Each timed command's arguments after ``benchcast``."""
    sys.path.insert(0, str(ROOT))
    from tests.data.training_logs_ladder import write_ladder

    exports, runs = write_ladder(scratch, published=True)
    iso = isoflop_ladder(scratch / "isoflop.csv")
    sys.path.insert(0, str(ROOT / "src"))
    from benchcast.data.example import example_path

    planned = ["--params", "7e9", "--tokens", "1.4e11", "--params", "1.3e10", "--tokens", "2.6e11"]
    every = ["-j", str(jobs), "--json"]
    return {
        "ladder30": [
            "forecast",
            str(exports),
            "--metadata",
            str(runs),
            *(a for t in TASKS for a in ("-b", t)),
            *planned,
            *every,
        ],
        "like30": [
            "bench",
            "--data",
            str(exports),
            "--metadata",
            str(runs),
            *(a for t in TASKS for a in ("-b", t)),
            "--like-target",
            "7e9",
            "4e12",
            *every,
        ],
        "iso90": ["forecast", str(iso), "-b", "arc_easy:acc_norm", "--params", "2e10", "--tokens", "4e11", *every],
        "example": ["forecast", str(example_path()), "-b", "arc_easy", "-b", "hellaswag", "--flops", "1e22", *every],
        "dclm": [
            "forecast",
            str(DCLM),
            "-b",
            "hellaswag:acc_norm",
            "-b",
            "winogrande:acc",
            "--params",
            "7e9",
            "--tokens",
            "4e12",
            *every,
        ],
    }


def _children_cpu() -> float:
    """CPU seconds of the finished children (the command and its workers): less bent by other work than wall time."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--only", default="ladder30,like30,iso90,example,dclm")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="write each command's --json output here")
    parser.add_argument("--profile", type=Path, default=None, help="run under cProfile, NAME.prof here")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.src.resolve())}
    with tempfile.TemporaryDirectory() as scratch:
        todo = commands(Path(scratch), args.jobs)
        for name in args.only.split(","):
            runner = [sys.executable]
            if args.profile:
                args.profile.mkdir(parents=True, exist_ok=True)
                runner += ["-m", "cProfile", "-o", str(args.profile / f"{name}.prof")]
            before, cpu = load(), _children_cpu()
            start = time.perf_counter()
            done = subprocess.run([*runner, "-m", "benchcast", *todo[name]], env=env, capture_output=True, text=True)
            wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"{name}.json").write_text(done.stdout)
            record = {
                "command": name,
                "src": str(args.src),
                "jobs": args.jobs,
                "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1),
                "rc": done.returncode,
                "load_before": before,
                "load_after": load(),
            }
            if done.returncode:
                record["stderr"] = done.stderr[-2000:]
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
