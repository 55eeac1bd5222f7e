"""Fixtures of the reference-server tests.

Tests that start vLLM are marked ``slow``. When what they need is not installed they SKIP with the reason,
unless ``VLLM_LINT_REQUIRE_SERVER_TESTS`` is set (CI sets it): then they FAIL, so that a broken install
cannot pass as "skipped".

One session-scoped tiny model (size S, ``tiny_model_dir`` in tests/conftest.py) and one reference server serve all
the live tests; the server and
every process it started (vLLM's EngineCore and workers) are killed at teardown. Every process the tests
start carries this session's tag in its environment; at the end of the session none may be left (an
orphaned EngineCore included): any that is gets killed and the session fails.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from serverutil import REQUIRE_ENV, engine_held, require_modules, unavailable, wait_serving  # noqa: F401 - re-exported

from vllm_lint.reference.processes import free_port, kill_process_tree

REPO = Path(__file__).resolve().parents[2]
API_KEY = "sk-reference-test"
MAX_IN_FLIGHT = 8
MAX_MODEL_LEN = 1024
# Inherited by every process started from here on (servers, vLLM's engine processes, CLI runs), so that
# what is left at the end can be told from other users' processes on the same machine. Each pytest-xdist
# worker is a session of its own, with its own tag: one worker's servers are not another's leftovers.
SESSION_TAG_VAR = "VLLM_LINT_TEST_SESSION"
SESSION_TAG = os.environ.setdefault(SESSION_TAG_VAR, f"{os.getpid()}-{secrets.token_hex(6)}")
if os.environ.get("PYTEST_XDIST_WORKER") and not SESSION_TAG.endswith(os.environ["PYTEST_XDIST_WORKER"]):
    SESSION_TAG = os.environ[SESSION_TAG_VAR] = f"{SESSION_TAG}-{os.environ['PYTEST_XDIST_WORKER']}"


def server_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1",
               PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("VLLM_API_KEY", None)
    return env


@contextlib.contextmanager
def launched(folder: Path, app_file: str, ready_path: str, *, timeout: float = 60):
    """The launcher (``python -m vllm_lint.reference.launch``) serving ``folder/app_file`` on a free port,
    with ``folder`` as its model; yields its base URL once ``ready_path`` answers 200; killed, with all it
    started, on exit."""
    port = free_port()
    log = folder / "launch.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "vllm_lint.reference.launch", "--app-file", app_file,
                                 "--model", str(folder), "--port", str(port)],
                                cwd=folder, env=server_env(), stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_serving(base + ready_path, proc, lambda: log.read_text(errors="replace"), what="the launcher",
                     timeout=timeout)
        yield base
    finally:
        kill_process_tree(proc)


def tagged_processes(tag: str = SESSION_TAG) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes, other than this one, whose environment has ``tag``."""
    needle = f"{SESSION_TAG_VAR}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2:].startswith("Z"):
                continue  # a zombie holds no resources: its parent has not reaped it yet
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
        found.append((int(entry.name), cmdline))
    return found


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind():
    """Set up before, so torn down after, every other session fixture (the shared server included)."""
    yield
    if not Path("/proc/self/environ").exists():
        return  # no /proc to look in (not Linux)
    deadline = time.monotonic() + 15  # processes being stopped right now get time to exit
    left = tagged_processes()
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = tagged_processes()
    if left:
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        pytest.fail("processes this test session left behind (now killed):\n"
                    + "\n".join(f"  {pid}: {cmd[:200]}" for pid, cmd in left), pytrace=False)


@dataclass
class LiveServer:
    base_url: str
    api_key: str
    model: str
    proc: subprocess.Popen
    log: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def engine_held(self):
        return engine_held(self.proc.pid)


@pytest.fixture(scope="session")
def reference_server(tiny_model_dir, tmp_path_factory):
    require_modules("vllm", "fastapi", "uvicorn", "httpx", "psutil", what="the live reference server")
    port = free_port()
    log = tmp_path_factory.mktemp("reference-server") / "server.log"
    cmd = [sys.executable, "-m", "vllm_lint", "serve-reference", "--model", str(tiny_model_dir),
           "--served-model-name", "tiny", "--port", str(port), "--max-model-len", str(MAX_MODEL_LEN),
           "--dtype", "float32", "--kv-cache-memory", "128MiB", "--max-num-seqs", "8",
           "--api-key", API_KEY, "--max-in-flight", str(MAX_IN_FLIGHT), "--max-body", "64KiB"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=server_env(),
                                start_new_session=True, cwd=REPO)
    server = LiveServer(f"http://127.0.0.1:{port}", API_KEY, "tiny", proc, log)

    def import_failed(tail: str) -> None:
        if "ModuleNotFoundError" in tail or "ImportError" in tail:
            unavailable(f"vLLM is installed but does not import:\n{tail}")

    try:
        wait_serving(server.base_url + "/health", proc, server.log_tail, what="the reference server", timeout=300,
                     exited=import_failed)
        yield server
    finally:
        kill_process_tree(proc)
