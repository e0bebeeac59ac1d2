"""Safe output: nothing the user had is lost, and a killed command leaves no half-written file.

:func:`atomic_write` writes one file beside the target and renames it; :func:`output_folder` assembles several in a
temporary sibling folder, moved in at the end with a manifest last (``with output_folder(out) as folder: ...``).
Temporaries go on any exit (SIGTERM included), files get the umask's permissions, and errors name the user's path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from benchcast.errors import BenchcastError

MANIFEST = ".benchcast-manifest.json"


class _Terminated(BaseException):
    """SIGTERM arrived while an output was being written (raised so that cleanup runs)."""


def _umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _respect_umask(path: Path, base: int) -> None:
    os.chmod(path, base & ~_umask())


_depth = 0  # nesting of _sigterm_raises (an atomic_write inside an output_folder)


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into :class:`_Terminated` for the duration; the outermost level re-delivers it."""
    global _depth
    if threading.current_thread() is not threading.main_thread() or _depth:
        yield  # handlers can only be installed from the main thread; nested: already installed
        return
    previous = signal.getsignal(signal.SIGTERM)
    previous = signal.SIG_DFL if previous is None else previous  # None: set outside Python

    def handler(signum, frame):
        raise _Terminated(f"terminated by signal {signum}")

    def restore():
        global _depth
        _depth = 0
        signal.signal(signal.SIGTERM, previous)

    signal.signal(signal.SIGTERM, handler)
    _depth = 1
    try:
        yield
    except _Terminated:
        restore()
        os.kill(os.getpid(), signal.SIGTERM)
        raise  # reached only when the previous handler does not end the process
    finally:
        restore()


def _failure(path: Path, tmp: Path | str, exc: BaseException) -> BenchcastError:
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return BenchcastError(f"{path}: could not be written ({str(text).replace(str(tmp), str(path))}).")


def _make_parent(path: Path) -> None:
    """Create ``path``'s folder, refusing by name an ancestor that is a file."""
    for ancestor in path.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise BenchcastError(f"{path}: cannot be written: {ancestor} is a file, not a folder.")
            break
    path.parent.mkdir(parents=True, exist_ok=True)


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result onto ``path`` only if it succeeded."""
    path = Path(path)
    tmp: Path | str = path
    if path.is_dir():
        raise BenchcastError(f"{path}: is a folder; give the name of a file to write.")
    with _sigterm_raises():
        try:
            _make_parent(path)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd)
        except OSError as exc:
            raise _failure(path, tmp, exc) from exc
        try:
            write(Path(tmp))
            _respect_umask(Path(tmp), 0o666)
            os.replace(tmp, path)
        except (OSError, ValueError) as exc:
            raise _failure(path, tmp, exc) from exc
        finally:
            Path(tmp).unlink(missing_ok=True)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@contextlib.contextmanager
def output_folder(path: str | Path) -> Iterator[Path]:
    """Write a multi-file output into a temporary sibling folder; put it in place at the end."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BenchcastError(f"{path}: exists and is not a folder; --out needs a folder here.")
    with _sigterm_raises():
        try:
            _make_parent(path)
            tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        except OSError as exc:
            raise _failure(path, path, exc) from exc
        try:
            yield tmp
            try:
                _publish(tmp, path)
            except OSError as exc:
                raise _failure(path, tmp, exc) from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _publish(tmp: Path, path: Path) -> None:
    files = sorted(p.relative_to(tmp) for p in tmp.rglob("*") if p.is_file())
    manifest = {str(f): {"bytes": (tmp / f).stat().st_size, "sha256": _digest(tmp / f)} for f in files}
    for folder in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
        _respect_umask(folder, 0o777)
    for f in files:
        _respect_umask(tmp / f, 0o666)
    if not path.exists():
        os.rename(tmp, path)
    else:
        (path / MANIFEST).unlink(missing_ok=True)
        for f in files:
            (path / f).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / f, path / f)
    atomic_write_text(path / MANIFEST, json.dumps({"files": manifest}, indent=2) + "\n")
