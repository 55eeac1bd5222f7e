"""Server processes on the loopback: a free port, waiting until one answers, and stopping it with all it started.

The validation harness and the tests that start a server (the reference server, a fixed seed under uvicorn)
share these, so a server is waited for and stopped in one way everywhere.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


class ServerExited(Exception):
    """The server's process ended before it answered."""

    def __init__(self, returncode: int) -> None:
        super().__init__(f"the server exited with {returncode}")
        self.returncode = returncode


class ServerNotReady(Exception):
    """The server did not answer (as asked) within the time allowed."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the server did not answer within {timeout:.0f}s")
        self.timeout = timeout


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



def wait_ready(url: str, proc: subprocess.Popen, *, timeout: float, status: int | None = None,
               request_timeout: float = 2.0, interval: float = 0.5) -> None:
    """Return once a GET of ``url`` answers (with ``status``, when given; any HTTP answer otherwise).

    Raises :class:`ServerExited` when ``proc`` ends first and :class:`ServerNotReady` after ``timeout`` seconds.
    uvicorn answers only once the app's start-up (lifespan or startup hook) has finished, so an answer means
    the app is ready to serve.
    """
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerExited(proc.returncode)
        try:
            response = httpx.get(url, timeout=request_timeout, trust_env=False)
        except httpx.HTTPError:
            pass
        else:
            if status is None or response.status_code == status:
                return
        time.sleep(interval)
    raise ServerNotReady(timeout)


def wait_listening(port: int, proc: subprocess.Popen, *, timeout: float, interval: float = 0.5) -> None:
    """Return once 127.0.0.1:``port`` accepts a TCP connection (a gRPC server has started); raises as wait_ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerExited(proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2.0):
                return
        except OSError:
            time.sleep(interval)
    raise ServerNotReady(timeout)


def kill_process_tree(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop ``proc`` and every process it started (vLLM's EngineCore workers included)."""
    try:
        import psutil

        children = psutil.Process(proc.pid).children(recursive=True)
    except Exception:  # psutil missing or the process already gone
        children = []
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in children:  # in case one left the process group
        try:
            child.kill()
        except Exception:
            pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
