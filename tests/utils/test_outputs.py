"""Safe outputs (atomic files, multi-file folders, umask, signals) and CLI error messages."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

from benchcast.errors import BenchcastError
from benchcast.utils.io import MANIFEST, atomic_write, atomic_write_text, output_folder

SRC = str(Path(__file__).resolve().parents[2] / "src")


def leftovers(folder: Path) -> list[str]:
    """Temporaries or empty files anywhere under ``folder``."""
    return [str(p) for p in folder.rglob("*") if p.name.endswith(".tmp") or (p.is_file() and p.stat().st_size == 0)]


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_atomic_write_respects_umask(tmp_path, umask_027):
    path = atomic_write_text(tmp_path / "a.csv", "x\n")
    assert path.stat().st_mode & 0o777 == 0o640  # mkstemp alone would give 0600
    with output_folder(tmp_path / "out") as folder:
        (folder / "sub").mkdir()
        (folder / "sub" / "b.txt").write_text("b")
        atomic_write_text(folder / "c.txt", "c")
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "out" / "sub" / "b.txt").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "out" / "c.txt").stat().st_mode & 0o777 == 0o640


def test_atomic_write_failure_names_the_users_path_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "result.parquet"
    target.write_text("previous")

    def fail(tmp):
        tmp.write_text("half")
        raise OSError(28, "No space left on device", str(tmp))

    with pytest.raises(BenchcastError) as info:
        atomic_write(target, fail)
    message = str(info.value)
    assert str(target) in message and "No space left on device" in message and ".tmp" not in message
    assert target.read_text() == "previous" and leftovers(tmp_path) == []

    def bad_value(tmp):
        raise ValueError(f"cannot serialise column to {tmp}")

    with pytest.raises(BenchcastError, match="result.parquet: could not be written") as info:
        atomic_write(target, bad_value)
    assert ".tmp" not in str(info.value) and leftovers(tmp_path) == []


def test_output_folder_new_and_existing(tmp_path):
    out = tmp_path / "report"
    with output_folder(out) as folder:
        atomic_write_text(folder / "table.csv", "a,b\n1,2\n")
        (folder / "plot.png").write_bytes(b"\x89PNG...")
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert set(manifest) == {"table.csv", "plot.png"}
    assert manifest["table.csv"]["sha256"] == hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert manifest["plot.png"]["bytes"] == 7

    (out / "notes.md").write_text("the user's own file")
    with output_folder(out) as folder:
        atomic_write_text(folder / "table.csv", "a,b\n3,4\n")
    assert (out / "notes.md").read_text() == "the user's own file"  # not ours: untouched
    assert (out / "table.csv").read_text() == "a,b\n3,4\n"
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == {"table.csv"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no temporary folder left


def test_output_folder_error_leaves_previous_output(tmp_path):
    out = tmp_path / "report"
    with output_folder(out) as folder:
        atomic_write_text(folder / "table.csv", "old\n")
    with pytest.raises(RuntimeError, match="boom"), output_folder(out) as folder:
        atomic_write_text(folder / "table.csv", "new\n")
        raise RuntimeError("boom")
    assert (out / "table.csv").read_text() == "old\n" and (out / MANIFEST).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]
    with pytest.raises(RuntimeError), output_folder(tmp_path / "fresh") as folder:
        (folder / "x").write_text("x")
        raise RuntimeError("no output at all")
    assert not (tmp_path / "fresh").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(BenchcastError, match="not a folder"), output_folder(tmp_path / "file"):
        pass


CHILD = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from benchcast.utils.io import atomic_write, output_folder
    # a user's process, where Ctrl-C raises KeyboardInterrupt (a process started in the background
    # by a non-interactive shell, as a CI script may be, inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    root = Path(sys.argv[1])

    def slow(tmp):
        tmp.write_text("partial")
        print("ready", flush=True)
        time.sleep(60)

    if sys.argv[2] == "folder":
        with output_folder(root / "out") as folder:
            (folder / "table.csv").write_text("new")
            atomic_write(folder / "plot.png", slow)
    else:
        atomic_write(root / "out" / "table.csv", slow)
    """
)


@pytest.mark.parametrize("kind", ["folder", "file"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_killed_midway_leaves_no_temporaries_and_the_previous_output(tmp_path, kind, signum):
    with output_folder(tmp_path / "out") as folder:
        (folder / "table.csv").write_text("previous")
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": SRC}
    child = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), kind], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert child.stdout.readline().strip() == b"ready"
    assert leftovers(tmp_path)  # the temporaries exist while writing...
    child.send_signal(signum)
    child.wait(timeout=30)
    assert child.returncode != 0
    if signum == signal.SIGTERM:
        assert child.returncode == -signal.SIGTERM  # still dies of the signal, after cleaning up
    assert leftovers(tmp_path) == []  # ...and are gone after the kill
    assert sorted(p.name for p in tmp_path.iterdir()) == ["child.py", "out"]
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before


def run_process(*args, env=None, cwd=None):
    """A new process: only it can import a fake module put first on its PYTHONPATH."""
    return subprocess.run(
        [sys.executable, "-m", "benchcast", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC, **(env or {})},
        cwd=cwd,
    )


def test_missing_extra_hint_keeps_its_square_brackets(tmp_path):
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError('torch is not installed here')\n")
    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"id": "a", "prompt": "1+1=", "solution": "2"}\n')
    proc = run_process(
        "score-gold",
        "--model",
        "some/model",
        "--problems",
        problems,
        "--out",
        tmp_path / "g.csv",
        env={"PYTHONPATH": f"{fake}{os.pathsep}{SRC}"},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "pip install 'benchcast[score]'" in proc.stderr
    assert not (tmp_path / "g.csv").exists()


def test_out_errors_name_the_users_path(tmp_path):
    samples = tmp_path / "samples.csv"
    pd.DataFrame({"run": "r", "benchmark": "b", "problem_id": ["1", "2"], "n": 4, "c": [1, 2]}).to_csv(samples)
    taken = tmp_path / "taken[score]"
    taken.mkdir()
    proc = run_cli("passk", samples, "--k", "1,2", "--out", taken, "--n-boot", "10")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert str(taken) in " ".join(proc.stderr.split()) and ".tmp" not in proc.stderr
    assert leftovers(tmp_path) == []


def test_unreadable_inputs_are_named(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("run,benchmark,problem_id,n,c\nr\xe9,b,1,4,1\n".encode("latin-1"))
    for path in (empty, latin, tmp_path / "absent.csv"):
        proc = run_cli("passk", path, "--k", "1")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert path.name in proc.stderr


def test_user_errors_print_square_brackets_verbatim(capsys):
    import typer

    from benchcast.cli.common import user_errors
    from benchcast.errors import FitWarning

    @user_errors
    def failing():
        raise BenchcastError("flops must be positive, got array([nan]); pip install 'benchcast[score]'")

    @user_errors
    def warning():
        import warnings

        warnings.warn("parameter [bold]K0[/] at bound", FitWarning, stacklevel=1)

    with pytest.raises(typer.Exit) as info:
        failing()
    assert info.value.exit_code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "got array([nan]); pip install 'benchcast[score]'" in err
    warning()
    assert "parameter [bold]K0[/] at bound" in capsys.readouterr().err
