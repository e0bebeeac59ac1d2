"""The reproduction of Krajewski et al. 2025: the paper's benchmark sets, the K8 average and its
Huber fit, usable-point MRE, the five-benchmark comparison, and the CLI end to end."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

import benchcast as bc
from benchcast.evaluation.sweep import usable_errors
from benchcast.studies.krajewski2025 import (
    ACC_NORM,
    BNSL,
    CONSTRAINED_BNSL,
    PAPER_AVERAGE,
    compare_methods,
    plan_jobs,
)
from benchcast.studies.proxy import benchmark_average, proxy_diagnostic


def test_paper_sets_and_k8_loss(apple):
    assert [b for b, _ in ACC_NORM] == ["arc_easy", "arc_challenge", "sciq", "piqa", "hellaswag"]
    assert all(metric == "acc_norm" for _, metric in ACC_NORM)
    names = {b for b, _ in PAPER_AVERAGE}
    assert len(names) == 10 and not names & {"gsm8k_cot_llama", "lbpp"}
    assert {"winogrande", "webqs_1shot", "triviaqa_1shot", "lambada_openai", "humaneval-py"} <= names
    assert BNSL == "bnsl"  # the paper's unrestricted form keeps the name
    jobs = {job.key: job for job in plan_jobs(apple, [("arc_easy", "acc_norm")], [1e21], n_boot=0)}
    paper = jobs[("average", "paper 10", "huber", "")]
    assert paper.average == PAPER_AVERAGE and paper.kind == "average"
    assert paper.spec.law == "power" and paper.spec.loss == "huber" and paper.spec.huber_delta == 1e-3
    assert paper.options == {"threshold": 6e21, "tpr": 20.0, "min_flops": 3e18}
    assert jobs[("average", "paper 10", "lsq", "")].spec.loss == "lsq"  # a named extra
    assert ("direct", BNSL, "arc_easy", "") in jobs and ("direct", CONSTRAINED_BNSL, "arc_easy", "") in jobs
    # the reproduction's sweep is the one sweep: one job per law and benchmark, not one per threshold
    sweeps = [job for job in jobs.values() if job.kind == "sweep"]
    assert {job.key[1] for job in sweeps} == {"power", BNSL} and all(j.options["thresholds"] == (1e21,) for j in sweeps)


def _runs(rows):
    frame = pd.DataFrame(rows, columns=["run", "benchmark", "metric", "value"])
    # runs a..d of growing size at TPR 20, their FLOPs 6 N D (sizes physics allows: the table is validated)
    frame["params"] = 1e8 * frame["run"].map({"a": 1, "b": 2, "c": 3, "d": 4})
    frame["tokens"], frame["tpr"] = 20 * frame["params"], 20.0
    frame["flops"] = 6 * frame["params"] * frame["tokens"]
    return bc.validate(frame, "hand-made")


def test_benchmark_average_hand_made():
    table = _runs(
        [
            ("a", "winogrande", "acc", 0.60),  # Q' = (0.60 - 0.5) / 0.5 = 0.2
            ("a", "lambada_openai", "acc", 0.30),  # Q' = 0.3 (chance 0)
            ("b", "winogrande", "acc", 0.54),  # only 0.04 above chance: the run is dropped
            ("b", "lambada_openai", "acc", 0.50),
            ("c", "winogrande", "acc", 0.90),  # Q' = 0.8
            ("c", "lambada_openai", "acc", 0.70),  # Q' = 0.7
            ("d", "winogrande", "acc", 0.90),  # no lambada score: dropped
        ]
    )
    average = benchmark_average(table, [("winogrande", "acc"), ("lambada_openai", "acc")], name="avg")
    assert list(average["run"]) == ["a", "c"]
    assert average["value"].to_numpy() == pytest.approx([0.25, 0.75])
    assert set(average["benchmark"]) == {"avg"} and set(average["metric"]) == {"score"}


def test_a_proxy_on_two_runs_is_refused_in_its_row_not_a_perfect_fit():
    """Two runs fit a two-parameter link exactly: R^2 1 would be a wrong number, so the row says why there is none."""
    rows = [(run, "arc_easy", m, v) for run, v in (("a", 0.4), ("b", 0.5), ("c", 0.6)) for m in ("acc",)]
    rows += [("a", "arc_easy", "brier", 0.7), ("b", "arc_easy", "brier", 0.6)]  # the proxy on runs a and b only
    row = proxy_diagnostic(_runs(rows), "arc_easy", "acc", "arc_easy:brier")
    assert row["n"] == 2 and np.isnan(row["r2"]) and np.isnan(row["rmse"])
    assert "proxy_logistic: 2 point(s) cannot determine 2 free parameters" in row["refused"]
    rows.append(("c", "arc_easy", "brier", 0.5))  # three runs: a diagnostic, not refused
    row = proxy_diagnostic(_runs(rows), "arc_easy", "acc", "arc_easy:brier")
    assert row["n"] == 3 and row["refused"] == "" and np.isfinite(row["r2"])


def test_k8_huber_fit_is_robust_and_converges():
    # mean Q' following -log Q' = A C^-alpha exactly, but for one outlying run
    flops = np.geomspace(1e19, 6e21, 12)
    A, alpha = 900.0, 0.16
    value = np.exp(-A * flops**-alpha)
    value[5] = np.exp(-A * flops[5] ** -alpha * np.exp(0.5))  # log(-log Q') off by 0.5
    table = bc.validate(
        pd.DataFrame(
            {
                "run": [f"r{i}" for i in range(12)],
                "params": np.sqrt(flops / 6 / 20),
                "tokens": 20 * np.sqrt(flops / 6 / 20),
                "flops": flops,
                "tpr": 20.0,
                "benchmark": "avg",
                "metric": "score",
                "value": value,
            }
        ),
        "hand-made",
    )
    huber = bc.fit(table, "power", "avg", "score", q_rand=0.0, margin=0.0, loss="huber", huber_delta=1e-3)
    lsq = bc.fit(table, "power", "avg", "score", q_rand=0.0, margin=0.0)
    assert huber.settings["loss"] == "huber" and huber.diagnostics.converged
    assert "closed form" not in huber.diagnostics.message  # the engine's numerical path ran
    assert huber.params["alpha"] == pytest.approx(alpha, abs=2e-4)  # the outlier barely moves it
    assert huber.params["A"] == pytest.approx(A, rel=5e-3)
    assert abs(lsq.params["alpha"] - alpha) > 20 * abs(huber.params["alpha"] - alpha)


def test_usable_errors_hand_made():
    predictions = pd.DataFrame(
        {
            "true": [0.40, 0.50, 0.27, 0.60, 0.80, 0.70],
            "prediction": [0.44, 0.50, 0.37, 0.66, 0.80, np.nan],
            "side": ["train", "train", "test", "test", "test", "test"],
            "fitted": [True, True, False, False, False, False],
        }
    )
    bt = SimpleNamespace(
        predictions=predictions,
        benchmark="hand-made",  # margin 0.05
        fit=SimpleNamespace(spec=SimpleNamespace(q_rand=0.25)),
        metrics={"train_rmse": 0.0, "train_r2": 1.0},
    )
    e = usable_errors(bt)
    assert e["n_test"] == 3 and e["n_test_usable"] == 2  # 0.27 is within 0.05 of chance; nan is not scored
    assert e["test_mre"] == pytest.approx((0.10 / 0.27 + 0.06 / 0.60 + 0.0) / 3 * 100)
    assert e["test_mre_usable"] == pytest.approx((0.06 / 0.60 + 0.0) / 2 * 100)
    assert e["test_mae"] == pytest.approx((0.10 + 0.06) / 3)
    assert e["train_mre"] == pytest.approx((0.04 / 0.40) / 2 * 100) == e["train_mre_usable"]


def test_five_benchmark_comparison_uses_complete_methods_only():
    five = [b for b, _ in ACC_NORM]
    rows = []
    for i, bench in enumerate([*five, "winogrande"]):
        rows.append({"law": "power", "proxy": "-", "benchmark": bench, "test_mre": float(i + 1)})
        rows.append({"law": "bnsl", "proxy": "-", "benchmark": bench, "test_mre": 10.0 * (i + 1)})
        if bench != "piqa":  # this method failed on one of the five
            rows.append({"law": "two_stage_linear", "proxy": "task", "benchmark": bench, "test_mre": 100.0})
    per_bench = pd.DataFrame(rows)
    for column in ("test_mre_usable", "test_mae", "train_rmse", "train_r2", "n_test", "n_test_usable"):
        per_bench[column] = 1.0
    paper = compare_methods(per_bench, five, complete=True)
    assert list(paper["law"]) == ["power", "bnsl"]  # no row averages over four benchmarks
    assert paper["test_mre"].to_list() == pytest.approx([3.0, 30.0])  # mean of 1..5, winogrande excluded
    assert (paper["benchmarks"] == 5).all()
    partial = compare_methods(per_bench, five, complete=False)
    assert partial.set_index("law").loc["two_stage_linear", "benchmarks"] == 4


@pytest.mark.slow  # a reduced reproduction: ~35 s of CPU (2 min on a loaded machine)
def test_cli_reduced_reproduction(apple_path, tmp_path):
    out = tmp_path / "repro"
    args = ["reproduce", "krajewski2025", "--data", apple_path, "-b", "sciq", "--sweep-threshold", "1e21"]
    args += ["--sweep-threshold", "6e21", "--boot", "0", "-j", "1", "-o", out, "--json"]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    for name in ("direct", "two_stage_paper", "two_stage_all_benchmarks", "nd", "average", "sweep", "skipped"):
        assert (out / f"{name}.csv").exists(), name
    for figure in ("direct_laws.png", "two_stage_vs_direct.png", "sweep.png"):
        assert (out / figure).stat().st_size > 5000
    notes = json.loads((out / "README.json").read_text())
    assert "headline" in notes["tables"]["direct"] and "usable" in notes["protocol"]
    assert notes["figures"] and all((out / name).is_file() for name in notes["figures"])  # names in the folder
    assert [r["benchmark"] for r in summary["direct"]] == ["sciq", "average"]
    assert summary["direct"][0]["power_mre"] < 3.0 and summary["direct"][0]["power_n_test_usable"] == 9
    paper = {(r["law"], r["proxy"]): r for r in summary["two_stage_paper"]}
    assert {("power", "-"), ("bnsl", "-"), ("two_stage_linear", "dclm:loss")} <= set(paper)
    assert ("two_stage_logistic", "task:loglikelihood") in paper and paper[("bnsl", "-")]["benchmarks"] == 1
    first = summary["average"][0]
    assert first["set"] == "paper 10" and first["loss"] == "huber" and first["converged"]
    assert first["n_test"] == 9 and first["test_mre"] < 5.0
    assert {r["threshold"] for r in summary["sweep"]} == {1e21, 6e21}
    assert summary["passk_compute"][0]["train_mre_usable"] < summary["passk_compute"][0]["train_mre"]


@pytest.mark.slow
def test_reproduction_skips_benchmarks_the_data_lacks(apple):
    from benchcast.studies.krajewski2025 import reproduce_krajewski2025

    with pytest.raises(bc.BenchcastError, match="none of the study's benchmarks is in the data"):
        reproduce_krajewski2025(apple, benchmarks=[("made_up", "acc")], n_jobs=1, progress=False)
    small = apple[apple["benchmark"].isin(["sciq", "dclm"])]
    result = reproduce_krajewski2025(
        small,
        benchmarks=[("sciq", "acc_norm"), ("made_up", "acc")],
        thresholds=[6e21],
        uncertainty=bc.Uncertainty(n_boot=0),
        n_jobs=1,
        progress=False,
    )
    assert "made_up (acc): not in the data, skipped" in list(result.tables["skipped"]["skipped"])
    assert list(result.tables["direct"]["benchmark"])[0] == "sciq"


def test_reproduce_refuses_data_on_which_no_protocol_runs(tmp_path):
    """The paper's benchmarks at another TPR only: every job fails, so the command says why and exits 2
    instead of writing a folder of empty tables."""
    from benchcast.data.example import example_path

    ladder = pd.read_csv(example_path())
    ladder["tokens"] = ladder["params"] * 10
    ladder = ladder.drop(columns="flops")
    path = tmp_path / "tpr10.csv"
    ladder.to_csv(path, index=False)
    out = tmp_path / "repro"
    done = run_cli("reproduce", "krajewski2025", "--data", path, "--out", out, "--n-boot", "0", "-j", "1")
    assert done.returncode == 2, done.stderr
    assert "no protocol of the study could run" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()


# the chance levels the authors' code uses (SPEC §3: acc_norm defaults, acc 1/choices, 0 otherwise)
AUTHORS_Q_RAND = {"arc_easy": 0.291, "arc_challenge": 0.215, "sciq": 0.304, "piqa": 0.53, "hellaswag": 0.252}
AUTHORS_Q_RAND.update({"winogrande": 0.5})


def test_reproduction_fits_bnsl_on_the_authors_points(apple, apple_path):
    """BNSL's points per benchmark are the authors' (Q > Q_rand on every benchmark, LBPP's 26
    included), counted here from the raw file with pandas, not by the package."""
    from benchcast.studies.krajewski2025 import _run

    raw = pd.read_csv(apple_path, index_col=0)
    raw = raw[raw["tpr"] == 20]
    flops = 6 * (raw["tokens"] / raw["tpr"]) * raw["tokens"]
    raw = raw[(flops >= 3e18) & (flops <= 6e21)]
    planned = plan_jobs(apple, n_boot=0)
    bnsl_jobs = [j for j in planned if j.spec.law in (BNSL, CONSTRAINED_BNSL)]
    assert {j.key[0] for j in bnsl_jobs} == {"direct", "sweep"} and len(bnsl_jobs) == 12 * 3
    assert all(j.spec.margin == 0.0 for j in bnsl_jobs)  # both forms, direct and sweep: the authors' filter
    jobs = [j for j in planned if j.key[:2] == ("direct", BNSL)]
    points = {}
    for job in jobs:
        bench, metric = job.spec.benchmark, job.spec.metric
        rows = raw[(raw["benchmark"] == bench) & (raw["metric_type"] == metric)]
        expected = int((rows["score"] > AUTHORS_Q_RAND.get(bench, 0.0)).sum())
        points[bench] = (_run(apple, job).fit.diagnostics.n_used, expected)
    assert points["lbpp"] == (26, 26)
    assert all(ours == theirs for ours, theirs in points.values()), points
