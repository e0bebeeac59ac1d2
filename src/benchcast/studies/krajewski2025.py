"""Reproduction of the empirical study of Krajewski et al. 2025 on the Apple downstream data.

Every fit is an ordinary benchcast backtest (the threshold sweep is :func:`backtest.sweep`);
the independent jobs run on a process pool or, with ``backend="ray"``, as Ray tasks. Choices
where the paper's protocol leaves room are stated in the output's ``protocol`` entry.

Every table reports the held-out MRE over all points next to the MRE over *usable* points
(Q > Q_rand + margin, the K1 filter of SPEC §3.1: margin 0.05, LBPP 0.02), where a relative
error means something; :data:`TABLES` says which of the two each table's headline uses.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pandas as pd

from benchcast.data.table import parse_metric
from benchcast.errors import BenchcastError
from benchcast.evaluation.backtest import BacktestResult, backtest
from benchcast.evaluation.sweep import (
    CRITICAL_DEFINITION,
    SUCCESS_DEFINITION,
    SUCCESS_MRE,
    SWEEP_THRESHOLDS,
    Sweep,
    sweep,
)
from benchcast.evaluation.sweep import usable_errors as errors
from benchcast.fitting.metrics import USABLE
from benchcast.fitting.spec import FitSpec
from benchcast.studies.proxy import benchmark_average, proxy_diagnostic
from benchcast.utils.display import ResultView
from benchcast.utils.io import atomic_write_text, output_folder
from benchcast.utils.jsonable import jsonable
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
ACC_NORM = BENCHMARKS[:5]  # the paper's two-stage versus direct comparison (its Table 4)
GENERAL = BENCHMARKS[:7]
# K8: the paper's average is over every benchmark but GSM8K and LBPP
PAPER_AVERAGE = tuple(b for b in BENCHMARKS if b[0] not in ("gsm8k_cot_llama", "lbpp"))
AVERAGE_SETS = {"paper 10": PAPER_AVERAGE, "all 12": BENCHMARKS, "general 7": GENERAL}
AVERAGE_LOSS, AVERAGE_DELTA = "huber", 1e-3  # K8 is fitted like K2: L-BFGS-B on the Huber loss

THRESHOLD, MIN_FLOPS, TPR = 6e21, 3e18, 20.0
BNSL = "bnsl"  # the paper's unrestricted BNSL (Table 3)
# The constrained BNSL variant (asymptote <= 1, non-decreasing), reported beside the paper's.
CONSTRAINED_BNSL = "bnsl_monotone"
DIRECT_LAWS = tuple(dict.fromkeys(("power", BNSL, CONSTRAINED_BNSL)))
INTERVAL_LAWS = DIRECT_LAWS
SWEEP_LAWS = ("power", BNSL)
TWO_STAGE_LAWS = ("two_stage_linear", "two_stage_logistic")
DEFAULT_BOOT = 100  # replicates per direct-law interval
CORPUS_PROXIES = ("dclm:loss", "c4:loss", "fineweb:loss")

PROTOCOL = {
    "direct": "TPR 20; fit 3e18 <= C <= 6e21 with each law's point filter; test every TPR-20 run with C > 6e21",
    "bnsl": f"{BNSL!r} is the paper's unrestricted BNSL; {CONSTRAINED_BNSL!r} the constrained variant",
    "two_stage": "as direct; proxies dclm:loss and the task's own -loglikelihood (where the task has one)",
    "nd": "protocol 2: all TPRs; test C > 6e21 or TPR 160; fit the rest (no lower compute bound)",
    "passk_compute": "protocol 3 on humaneval-py TPR-20 runs: fit C < 6e21 and k <= 32, test the rest",
    "average": (
        "K8: mean Q' over a benchmark set per run, runs where every benchmark is >= its margin above chance; "
        "form of K1 fitted with L-BFGS-B on the Huber loss (delta 1e-3) in K1's space log(-log Q'); "
        "TPR 20, fit 3e18 <= C <= 6e21, test C > 6e21. The paper's set: the ten benchmarks other than "
        "GSM8K and LBPP; the other sets and the least-squares fit are named extras"
    ),
    "proxy": "K7: logistic link from proxy to score over every run (all TPRs)",
    "sweep": "protocol 4: thresholds 6e19..5e22 (13, log grid), TPR 20, C >= 3e18",
    "success": SUCCESS_DEFINITION.format(success_mre=SUCCESS_MRE),
    "critical_threshold": CRITICAL_DEFINITION,
    "usable": USABLE,
}
HEADLINE_ALL = "headline: test_mre, the MRE over every held-out point (SPEC §5); test_mre_usable beside it"
TABLES = {
    "direct": f"Direct laws per benchmark (held-out MAE, MRE, interval coverage); {HEADLINE_ALL}",
    "two_stage_paper": (
        "The paper's Table 4: direct laws (power, BNSL) versus two-stage baselines, each averaged over the five "
        f"acc_norm benchmarks (ARC-E, ARC-C, SciQ, PIQA, HellaSwag); {HEADLINE_ALL}"
    ),
    "two_stage_all_benchmarks": (
        "Wider comparison: every method that ran on all benchmarks of this reproduction, averaged over all of "
        f"them (the task-loglikelihood proxy exists only where the task has a log-likelihood); {HEADLINE_ALL}"
    ),
    "two_stage_per_benchmark": f"Every direct and two-stage backtest, one row per benchmark; {HEADLINE_ALL}",
    "nd": f"nd (K4), protocol 2 (test: C > 6e21 or TPR 160); {HEADLINE_ALL}",
    "passk_compute": f"passk_compute (K5) on HumanEval, protocol 3; {HEADLINE_ALL}",
    "power_floor": f"power_floor (K2): fitted ceiling and held-out error; {HEADLINE_ALL}",
    "average": (
        "Benchmark average (K8): first row the paper's set (10 benchmarks, Huber loss); the rest named extras; "
        f"{HEADLINE_ALL}"
    ),
    "proxy": "Proxy diagnostics (K7): logistic link proxy -> score, R² and RMSE over every run",
    "sweep": (
        "Threshold sweep (protocol 4), one row per threshold with held-out runs; "
        f"success uses test_mre < {SUCCESS_MRE:g} %"
    ),
    "critical_thresholds": "Critical threshold per law and benchmark (see protocol: success, critical_threshold)",
    "skipped": "Jobs and sweep thresholds that could not run, with the reason",
}


@dataclass(frozen=True)
class Job:
    """One independent unit of the study: a backtest, a sweep, or a backtest on a benchmark average."""

    key: tuple
    spec: FitSpec
    options: dict
    kind: str = "backtest"  # 'backtest', 'sweep' or 'average'
    average: tuple = ()  # the benchmark set of an 'average' job


@dataclass
class Reproduction(ResultView):
    """The study's tables, the backtests and sweeps behind them, and where its outputs went.

    Parameters
    ----------
    tables : dict[str, pandas.DataFrame]
        Every table of the study by name (:data:`TABLES` says what each one holds).
    backtests : dict[tuple, Backtest]
        The backtests by job key ``(kind, law, benchmark, proxy)``.
    sweeps : dict[tuple, Sweep]
        The threshold sweeps by job key.
    seconds : float
        Wall time of the whole study.
    benchmarks : tuple
        The (benchmark, metric) pairs analysed.
    figures : list of str
        Paths of the figures written (empty without an output folder).
    failures : list of str
        Jobs that could not run, and benchmarks the data lacks, each with its reason.
    """

    tables: dict[str, pd.DataFrame]
    backtests: dict[tuple, BacktestResult]
    sweeps: dict[tuple, Sweep]
    seconds: float
    benchmarks: tuple = BENCHMARKS
    figures: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The protocol, what each table holds, the wall time, the figures and every table as records
        (what ``reproduce --json`` prints)."""
        return jsonable(
            {
                "protocol": PROTOCOL,
                "tables_explained": {name: TABLES.get(name, "") for name in self.tables},
                "seconds": self.seconds,
                "figures": self.figures,
                **{name: frame.to_dict("records") for name, frame in self.tables.items()},
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """The headline table: the direct laws per benchmark (``tables['direct']``)."""
        return self.tables.get("direct", pd.DataFrame())

    @property
    def title(self) -> str:
        return f"Krajewski et al. 2025 reproduction: {TABLES['direct']}"

    @property
    def notes(self) -> list[str]:
        """The other tables by name, the skipped jobs and the wall time."""
        others = [name for name in self.tables if name != "direct"]
        notes = [f"other tables (in .tables): {', '.join(others)}"]
        if self.failures:
            notes.append(f"{len(self.failures)} job(s) could not run: " + "; ".join(self.failures))
        return [*notes, f"wall time {self.seconds:.1f} s"]


def _run(table: pd.DataFrame, job: Job) -> BacktestResult | Sweep | str:
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


def _has(table: pd.DataFrame, benchmark: str, metric: str) -> bool:
    return bool(((table["benchmark"] == benchmark) & (table["metric"] == metric)).any())


def task_proxy(table: pd.DataFrame, benchmark: str) -> str | None:
    return f"{benchmark}:loglikelihood" if _has(table, benchmark, "loglikelihood") else None


def plan_jobs(table: pd.DataFrame, benchmarks=BENCHMARKS, thresholds=SWEEP_THRESHOLDS, n_boot: int = 0) -> list[Job]:
    direct = {"threshold": THRESHOLD, "tpr": TPR, "min_flops": MIN_FLOPS}
    # intervals for the direct laws: bootstrapped inside the worker (no nested pools)
    with_intervals = {**direct, "n_boot": n_boot, "n_jobs": 1}
    jobs = []
    for bench, metric in benchmarks:
        for law in (*DIRECT_LAWS, "power_floor"):
            options = with_intervals if law in INTERVAL_LAWS else direct
            jobs.append(Job(("direct", law, bench, ""), FitSpec(law, bench, metric), options))
        proxies = ["dclm:loss", *filter(None, [task_proxy(table, bench)])]
        for law in TWO_STAGE_LAWS:
            for proxy in proxies:
                jobs.append(Job(("two_stage", law, bench, proxy), FitSpec(law, bench, metric, proxy=proxy), direct))
        jobs.append(
            Job(("nd", "nd", bench, ""), FitSpec("nd", bench, metric), {"protocol": "nd", "threshold": THRESHOLD})
        )
        sweep_options = {"thresholds": tuple(thresholds), "tpr": TPR, "min_flops": MIN_FLOPS}
        for law in SWEEP_LAWS:
            jobs.append(Job(("sweep", law, bench, ""), FitSpec(law, bench, metric), sweep_options, kind="sweep"))
    if _has(table, "humaneval-py", "pass@k"):
        jobs.append(
            Job(
                ("passk", "passk_compute", "humaneval-py", ""),
                FitSpec("passk_compute", "humaneval-py", max_k=32),
                {"protocol": "passk", "threshold": THRESHOLD, "tpr": TPR},
            )
        )
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


def _with_mean(frame: pd.DataFrame, label_column: str = "benchmark") -> pd.DataFrame:
    if frame.empty:
        return frame
    mean = frame.select_dtypes("number").mean().to_dict()
    return pd.concat([frame, pd.DataFrame([{label_column: "average", **mean}])], ignore_index=True)


COMPARED = ["test_mre", "test_mre_usable", "test_mae", "train_rmse", "train_r2", "n_test", "n_test_usable"]


def compare_methods(per_bench: pd.DataFrame, benchmarks: list[str], *, complete: bool) -> pd.DataFrame:
    """Each method's errors averaged over ``benchmarks``; with ``complete`` only methods that ran
    on every one of them (so no row mixes averages over different sets)."""
    sub = per_bench[per_bench["benchmark"].isin(benchmarks)]
    rows = []
    for (law, proxy), group in sub.groupby(["law", "proxy"], sort=False):
        if complete and set(group["benchmark"]) != set(benchmarks):
            continue
        rows.append(
            {
                "law": law,
                "proxy": proxy,
                **group[COMPARED].mean().to_dict(),
                "benchmarks": len(group),
                "benchmark_names": " ".join(group["benchmark"]),
            }
        )
    return pd.DataFrame(rows)


def _direct_table(done: dict, benchmarks) -> pd.DataFrame:
    rows = []
    for bench, metric in benchmarks:
        row = {"benchmark": bench, "metric": metric}
        for law in DIRECT_LAWS:
            bt = done.get(("direct", law, bench, ""))
            if bt is None:
                continue
            e = errors(bt)
            row[f"{law}_mae"], row[f"{law}_mre"] = e["test_mae"], e["test_mre"]
            row[f"{law}_mre_usable"], row[f"{law}_n_test_usable"] = e["test_mre_usable"], e["n_test_usable"]
            for level in (50, 90):
                if f"coverage{level}" in bt.metrics:
                    row[f"{law}_coverage{level}"] = bt.metrics[f"coverage{level}"]
            if bt.fit.law_object.search.multimodal:  # a global search: how many points and the loss it reached
                row[f"{law}_points"] = bt.fit.diagnostics.n_used
                row[f"{law}_huber_loss"] = bt.fit.diagnostics.loss
        rows.append(row)
    return _with_mean(pd.DataFrame(rows))


def _power_floor_table(done: dict, benchmarks) -> pd.DataFrame:
    rows = []
    for bench, _ in benchmarks:
        bt = done.get(("direct", "power_floor", bench, ""))
        if bt is None:
            continue
        q_max, meaning = bt.fit.fitted.limit()
        q_rand = bt.fit.spec.q_rand
        rows.append(
            {
                "benchmark": bench,
                "q_max": q_max,
                "q_max_normalised": (q_max - q_rand) / (1 - q_rand),
                "limit": meaning,
                **errors(bt),
                **{key: v for key, v in bt.metrics.items() if key in ("coverage50", "coverage90")},
            }
        )
    return _with_mean(pd.DataFrame(rows))


def _average_table(done: dict) -> pd.DataFrame:
    rows = []
    for name, subset in AVERAGE_SETS.items():
        for loss in (AVERAGE_LOSS, "lsq"):
            bt = done.get(("average", name, loss, ""))
            if bt is None:
                continue
            d = bt.fit.diagnostics
            rows.append(
                {
                    "set": name,
                    "loss": loss,
                    "paper": subset is PAPER_AVERAGE and loss == AVERAGE_LOSS,
                    "runs_fitted": int(bt.predictions["fitted"].sum()),
                    **errors(bt),
                    **bt.fit.params,
                    "converged": d.converged,
                    "optimiser": d.message,
                    "benchmark_names": " ".join(b for b, _ in subset),
                }
            )
    return pd.DataFrame(rows)


def _proxy_table(table: pd.DataFrame, benchmarks) -> pd.DataFrame:
    rows = []
    for bench, metric in benchmarks:
        candidates = [f"{bench}:loglikelihood", f"{bench}:brier", *CORPUS_PROXIES]
        if metric == "acc_norm":
            candidates.append(f"{bench}:acc")
        for proxy in candidates:
            pb, _, pm = proxy.partition(":")
            if _has(table, pb, pm):
                rows.append(proxy_diagnostic(table, bench, metric, proxy))
    return pd.DataFrame(rows)


def reproduce_krajewski2025(
    table: pd.DataFrame,
    out_dir: str | Path | None = None,
    *,
    n_jobs: int | None = None,
    progress: bool | None = None,
    benchmarks=BENCHMARKS,
    thresholds=SWEEP_THRESHOLDS,
    n_boot: int = DEFAULT_BOOT,
    backend: str | None = None,
    ray_address: str | None = None,
) -> Reproduction:
    """Run every protocol of the study; ``benchmarks`` and ``thresholds`` default to the paper's.

    ``benchmarks`` selects the per-benchmark analyses; the benchmark averages (K8) always use
    their own named sets. ``n_boot`` bootstrap replicates give the direct laws 50 % and 90 %
    prediction intervals and their held-out coverage (0 turns intervals off). ``backend`` and
    ``ray_address`` choose where the independent jobs run (see :func:`parallel_map`).
    """
    start = time.perf_counter()
    wanted = tuple(benchmarks)
    # a benchmark the file lacks is skipped and said so, not a failure of the whole study
    benchmarks = tuple((b, m) for b, m in wanted if _has(table, b, parse_metric(m)[0]))
    absent = [f"{b} ({m}): not in the data, skipped" for b, m in wanted if (b, m) not in benchmarks]
    if not benchmarks:
        raise BenchcastError(
            "none of the study's benchmarks is in the data: " + ", ".join(f"{b} ({m})" for b, m in wanted) + "."
        )
    jobs = plan_jobs(table, benchmarks, thresholds, n_boot)
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

    tables["nd"] = _with_mean(
        pd.DataFrame([{"benchmark": b, **errors(bt)} for (kind, _, b, _), bt in done.items() if kind == "nd"])
    )
    tables["passk_compute"] = pd.DataFrame(
        [{"benchmark": b, **errors(bt), **bt.fit.params} for (kind, _, b, _), bt in done.items() if kind == "passk"]
    )
    tables["power_floor"] = _power_floor_table(done, benchmarks)
    tables["average"] = _average_table(done)
    tables["proxy"] = _proxy_table(table, benchmarks)

    ordered = [sweeps[k] for k in sorted(sweeps, key=lambda k: (names.index(k[2]), SWEEP_LAWS.index(k[1])))]
    columns = ["threshold", "n_train", "n_test", "test_mae", "test_mre", "n_test_usable", "test_mre_usable", "success"]
    frames = [s.table[columns].assign(law=s.law, benchmark=s.benchmark) for s in ordered if len(s.table)]
    tables["sweep"] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    tables["critical_thresholds"] = pd.DataFrame([s.summary() for s in ordered])
    skipped = [
        f"sweep {s.law}/{s.benchmark} at {r['threshold']:.3g}: {r['skipped']}" for s in ordered for r in s.skipped
    ]
    tables["skipped"] = pd.DataFrame({"skipped": failures + skipped})
    result = Reproduction(tables, done, sweeps, time.perf_counter() - start, benchmarks, failures=failures)
    if out_dir is not None:
        with output_folder(out_dir) as folder:  # complete or absent: never a half-written study
            write_outputs(result, folder)
        result.figures = [str(Path(out_dir) / Path(f).name) for f in result.figures]
    result.seconds = time.perf_counter() - start
    return result


def write_outputs(result: Reproduction, out_dir: Path) -> None:
    from benchcast.plots.figures import plot_reproduction_curves, plot_sweep

    for name, frame in result.tables.items():
        atomic_write_text(out_dir / f"{name}.csv", frame.to_csv(index=False))
    figures = [
        plot_reproduction_curves(
            result.backtests,
            [("direct", law) for law in DIRECT_LAWS],
            out_dir / "direct_laws.png",
            result.benchmarks,
            THRESHOLD,
        ),
        plot_reproduction_curves(
            result.backtests,
            [("direct", "power"), *(("two_stage", law) for law in TWO_STAGE_LAWS)],
            out_dir / "two_stage_vs_direct.png",
            result.benchmarks,
            THRESHOLD,
            proxy="dclm:loss",
        ),
    ]
    if not result.tables["sweep"].empty:
        figures.append(
            plot_sweep(
                result.tables["sweep"], out_dir / "sweep.png", result.tables["critical_thresholds"].to_dict("records")
            )
        )
    result.figures = [str(f) for f in figures]
    notes = {"protocol": PROTOCOL, "tables": {name: TABLES.get(name, "") for name in result.tables}}
    atomic_write_text(out_dir / "README.json", json.dumps(jsonable({**notes, "figures": result.figures}), indent=2))
