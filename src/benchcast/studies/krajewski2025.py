"""Reproduction of the empirical study of Krajewski et al. 2025 on the Apple downstream data.

Every fit is an ordinary benchcast backtest (the threshold sweep is :func:`backtest.sweep`);
the independent jobs run on a process pool or, with ``backend="ray"``, as Ray tasks. Choices
where the paper's protocol leaves room are stated in the output's ``protocol`` entry.

Every table reports the held-out MRE over all points next to the MRE over *usable* points
(Q > Q_rand + margin, the K1 filter of SPEC §3.1: margin 0.05, LBPP 0.02), where a relative
error means something; :data:`TABLES` says which of the two each table's headline uses.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from benchcast.data.table import parse_metric
from benchcast.errors import BenchcastError
from benchcast.evaluation.backtest import BacktestResult, backtest
from benchcast.evaluation.sweep import sweep
from benchcast.evaluation.sweep_result import SWEEP_THRESHOLDS, Sweep
from benchcast.evaluation.sweep_result import usable_errors as errors
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.studies.krajewski2025_protocol import (
    ACC_NORM,
    AVERAGE_DELTA,
    AVERAGE_LOSS,
    AVERAGE_SETS,
    BENCHMARKS,
    BNSL,
    BNSL_MARGIN,
    CONSTRAINED_BNSL,
    DIRECT_LAWS,
    INTERVAL_LAWS,
    MIN_FLOPS,
    PAPER_AVERAGE,
    SWEEP_LAWS,
    THRESHOLD,
    TPR,
    TWO_STAGE_LAWS,
)
from benchcast.studies.krajewski2025_tables import (
    Reproduction,
    _average_table,
    _direct_table,
    _has,
    _power_floor_table,
    _proxy_table,
    _with_mean,
    compare_methods,
    write_outputs,
)
from benchcast.studies.proxy import benchmark_average
from benchcast.utils.io import output_folder
from benchcast.utils.parallel import parallel_map


@dataclass(frozen=True)
class Job:
    """One independent unit of the study: a backtest, a sweep, or a backtest on a benchmark average."""

    key: tuple
    spec: FitSpec
    options: dict
    kind: str = "backtest"  # 'backtest', 'sweep' or 'average'
    average: tuple = ()  # the benchmark set of an 'average' job


def _run(table: pd.DataFrame, job: Job) -> BacktestResult | Sweep | str:
    """One job's result, or why it could not run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if job.kind == "sweep":
                return sweep(table, job.spec, n_jobs=1, progress=False, **job.options)
            if job.kind == "average":
                table = benchmark_average(table, list(job.average), name=job.spec.benchmark)
            return backtest(table, job.spec, **job.options)
    except BenchcastError as exc:
        return f"{'/'.join(map(str, job.key))}: {exc}"


def _spec(law: str, bench: str, metric: str) -> FitSpec:
    """A direct law's spec in the study: BNSL on the authors' points (:data:`BNSL_MARGIN`), others as the package's."""
    return FitSpec(law, bench, metric, margin=BNSL_MARGIN if law in (BNSL, CONSTRAINED_BNSL) else None)


def plan_jobs(
    table: pd.DataFrame,
    benchmarks=BENCHMARKS,
    thresholds=SWEEP_THRESHOLDS,
    n_boot: int = 0,
    interval: str = "extrapolation",
) -> list[Job]:
    """Every job of the study: direct, two-stage and N-D backtests, sweeps, pass@k and averages."""
    direct = {"threshold": THRESHOLD, "tpr": TPR, "min_flops": MIN_FLOPS}
    # intervals for the direct laws: bootstrapped inside the worker (no nested pools)
    with_intervals = {**direct, "uncertainty": Uncertainty(n_boot, interval=interval), "n_jobs": 1}
    jobs = []
    for bench, metric in benchmarks:
        for law in (*DIRECT_LAWS, "power_floor"):
            options = with_intervals if law in INTERVAL_LAWS else direct
            jobs.append(Job(("direct", law, bench, ""), _spec(law, bench, metric), options))
        # the benchmark's own log-likelihood as a proxy too, where the table has it
        proxies = ["dclm:loss", *([f"{bench}:loglikelihood"] if _has(table, bench, "loglikelihood") else [])]
        for law in TWO_STAGE_LAWS:
            for proxy in proxies:
                jobs.append(Job(("two_stage", law, bench, proxy), FitSpec(law, bench, metric, proxy=proxy), direct))
        nd = {"protocol": "nd", "threshold": THRESHOLD}
        jobs.append(Job(("nd", "nd", bench, ""), FitSpec("nd", bench, metric), nd))
        sweep_options = {"thresholds": tuple(thresholds), "tpr": TPR, "min_flops": MIN_FLOPS}
        for law in SWEEP_LAWS:
            jobs.append(Job(("sweep", law, bench, ""), _spec(law, bench, metric), sweep_options, kind="sweep"))
    if _has(table, "humaneval-py", "pass@k"):
        passk = {"protocol": "passk", "threshold": THRESHOLD, "tpr": TPR}
        spec = FitSpec("passk_compute", "humaneval-py", max_k=32)
        jobs.append(Job(("passk", "passk_compute", "humaneval-py", ""), spec, passk))
    for name, subset in AVERAGE_SETS.items():
        losses = (AVERAGE_LOSS, "lsq") if subset is PAPER_AVERAGE else (AVERAGE_LOSS,)
        for loss in losses:
            spec = FitSpec(
                "power",
                f"average ({name})",
                "score",
                q_rand=0.0,
                margin=0.0,
                loss=loss,
                huber_delta=AVERAGE_DELTA if loss == "huber" else None,
            )
            jobs.append(Job(("average", name, loss, ""), spec, direct, kind="average", average=subset))
    return jobs


