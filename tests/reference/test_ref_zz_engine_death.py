"""/health turns 503 once the engine died. It kills the shared server's engine, so it runs last (zz)."""

from __future__ import annotations

import os
import signal
import time

import pytest

pytestmark = pytest.mark.slow


def test_health_503_after_engine_death(reference_server):
    import httpx

    url = reference_server.base_url
    assert httpx.get(url + "/health", trust_env=False).status_code == 200
    pids = reference_server.engine_core_pids()
    assert pids, "no EngineCore process found under the server"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:
        resp = httpx.get(url + "/health", trust_env=False, timeout=5)
        if resp.status_code == 503:
            break
        assert time.monotonic() < deadline, f"/health still {resp.status_code} after the engine died"
        time.sleep(0.2)
    assert resp.json()["error"]["type"] == "service_unavailable"
    done = httpx.post(url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2},
                      headers=reference_server.headers, trust_env=False, timeout=10)
    assert done.status_code == 503
