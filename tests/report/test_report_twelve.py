"""The Apple data's twelve benchmarks in one ``benchcast report`` page. Its own module (no module fixture): under
``pytest -n 2`` the suite's longest test is then a unit of its own, started first, not queued behind the rest of
test_report.py's module-fixture unit."""

from __future__ import annotations

import time

import pytest

from benchcast import Uncertainty
from benchcast.report import build_report, parse_targets


@pytest.mark.slow
def test_twelve_benchmark_report(apple, apple_path, tmp_path, capsys):
    """The Apple data's 12 benchmarks at 1e23 FLOPs, laws chosen by backtest: a page under 5 MB. Ten replicates per
    interval: the page's size and its twelve sections do not depend on their count (the replicates' arithmetic is
    tested on one benchmark in test_report.py), and 50 made this the suite's longest test."""
    benchmarks = [
        "arc_easy:acc_norm",
        "arc_challenge:acc_norm",
        "sciq:acc_norm",
        "piqa:acc_norm",
        "hellaswag:acc_norm",
        "winogrande:acc",
        "webqs_1shot:exact_match",
        "triviaqa_1shot:exact_match",
        "lambada_openai:acc",
        "humaneval-py:pass@1",
        "gsm8k_cot_llama:exact_match",
        "lbpp:pass@1",
    ]
    out = tmp_path / "report12.html"
    start = time.monotonic()
    summary = build_report(
        apple,
        parse_targets(benchmarks, None),
        [1e23],
        out=out,
        tpr=20,
        data=apple_path,
        n_jobs=None,
        uncertainty=Uncertainty(n_boot=10),
    )
    seconds = time.monotonic() - start
    assert len(summary["benchmarks"]) == 12
    assert summary["bytes"] < 5_000_000
    with capsys.disabled():
        print(f"\n12-benchmark report: {summary['bytes']} bytes, {seconds:.0f} s")
