"""/health turns 503 once the engine died.

The test kills the engine, so it runs on a reference server of its own: parametrizing ``reference_server``
indirectly gives it an instance keyed apart from the shared one, and pytest tears down whichever instance is
up when the other is asked for. So the shared server serves the other live tests, in whatever order they run,
and is never one whose engine was killed."""

from __future__ import annotations

import os
import signal
import time

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("reference_server", ["own server"], indirect=True)
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
