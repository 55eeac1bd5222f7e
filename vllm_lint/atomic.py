"""Writing a file so that an interruption leaves either the old or the new content."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


class ChangedMeanwhile(Exception):
    """``atomic_write``'s ``still_current`` check failed: the file changed while the new one was written."""


def atomic_write(path: Path, data: bytes, still_current: Callable[[], bool] | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder.

    An existing file keeps its mode; a new one gets the mode the umask allows.
    Killed at any moment, ``path`` holds either the old or the new bytes. Ctrl-C,
    SIGTERM and SIGHUP are held back while the temporary file exists (they take
    effect right after the rename), so they never leave it behind; SIGKILL can,
    named ``.<name>.<random>.vllm-lint.tmp``, which no surface claims (never linted).

    ``still_current``, when given, is asked once the new bytes are on disk, just before the rename:
    if it answers False the old file stays and ``ChangedMeanwhile`` is raised.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    with _signals_deferred():
        fd, temp = _tempfile().mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".vllm-lint.tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, mode)
            if still_current is not None and not still_current():
                raise ChangedMeanwhile(str(path))
            os.replace(temp, path)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise
    _sync_folder(path.parent)


@contextmanager
def _signals_deferred():
    """Hold back the signals that end a process politely (POSIX, main thread); they are delivered on exit."""
    names = ("SIGINT", "SIGTERM", "SIGHUP")
    wanted = {getattr(signal, name) for name in names if hasattr(signal, name)}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    except (AttributeError, OSError, ValueError):  # no pthread_sigmask (Windows)
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (POSIX); where folders cannot be opened, there is nothing to do."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _tempfile() -> ModuleType:
    # tempfile brings shutil, random, bz2 and lzma (~4 ms): an edit hook that imports this module to learn the fix
    # policy, and writes nothing, does not pay for them.
    import tempfile

    return tempfile
