"""A notebook session's repeated solves (issue #51, each fit once): one question asked through forecast, recommend,
the report's analysis and plan in one process, with the process's stored solves (benchcast.utils.memo) kept, and
with them forgotten before each call (what every call cost before the store). CPU seconds of this process, `-j 1`.

    python benchmarks/memo_session.py [--n-boot 1500]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import benchcast as bc
from benchcast.forecasting.answers import recommend
from benchcast.forecasting.planning import plan_default
from benchcast.report.analysis import analyse_benchmark
from benchcast.utils import memo

DCLM = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "data"
    / "apple-downstream"
    / "metrics_dclm_data_mixture.subset.csv"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-boot", type=int, default=1500)
    args = parser.parse_args()
    table = bc.load(DCLM)
    table = table[table["flops"] <= 6e21]
    spec = bc.FitSpec("power", "arc_easy", metric="acc_norm", tpr=20.0)
    unc = bc.Uncertainty(args.n_boot, levels=0.9)
    calls = {
        "forecast": lambda: bc.forecast_default(table, spec, flops=[1e23], uncertainty=unc, n_jobs=1),
        "recommend": lambda: recommend(table, spec, target_flops=1e23, uncertainty=unc, n_jobs=1).forecast,
        "report": lambda: (
            analyse_benchmark(
                table, "arc_easy", "acc_norm", target_flops=[1e23], tpr=20.0, uncertainty=unc, n_jobs=1
            ).forecast
        ),
        "plan": lambda: plan_default(table, spec, target=0.75, uncertainty=unc, n_jobs=1),
    }
    for kept in (False, True):
        memo.clear()
        print(f"\nstored solves {'kept' if kept else 'forgotten before each call'}")
        total = 0.0
        for name, call in calls.items():
            if not kept:
                memo.clear()
            start = time.process_time()
            answer = call()
            seconds = time.process_time() - start
            total += seconds
            row = answer.to_frame().iloc[0] if hasattr(answer, "to_frame") else None
            shown = "" if row is None or "prediction" not in row else f"prediction {row['prediction']:.6f}"
            print(
                f"  {name:9s} {seconds:6.1f} CPU s  solves made {memo.counts()['made']:3d}, reused "
                f"{memo.counts()['reused']:3d}  {shown}"
            )
        print(f"  total     {total:6.1f} CPU s")


if __name__ == "__main__":
    main()
