"""Wall time of the commands a researcher runs, before (an older commit) and after (this tree).

Run from the repository root (issue #42's targets are printed beside each command)::

    python benchmarks/commands.py --baseline 7981c2e --only timings     # checks 7981c2e out to a temporary worktree
    python benchmarks/commands.py --baseline 7981c2e --only timings --repeat 5 --commands help recommend
    git worktree add ../base 1060d50 && python benchmarks/commands.py   # timings and losses against ../base/src
    python benchmarks/commands.py --before /path/to/old/src --only losses

Both versions run as subprocesses on the same data with the same commands (default settings,
Apple DCLM file), in turn within each repetition (before, after; then after, before), so a drift
of the machine's speed falls on both. Timings are wall seconds of the whole command, process
start included, so they are what a user waits for; the medians and the median of the pairwise
ratios before/after are printed, with the load (1-minute load average) at the start and the end
of each command's runs, since on a shared machine they are noisy. ``--commands`` takes labels
or their first word (``help``, ``forecast``, ``recommend``...). Losses are those of the reproduction's direct-law fits
(every benchmark and law of ``reproduce krajewski2025``, no sweep) plus nd_floor and the pass@k
laws, each fitted by both versions: "after" lower or equal is better; a higher loss is printed
with its size, since the engine is judged by its forecasts (``bench``, ``reproduce``), not by the
last digits of a loss.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "apple-downstream" / "metrics_dclm_data_mixture.subset.csv"
BASE = ROOT.parent / "base" / "src"  # git worktree add ../base 1060d50 (the previous release)
ROUNDING = 1e-9  # relative loss excess treated as rounding, not as a worse optimum

BENCH = ["-b", "hellaswag", "--metric", "acc_norm"]
ARC = ["-b", "arc_easy", "-m", "acc_norm", "--tpr", "20"]
APPLE_12 = [  # the twelve benchmarks of reproduce krajewski2025, each with its metric
    "arc_easy:acc_norm",
    "arc_challenge:acc_norm",
    "sciq:acc_norm",
    "piqa:acc_norm",
    "hellaswag:acc_norm",
    "winogrande:acc",
    "lambada_openai:acc",
    "webqs_1shot:exact_match",
    "triviaqa_1shot:exact_match",
    "gsm8k_cot_llama:exact_match",
    "humaneval-py:pass@1",
    "lbpp:pass@1",
]
# issue #42's targets, seconds on the 2-core machine, by label (a label not here: no target)
TARGETS = {
    "example (the README's main job)": 4.0,
    "help (benchcast --help)": 0.8,
    "forecast of a bnsl_monotone fit": 1.0,
    "forecast of the default ensemble": 2.0,
    "recommend --target-flops 1e23": 2.0,
    "backtest --law power --law bnsl": 4.0,
    "report (12 Apple benchmarks)": 60.0,
    "bench --preset apple-dclm": 30.0,
    "reproduce krajewski2025": 90.0,
}
# untimed steps a command needs first, run by the same version (its own artifact format)
SETUP = {
    f"forecast of a {law} fit": [["fit", "{data}", "--law", law, *ARC, "--out", "{tmp}/" + law + ".json"]]
    for law in ("power_floor", "bnsl", "bnsl_monotone")
}
COMMANDS = {
    "example (the README's main job)": ["example", "--out", "{tmp}/example"],
    "help (benchcast --help)": ["--help"],
    **{
        f"forecast of a {law} fit": ["forecast", "{tmp}/" + law + ".json", "--flops", "1e23", "--n-boot", "1000"]
        for law in ("power_floor", "bnsl", "bnsl_monotone")
    },
    "forecast of the default ensemble": ["forecast", "{data}", *ARC, "--flops", "1e23"],
    "recommend --target-flops 1e23": ["recommend", "{data}", *ARC, "--target-flops", "1e23"],
    "backtest --law power --law bnsl": [
        "backtest",
        "{data}",
        "--law",
        "power",
        "--law",
        "bnsl",
        "-b",
        "arc_easy",
        "-m",
        "acc_norm",
        "--threshold",
        "6e21",
        "--tpr",
        "20",
        "--min-flops",
        "3e18",
    ],
    "report (12 Apple benchmarks)": [
        "report",
        "{data}",
        *(x for b in APPLE_12 for x in ("-b", b)),
        "--tpr",
        "20",
        "--target-flops",
        "1e23",
        "--out",
        "{tmp}/report",
    ],
    "bench --preset apple-dclm": ["bench", "--preset", "apple-dclm", "--out", "{tmp}/bench"],
    "reproduce krajewski2025": ["reproduce", "krajewski2025", "--data", "{data}", "--out", "{tmp}/reproduce"],
}

LOSS_WORKER = r"""
import json, sys, warnings
import benchcast as bc
try:  # this tree: jobs are Job objects run by _run
    from benchcast.studies.krajewski2025 import _run, plan_jobs
    key_of = lambda job: job.key
except ImportError:  # the previous release: tuples run by _job
    from benchcast.reproduce import _job as _run, plan_jobs
    key_of = lambda job: job[0]
warnings.simplefilter("ignore")
table = bc.load(sys.argv[1])
out = {}
for job in plan_jobs(table, thresholds=(), n_boot=0):
    key = "/".join(str(part) for part in key_of(job) if part != "")
    if key.startswith("sweep/"):
        continue  # no thresholds: nothing fitted
    bt = _run(table, job)
    out[key] = None if isinstance(bt, str) else float(bt.fit.diagnostics.loss)