def reproduce_krajewski2025(
    table: pd.DataFrame,
    out_dir: str | Path | None = None,
    *,
    n_jobs: int | None = None,
    progress: bool | None = None,
    benchmarks=BENCHMARKS,
    thresholds=SWEEP_THRESHOLDS,
    uncertainty: Uncertainty | None = None,
    backend: str | None = None,
    ray_address: str | None = None,
    figure_format: str = "png",
    dpi: int | None = None,
) -> Reproduction:
    """Run every protocol of the study (default: the paper's benchmarks, thresholds and intervals)."""
    from benchcast.plots.options import check_figure_options

    figure_format, dpi = check_figure_options(figure_format, dpi)  # before hours of work, not after
    unc = uncertainty or Uncertainty()
    n_boot, interval = unc.n_boot, unc.interval
    start = time.perf_counter()
    wanted = tuple(benchmarks)
    # a benchmark the file lacks is skipped and said so, not a failure of the whole study
    benchmarks = tuple((b, m) for b, m in wanted if _has(table, b, parse_metric(m)[0]))
    absent = [f"{b} ({m}): not in the data, skipped" for b, m in wanted if (b, m) not in benchmarks]
    if not benchmarks:
        raise BenchcastError(
            "none of the study's benchmarks is in the data: " + ", ".join(f"{b} ({m})" for b, m in wanted) + "."
        )
    jobs = plan_jobs(table, benchmarks, thresholds, n_boot, interval)
    outcomes = parallel_map(
        partial(_run, table),
        jobs,
        n_jobs=n_jobs,
        description="reproduction",
        progress=progress,
        backend=backend,
        ray_address=ray_address,
    )
    done = {job.key: out for job, out in zip(jobs, outcomes, strict=True) if isinstance(out, BacktestResult)}
    sweeps = {job.key: out for job, out in zip(jobs, outcomes, strict=True) if isinstance(out, Sweep)}
    failures = absent + [out for out in outcomes if isinstance(out, str)]
    if not done and not any(len(s.table) for s in sweeps.values()):
        # every protocol failed: a folder of empty tables would read as a study that ran
        reasons = "; ".join(failures[:5]) + ("; ..." if len(failures) > 5 else "")
        raise BenchcastError(
            f"no protocol of the study could run on this data ({len(jobs)} jobs, none produced a result; the "
            f"study needs its benchmarks at TPR {TPR:g} with runs above {THRESHOLD:.3g} FLOPs to forecast). "
            f"Reasons: {reasons}"
        )
    tables: dict[str, pd.DataFrame] = {"direct": _direct_table(done, benchmarks)}

    rows = []
    for (kind, law, bench, proxy), bt in done.items():
        if kind == "two_stage" or (kind == "direct" and law in DIRECT_LAWS):
            rows.append({"law": law, "proxy": proxy.replace(bench, "task") if proxy else "-", "benchmark": bench})
            rows[-1].update(errors(bt))
    per_bench = pd.DataFrame(rows)
    names = [b for b, _ in benchmarks]
    acc_norm = [b for b, _ in ACC_NORM if b in names]
    if not per_bench.empty:
        tables["two_stage_paper"] = compare_methods(per_bench, acc_norm, complete=True)
        tables["two_stage_all_benchmarks"] = compare_methods(per_bench, names, complete=True)
    tables["two_stage_per_benchmark"] = per_bench

    nd = [{"benchmark": b, **errors(bt)} for (kind, _, b, _), bt in done.items() if kind == "nd"]
    tables["nd"] = _with_mean(pd.DataFrame(nd))
    tables["passk_compute"] = pd.DataFrame(
        [{"benchmark": b, **errors(bt), **bt.fit.params} for (kind, _, b, _), bt in done.items() if kind == "passk"]
    )
    tables["power_floor"] = _power_floor_table(done, benchmarks)
    tables["average"] = _average_table(done)
    tables["proxy"] = _proxy_table(table, benchmarks)

    ordered = [sweeps[k] for k in sorted(sweeps, key=lambda k: (names.index(k[2]), SWEEP_LAWS.index(k[1])))]
    columns = ["threshold", "n_train", "n_test", "test_mae", "test_mre", "n_test_usable", "test_mre_usable", "success"]
    columns.insert(3, "n_refused")  # refused forecasts beside the errors (evaluation.refusals)
    frames = [s.table[columns].assign(law=s.law, benchmark=s.benchmark) for s in ordered if len(s.table)]
    tables["sweep"] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    tables["critical_thresholds"] = pd.DataFrame([s.summary_row() for s in ordered])
    skipped = [
        f"sweep {s.law}/{s.benchmark} at {r['threshold']:.3g}: {r['skipped']}" for s in ordered for r in s.skipped
    ]
    tables["skipped"] = pd.DataFrame({"skipped": failures + skipped})
    result = Reproduction(
        tables,
        done,
        sweeps,
        time.perf_counter() - start,
        benchmarks,
        failures=failures,
        out=out_dir,
        n_boot=n_boot,
        interval=interval if n_boot else None,
    )
    if out_dir is not None:
        with output_folder(out_dir) as folder:  # complete or absent: never a half-written study
            write_outputs(result, folder, figure_format, dpi)
        result.figures = [str(Path(out_dir) / Path(f).name) for f in result.figures]
    result.seconds = time.perf_counter() - start
    return result
