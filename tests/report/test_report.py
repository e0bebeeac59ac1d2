"""``benchcast report``: the page's content, its self-containment, and a real browser rendering it."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import shutil
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from benchcast import Uncertainty
from benchcast.report import build_report, parse_targets
from benchcast.report.analysis import analyse_benchmark, profile_summary
from benchcast.report.outputs import BENCH_COLUMNS, build_from_outputs
from benchcast.utils import memo

REPO = Path(__file__).resolve().parents[2]
ARTIFACT = REPO / "benchcast-out" / "report-screenshot.png"
BROWSERS = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe):
    no websocket client, no network, and it sees console messages and exceptions as events."""

    def __init__(self, executable: str, profile: Path):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire():  # the child reads commands on fd 3 and writes replies on fd 4
            # move both ends above 4 first: the pipe may already sit on 3 or 4, and dup2 onto the
            # same number would keep its close-on-exec flag
            read_end = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.proc = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                "--no-first-run",
                "--no-default-browser-check",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from chromium")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._to_child)
        os.close(self._from_child)


def render(page: Path, screenshot: Path, profile: Path, width: int = 1280, height: int = 1800) -> dict:
    """Load ``page`` in headless Chromium; return console errors, exceptions, network requests,
    the decoded size of every image, and the rendered text; write a screenshot."""
    executable = browser()
    assert executable is not None
    chrome = Chromium(executable, profile)
    try:
        target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            chrome.send(f"{domain}.enable", session=session)
        chrome.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        chrome.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        chrome.wait_for("Page.loadEventFired")
        images = chrome.send(
            "Runtime.evaluate",
            {
                "expression": "Promise.all(Array.from(document.images).map(i => i.decode().then("
                "() => [i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width], "
                "e => [0, 0, String(e)])))",
                "awaitPromise": True,
                "returnByValue": True,
            },
            session=session,
        )["result"]["value"]
        text = chrome.send(
            "Runtime.evaluate", {"expression": "document.body.innerText", "returnByValue": True}, session=session
        )["result"]["value"]
        layout = chrome.send("Runtime.evaluate", {"expression": LAYOUT_JS, "returnByValue": True}, session=session)
        sort_buttons = chrome.send(
            "Runtime.evaluate",
            {"expression": "document.querySelectorAll('table.sortable th button').length", "returnByValue": True},
            session=session,
        )["result"]["value"]
        shot = chrome.send("Page.captureScreenshot", {"format": "png"}, session=session)
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
    finally:
        chrome.close()
    events = chrome.events
    console_errors = [
        e["params"] for e in events if e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error"
    ]
    console_errors += [e["params"] for e in events if e.get("method") == "Runtime.exceptionThrown"]
    console_errors += [
        e["params"]["entry"]
        for e in events
        if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"
    ]
    requests = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    return {
        "errors": console_errors,
        "requests": requests,
        "images": images,
        "text": text,
        "sort_buttons": sort_buttons,
        "layout": layout["result"]["value"],
    }


# What a reader would see cut off or collide: tables wider than their box (a scroll bar hides columns), images that
# intersect one another or run past the page's text column
LAYOUT_JS = """(() => {
  const body = document.querySelector('main').getBoundingClientRect();
  const wide = Array.from(document.querySelectorAll('div.scroll, table')).filter(
    e => e.scrollWidth > e.clientWidth + 1).map(e => (e.querySelector('caption') || e).textContent.slice(0, 60));
  const boxes = Array.from(document.images).map(i => i.getBoundingClientRect());
  const hit = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b, j) => {
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) hit.push([i, i + 1 + j]);
  }));
  const outside = boxes.filter(b => b.left < body.left - 1 || b.right > body.right + 1).length;
  return {wide: wide, intersecting: hit, outside: outside};
})()"""


