"""The reference server on a real (CPU) vLLM engine, driven by the real OpenAI client."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from serverutil import wait_health_async, wait_hung_up, wait_idle

from .conftest import MAX_IN_FLIGHT, MAX_MODEL_LEN, require_modules

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(reference_server):
    require_modules("openai", what="the OpenAI client tests")
    import openai

    with openai.OpenAI(base_url=reference_server.base_url + "/v1", api_key=reference_server.api_key,
                       max_retries=0, timeout=60) as c:
        yield c


def _health(server) -> dict:
    import httpx

    resp = httpx.get(server.base_url + "/health", timeout=10, trust_env=False)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_health_and_models(reference_server, client):
    health = _health(reference_server)
    assert health["status"] == "ok"
    models = client.models.list()
    assert [m.id for m in models.data] == ["tiny"]


def test_completion_non_streaming_and_streaming_agree(client):
    kwargs = dict(model="tiny", prompt="Hello there, server", max_tokens=12, temperature=0)
    full = client.completions.create(**kwargs)
    choice = full.choices[0]
    assert full.object == "text_completion" and full.id.startswith("cmpl-")
    assert choice.finish_reason in {"length", "stop"}
    assert full.usage.completion_tokens <= 12 and full.usage.prompt_tokens > 0
    assert choice.text

    chunks = list(client.completions.create(stream=True, **kwargs))
    streamed = "".join(c.choices[0].text for c in chunks if c.choices)
    assert streamed == choice.text  # greedy: same text either way
    assert chunks[-1].choices[0].finish_reason == choice.finish_reason


def test_ignore_eos_generates_exactly_max_tokens(client):
    """vLLM's `ignore_eos` extension (through the OpenAI client's extra_body): exactly max_tokens tokens."""
    full = client.completions.create(model="tiny", prompt="Stop.", max_tokens=200, temperature=0,
                                     extra_body={"ignore_eos": True})
    assert full.usage.completion_tokens == 200 and full.choices[0].finish_reason == "length"


def test_chat_non_streaming_and_streaming_agree(client):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
    full = client.chat.completions.create(model="tiny", messages=messages, max_tokens=10, temperature=0)
    assert full.object == "chat.completion"
    assert full.choices[0].message.role == "assistant"
    text = full.choices[0].message.content
    assert text

    stream = client.chat.completions.create(model="tiny", messages=messages, max_tokens=10, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == full.usage.completion_tokens


def test_stream_is_sse_ending_in_done(reference_server):
    import httpx

    with httpx.stream("POST", reference_server.base_url + "/v1/completions", headers=reference_server.headers,
                      json={"prompt": "abc", "max_tokens": 3, "stream": True}, timeout=30, trust_env=False) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"


def test_api_key_required(reference_server):
    import httpx
    import openai

    with openai.OpenAI(base_url=reference_server.base_url + "/v1", api_key="wrong", max_retries=0) as bad:
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()
    resp = httpx.post(reference_server.base_url + "/v1/completions", json={"prompt": "x"}, trust_env=False)
    assert resp.status_code == 401
    assert resp.json()["error"]["type"] == "authentication_error"
    # /health stays open, like vLLM's own server
    assert httpx.get(reference_server.base_url + "/health", trust_env=False).status_code == 200


@pytest.mark.parametrize(
    "body, status, needle",
    [
        ({"prompt": "word " * (MAX_MODEL_LEN + 10)}, 400, "max_model_len"),
        ({"prompt": "hi", "max_tokens": 0}, 400, "max_tokens must be at least 1"),
        ({"prompt": "hi", "max_tokens": MAX_MODEL_LEN * 4}, 400, "too large"),
        ({"prompt": "hi", "temperature": 9}, 400, "temperature"),
        ({"max_tokens": 3}, 400, "prompt"),
        ({"prompt": "hi", "model": "not-this-one"}, 404, "does not exist"),
        ({"prompt": "x" * 70_000}, 413, "larger than"),
    ],
)
def test_validation_errors(reference_server, body, status, needle):
    import httpx

    resp = httpx.post(reference_server.base_url + "/v1/completions", json=body, headers=reference_server.headers,
                      timeout=30, trust_env=False)
    assert resp.status_code == status, resp.text
    assert needle in resp.json()["error"]["message"]


def test_bad_json_is_400(reference_server):
    import httpx

    resp = httpx.post(reference_server.base_url + "/v1/chat/completions", content=b'{"messages": [',
                      headers={**reference_server.headers, "content-type": "application/json"}, trust_env=False)
    assert resp.status_code == 400
    assert "not valid JSON" in resp.json()["error"]["message"]


def test_openai_client_sees_bad_request(client):
    import openai

    with pytest.raises(openai.BadRequestError, match="max_tokens"):
        client.completions.create(model="tiny", prompt="hi", max_tokens=MAX_MODEL_LEN * 4)


def test_disconnects_abort_requests_in_the_engine(reference_server):
    """Clients that go away while their request waits on the engine (streaming or not) leave nothing running in
    it. The engine is held until the server has seen them go, so that none of the requests can end first."""
    import httpx

    idle = wait_idle(reference_server.base_url)
    before = idle["aborted_requests"], idle["completed_requests"]
    long = {"prompt": "Tell me everything.", "max_tokens": MAX_MODEL_LEN - 20, "temperature": 0, "ignore_eos": True}

    async def go():
        async with httpx.AsyncClient(base_url=reference_server.base_url, headers=reference_server.headers,
                                     trust_env=False) as c:

            async def stream_then_leave():
                async with c.stream("POST", "/v1/completions", json={**long, "stream": True}, timeout=120) as r:
                    assert r.status_code == 200  # admitted: its request is in the engine; hang up

            with reference_server.engine_held():
                waiting = [asyncio.create_task(c.post("/v1/completions", json=long, timeout=120)) for _ in range(2)]
                await asyncio.gather(stream_then_leave(), stream_then_leave())
                # the two waiting for a whole answer hang up once theirs are the requests in the engine (the
                # streams' counted gone first, so that the two left in flight are theirs)
                await wait_health_async(c, lambda h: h["aborted_requests"] == before[0] + 2 and h["requests_in_flight"] == 2
                                        and h["engine_requests"] == 2, "the two waiting requests in the engine")
                for task in waiting:
                    task.cancel()
                await asyncio.gather(*waiting, return_exceptions=True)
                wait_hung_up(reference_server.base_url, before[0] + 4)

    asyncio.run(go())
    health = wait_idle(reference_server.base_url)
    aborted, completed = health["aborted_requests"] - before[0], health["completed_requests"] - before[1]
    assert (aborted, completed) == (4, 0)


def test_in_flight_limit_returns_429(reference_server):
    """Beyond --max-in-flight the server answers 429 at once instead of queueing without bound. The engine is
    held while the slots are taken, so that no stream can end before the extra request is seen."""
    import httpx

    long = {"prompt": "Go on.", "max_tokens": 40, "stream": True, "temperature": 0, "ignore_eos": True}

    async def go() -> list[list[str]]:
        async with httpx.AsyncClient(base_url=reference_server.base_url, headers=reference_server.headers,
                                     trust_env=False, timeout=30,
                                     limits=httpx.Limits(max_connections=MAX_IN_FLIGHT + 2)) as c, \
                contextlib.AsyncExitStack() as streams:
            with reference_server.engine_held():
                opened = await asyncio.gather(*(streams.enter_async_context(c.stream("POST", "/v1/completions",
                                                                                     json=long))
                                                for _ in range(MAX_IN_FLIGHT)))  # all at once
                assert [r.status_code for r in opened] == [200] * MAX_IN_FLIGHT
                health = (await c.get("/health")).json()
                assert health["requests_in_flight"] == MAX_IN_FLIGHT, health
                # a server that queued it would wait on the held engine for good: the time-out tells
                extra = await c.post("/v1/completions", json={"prompt": "one more", "max_tokens": 2}, timeout=60)
                assert extra.status_code == 429, extra.text
                assert extra.headers.get("retry-after")
                assert extra.json()["error"]["type"] == "rate_limit_error"
            # the held streams go on once the engine does, each to its max_tokens
            return [_finish_reasons((await r.aread()).decode()) for r in opened]

    assert asyncio.run(go()) == [["length"]] * MAX_IN_FLIGHT
    wait_idle(reference_server.base_url)


def _finish_reasons(events: str) -> list[str]:
    """The finish reasons an SSE completion stream gave, once it sent ``data: [DONE]`` (else nothing)."""
    lines = [line[len("data: "):] for line in events.splitlines() if line.startswith("data: ")]
    if not lines or lines[-1] != "[DONE]":
        return []
    return [choice["finish_reason"] for line in lines[:-1] for choice in json.loads(line).get("choices", [])
            if choice.get("finish_reason")]
