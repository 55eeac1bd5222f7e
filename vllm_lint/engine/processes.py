"""Child processes for workers.py: started, talked to, waited on and stopped.

On Linux a child is a plain ``os.fork()`` with two pipes: it shares the parent's imports and costs no
more than the fork. multiprocessing would do the same, but importing it (with the socket, tempfile,
shutil, compression and subprocess modules it pulls in) takes ~17 ms, a twentieth of a one-file run
with findings. Elsewhere, where fork is not safe or not there, multiprocessing's spawn start method
serves. Both give the same small interface: ``start`` a target with arguments, ``send``/``recv``/
``poll`` pickled messages on a channel, ``wait`` for channels to have something, and a handle to
``kill`` and ``join`` the child.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol


class Channel(Protocol):
    def send(self, obj: Any) -> None: ...
    def recv(self) -> Any: ...
    def poll(self) -> bool: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...


class ChildProcess(Protocol):
    @property
    def exitcode(self) -> int | None: ...  # as multiprocessing gives it: -N for death by signal N
    def is_alive(self) -> bool: ...
    def kill(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...


class Backend(Protocol):
    def start(self, target: Callable[..., None], args: tuple[Any, ...]) -> tuple[ChildProcess, Channel]:
        """Run ``target(child_channel, *args)`` in a new process; the parent's end of the channel."""

    def wait(self, channels: Sequence[Channel], timeout: float | None) -> list[Channel]:
        """The channels that have a message (or whose child is gone), after at most ``timeout`` seconds."""


def default_backend() -> Backend:
    return ForkBackend() if sys.platform == "linux" else MultiprocessingBackend("spawn")


# -- fork and pipes ------------------------------------------------------------------------------

_LENGTH_BYTES = 8


class PipeChannel:
    """Length-prefixed pickles over a pair of pipes (one each way)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd, self._write_fd = read_fd, write_fd

    def fileno(self) -> int:
        return self._read_fd

    def send(self, obj: Any) -> None:
        import pickle

        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(len(payload).to_bytes(_LENGTH_BYTES, "little") + payload)
        while view:
            view = view[os.write(self._write_fd, view) :]

    def recv(self) -> Any:
        import pickle

        size = int.from_bytes(self._read_exactly(_LENGTH_BYTES), "little")
        return pickle.loads(self._read_exactly(size))

    def _read_exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = os.read(self._read_fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError("the other end of the pipe is closed")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def poll(self) -> bool:
        return bool(_ready([self._read_fd], 0))

    def close(self) -> None:
        for fd in (self._read_fd, self._write_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._read_fd = self._write_fd = -1


class ForkedChild:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._exitcode: int | None = None

    @property
    def exitcode(self) -> int | None:
        self._reap(block=False)
        return self._exitcode

    def _reap(self, block: bool) -> None:
        if self._exitcode is not None:
            return
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: its status is lost
            self._exitcode = 1
            return
        if pid:
            self._exitcode = os.waitstatus_to_exitcode(status)

    def is_alive(self) -> bool:
        return self.exitcode is None

    def kill(self) -> None:
        if self.is_alive():
            import signal

            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def join(self, timeout: float | None = None) -> None:
        if timeout is None:
            self._reap(block=True)
            return
        if not self.is_alive():
            return
        try:  # a descriptor that turns readable when the child exits: woken at once, not at a poll's next tick
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            pidfd = None
        if pidfd is not None:
            try:
                _ready([pidfd], timeout)
            finally:
                os.close(pidfd)
            self._reap(block=False)
            return
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


class ForkBackend:
    def start(self, target: Callable[..., None], args: tuple[Any, ...]) -> tuple[ForkedChild, PipeChannel]:
        import pickle  # noqa: F401 - both sides need it: imported before the fork, the child has it at no cost

        to_child_read, to_child_write = os.pipe()
        to_parent_read, to_parent_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            code = 1
            try:
                os.close(to_child_write)
                os.close(to_parent_read)
                target(PipeChannel(to_child_read, to_parent_write), *args)
                code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                try:
                    sys.stderr.flush()
                finally:
                    os._exit(code)  # no atexit handlers or buffered output of the parent's run twice
        os.close(to_child_read)
        os.close(to_parent_write)
        return ForkedChild(pid), PipeChannel(to_parent_read, to_child_write)

    def wait(self, channels: Sequence[Channel], timeout: float | None) -> list[Channel]:
        if not channels:
            if timeout:
                time.sleep(timeout)
            return []
        ready = set(_ready([channel.fileno() for channel in channels], timeout))
        return [channel for channel in channels if channel.fileno() in ready]


def _ready(fds: list[int], timeout: float | None) -> list[int]:
    """The descriptors with something to read (or a closed other end), waiting at most ``timeout`` seconds.
    poll, not select: select cannot take a descriptor numbered 1024 or more."""
    import select

    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(None if timeout is None else max(0, int(timeout * 1000 + 0.999)))]


# -- multiprocessing (spawn) ---------------------------------------------------------------------


class MultiprocessingBackend:
    def __init__(self, method: str) -> None:
        import multiprocessing

        self._context = multiprocessing.get_context(method)

    def start(self, target: Callable[..., None], args: tuple[Any, ...]) -> tuple[ChildProcess, Channel]:
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(target=target, args=(child_end, *args), daemon=True)  # type: ignore[attr-defined]
        process.start()
        child_end.close()
        return process, parent_end

    def wait(self, channels: Sequence[Channel], timeout: float | None) -> list[Channel]:
        from multiprocessing.connection import wait

        return wait(list(channels), timeout)  # type: ignore[arg-type, return-value]