@pytest.fixture(scope="module")
def two_benchmark_page(apple, apple_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    summary = build_report(
        apple,
        parse_targets(["arc_easy", "humaneval-py:pass@1"], ["acc_norm"]),
        [1e22, 1e23],
        out=out,
        law="power",
        tpr=20,
        data=apple_path,
        command=["benchcast", "report", "(test)"],
        uncertainty=Uncertainty(n_boot=40),
    )
    return out, summary


def test_page_is_self_contained_and_complete(two_benchmark_page):
    out, summary = two_benchmark_page
    document = out.read_text()
    # nothing fetched from anywhere: no external URL in any src/href, and a CSP that forbids it
    assert not re.search(r'(src|href)="(?!data:|#)', document)
    assert "default-src 'none'" in document
    assert summary["bytes"] == out.stat().st_size < 1_500_000
    arc, humaneval = summary["benchmarks"]
    assert [f["flops"] for f in arc["forecasts"]] == [1e22, 1e23]
    for bench in (arc, humaneval):
        for f in bench["forecasts"]:
            # nested intervals around the point forecast, all in [0, 1]
            assert 0 <= f["lower90"] <= f["lower50"] <= f["prediction"] <= f["upper50"] <= f["upper90"] <= 1
    # the forecast beyond the largest fitted run (3.8e22 FLOPs at TPR 20) counts its decades
    assert arc["forecasts"][1]["decades"] == pytest.approx(np.log10(1e23 / 3.8264e22), abs=0.01)
    for text in ("Summary", "Provenance", "sha256:", "40 bootstrap replicates", "<h3>pass@k</h3>", "dropped: "):
        assert text in document
    assert document.count("<img ") == 3  # arc_easy, humaneval-py, humaneval-py's pass@k panels


def test_forecast_intervals_match_the_bootstrap(apple):
    """The page's numbers are those of the forecast module: same fit, same seed, same replicates."""
    import benchcast as bc
    from benchcast.forecasting.answers import forecast

    report = analyse_benchmark(
        apple, "arc_easy", "acc_norm", target_flops=[1e23], law="power", tpr=20, uncertainty=Uncertainty(30)
    )
    result = bc.fit(apple, "power", "arc_easy", "acc_norm", tpr=20)
    expected = forecast(
        result, n_jobs=1, flops=np.array([1e23]), uncertainty=Uncertainty(n_boot=30, seed=0, levels=0.9)
    )
    row = report.forecast.records()[0]
    assert row["prediction"] == pytest.approx(float(expected.prediction[0]), rel=1e-12)
    assert row["lower90"] == pytest.approx(float(expected.lower[0]), rel=1e-9)
    assert row["upper90"] == pytest.approx(float(expected.upper[0]), rel=1e-9)
    # the profile is scored by hand: coverage is the share of held-out runs inside their interval
    summary = profile_summary(report.profile)
    profile = report.profile
    inside = ((profile["true"] >= profile["lower90"]) & (profile["true"] <= profile["upper90"])).mean()
    assert np.average(summary["coverage90"], weights=summary["n"]) == pytest.approx(inside)
    assert (report.runs["status"] == "fitted").sum() == report.fit.diagnostics.n_used


def test_page_in_a_real_browser(two_benchmark_page, tmp_path, capsys):
    if browser() is None:
        pytest.skip(
            "no Chromium found (looked for " + ", ".join(BROWSERS) + "); install Debian's chromium "
            "(apt-get install chromium), as .ci/run does"
        )
    out, _ = two_benchmark_page
    screenshot = tmp_path / "report-screenshot.png"
    for width in (1024, 1400):  # nothing cut off or overlapping at common widths (#50 item 6)
        layout = render(out, tmp_path / f"shot-{width}.png", tmp_path / f"profile-{width}", width=width)["layout"]
        assert layout == {"wide": [], "intersecting": [], "outside": 0}, width
    seen = render(out, screenshot, tmp_path / "profile")
    assert seen["errors"] == []
    assert [url for url in seen["requests"] if not url.startswith(("file:", "data:"))] == []
    assert len(seen["images"]) == 3
    for width, height, shown in seen["images"]:
        assert width > 100 and height > 100 and shown > 100
    assert "arc_easy" in seen["text"] and "Provenance" in seen["text"]
    assert seen["sort_buttons"] > 0  # the inline script ran
    assert screenshot.stat().st_size > 20_000
    ARTIFACT.parent.mkdir(exist_ok=True)
    shutil.copyfile(screenshot, ARTIFACT)
    with capsys.disabled():  # shown in the test output even without -s
        print(f"\nreport screenshot: {screenshot} (copied to {ARTIFACT}); page {out} ({out.stat().st_size} bytes)")


def test_report_cli_writes_the_page_and_refuses_bad_input(apple_path, tmp_path):
    out = tmp_path / "r.html"
    args = ["report", apple_path, "-b", "gsm8k_cot_llama:exact_match"]
    proc = run_cli(
        *args, "--target-flops", "1e23", "--law", "power", "--tpr", "20", "--n-boot", "20", "--out", out, "--json"
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["out"] == str(out) and out.stat().st_size == summary["bytes"]
    # progress on a piped stderr: a line per few seconds of a step over 2 s, none for a short one
    assert "0/1" not in proc.stderr or "report: benchmarks: 1/1 done" in proc.stderr
    assert "--target-flops 1e23" in out.read_text()  # the command line is in the provenance
    missing = run_cli(*args, "--out", tmp_path / "x.html")
    assert missing.returncode == 2 and "--target-flops" in missing.stderr
    assert not (tmp_path / "x.html").exists()


def test_report_from_a_folder_of_outputs(tmp_path):
    """A hand-made bench CSV (two strategies, two cutoffs) and a fit artifact become one page."""
    folder = tmp_path / "outputs"
    folder.mkdir()
    rows = []
    for strategy, mre_value, cov in (("power", 4.0, 0.5), ("ensemble", 2.0, 0.9)):
        for cutoff, decades in ((1e20, 2.0), (1e21, 1.0)):
            rows.append(
                dict(
                    zip(
                        BENCH_COLUMNS,
                        [
                            "dclm",
                            "arc_easy",
                            "acc_norm",
                            strategy,
                            cutoff,
                            10,
                            0.02,
                            mre_value,
                            mre_value,
                            cov,
                            cov,
                            0.1,
                            decades,
                        ],
                        strict=True,
                    )
                )
            )
    pd.DataFrame(rows).to_csv(folder / "bench.csv", index=False)
    (folder / "notes.json").write_text('{"unrelated": true}')
    out = tmp_path / "page.html"
    summary = build_from_outputs(folder, out, command=["benchcast", "report", "--from", str(folder)])
    assert summary["files"] == [{"kind": "bench", "file": "bench.csv"}]
    document = out.read_text()
    assert "Forecasting benchmark" in document and document.count("<img ") == 0  # no predictions: no figure
    # strategies sorted by usable MRE: ensemble (2 %) before power (4 %)
    assert document.index('<td class="text">ensemble</td>') < document.index('<td class="text">power</td>')
    # with bench --out's predictions beside it, the figure is drawn from them (as bench draws it), once:
    # bench's own figure file in the folder is not embedded a second time
    points = pd.DataFrame(
        {
            "strategy": ["power", "ensemble"] * 2,
            "benchmark": "arc_easy",
            "decades": [0.2, 0.2, 1.0, 1.0],
            "true": [0.6, 0.6, 0.7, 0.7],
            "prediction": [0.58, 0.61, 0.65, 0.69],
            **{
                f"{side}{pct}": [0.6 + sign * w for w in (0.01, 0.02, 0.03, 0.04)]
                for pct in (50, 90)
                for side, sign in (("lower", -1), ("upper", 1))
            },
        }
    )
    points.to_csv(folder / "bench_predictions.csv", index=False)
    (folder / "bench_extrapolation.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    build_from_outputs(folder, out)
    document = out.read_text()
    assert document.count("<img ") == 1 and "drawn from bench_predictions.csv" in document
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(Exception, match="no outputs found"):
        build_from_outputs(empty, tmp_path / "none.html")


# -- text outputs people read -------------------------------------------------------------------


def cli(*args: str) -> str:
    from typer.testing import CliRunner

    from benchcast.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_fit_report_sections_are_headings_not_markup(tmp_path):
    from benchcast.data.example import example_path

    out = cli("fit", example_path(), "--law", "power", "-b", "arc_easy", "-m", "acc_norm", "--out", tmp_path / "a.json")
    assert "[[" not in out and "]]" not in out
    lines = out.splitlines()
    assert lines[0].startswith("Fit: law power") and "Parameters:" in lines
    text = cli("forecast", tmp_path / "a.json", "--flops", "1e21", "--n-boot", "20")
    assert "90 % lower" in text and "curve 90 % upper" in text and "run lower" not in text
    assert "20 bootstrap replicates" in text
    backtest = cli(
        "backtest", example_path(), "-b", "arc_easy", "-m", "acc_norm", "--threshold", "2e20", "--n-boot", "20"
    )
    assert "coverage of extrapolation-aware intervals from 20 bootstrap replicates" in " ".join(backtest.split())


def test_optimal_says_what_x_and_the_penalty_are(apple, tmp_path):
    import benchcast as bc

    bc.fit(apple, "params_tokens", "humaneval-py", "pass@k", k=1).save(tmp_path / "s2.json")
    out = cli("optimal", tmp_path / "s2.json", "--flops", "1e23", "--params", "3e9")
    assert "x = N / N* (planned size over optimal)" in out
    assert "penalty P(x) >= 1 on the reducible -log pass@k" in out
    row = next(line for line in out.splitlines() if "pass@k of the planned run" in line and "-log" not in line)
    neg_log = next(line for line in out.splitlines() if "-log pass@k of the planned run" in line)
    value = lambda line: float(line.split("│")[-2])  # noqa: E731
    assert value(row) == pytest.approx(np.exp(-value(neg_log)), rel=1e-5)


def test_help_shows_no_python_types_for_flags():
    import typer

    major, minor = (int(part) for part in typer.__version__.split(".")[:2])
    if (major, minor) >= (0, 29):
        pytest.skip(f"typer {typer.__version__} is outside the supported range pinned in pyproject.toml (<0.29)")
    out = cli("forecast", "--help")
    assert "<bool>" not in out and "<list[float]>" not in out
    assert "SPEC" not in cli("score-gold", "--help")


def test_a_benchmark_that_cannot_be_forecast_is_listed_not_fatal(tmp_path):
    from benchcast.data.example import load_example
    from benchcast.errors import BenchcastError

    table = load_example()
    targets = parse_targets(["arc_easy:acc_norm", "no_such_benchmark:acc"], None)
    summary = build_report(
        table, targets, [1e22], out=tmp_path / "r.html", law="power", uncertainty=Uncertainty(n_boot=10)
    )
    assert [b["benchmark"] for b in summary["benchmarks"]] == ["arc_easy"]
    (failure,) = summary["not_forecast"]
    assert failure["benchmark"] == "no_such_benchmark" and "no_such_benchmark" in failure["error"]
    assert "Not forecast" in (tmp_path / "r.html").read_text()
    with pytest.raises(BenchcastError, match="no benchmark could be forecast"):
        build_report(
            table, targets[1:], [1e22], out=tmp_path / "none.html", law="power", uncertainty=Uncertainty(n_boot=10)
        )
    assert not (tmp_path / "none.html").exists()
    with pytest.raises(BenchcastError, match="once per --benchmark"):
        parse_targets(["a", "b", "c"], ["acc", "acc_norm"])


def test_benchmarks_analysed_in_workers_give_the_page_made_in_turn(tmp_path):
    """report analyses each benchmark in a worker of its own (issue 31): the same page, in the order asked, with
    a benchmark that cannot be forecast listed, and the workers' warnings said as in turn (here: a chance level
    the data does not give)."""
    from threadpoolctl import threadpool_limits

    from benchcast.data.example import load_example

    table = load_example()
    table["benchmark"] = table["benchmark"].replace({"hellaswag": "hellaswag_x"})  # no known chance level
    targets = parse_targets(["hellaswag_x:acc_norm", "no_such_benchmark:acc", "arc_easy:acc_norm"], None)
    pages, summaries, said = [], [], []
    for jobs in (1, 2):
        memo.clear()  # each page made from its own solves
        out = tmp_path / f"r{jobs}.html"
        # one BLAS thread in this process too, as in the workers: the claim is the same arithmetic
        with threadpool_limits(1), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            summaries.append(
                build_report(
                    table, targets, [1e22], out=out, law="power", n_jobs=jobs, uncertainty=Uncertainty(n_boot=10)
                )
            )
        said.append(sorted({str(w.message) for w in caught}))
        # the page's one moment: when it was made
        pages.append(re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "", out.read_text()))
    assert [b["benchmark"] for b in summaries[1]["benchmarks"]] == ["hellaswag_x", "arc_easy"]
    assert summaries[0]["benchmarks"] == summaries[1]["benchmarks"]
    assert summaries[0]["not_forecast"] == summaries[1]["not_forecast"] and pages[0] == pages[1]
    assert said[0] == said[1] and any("chance level of hellaswag_x" in w for w in said[1])
