"""The reference server's HTTP layer with a stand-in engine: fast, no vLLM needed (FastAPI is)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from .conftest import require_modules


class FakeTokenizer:
    """One token per character, plus a BOS (id 1) like the tiny model's tokenizer."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return ([1] if add_special_tokens else []) + [ord(c) for c in text]

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=False):
        text = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        return text + ("<assistant>" if add_generation_prompt else "")


@dataclass
class FakeEngine:
    """Writes "x" max_tokens times; streams deltas when asked to (like RequestOutputKind.DELTA)."""

    errored: bool = False
    delay: float = 0.0
    aborted: list[str] = field(default_factory=list)
    seen_ids: list[str] = field(default_factory=list)
    shut_down: bool = False

    def get_tokenizer(self):
        return FakeTokenizer()

    async def check_health(self):
        if self.errored:
            raise RuntimeError("EngineCore died")

    async def generate(self, prompt, params, request_id):
        self.seen_ids.append(request_id)
        ids = prompt["prompt_token_ids"]
        for i in range(params.max_tokens):
            await asyncio.sleep(self.delay)
            last = i == params.max_tokens - 1
            if params.output_kind == "delta":
                text, tokens = "x", [120]
            elif last:
                text, tokens = "x" * params.max_tokens, [120] * params.max_tokens
            else:
                continue
            yield SimpleNamespace(
                prompt_token_ids=ids, finished=last,
                outputs=[SimpleNamespace(text=text, token_ids=tokens, finish_reason="length" if last else None)])

    async def abort(self, request_id):
        self.aborted.append(request_id)

    def shutdown(self):
        self.shut_down = True


@pytest.fixture
def make_client(monkeypatch):
    require_modules("fastapi", "httpx", what="the server app tests")
    from fastapi.testclient import TestClient

    from vllm_lint.reference import server
    from vllm_lint.reference.settings import ServerSettings

    def fake_params(body, max_tokens, stream):
        return SimpleNamespace(max_tokens=max_tokens, output_kind="delta" if stream else "final")

    monkeypatch.setattr(server, "make_sampling_params", fake_params)
    clients = []

    def make(engine=None, **overrides):
        engine = engine or FakeEngine()
        settings = ServerSettings(model="fake-model", max_model_len=64, **overrides)
        app = server.create_app(settings, engine_factory=lambda s: engine)
        client = TestClient(app)
        client.__enter__()  # runs the lifespan handler
        clients.append(client)
        return client, engine

    yield make
    for c in clients:
        try:
            c.__exit__(None, None, None)
        except Exception:  # already closed by the test
            pass


def test_completion_response_shape(make_client):
    client, engine = make_client()
    resp = client.post("/v1/completions", json={"prompt": "hello", "max_tokens": 3})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["object"] == "text_completion"
    assert body["choices"][0]["text"] == "xxx"
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"] == {"prompt_tokens": 6, "completion_tokens": 3, "total_tokens": 9}
    assert body["model"] == "fake-model"
    assert resp.headers["x-request-id"] == body["id"]


def test_each_request_gets_its_own_id(make_client):
    client, engine = make_client()
    for _ in range(3):
        client.post("/v1/completions", json={"prompt": "a", "max_tokens": 1})
    assert len(set(engine.seen_ids)) == 3


def test_default_max_tokens_and_room_left(make_client):
    client, _ = make_client(default_max_tokens=5)
    assert client.post("/v1/completions", json={"prompt": "a"}).json()["usage"]["completion_tokens"] == 5
    # 60 prompt tokens (BOS + 59 chars) leave 4 of max_model_len=64: the default shrinks to fit
    long = client.post("/v1/completions", json={"prompt": "a" * 59}).json()
    assert long["usage"]["completion_tokens"] == 4


def test_chat_stream_events(make_client):
    client, _ = make_client()
    with client.stream("POST", "/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "stream": True,
            "stream_options": {"include_usage": True}}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in resp.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]) == "xx"
    assert events[-2]["choices"][0]["finish_reason"] == "length"
    assert events[-1]["usage"]["completion_tokens"] == 2
    assert {e["object"] for e in events} == {"chat.completion.chunk"}


def test_chat_content_parts_and_max_completion_tokens(make_client):
    client, _ = make_client()
    resp = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "max_completion_tokens": 2})
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"] == {"role": "assistant", "content": "xx"}


@pytest.mark.parametrize(
    "path, body, status, needle",
    [
        ("/v1/completions", {"prompt": "a" * 64}, 400, "max_model_len"),
        ("/v1/completions", {"prompt": "a" * 20_000}, 400, "max_model_len"),  # tokenised in a thread
        ("/v1/completions", {"prompt": "a", "max_tokens": 0}, 400, "at least 1"),
        ("/v1/completions", {"prompt": "a", "max_tokens": 100}, 400, "too large"),
        ("/v1/completions", {"prompt": "a", "n": 2}, 400, "n=1"),
        ("/v1/completions", {"prompt": ["a", "b"]}, 400, "one prompt"),
        ("/v1/completions", {"prompt": "a", "top_p": 0}, 400, "top_p"),
        ("/v1/completions", [1, 2], 400, "JSON object"),
        ("/v1/completions", {"prompt": "a", "model": "other"}, 404, "does not exist"),
        ("/v1/chat/completions", {"messages": []}, 400, "messages"),
        ("/v1/chat/completions", {"messages": [{"role": "robot", "content": "x"}]}, 400, "role"),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                  "max_completion_tokens": 0}, 400, "max_completion_tokens"),
    ],
)
def test_validation(make_client, path, body, status, needle):
    client, engine = make_client()
    resp = client.post(path, json=body)
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert needle in error["message"] and error["code"] == status
    assert engine.seen_ids == []  # nothing reached the engine


