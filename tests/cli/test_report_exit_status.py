"""`report` over several benchmarks, some not forecast: the page is written with the others, and the exit status is
forecast's and plan's (3), with a line naming those left out."""

import json

from conftest import run_cli as run


def test_a_report_with_a_benchmark_not_forecast_writes_the_page_and_exits_3(apple_path, tmp_path):
    out = tmp_path / "r.html"
    # one benchmark at two metrics, one refused: the line names the metric left out, not the benchmark alone
    args = ["report", apple_path, "-b", "arc_easy:acc_norm", "-b", "arc_easy:brier", "-C", "1e23", "--tpr", "20"]
    proc = run(*args, "--n-boot", "10", "-j", "1", "-o", out, "--json")
    assert proc.returncode == 3, proc.stderr
    summary = json.loads(proc.stdout)
    assert [(f["benchmark"], f["metric"]) for f in summary["not_forecast"]] == [("arc_easy", "brier")] and out.exists()
    message = " ".join(proc.stderr.split())
    assert "1 of 2 benchmarks not forecast (arc_easy:brier;" in message and "exit status 3" in message
    assert "Not forecast" in out.read_text()
