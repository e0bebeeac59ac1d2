"""Interval coverage per benchmark on four ladders, through the real pipeline (`benchcast bench`).

Runs `benchcast bench --json` for the default strategy (`ensemble`) and a fixed law (`power`) on DCLM (preset
apple-dclm: TPR 20, fit 3e18..6e21), C4 (apple-c4: fit 3e18..2e21), the multi-TPR protocol (apple-dclm-tpr) and
Pythia (the eight final checkpoints, fit <= 3e21), and prints, per ladder and per benchmark, the held-out
coverage of the 50 % and 90 % intervals, the 90 % width and the weighted interval score, with the means over
benchmarks and the worst benchmark. `--src` runs another checkout's code (its `src` folder), so one script
measures before and after with the same settings:

    python benchmarks/coverage_by_benchmark.py --json after.json
    python benchmarks/coverage_by_benchmark.py --src ../before/src --n-boot 200 --json before.json

It prints the machine load and each run's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LADDERS = {
    "dclm": ["--preset", "apple-dclm", "--data", str(DATA / "apple-downstream")],
    "c4": ["--preset", "apple-c4", "--data", str(DATA / "apple-downstream")],
    "dclm-tpr": ["--preset", "apple-dclm-tpr", "--data", str(DATA / "apple-downstream")],
    "pythia": [
        "--data",
        str(DATA / "pythia" / "zero-shot"),
        "--format",
        "lm-eval",
        "--metadata",
        str(ROOT / "examples" / "pythia" / "runs.yaml"),
        "--threshold",
        "3e21",
    ],
}
STRATEGIES = ("ensemble", "power")
METRICS = ("coverage50", "coverage90", "width90", "wis")


def run(ladder: str, src: Path, n_boot: int | None, jobs: int) -> tuple[dict, float]:
    """One bench run of a ladder with ``src``'s code: its --json document and wall time."""
    command = [sys.executable, "-m", "benchcast", "bench", *LADDERS[ladder], "--json", "--jobs", str(jobs)]
    command += [item for s in STRATEGIES for item in ("--strategy", s)]
    if n_boot is not None:
        command += ["--n-boot", str(n_boot)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{ladder}: bench failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return _document(done.stdout), seconds


def _document(text: str) -> dict:
    """bench's per-cell rows from its ``--json`` output (a list of records, or a document with ``rows``)."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    doc = json.loads(text[min(starts) :])
    return doc if isinstance(doc, dict) else {"rows": doc}


def summarize(doc: dict) -> dict:
    """Per strategy: each benchmark's metrics, their means and the worst coverage; cells without an interval."""
    out = {}
    for strategy in STRATEGIES:
        rows = [r for r in doc["rows"] if r["strategy"] == strategy]
        cells = {}
        for r in rows:
            name = r["benchmark"] if r["metric"] in (None, "") else f"{r['benchmark']}:{r['metric']}"
            cells[name] = {m: r.get(m) for m in (*METRICS, "n_test", "status")}
        forecast = {k: v for k, v in cells.items() if v["status"] == "ok"}
        with_interval = {k: v for k, v in forecast.items() if v["coverage90"] is not None}
        mean = {m: _mean([v[m] for v in with_interval.values()]) for m in METRICS}
        worst = {m: _min([v[m] for v in with_interval.values()]) for m in ("coverage50", "coverage90")}
        out[strategy] = {
            "cells": cells,
            "mean": mean,
            "worst": worst,
            "forecast_cells": len(forecast),
            "without_interval": len(forecast) - len(with_interval),
        }
    return out


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _min(values):
    values = [v for v in values if v is not None]
    return min(values) if values else None


def _fmt(value, digits=3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the src folder whose code runs")
    parser.add_argument("--n-boot", type=int, default=None, help="bootstrap replicates (default: the code's own)")
    parser.add_argument("--ladders", nargs="+", default=list(LADDERS), choices=list(LADDERS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the summaries here")
    args = parser.parse_args()
    print(f"src {args.src}; n_boot {args.n_boot or 'default'}; load {os.getloadavg()}")
    results = {}
    for ladder in args.ladders:
        doc, seconds = run(ladder, args.src, args.n_boot, args.jobs)
        summary = summarize(doc)
        summary["seconds"], summary["n_boot"] = seconds, args.n_boot or "default"
        results[ladder] = summary
        print(f"\n## {ladder} ({seconds:.0f} s, {summary['n_boot']} replicates, load {os.getloadavg()[0]:.1f})")
        print("| strategy | cov50 mean [worst] | cov90 mean [worst] | width90 | WIS | forecast cells | no interval |")
        print("|---|---|---|---|---|---|---|")
        for strategy, s in ((k, summary[k]) for k in STRATEGIES):
            print(
                f"| {strategy} | {_fmt(s['mean']['coverage50'])} [{_fmt(s['worst']['coverage50'])}] | "
                f"{_fmt(s['mean']['coverage90'])} [{_fmt(s['worst']['coverage90'])}] | {_fmt(s['mean']['width90'])} | "
                f"{_fmt(s['mean']['wis'], 2)} | {s['forecast_cells']} | {s['without_interval']} |"
            )
        print("\n| benchmark | " + " | ".join(f"{s} cov50 / cov90 / WIS" for s in STRATEGIES) + " |")
        print("|---|" + "---|" * len(STRATEGIES))
        names = sorted(set().union(*(summary[s]["cells"] for s in STRATEGIES)))
        for name in names:
            parts = []
            for strategy in STRATEGIES:
                c = summary[strategy]["cells"].get(name)
                parts.append(
                    "—"
                    if c is None or c["status"] != "ok"
                    else f"{_fmt(c['coverage50'], 2)} / {_fmt(c['coverage90'], 2)} / {_fmt(c['wis'], 2)}"
                )
            print(f"| {name} | " + " | ".join(parts) + " |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
