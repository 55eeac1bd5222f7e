"""Starting, waiting for and stopping server processes, with real processes on the loopback (no vLLM needed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vllm_lint.reference.processes import (
    ServerExited,
    ServerNotReady,
    free_port,
    kill_process_tree,
    wait_ready,
)

from .conftest import require_modules


def _http_server(directory: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, f"http://127.0.0.1:{port}"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rindex(")") + 2:].startswith("Z")


def test_wait_ready_returns_once_the_server_answers(tmp_path):
    require_modules("httpx", what="wait_ready")
    (tmp_path / "here.txt").write_text("ok")
    proc, url = _http_server(tmp_path)
    try:
        wait_ready(url + "/here.txt", proc, timeout=60, status=200, interval=0.1)
        # Any HTTP answer will do when no status is asked for: a 404 is an answer.
        wait_ready(url + "/missing", proc, timeout=5)
        with pytest.raises(ServerNotReady) as raised:
            wait_ready(url + "/missing", proc, timeout=1, status=200, interval=0.1)
        assert str(raised.value) == "the server did not answer within 1s"
    finally:
        kill_process_tree(proc)
    assert proc.poll() is not None


def test_wait_ready_reports_a_server_that_exits():
    require_modules("httpx", what="wait_ready")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(ServerExited) as raised:
        wait_ready(f"http://127.0.0.1:{free_port()}/", proc, timeout=60, interval=0.1)
    assert raised.value.returncode == 3
    assert str(raised.value) == "the server exited with 3"


def test_wait_ready_gives_up_on_a_server_that_never_listens():
    require_modules("httpx", what="wait_ready")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        started = time.monotonic()
        with pytest.raises(ServerNotReady):
            wait_ready(f"http://127.0.0.1:{free_port()}/", proc, timeout=1, interval=0.1)
        assert time.monotonic() - started < 10
    finally:
        kill_process_tree(proc)


def test_kill_process_tree_stops_the_children_too(tmp_path):
    require_modules("psutil", what="kill_process_tree")
    child_pid = tmp_path / "child.pid"
    # The child leaves the process group: only the list of children taken before the kill reaches it.
    script = textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        open({str(child_pid)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    deadline = time.monotonic() + 30
    while not child_pid.exists() or not child_pid.read_text():
        assert time.monotonic() < deadline, "the child did not start"
        time.sleep(0.05)
    child = int(child_pid.read_text())
    kill_process_tree(proc, grace=5)
    assert proc.poll() is not None
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _prepared(tmp_path: Path, source: str):
    from vllm_lint.reference.validate.prepare import PreparedSource

    path = tmp_path / "server.py"
    path.write_text(textwrap.dedent(source))
    return PreparedSource("bad", path)


def test_a_server_file_starts_under_the_launcher_and_stops(tmp_path):
    """A FastAPI app that names neither transformers nor vLLM runs under the launcher as it is."""
    require_modules("fastapi", "uvicorn", "httpx", "psutil", what="the launcher")
    import httpx

    from vllm_lint.reference.validate.servers import ServerProcess

    source = _prepared(tmp_path, """
        from fastapi import FastAPI

        app = FastAPI()

        @app.post("/echo")
        def echo(prompt: str):
            return {"text": prompt}
    """)
    with ServerProcess(source, tmp_path, 8, log_dir=tmp_path, start_timeout=120) as server:
        assert server.startup_s is not None and server.startup_s > 0
        answer = httpx.post(server.base_url + "/echo", params={"prompt": "hi"}, timeout=10, trust_env=False)
        assert answer.json() == {"text": "hi"}
        proc = server.proc
    assert proc.poll() is not None
    assert server.proc is None


def test_a_server_file_that_fails_to_import_is_a_validation_error(tmp_path):
    require_modules("fastapi", "uvicorn", "httpx", "psutil", what="the launcher")
    from vllm_lint.reference.validate.errors import ValidationError
    from vllm_lint.reference.validate.servers import ServerProcess

    source = _prepared(tmp_path, """
        raise RuntimeError("this server cannot start")
    """)
    with pytest.raises(ValidationError) as raised:
        with ServerProcess(source, tmp_path, 8, log_dir=tmp_path, start_timeout=120):
            pass
    message = str(raised.value)
    assert message.startswith("the bad server exited with 1:\n"), message
    assert message.splitlines()[-1] == "RuntimeError: this server cannot start"


def test_a_server_whose_start_up_hangs_is_a_validation_error(tmp_path):
    require_modules("fastapi", "uvicorn", "httpx", "psutil", what="the launcher")
    from vllm_lint.reference.validate.errors import ValidationError
    from vllm_lint.reference.validate.servers import ServerProcess

    source = _prepared(tmp_path, """
        import time

        time.sleep(600)  # a model that takes forever to load
    """)
    started = time.monotonic()
    with pytest.raises(ValidationError) as raised:
        with ServerProcess(source, tmp_path, 8, log_dir=tmp_path, start_timeout=3):
            pass
    assert str(raised.value).startswith("the bad server did not start within 3s:\n"), str(raised.value)
    assert time.monotonic() - started < 30

