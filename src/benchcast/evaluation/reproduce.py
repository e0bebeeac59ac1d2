"""Reproduction of the empirical study of Krajewski et al. 2025 on the Apple downstream data.

Every fit is an ordinary benchcast backtest; independent backtests run on a process pool.
Choices where the paper's protocol leaves room (stated in the output's ``protocol`` entry):
direct laws and two-stage baselines use TPR-20 runs, fit on 3e18 <= C <= 6e21 and are scored
on every TPR-20 run above 6e21; ``nd`` (protocol 2) uses every TPR with no lower compute bound;
``passk_compute`` (protocol 3) uses HumanEval TPR-20 runs; proxy diagnostics use every run.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pandas as pd

from benchcast.errors import BenchcastError
from benchcast.evaluation.backtest import SUCCESS_MRE, SWEEP_THRESHOLDS, Backtest, backtest, critical_threshold
from benchcast.evaluation.diagnostics import benchmark_average, proxy_diagnostic
from benchcast.fitting.api import FitSpec
from benchcast.utils.io import atomic_write_text
from benchcast.utils.parallel import parallel_map

BENCHMARKS = (
    ("arc_easy", "acc_norm"),
    ("arc_challenge", "acc_norm"),
    ("sciq", "acc_norm"),
    ("piqa", "acc_norm"),
    ("hellaswag", "acc_norm"),
    ("winogrande", "acc"),
    ("lambada_openai", "acc"),
    ("webqs_1shot", "exact_match"),
    ("triviaqa_1shot", "exact_match"),
    ("gsm8k_cot_llama", "exact_match"),
    ("humaneval-py", "pass@1"),
    ("lbpp", "pass@1"),
)
GENERAL = BENCHMARKS[:7]
THRESHOLD, MIN_FLOPS, TPR = 6e21, 3e18, 20.0
INTERVAL_LAWS = ("power", "bnsl")
DEFAULT_BOOT = 100  # replicates per direct-law interval: keeps the whole study under two minutes
CORPUS_PROXIES = ("dclm:loss", "c4:loss", "fineweb:loss")
PROTOCOL = {
    "direct": "TPR 20; fit 3e18 <= C <= 6e21 with each law's point filter; test every TPR-20 run with C > 6e21",
    "two_stage": "as direct; proxies dclm:loss and the task's own -loglikelihood (where the task has one)",
    "nd": "protocol 2: all TPRs; test C > 6e21 or TPR 160; fit the rest (no lower compute bound)",
    "passk_compute": "protocol 3 on humaneval-py TPR-20 runs: fit C < 6e21 and k <= 32, test the rest",
    "average": "K8: mean Q' over a benchmark set, runs with every benchmark above chance + margin; power law",
    "proxy": "K7: logistic link from proxy to score over every run (all TPRs)",
    "sweep": "protocol 4: thresholds 6e19..5e22 (13, log grid), TPR 20, C >= 3e18; success: test MRE < 10%",
}


@dataclass
class Reproduction:
    tables: dict[str, pd.DataFrame]
    critical: pd.DataFrame
    backtests: dict[tuple, Backtest]
    seconds: float
    benchmarks: tuple = BENCHMARKS
    figures: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "protocol": PROTOCOL,
            "seconds": self.seconds,
            "figures": self.figures,
            **{name: frame.to_dict("records") for name, frame in self.tables.items()},
            "critical_thresholds": self.critical.to_dict("records"),
        }


def _job(table: pd.DataFrame, job: tuple) -> Backtest | str:
    key, spec, kwargs = job
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return backtest(table, spec, **kwargs)
    except BenchcastError as exc:
        return f"{key}: {exc}"


def _has(table: pd.DataFrame, benchmark: str, metric: str) -> bool:
    return bool(((table["benchmark"] == benchmark) & (table["metric"] == metric)).any())


def plan_jobs(table: pd.DataFrame, benchmarks=BENCHMARKS, thresholds=SWEEP_THRESHOLDS, n_boot: int = 0) -> list[tuple]:
    direct = {"threshold": THRESHOLD, "tpr": TPR, "min_flops": MIN_FLOPS}
    # intervals for the direct laws: bootstrapped inside the worker (no nested pools)
    with_intervals = {**direct, "n_boot": n_boot, "n_jobs": 1}
    jobs = []
    for bench, metric in benchmarks:
        for law in ("power", "bnsl", "power_floor"):
            kwargs = with_intervals if law in INTERVAL_LAWS else direct
            jobs.append((("direct", law, bench, ""), FitSpec(law, bench, metric), kwargs))
        proxies = ["dclm:loss"] + ([f"{bench}:loglikelihood"] if _has(table, bench, "loglikelihood") else [])
        for law in ("two_stage_linear", "two_stage_logistic"):
            for proxy in proxies:
                jobs.append((("two_stage", law, bench, proxy), FitSpec(law, bench, metric, proxy=proxy), direct))
        jobs.append((("nd", "nd", bench, ""), FitSpec("nd", bench, metric), {"protocol": "nd", "threshold": THRESHOLD}))
        for law in ("power", "bnsl"):
            for threshold in thresholds:
                jobs.append(
                    (
                        ("sweep", law, bench, float(threshold)),
                        FitSpec(law, bench, metric),
                        {"threshold": float(threshold), "tpr": TPR, "min_flops": MIN_FLOPS},
                    )
                )
    if _has(table, "humaneval-py", "pass@k"):
        jobs.append(
            (
                ("passk", "passk_compute", "humaneval-py", ""),
                FitSpec("passk_compute", "humaneval-py", max_k=32),
                {"protocol": "passk", "threshold": THRESHOLD, "tpr": TPR},
            )
        )
    return jobs


def _metric_row(bt: Backtest) -> dict:
    m = bt.metrics
    return {
        "train_mae": m["train_mae"],
        "train_mre": m["train_mre"],
        "train_rmse": m["train_rmse"],
        "train_r2": m["train_r2"],
        "test_mae": m["test_mae"],
        "test_mre": m["test_mre"],
        "n_fit": m["n_train"],
        "n_test": m["n_test"],
        "test_mre_usable": m["test_mre_usable"],
        "n_test_usable": m["n_test_usable"],
    }


def _with_mean(frame: pd.DataFrame, label_column: str = "benchmark") -> pd.DataFrame:
    mean = frame.select_dtypes("number").mean().to_dict()
    return pd.concat([frame, pd.DataFrame([{label_column: "average", **mean}])], ignore_index=True)


def reproduce_krajewski2025(
    table: pd.DataFrame,
    out_dir: str | Path | None = None,
    *,
    n_jobs: int | None = None,
    progress: bool | None = None,
    benchmarks=BENCHMARKS,
    thresholds=SWEEP_THRESHOLDS,
    n_boot: int = DEFAULT_BOOT,
) -> Reproduction:
    """Run every protocol of the study; ``benchmarks`` and ``thresholds`` default to the paper's.

    ``n_boot`` bootstrap replicates give the direct laws 50 % and 90 % prediction intervals and
    their held-out coverage (0 turns intervals off).
    """
    start = time.perf_counter()
    benchmarks = tuple(benchmarks)
    jobs = plan_jobs(table, benchmarks, thresholds, n_boot)
    outcomes = parallel_map(partial(_job, table), jobs, n_jobs=n_jobs, description="backtests", progress=progress)
    done = {job[0]: out for job, out in zip(jobs, outcomes, strict=True) if isinstance(out, Backtest)}
    failures = [out for out in outcomes if isinstance(out, str)]
    tables: dict[str, pd.DataFrame] = {}

    rows = []
    for bench, metric in benchmarks:
        row = {"benchmark": bench, "metric": metric}
        for law in ("power", "bnsl"):
            bt = done.get(("direct", law, bench, ""))
            if bt is not None:
                row[f"{law}_mae"], row[f"{law}_mre"] = bt.metrics["test_mae"], bt.metrics["test_mre"]
                for level in (50, 90):
                    if f"coverage{level}" in bt.metrics:
                        row[f"{law}_coverage{level}"] = bt.metrics[f"coverage{level}"]
        bnsl = done.get(("direct", "bnsl", bench, ""))
        if bnsl is not None:
            row["bnsl_points"] = bnsl.fit.diagnostics["n_used"]
            row["bnsl_huber_loss"] = bnsl.fit.diagnostics["loss"]
        rows.append(row)
    tables["direct"] = _with_mean(pd.DataFrame(rows))

    rows = []
    for (kind, law, bench, proxy), bt in done.items():
        if kind == "two_stage" or (kind == "direct" and law == "power"):
            rows.append(
                {
                    "law": law,
                    "proxy": proxy.replace(bench, "task") if proxy else "-",
                    "benchmark": bench,
                    **_metric_row(bt),
                }
            )
    per_bench = pd.DataFrame(rows)
    tables["two_stage_per_benchmark"] = per_bench
    tables["two_stage"] = (
        per_bench.groupby(["law", "proxy"], sort=False)[["test_mre", "test_mae", "train_rmse", "train_r2"]]
        .mean()
        .reset_index()
        .assign(benchmarks=per_bench.groupby(["law", "proxy"], sort=False).size().to_numpy())
    )

    tables["nd"] = _with_mean(
        pd.DataFrame([{"benchmark": b, **_metric_row(bt)} for (kind, _, b, _), bt in done.items() if kind == "nd"])
    )
    tables["passk_compute"] = pd.DataFrame(
        [
            {"benchmark": b, **_metric_row(bt), **bt.fit.params}
            for (kind, _, b, _), bt in done.items()
            if kind == "passk"
        ]
    )
    rows = []
    for (kind, law, bench, _), bt in done.items():
        if kind == "direct" and law == "power_floor":
            q_max, _ = bt.fit.fitted.limit()
            q_rand = bt.fit.spec.q_rand
            rows.append(
                {
                    "benchmark": bench,
                    "E": bt.fit.params["E"],
                    "q_max_normalised": (q_max - q_rand) / (1 - q_rand),
                    "q_max": q_max,
                    "test_mae": bt.metrics["test_mae"],
                    "test_mre": bt.metrics["test_mre"],
                    **{key: v for key, v in bt.metrics.items() if key in ("coverage50", "coverage90")},
                }
            )
    tables["power_floor"] = _with_mean(pd.DataFrame(rows))

    rows = []
    general = tuple(b for b in benchmarks if b in GENERAL)
    for name, subset in ((f"all {len(benchmarks)}", benchmarks), (f"general {len(general)}", general)):
        if not subset:
            continue
        averaged = benchmark_average(table, list(subset), name=f"average ({name})")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bt = backtest(
                    averaged,
                    FitSpec("power", f"average ({name})", "score", q_rand=0.0, margin=0.0),
                    threshold=THRESHOLD,
                    tpr=TPR,
                    min_flops=MIN_FLOPS,
                )
            rows.append({"set": name, "runs_kept": int(averaged["run"].nunique()), **_metric_row(bt)})
        except BenchcastError as exc:
            failures.append(f"average {name}: {exc}")
    tables["average"] = pd.DataFrame(rows)

    rows = []
    for bench, metric in benchmarks:
        candidates = [f"{bench}:loglikelihood", f"{bench}:brier", *CORPUS_PROXIES]
        if metric == "acc_norm":
            candidates.append(f"{bench}:acc")
        for proxy in candidates:
            pb, _, pm = proxy.partition(":")
            if _has(table, pb, pm):
                rows.append(proxy_diagnostic(table, bench, metric, proxy))
    tables["proxy"] = pd.DataFrame(rows)

    rows = []
    for (kind, law, bench, threshold), bt in done.items():
        if kind == "sweep":
            rows.append(
                {
                    "law": law,
                    "benchmark": bench,
                    "threshold": threshold,
                    "n_fit": bt.metrics["n_train"],
                    "n_test": bt.metrics["n_test"],
                    "test_mae": bt.metrics["test_mae"],
                    "test_mre": bt.metrics["test_mre"],
                    "success": bool(bt.metrics["test_mre"] < SUCCESS_MRE),
                }
            )
    sweep = pd.DataFrame(rows)
    tables["sweep"] = sweep
    critical = pd.DataFrame(
        [
            {
                "law": law,
                "benchmark": bench,
                "critical_threshold": critical_threshold(g["threshold"], g["success"]),
                "successes": int(g["success"].sum()),
                "thresholds": int(len(g)),
            }
            for (law, bench), g in sweep.groupby(["law", "benchmark"], sort=False)
        ]
    )
    tables["skipped"] = pd.DataFrame({"skipped": failures})  # e.g. sweep thresholds with no held-out runs
    result = Reproduction(tables, critical, done, time.perf_counter() - start, benchmarks)
    if out_dir is not None:
        write_outputs(result, Path(out_dir))
    result.seconds = time.perf_counter() - start
    return result


def write_outputs(result: Reproduction, out_dir: Path) -> None:
    from benchcast.plots.figures import plot_reproduction_curves, plot_sweep

    for name, frame in result.tables.items():
        atomic_write_text(out_dir / f"{name}.csv", frame.to_csv(index=False))
    atomic_write_text(out_dir / "critical_thresholds.csv", result.critical.to_csv(index=False))
    figures = [
        plot_reproduction_curves(
            result.backtests,
            [("direct", "power"), ("direct", "bnsl")],
            out_dir / "direct_laws.png",
            result.benchmarks,
            THRESHOLD,
        ),
        plot_reproduction_curves(
            result.backtests,
            [("direct", "power"), ("two_stage", "two_stage_linear"), ("two_stage", "two_stage_logistic")],
            out_dir / "two_stage_vs_direct.png",
            result.benchmarks,
            THRESHOLD,
            proxy="dclm:loss",
        ),
        plot_sweep(result.tables["sweep"], out_dir / "sweep.png"),
    ]
    result.figures = [str(f) for f in figures]