extra = [("nd_floor", b, m, {"max_flops": 6e21}) for b, m in
         [("arc_easy", "acc_norm"), ("hellaswag", "acc_norm"), ("piqa", "acc_norm"), ("sciq", "acc_norm")]]
extra += [(law, b, "pass@k", {"k": k}) for law in ("compute", "params_tokens")
          for b in ("humaneval-py", "lbpp", "mbpp") for k in (1, 8)]
for law, bench, metric, kwargs in extra:
    key = f"extra/{law}/{bench}" + (f"/k{kwargs['k']}" if "k" in kwargs else "")
    k = kwargs.pop("k", None)
    try:
        out[key] = float(bc.fit(table, law, bench, metric, k=k, **kwargs).diagnostics.loss)
    except Exception as exc:
        out[key] = None
print(json.dumps(out))
"""


def env_for(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(src)}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def load() -> float:
    return os.getloadavg()[0]


@contextlib.contextmanager
def checked_out(commit: str):
    """The ``src`` folder of ``commit``, checked out to a temporary worktree removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="benchcast-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), commit], check=True)
    try:
        yield folder / "src"
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False)
        shutil.rmtree(folder.parent, ignore_errors=True)


def setup_command(src: Path, label: str, tmp: str) -> None:
    """The untimed steps ``label`` needs, run once by the version timed (its own artifact format)."""
    os.makedirs(tmp, exist_ok=True)
    for step in SETUP.get(label, []):
        argv = [sys.executable, "-m", "benchcast", *(a.format(data=DATA, tmp=tmp) for a in step)]
        subprocess.run(argv, env=env_for(src), capture_output=True, text=True)


def time_command(src: Path, label: str, tmp: str, setup: bool = True) -> float:
    if setup:
        setup_command(src, label, tmp)
    argv = [sys.executable, "-m", "benchcast", *(a.format(data=DATA, tmp=tmp) for a in COMMANDS[label])]
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env_for(src), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"  ! {label} failed under {src}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return float("nan")
    return elapsed


def losses(src: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", LOSS_WORKER, str(DATA)], env=env_for(src), capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"loss worker failed under {src}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def chosen(label: str, wanted: list[str] | None) -> bool:
    return not wanted or any(label == w or label.split()[0] == w for w in wanted)


def timings(before_src: Path, after_src: Path, wanted: list[str] | None, repeat: int) -> None:
    """Each command ``repeat`` times per version, in turn; medians, pairwise ratios and the load."""
    print(f"before: {before_src}\nafter:  {after_src}\nload at the start: {uptime()}")
    print(f"{'command':36s} {'before s':>9s} {'after s':>9s} {'before/after':>13s} {'target s':>9s} {'load':>10s}")
    has_before = before_src.exists()
    with tempfile.TemporaryDirectory() as tmp:
        for label in COMMANDS:
            if not chosen(label, wanted):
                continue
            start_load = load()
            if has_before:
                setup_command(before_src, label, tmp + "/before")
            setup_command(after_src, label, tmp + "/after")
            before, after = [], []
            for i in range(repeat):
                order = [(before, before_src, "/before"), (after, after_src, "/after")]
                for into, src, sub in order if i % 2 == 0 else order[::-1]:
                    if src is before_src and not has_before:
                        continue
                    into.append(time_command(src, label, tmp + sub, setup=False))
            b = statistics.median(before) if before else math.nan
            a = statistics.median(after)
            ratio = statistics.median(x / y for x, y in zip(before, after, strict=True)) if before else math.nan
            target = TARGETS.get(label)
            verdict = "" if target is None else f"{target:9.1f}" + (" met" if a <= target else " MISSED")
            loads = f"{start_load:.1f}..{load():.1f}"
            print(f"{label:36s} {b:9.2f} {a:9.2f} {ratio:12.2f}x {verdict:14s} {loads:>10s}", flush=True)
    print(f"load at the end: {uptime()} ({os.cpu_count()} cores)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, default=BASE, help="src folder of the previous release")
    parser.add_argument("--baseline", default=None, help="a commit to check out as 'before' (instead of --before)")
    parser.add_argument("--after", type=Path, default=ROOT / "src", help="src folder of this tree")
    parser.add_argument("--only", choices=("timings", "losses"), default=None)
    parser.add_argument("--commands", nargs="*", default=None, help="labels (or their first word) to time")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each command per version (medians)")
    args = parser.parse_args()

    with checked_out(args.baseline) if args.baseline else contextlib.nullcontext(args.before) as before_src:
        if args.only in (None, "timings"):
            timings(before_src, args.after, args.commands, max(1, args.repeat))
        if args.only in (None, "losses"):
            report_losses(before_src, args.after)


def report_losses(before_src: Path, after_src: Path) -> None:
    before, after = losses(before_src), losses(after_src)
    print(f"\n{'fit':48s} {'loss before':>14s} {'loss after':>14s}  verdict")
    worse = 0
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b is None or a is None:
            verdict = "only after" if b is None and a is not None else "only before" if a is None else "no fit"
        elif a <= b * (1 + ROUNDING):
            verdict = "lower" if a < b * (1 - ROUNDING) else "equal"
        else:
            verdict, worse = f"WORSE (+{(a - b) / b:.2e})", worse + 1
        fmt = lambda v: f"{v:14.6e}" if v is not None else f"{'-':>14s}"  # noqa: E731
        print(f"{key:48s} {fmt(b)} {fmt(a)}  {verdict}")
    print(f"\n{worse} fit(s) worse than before (relative tolerance {ROUNDING:g}).")


if __name__ == "__main__":
    main()
