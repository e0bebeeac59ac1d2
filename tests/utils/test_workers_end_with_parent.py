"""Pool workers end with their parent, ``kill -9`` included (issue 49 item 10: they kept running for minutes)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from benchcast.utils.parallel import parallel_map

    def sleeper(folder):
        open(os.path.join(folder, str(os.getpid())), "w").close()
        time.sleep(120)

    parallel_map(sleeper, [sys.argv[1]] * 2, n_jobs=2, progress=False)
    """
)


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait(condition, seconds: float) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_no_worker_survives_its_parent(tmp_path, sig):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    parent = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env)
    try:
        assert _wait(lambda: len(list(tmp_path.iterdir())) == 2, 60), "the two workers did not start"
        workers = [int(p.name) for p in tmp_path.iterdir()]
        assert all(_alive(pid) for pid in workers)
        parent.send_signal(sig)
        parent.wait(10)
        assert _wait(lambda: not any(_alive(pid) for pid in workers), 10), "a worker outlived its parent"
    finally:
        parent.kill()
        for p in tmp_path.iterdir():
            try:
                os.kill(int(p.name), signal.SIGKILL)
            except ProcessLookupError:
                pass
