from __future__ import annotations

import os
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import benchcast as bc

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "apple-downstream"
DCLM = SHARED / "metrics_dclm_data_mixture.subset.csv"
C4 = SHARED / "metrics_c4_mixture.subset.csv"


# -- how ``pytest -n N`` (pytest-xdist) shares the tests out -------------------------------------------------------
# A test module with a module-scoped fixture runs on one worker, so that the fixture (a bench, a report, a fit) is
# computed once, not once per worker; every other test is its own unit, as under xdist's default ``load``. The units
# are handed out in collection order, each to the first worker with fewer than three tests queued, and the modules
# holding the suite's longest tests are collected first: they start at once instead of ending the run on one
# worker while the other idles. Without ``-n`` nothing here applies.
LONG_FIRST = (  # besides every module with a test marked slow; by the longest unit each holds (--durations, 2026-12-02)
    "tests/forecasting/test_one_forecaster.py",  # one unit (a module fixture)
    "tests/report/test_report_twelve.py",  # the suite's longest test, a unit of its own
    "tests/report/test_report.py",
    "tests/data/test_published_exports.py",
    "tests/cli/test_run_selection.py",
    "tests/forecasting/test_intervals_planning.py",
    "tests/forecasting/test_one_answer.py",
    "tests/report/test_report_target_ratios.py",
    "tests/collect/test_collect.py",
    "tests/studies/test_example.py",
    "tests/generative/test_past_n.py",
    "tests/studies/test_notebook_session.py",
    "tests/generative/test_passk_monotone.py",
    "tests/studies/test_reproduce.py",
)


def _module_rank(path: str, slow: bool) -> int:
    """Where a test module is collected under xdist: the listed long ones, then the others with a slow test, then
    the rest (each group in its usual order)."""
    return LONG_FIRST.index(path) if path in LONG_FIRST else len(LONG_FIRST) + (0 if slow else 1)


def pytest_collection_modifyitems(config, items):
    """On an xdist worker, collect the modules with the longest tests first (every worker sorts alike)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _module_rank(path := item.nodeid.split("::")[0], path in slow))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's ``load`` (the default of ``-n N``) with the units above; any other ``--dist`` is left to xdist."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    shared: dict[str, bool] = {}

    class ModuleFixtureScheduling(LoadScopeScheduling):
        """One unit per test, but one per module for a module with a module-scoped fixture."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            if path not in shared:
                source = config.rootpath / path
                shared[path] = source.is_file() and 'scope="module"' in source.read_text()
            return path if shared[path] else nodeid

    config.option.loadscopereorder = False  # the units in collection order, not the largest module first
    return ModuleFixtureScheduling(config, log)


def require_shared(path: Path) -> Path:
    """The shared real data: CI must have it (a missing file fails there); elsewhere the test skips."""
    if not path.exists():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true but the shared data is missing at {path}: the real-data tests cannot run.")
        pytest.skip(f"shared data not found at {path}")
    return path


@dataclass(frozen=True)
class CliRun:
    """What one ``benchcast`` command line printed and returned (``returncode`` as subprocess names it)."""

    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = None

    @property
    def returncode(self) -> int:
        return self.exit_code


def run_cli(*args, env: dict | None = None, cwd: Path | str | None = None, input: str | None = None) -> CliRun:
    """Run ``benchcast ARGS`` in this process, as :func:`benchcast.cli.main` runs it from a shell.

    In-process (Typer's ``CliRunner``) saves each call the 0.5-1 s of a new interpreter importing the
    package. What differs from a subprocess is put back: the plain progress lines on a piped stderr
    (``main`` switches them on), Python's default warning filters (not pytest's, which would turn a
    warning the command prints into an error), the working directory, ``sys.argv`` (``report`` records
    its command line), and a traceback on stderr with exit status 1 when the command raises. Not put
    back: a stray Python warning (not the FitWarning/DataWarning a command prints itself) goes to
    pytest's warnings summary rather than stderr, and the CLI's consoles keep what they found at
    import (no colours, stdout 200 columns wide; not so under ``pytest -s`` on a terminal). The tests
    of the installed entry point itself (``--help`` from a new process, signals, a fake module on
    PYTHONPATH, the package's start-up imports) stay subprocesses.
    """
    from typer.testing import CliRunner

    from benchcast.cli import app
    from benchcast.utils import progress

    args = [str(a) for a in args]
    piped, here, argv = progress._plain_when_piped, os.getcwd(), sys.argv
    try:
        progress.report_when_piped()
        sys.argv = ["benchcast", *args]
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings():
            warnings.resetwarnings()  # a new interpreter's filters: DeprecationWarning & co. ignored, the rest shown
            warnings.simplefilter("default")
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.filterwarnings("ignore", category=category)
            done = CliRunner().invoke(app, args, input=input, env=env, prog_name="benchcast")
    finally:
        sys.argv = argv
        os.chdir(here)
        progress.report_when_piped(piped)
    stderr = done.stderr
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*done.exc_info))  # as the interpreter prints an uncaught one
    return CliRun(done.exit_code, done.stdout, stderr, done.exception)