def test_bad_json_and_oversized_body(make_client):
    client, _ = make_client(max_body_bytes=1000)
    resp = client.post("/v1/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 400 and "not valid JSON" in resp.json()["error"]["message"]
    resp = client.post("/v1/completions", json={"prompt": "a" * 2000})
    assert resp.status_code == 413


def test_oversized_chunked_body_without_length(make_client):
    client, _ = make_client(max_body_bytes=1000)

    def chunks():
        for _ in range(5):
            yield b"a" * 400

    resp = client.post("/v1/completions", content=chunks(), headers={"content-type": "application/json"})
    assert resp.status_code == 413


def test_api_key(make_client):
    client, _ = make_client(api_key="secret")
    assert client.get("/v1/models").status_code == 401
    assert client.get("/v1/models", headers={"Authorization": "Bearer nope"}).status_code == 401
    ok = client.get("/v1/models", headers={"Authorization": "Bearer secret"})
    assert ok.status_code == 200 and ok.json()["data"][0]["id"] == "fake-model"
    assert client.get("/health").status_code == 200  # health stays open


def test_health_503_when_engine_dead(make_client):
    client, engine = make_client()
    assert client.get("/health").json()["status"] == "ok"
    engine.errored = True
    resp = client.get("/health")
    assert resp.status_code == 503
    assert client.post("/v1/completions", json={"prompt": "a"}).status_code == 503


def test_in_flight_limit(make_client):
    client, engine = make_client(max_in_flight=1)
    state = client.app.state.reference
    slot = state.in_flight.acquire()  # one request in flight
    try:
        resp = client.post("/v1/completions", json={"prompt": "a", "max_tokens": 1})
        assert resp.status_code == 429 and resp.headers["retry-after"] == "1"
    finally:
        slot.release()
    assert client.post("/v1/completions", json={"prompt": "a", "max_tokens": 1}).status_code == 200
    assert state.in_flight.count == 0


def _post_with_a_stalled_body(app, headers: dict[str, str]) -> int:
    """POST /v1/completions straight to the ASGI app, the body's first bytes sent and the rest never: the
    status it answers with."""
    scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": "/v1/completions", "raw_path": b"",
             "query_string": b"", "root_path": "", "scheme": "http", "server": ("127.0.0.1", 80),
             "client": ("127.0.0.1", 5000), "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    sent: list[dict] = []

    async def run() -> None:
        first = True

        async def receive():
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b'{"prompt": ', "more_body": True}
            await asyncio.sleep(3600)  # the rest of the body never comes

        async def send(message):
            sent.append(message)

        await asyncio.wait_for(app(scope, receive, send), timeout=30)

    asyncio.run(run())
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_a_full_server_refuses_before_reading_the_body(make_client):
    """With every slot taken, a request whose body is still on its way gets the 429 at once, not a 408 after
    the body timeout (a busy event loop made that happen under load); the API key is still checked first."""
    client, _ = make_client(max_in_flight=1, body_timeout=0.2, api_key="secret")
    state = client.app.state.reference
    key = {"Authorization": "Bearer secret", "content-type": "application/json"}
    assert _post_with_a_stalled_body(client.app, key) == 408  # not full: the body is awaited, and times out
    slot = state.in_flight.acquire()
    try:
        assert _post_with_a_stalled_body(client.app, key) == 429
        assert _post_with_a_stalled_body(client.app, {**key, "Authorization": "Bearer no"}) == 408  # not ours to refuse
        resp = client.post("/v1/completions", json={"prompt": "a"}, headers={"Authorization": "Bearer no"})
        assert resp.status_code == 401
    finally:
        slot.release()


def test_stream_releases_slot_and_shutdown(make_client):
    client, engine = make_client(max_in_flight=2)
    with client.stream("POST", "/v1/completions", json={"prompt": "a", "max_tokens": 3, "stream": True}) as r:
        list(r.iter_lines())
    assert client.app.state.reference.in_flight.count == 0
    client.__exit__(None, None, None)
    assert engine.shut_down


def test_unknown_route_is_openai_shaped(make_client):
    client, _ = make_client()
    resp = client.get("/v1/nothing")
    assert resp.status_code == 404 and resp.json()["error"]["type"] == "not_found_error"


def test_settings_from_env():
    from vllm_lint.reference.settings import ServerSettings

    s = ServerSettings.from_env({"VLLM_LINT_REF_MODEL": "/m", "VLLM_LINT_REF_MAX_MODEL_LEN": "512",
                                 "VLLM_LINT_REF_ENFORCE_EAGER": "true", "VLLM_API_KEY": "k"})
    assert (s.model, s.max_model_len, s.enforce_eager, s.api_key) == ("/m", 512, True, "k")
    assert ServerSettings.from_env(s.to_env()) == s
    with pytest.raises(ValueError, match="VLLM_LINT_REF_MODEL"):
        ServerSettings.from_env({})
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        ServerSettings(model="m", gpu_memory_utilization=1.5).validate()
