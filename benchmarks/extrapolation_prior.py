"""Regenerate ``src/benchcast/forecasting/extrapolation_prior.json``: the cross-ladder prior of the
extrapolation error (issue 30, section 2).

For each ladder (DCLM at TPR 20, fit 3e18..6e21; C4 at TPR 20, 3e18..2e21; the multi-TPR protocol = bench
preset apple-dclm-tpr; Pythia's final checkpoints via examples/pythia/runs.yaml, fit <= 3e21) the default
strategy's members are fitted once per benchmark below the cutoff (bench's ``fit_cells``), and the blended
rolling-origin forecasts inside those training runs, never a held-out run, give each benchmark's own error
per decade: tau without drift, tau about its drift and the drift (``forecasting.extrapolation.estimate``, own
only), and tau per decade of TPR where the runs span TPRs. A ladder's entry is the mean over its benchmarks
(log tau on the log scale, floored at TAU_FLOOR); the prior is the mean over the ladders that have one
(``forecasting.extrapolation.load_prior``). A ladder whose benchmarks have too few origins (Pythia: 5 fitted
runs) has no entry.

    python benchmarks/extrapolation_prior.py [--n-boot 50] [--check]

``--check`` compares with the shipped file instead of writing it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _extrapolation_cells as xc  # noqa: E402

from benchcast.forecasting.extrapolation import PRIOR_FILE, load_prior  # noqa: E402
from benchcast.utils.io import atomic_write_text  # noqa: E402


def prior_document(n_boot: int) -> dict:
    """The JSON document: each ladder's entry and the pooled prior."""
    ladders = {name: xc.ladder_summary(xc.cells(xc.fitted_cells(name, n_boot))) for name in xc.LADDERS}
    pooled = load_prior(ladders=ladders)
    return {
        "about": "extrapolation error per decade of compute, from the default strategy's rolling-origin "
        "forecasts inside each ladder's training runs (benchmarks/extrapolation_prior.py)",
        "ladders": ladders,
        "pooled": {
            "tau": float(math.exp(pooled.log_tau)),
            "tau_nodrift": float(math.exp(pooled.log_tau_nodrift)),
            "drift": pooled.drift,
            "tau_tpr": pooled.tau_tpr,
            "ladders": list(pooled.ladders),
        },
    }


def _max_rel_diff(a, b) -> float:
    """Largest relative difference between two JSON documents' numbers; inf where their shapes differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return math.inf
        return max((_max_rel_diff(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max((_max_rel_diff(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) / max(abs(a), abs(b), 1e-300) if a != b else 0.0
    return 0.0 if a == b else math.inf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-boot", type=int, default=50, help="the cached fits' replicates (unused)")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    doc = prior_document(args.n_boot)
    text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
    for name, entry in doc["ladders"].items():
        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in entry.items() if k != "benchmarks"}
        print(name, shown)
    print("pooled", doc["pooled"], f"({time.perf_counter() - start:.1f} s)")
    if args.check:
        # The fits' last digits move with BLAS and load order, so compare to a relative 1e-5, and say by how much.
        worst = _max_rel_diff(json.loads(PRIOR_FILE.read_text()), json.loads(text))
        same = worst <= 1e-5
        print("shipped file", "matches" if same else "DIFFERS", f"(largest relative difference {worst:.2e})")
        sys.exit(0 if same else 1)
    atomic_write_text(PRIOR_FILE, text)


if __name__ == "__main__":
    main()