@pytest.fixture(autouse=True)
def _solves_afresh_where_patched(request):
    """A test that patches (a law, a solver setting) solves afresh: the process's stored solves are forgotten
    before and after it (:mod:`benchcast.utils.memo`)."""
    from benchcast.utils import memo

    patched = "monkeypatch" in request.fixturenames
    if patched:
        memo.clear()
    yield
    if patched:
        memo.clear()


@pytest.fixture(scope="session")
def apple_path() -> Path:
    return require_shared(DCLM)


@pytest.fixture(scope="session")
def c4_path() -> Path:
    return require_shared(C4)


@pytest.fixture(scope="session")
def apple(apple_path) -> pd.DataFrame:
    return bc.load(apple_path)


@pytest.fixture(scope="session")
def arc_easy_bnsl(apple):
    """BNSL fitted to arc_easy acc_norm on the DCLM ladder (TPR 20, 3e18 <= C <= 6e21), once per session
    for the tests of its replicates, its solver and its findings; they only read it."""
    return bc.fit(apple, "bnsl", "arc_easy", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)


@pytest.fixture(scope="session")
def arc_easy_bnsl_monotone(apple):
    """``bnsl_monotone`` on the same runs as :func:`arc_easy_bnsl`, once per session."""
    return bc.fit(apple, "bnsl_monotone", "arc_easy", "acc_norm", tpr=20, min_flops=3e18, max_flops=6e21)


@pytest.fixture(scope="session")
def arc_easy_report(apple):
    """The report's analysis of arc_easy acc_norm at 1e23 on the DCLM ladder (TPR 20, 10 replicates per
    law): its forecast, validation and profile, which tests compare with recommend and bench. Computed
    once per session (about 6 s); the tests only read it."""
    from benchcast.report.analysis import analyse_benchmark

    return analyse_benchmark(
        apple, "arc_easy", "acc_norm", target_flops=[1e23], tpr=20.0, uncertainty=bc.Uncertainty(10), n_jobs=1
    )


def law_table(
    law_name: str,
    theta,
    covariates: dict,
    *,
    q_rand: float = 0.0,
    metric: str = "acc",
    benchmark: str = "synthetic",
    noise: float = 0.0,
    seed: int = 0,
    extra_rows: list[dict] | None = None,
) -> pd.DataFrame:
    """A tidy table whose scores come from a law with known parameters (plus optional noise)."""
    law = bc.get_law(law_name)
    X = {k: np.asarray(v, float) for k, v in covariates.items()}
    score = law.predict_score(np.asarray(theta, float), X, q_rand)
    if noise:
        score = np.clip(score + np.random.default_rng(seed).normal(0, noise, score.shape), 1e-6, 1 - 1e-6)
    n = len(score)
    params = X.get("params", np.full(n, 1e8))
    tokens = X.get("tokens", X["flops"] / (6 * params) if "flops" in X else 20 * params)
    frame = pd.DataFrame(
        {
            # one run per distinct non-k covariate tuple (pass@k rows of a run share it)
            "run": [
                f"r{i}" for i in pd.factorize(pd.Series(list(zip(*[X[c] for c in X if c != "k"], strict=True))))[0]
            ],
            "params": params,
            "tokens": tokens,
            "flops": X.get("flops", 6 * params * tokens),
            "benchmark": benchmark,
            "metric": metric,
            "value": score,
            # the chance level the scores were made with is known: say so (no unknown-chance warning)
            "q_rand": q_rand,
        }
    )
    if "k" in X:
        frame["k"] = X["k"].astype(int)
    if "gold" in X:
        gold = frame.drop_duplicates("run").assign(metric="loglikelihood", value=-X["gold"][: frame["run"].nunique()])
        gold = gold.drop(columns=["k", "q_rand"], errors="ignore")
        frame = pd.concat([frame, gold], ignore_index=True)
    if extra_rows:
        frame = pd.concat([frame, pd.DataFrame(extra_rows)], ignore_index=True)
    return bc.validate(frame, "synthetic")
