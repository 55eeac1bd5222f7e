"""Test helpers for tests that start a server: wait until it answers, or fail the test with its log's tail; find
the vLLM engine processes under it, hold them, and wait until the server has seen its clients hang up."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from vllm_lint.reference.processes import ServerExited, ServerNotReady, wait_ready


def wait_serving(url: str, proc: subprocess.Popen, log_tail: Callable[[], str], *, what: str, timeout: float,
                 request_timeout: float = 2.0, interval: float = 0.5,
                 exited: Callable[[str], None] | None = None) -> None:
    """Return once a GET of ``url`` answers 200; fail the test (naming ``what``, with the log's tail) when
    ``proc`` exits first or ``timeout`` seconds pass. ``exited`` sees the tail of a server that exited before
    the test fails (to skip instead, say)."""
    try:
        wait_ready(url, proc, timeout=timeout, status=200, request_timeout=request_timeout, interval=interval)
    except ServerExited as exc:
        tail = log_tail()
        if exited is not None:
            exited(tail)
        pytest.fail(f"{what} exited with {exc.returncode}:\n{tail}", pytrace=False)
    except ServerNotReady:
        pytest.fail(f"{what} did not start in {timeout:g} s:\n{log_tail()}", pytrace=False)


def engine_core_pids(server_pid: int) -> list[int]:
    """The vLLM EngineCore processes under the server process ``server_pid``."""
    import psutil

    return [p.pid for p in psutil.Process(server_pid).children(recursive=True)
            if "EngineCore" in " ".join(p.cmdline() or [p.name()])]


@contextlib.contextmanager
def engine_held(server_pid: int) -> Iterator[list[int]]:
    """vLLM's engine processes under the server (each EngineCore and the workers it started) stopped for the
    block, which gets the EngineCores' pids: the server still admits requests and answers, but none of them can
    end, however fast or slow this machine is. A test that races its requests against the tiny model loses
    whenever the machine stalls for a few seconds (2-core CI machines do). They go on at the end, whatever
    happens in the block."""
    import psutil

    cores = [psutil.Process(pid) for pid in engine_core_pids(server_pid)]
    assert cores, "no EngineCore process under the server"
    held = [*cores, *(child for core in cores for child in core.children(recursive=True))]
    for proc in held:
        proc.suspend()
    try:
        yield [core.pid for core in cores]
    finally:
        for proc in held:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.resume()


def wait_hung_up(base_url: str, aborted: int, timeout: float = 30.0) -> dict:
    """The server's /health once it counts ``aborted`` aborted requests since it started; with the engine held,
    none of them may be left in the engine."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        resp = httpx.get(base_url + "/health", timeout=10, trust_env=False)
        assert resp.status_code == 200, resp.text
        health = resp.json()
        if health["aborted_requests"] >= aborted:
            break
        assert time.monotonic() < deadline, f"{health}: not {aborted} aborted, the server missed a hang-up"
        time.sleep(0.05)
    assert health["engine_requests"] == 0, health  # aborted in the engine before it could run them
    return health
