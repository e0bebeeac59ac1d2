"""Wall time of every command in the README, run in the README's order on this machine.

Run from the repository root (the shared data beside the clone, the package installed)::

    python benchmarks/readme_times.py                 # every command
    python benchmarks/readme_times.py --only report   # commands containing 'report'

Each ```bash block of README.md is read top to bottom; installs (``pip``) and the test command are
left out (installing is not what a user waits for between commands), assignments (``DATA=...``)
are kept, and every other line is one command, timed as a whole process, as a user waits for it.
The commands run in a scratch folder holding links to ``examples/`` and ``../shared`` so that their
outputs (``arc.json``, ``out/``...) land there and not in the checkout. The load (``uptime``) is
printed before and after: timings taken beside other work are not the machine's.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"^\s*(pip |python -m pytest)")
ASSIGN = re.compile(r"^[A-Z_]+=")


def readme_commands(readme: Path) -> list[str]:
    """The README's shell lines in order, continuation lines joined, comments and installs dropped."""
    lines, block = [], False
    for raw in readme.read_text().splitlines():
        if raw.startswith("```"):
            block = raw.strip() == "```bash"
            continue
        if block:
            lines.append(raw)
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("pip ") and "&&" in line:  # the set-up line: install, then the main job
            line = line.split("&&", 1)[1].strip()
        if not SKIP.match(line):
            out.append(line)
    return out


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="time only commands containing this text")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="readme-times-")) / "repo"
    scratch.mkdir()
    (scratch / "examples").symlink_to(ROOT / "examples")
    (scratch.parent / "shared").symlink_to(ROOT.parent / "shared")
    env = dict(os.environ)
    print(f"load before: {load()}")
    print("seconds  exit  command")
    for line in readme_commands(ROOT / "README.md"):
        if ASSIGN.match(line):  # DATA=..., M="$M ...": kept for the commands after it
            printed = subprocess.run(["bash", "-c", f"set -a; {line}\nenv -0"], env=env, capture_output=True).stdout
            env = dict(item.split("=", 1) for item in printed.decode().split("\0") if "=" in item)
            continue
        if args.only and args.only not in line:
            continue
        start = time.perf_counter()
        done = subprocess.run(["bash", "-c", line], cwd=scratch, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        command = line.split(" #")[0].strip()
        print(f"{seconds:7.1f}  {done.returncode:4d}  {command}", flush=True)
        if done.returncode:
            print("         " + (done.stderr.strip().splitlines() or [""])[-1][:200])
    print(f"load after: {load()}")
    print(f"outputs in {scratch}")


if __name__ == "__main__":
    main()
