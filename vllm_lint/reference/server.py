"""The reference OpenAI-compatible server on vLLM's AsyncLLMEngine.

Endpoints: ``POST /v1/completions``, ``POST /v1/chat/completions`` (JSON, or server-sent events ending in
``data: [DONE]`` when ``"stream": true``), ``GET /v1/models``, ``GET /health`` (503 once the engine died).

Production habits it shows, each of which a vllm-lint rule checks for:
* the engine is built in a lifespan handler (not at import time, not in ``@app.on_event``), from explicit
  settings: ``gpu_memory_utilization``, ``max_model_len``, ``enable_prefix_caching=True``,
  ``tensor_parallel_size`` = visible GPUs, ``kv_cache_memory_bytes`` on the CPU backend;
* every request gets its own id (uuid4), every ``SamplingParams`` an explicit ``max_tokens``;
* a client that disconnects aborts its request in the engine (``await engine.abort(request_id)``);
* requests are validated with clear 4xx errors (prompt longer than ``max_model_len``, ``max_tokens`` out of
  range, bad JSON, oversized body), an optional API key guards ``/v1``, and the number of requests in flight
  is bounded (429 beyond it) so that overload does not turn into unbounded memory.

Run it with ``vllm-lint serve-reference --model DIR`` (or ``python -m vllm_lint serve-reference``),
or ``VLLM_LINT_REF_MODEL=DIR uvicorn --factory vllm_lint.reference.server:create_app``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
import uuid
import weakref
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator, Literal, cast

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from vllm_lint.reference.settings import DEFAULT_CPU_KV_CACHE_BYTES, ServerSettings

if TYPE_CHECKING:
    from vllm.config.model import ModelDType

logger = logging.getLogger("vllm_lint.reference.server")


# --------------------------------------------------------------------------------------------------
# Request bodies (the OpenAI fields this server understands; unknown fields are ignored like OpenAI does)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: bool = False


class _SamplingFields(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    max_tokens: int | None = None
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    n: int = 1
    stop: str | list[str] | None = None
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)  # torch's int64, as vLLM's own server
    presence_penalty: float = Field(default=0.0, ge=-2.0, le=2.0)
    frequency_penalty: float = Field(default=0.0, ge=-2.0, le=2.0)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    ignore_eos: bool = False  # vLLM's extension: generate exactly max_tokens (benchmarks, tests)


class CompletionRequest(_SamplingFields):
    prompt: str | list[str]


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class ChatCompletionRequest(_SamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = None


# --------------------------------------------------------------------------------------------------
# Errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}


class APIError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param = status, message, type_, param


def error_response(status: int, message: str, type_: str = "invalid_request_error",
                   param: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": type_, "param": param, "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


_STATUS_TYPES = {401: "authentication_error", 404: "not_found_error", 405: "invalid_request_error",
                 408: "invalid_request_error", 413: "invalid_request_error", 429: "rate_limit_error", 503: "service_unavailable"}


class BodySizeLimit:
    """ASGI middleware: refuse request bodies over ``limit`` bytes with 413 before the app reads them, and
    bodies not received within ``timeout`` seconds with 408 (a stalled upload would hold its socket forever)."""

    def __init__(self, app, limit: int, timeout: float = 30.0):
        self.app, self.limit, self.timeout = app, limit, timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_big = error_response(413, f"request body is larger than {self.limit} bytes")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await error_response(400, "invalid Content-Length header")(scope, receive, send)
                    return
                if declared > self.limit:
                    await too_big(scope, receive, send)
                    return
        chunks: list[bytes] = []
        size, more = 0, True
        with anyio.move_on_after(self.timeout):
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body = message.get("body", b"")
                size += len(body)
                if size > self.limit:
                    await too_big(scope, receive, send)
                    return
                chunks.append(body)
                more = message.get("more_body", False)
        if more:
            await error_response(408, f"the request body did not arrive within {self.timeout:g} s",
                                 headers={"Connection": "close"})(scope, receive, send)
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # after the body: wait for the client to go away (disconnect watch)

        await self.app(scope, replay, send)


COMPLETIONS_PATH, CHAT_PATH = "/v1/completions", "/v1/chat/completions"
# The routes that take an in-flight slot: a full server refuses them before reading their body.
GENERATION_PATHS = frozenset({COMPLETIONS_PATH, CHAT_PATH})


def _key_matches(api_key: str | None, authorization: str) -> bool:
    """Whether an ``Authorization`` header carries the server's key (any header does when it has none)."""
    if api_key is None:
        return True
    scheme, _, token = authorization.partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(token.strip().encode(), api_key.encode())


def _has_api_key(api_key: str | None, scope) -> bool:
    headers = dict(scope.get("headers", []))
    return _key_matches(api_key, headers.get(b"authorization", b"").decode("latin-1"))


class RefuseWhenFull:
    """ASGI middleware: a generation request that arrives while every in-flight slot is taken gets its 429
    before its body is read. Reading the body first would make the refusal wait on an event loop busy with
    the requests that hold the slots (and, past the body timeout, turn it into a 408); the handler still takes
    its slot with :meth:`InFlight.acquire`, which stays the limit's one enforcement."""

    def __init__(self, app, in_flight: "InFlight", paths: frozenset[str], authorized):
        self.app, self.in_flight, self.paths, self.authorized = app, in_flight, paths, authorized

    async def __call__(self, scope, receive, send):
        if (scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") in self.paths
                and self.in_flight.count >= self.in_flight.limit and self.authorized(scope)):
            await error_response(429, f"too many requests in flight (limit {self.in_flight.limit}); retry later",
                                 "rate_limit_error", headers={"Retry-After": "1"})(scope, receive, send)
            return
        await self.app(scope, receive, send)


# --------------------------------------------------------------------------------------------------
# Engine


def on_cpu_backend() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def visible_gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def build_engine(settings: ServerSettings):
    """Start AsyncLLMEngine from explicit settings (called from the lifespan handler)."""
    from vllm import AsyncEngineArgs, AsyncLLMEngine

    cpu = on_cpu_backend()
    kv_cache_bytes = settings.kv_cache_memory_bytes
    if kv_cache_bytes is None and cpu:
        kv_cache_bytes = DEFAULT_CPU_KV_CACHE_BYTES
    tensor_parallel_size = settings.tensor_parallel_size or max(1, visible_gpu_count())
    enforce_eager = cpu if settings.enforce_eager is None else settings.enforce_eager
    optional: dict[str, Any] = {}
    if settings.max_num_seqs is not None:
        optional["max_num_seqs"] = settings.max_num_seqs
    engine_args = AsyncEngineArgs(
        model=settings.model,
        served_model_name=settings.model_name,
        max_model_len=settings.max_model_len,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        kv_cache_memory_bytes=kv_cache_bytes,
        enable_prefix_caching=True,
        tensor_parallel_size=tensor_parallel_size,
        dtype=cast("ModelDType", settings.dtype),  # a name vLLM checks (the settings read it as text)
        enforce_eager=enforce_eager,
        seed=settings.seed,
        **optional,
    )
    logger.info("starting AsyncLLMEngine: %s", engine_args)
    return AsyncLLMEngine.from_engine_args(engine_args)


class InFlight:
    """A counter of requests in flight with a hard cap; a slot is released exactly once."""

    def __init__(self, limit: int):
        self.limit, self.count = limit, 0

    def acquire(self) -> "_Slot":
        if self.count >= self.limit:
            raise APIError(429, f"too many requests in flight (limit {self.limit}); retry later",
                           "rate_limit_error")
        self.count += 1
        return _Slot(self)


class _Slot:
    def __init__(self, owner: InFlight):
        self._owner: InFlight | None = owner

    def release(self) -> None:
        if self._owner is not None:
            self._owner.count -= 1
            self._owner = None


class ServerState:
    def __init__(self, settings: ServerSettings):
        self.settings = settings
        self.engine = None
        self.tokenizer: Any = None  # the engine's (a transformers tokenizer), set when the engine is
        self.in_flight = InFlight(settings.max_in_flight)
        self.active: set[str] = set()
        self.aborted = 0  # requests aborted in the engine because their client went away
        self.completed = 0  # requests the engine ran to their end


async def watch_disconnect(request: Request) -> None:
    """Return when the client goes away (the body has been read already, so the next message is that)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def abort_quietly(engine, request_id: str) -> None:
    with anyio.CancelScope(shield=True):  # runs even while the surrounding task is being cancelled
        try:
            await engine.abort(request_id)
        except Exception:  # the engine may be dead already; nothing left to cancel then
            logger.debug("abort of %s failed", request_id, exc_info=True)


# --------------------------------------------------------------------------------------------------
# The app


def create_app(settings: ServerSettings | None = None, engine_factory=build_engine) -> FastAPI:
    """App factory (``uvicorn --factory vllm_lint.reference.server:create_app`` reads VLLM_LINT_REF_*).

    ``engine_factory(settings)`` builds the engine in the lifespan handler; tests pass a stand-in.
    """
    if settings is None:
        settings = ServerSettings.from_env()
    settings.validate()
    if Path(settings.model).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    state = ServerState(settings)
    app = FastAPI(title="vllm-lint reference server", lifespan=_lifespan(state, engine_factory), docs_url=None,
                  redoc_url=None)
    app.state.reference = state
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes, timeout=settings.body_timeout)
    app.add_middleware(RefuseWhenFull, in_flight=state.in_flight, paths=GENERATION_PATHS,
                       authorized=lambda scope: _has_api_key(state.settings.api_key, scope))
    _add_error_handlers(app, state)
    _add_routes(app, _Requests(state))
    return app


def _lifespan(state: ServerState, engine_factory):
    """The engine built as the app starts, and shut down as it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engine = engine_factory(state.settings)
        state.engine = engine
        state.tokenizer = await _engine_tokenizer(engine)
        await _ask_supported_tasks(engine)
        try:
            yield
        finally:
            state.engine = None
            engine.shutdown()

    return lifespan


def _add_error_handlers(app: FastAPI, state: ServerState) -> None:
    """Errors as OpenAI-shaped JSON: the API's own, Starlette's (404, 405), and any other (503 once the engine is dead)."""

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError):
        headers = {"Retry-After": "1"} if exc.status == 429 else None
        return error_response(exc.status, exc.message, exc.type, exc.param, headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        return error_response(exc.status_code, str(exc.detail), _STATUS_TYPES.get(exc.status_code, "error"))

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception):
        if state.engine is None or getattr(state.engine, "errored", False):
            return error_response(503, "the engine is dead", "service_unavailable")
        logger.exception("internal error")
        return error_response(500, f"internal error: {type(exc).__name__}", "internal_error")


def _add_routes(app: FastAPI, requests: _Requests) -> None:
    """The health check, the model list and the two generation routes."""
    state, settings = requests.state, requests.settings

    @app.get("/health")
    async def health() -> Response:
        engine = state.engine
        if engine is None:
            return error_response(503, "the engine is not running", "service_unavailable")
        try:
            await engine.check_health()
        except Exception as exc:  # EngineDeadError and friends
            return error_response(503, f"the engine is dead: {exc}", "service_unavailable")
        return JSONResponse({"status": "ok", "requests_in_flight": state.in_flight.count,
                             "engine_requests": _engine_unfinished(engine), "aborted_requests": state.aborted,
                             "completed_requests": state.completed})

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        requests.check_api_key(request)
        return JSONResponse({"object": "list", "data": [{
            "id": settings.model_name, "object": "model", "created": 0, "owned_by": "vllm-lint",
            "root": settings.model, "max_model_len": settings.max_model_len}]})

    @app.post(COMPLETIONS_PATH)
    async def completions(request: Request) -> Response:
        requests.check_api_key(request)
        body = await parse_body(request, CompletionRequest)
        engine = requests.engine_or_503()
        requests.check_model(body.model)
        prompts = body.prompt if isinstance(body.prompt, list) else [body.prompt]
        if len(prompts) != 1:
            raise APIError(400, "exactly one prompt per request is supported", param="prompt")
        prompt_ids = await tokenize(state.tokenizer, prompts[0], add_special_tokens=True, param="prompt")
        return await requests.run_request(request, engine, body, prompt_ids, chat=False,
                                          max_tokens=body.max_tokens, param="max_tokens")

    @app.post(CHAT_PATH)
    async def chat_completions(request: Request) -> Response:
        requests.check_api_key(request)
        body = await parse_body(request, ChatCompletionRequest)
        engine = requests.engine_or_503()
        requests.check_model(body.model)
        messages = [{"role": "system" if m.role == "developer" else m.role, "content": m.text()}
                    for m in body.messages]
        try:
            text = state.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception as exc:
            raise APIError(400, f"cannot apply the chat template: {exc}", param="messages") from exc
        prompt_ids = await tokenize(state.tokenizer, text, add_special_tokens=False, param="messages")
        if body.max_completion_tokens is not None:
            max_tokens, param = body.max_completion_tokens, "max_completion_tokens"
        else:
            max_tokens, param = body.max_tokens, "max_tokens"
        return await requests.run_request(request, engine, body, prompt_ids, chat=True, max_tokens=max_tokens, param=param)


class _Requests:
    """What the routes do with a request: check its key and model, run it in the engine (to its end, or as a
    stream), abort it when its client goes away, and shape the answer."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.settings = state.settings

    def check_api_key(self, request: Request) -> None:
        if not _key_matches(self.settings.api_key, request.headers.get("authorization", "")):
            raise APIError(401, "missing or invalid API key (send 'Authorization: Bearer <key>')",
                           "authentication_error")

    def engine_or_503(self):
        engine = self.state.engine
        if engine is None or getattr(engine, "errored", False):
            raise APIError(503, "the engine is not running", "service_unavailable")
        return engine

    def check_model(self, name: str | None) -> None:
        if name and name not in {self.settings.model_name, self.settings.model}:
            raise APIError(404, f"model {name!r} does not exist; this server serves {self.settings.model_name!r}",
                           "not_found_error", "model")

    async def run_request(self, request: Request, engine, body: _SamplingFields, prompt_ids: list[int], *,
                          chat: bool, max_tokens: int | None, param: str) -> Response:
        limit = self.settings.max_model_len
        if body.n != 1:
            raise APIError(400, "only n=1 is supported", param="n")
        if len(prompt_ids) >= limit:
            raise APIError(400, f"the prompt is {len(prompt_ids)} tokens long; this server's max_model_len is "
                                f"{limit}, which must also leave room for at least one generated token",
                           param="messages" if chat else "prompt")
        room = limit - len(prompt_ids)
        if max_tokens is None:
            max_tokens = min(self.settings.default_max_tokens, room)
        if max_tokens < 1:
            raise APIError(400, f"{param} must be at least 1, got {max_tokens}", param=param)
        if max_tokens > room:
            raise APIError(400, f"{param}={max_tokens} is too large: the prompt takes {len(prompt_ids)} of the "
                                f"{limit} tokens of max_model_len, leaving at most {room}", param=param)
        stream = body.stream
        params = make_sampling_params(body, max_tokens, stream)
        slot = self.state.in_flight.acquire()
        request_id = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        prompt = {"prompt_token_ids": prompt_ids}
        if stream:
            include_usage = bool(body.stream_options and body.stream_options.include_usage)
            events = self.stream_events(engine, request_id, prompt, params, chat, include_usage, slot)
            weakref.finalize(events, slot.release)  # a stream that never starts still frees its slot
            return StreamingResponse(events, media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache", "X-Request-Id": request_id})
        try:
            final = await self.generate_or_abort(request, engine, request_id, prompt, params)
        finally:
            slot.release()
        if final is None:  # the client went away; nobody reads this
            return Response(status_code=499)
        return JSONResponse(self.full_response(request_id, final, chat), headers={"X-Request-Id": request_id})

    async def generate_or_abort(self, request: Request, engine, request_id: str, prompt, params):
        """Run one request to the end, or abort it in the engine as soon as the client disconnects."""

        async def consume():
            final = None
            async for output in engine.generate(prompt, params, request_id):
                final = output
            return final

        self.state.active.add(request_id)
        work = asyncio.ensure_future(consume())
        watcher = asyncio.ensure_future(watch_disconnect(request))
        try:
            done, _ = await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if work in done:
                if work.exception() is not None:  # vLLM can keep a failed request in its output processor
                    await abort_quietly(engine, request_id)
                final = work.result()
                self.state.completed += 1
                return final
            logger.info("client disconnected: aborting %s", request_id)
            work.cancel()
            await abort_quietly(engine, request_id)
            self.state.aborted += 1
            return None
        finally:
            for task in (work, watcher):
                if not task.done():
                    task.cancel()
            self.state.active.discard(request_id)

    async def stream_events(self, engine, request_id: str, prompt, params, chat: bool, include_usage: bool,
                            slot: _Slot) -> AsyncIterator[str]:
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        finished = False
        prompt_tokens = len(prompt["prompt_token_ids"])
        completion_tokens = 0
        finish_reason = None
        self.state.active.add(request_id)

        def chunk(text: str | None, reason: str | None, first: bool = False) -> str:
            if chat:
                delta: dict[str, Any] = {"role": "assistant", "content": ""} if first else {}
                if text:
                    delta["content"] = text
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
            else:
                choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": reason}
            return sse({"id": request_id, "object": obj, "created": created, "model": self.settings.model_name,
                        "choices": [choice]})

        try:
            if chat:
                yield chunk(None, None, first=True)
            async for output in engine.generate(prompt, params, request_id):
                piece = output.outputs[0]
                completion_tokens += len(piece.token_ids)
                if piece.text:
                    yield chunk(piece.text, None)
                if output.finished:
                    finish_reason = piece.finish_reason
            finished = True  # the engine is done with it: a client leaving now has nothing left to abort
            self.state.completed += 1
            yield chunk(None, finish_reason or "stop")
            if include_usage:
                yield sse({"id": request_id, "object": obj, "created": created, "model": self.settings.model_name,
                           "choices": [], "usage": usage(prompt_tokens, completion_tokens)})
            yield "data: [DONE]\n\n"
        finally:
            if not finished:
                logger.info("stream of %s ended early (client gone?): aborting it", request_id)
                await abort_quietly(engine, request_id)
                self.state.aborted += 1
            self.state.active.discard(request_id)
            slot.release()

    def full_response(self, request_id: str, final, chat: bool) -> dict[str, Any]:
        piece = final.outputs[0]
        reason = piece.finish_reason or "stop"
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": piece.text},
                      "logprobs": None, "finish_reason": reason}
        else:
            choice = {"index": 0, "text": piece.text, "logprobs": None, "finish_reason": reason}
        return {"id": request_id, "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()), "model": self.settings.model_name, "choices": [choice],
                "usage": usage(len(final.prompt_token_ids or []), len(piece.token_ids))}


async def parse_body(request: Request, model: type[BaseModel]):
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, f"the request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # a small body can still nest deeper than the parser's stack
        raise APIError(400, "the request body is not valid JSON: it nests too deeply") from exc
    if not isinstance(data, dict):
        raise APIError(400, "the request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise APIError(400, f"invalid field {where}: {first['msg']}", param=where) from exc


async def tokenize(tokenizer, text: str, add_special_tokens: bool, param: str) -> list[int]:
    """Encode ``text``; long texts in a worker thread so that they do not stall every other stream."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # JSON allows a lone surrogate escape; the tokenizer raises TypeError on it
        raise APIError(400, f"the {param} is not valid Unicode text: {exc.reason} at position {exc.start}",
                       param=param) from exc
    if len(text) < 16_384:
        return tokenizer.encode(text, add_special_tokens=add_special_tokens)
    return await asyncio.to_thread(tokenizer.encode, text, add_special_tokens=add_special_tokens)


def make_sampling_params(body: _SamplingFields, max_tokens: int, stream: bool):
    """SamplingParams from the request; vLLM's own checks (``stop=[""]`` and the like) become a 400."""
    from vllm import SamplingParams
    from vllm.exceptions import VLLMClientError
    from vllm.sampling_params import RequestOutputKind

    try:
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=body.temperature,
            top_p=body.top_p,
            stop=body.stop,
            seed=body.seed,
            presence_penalty=body.presence_penalty,
            frequency_penalty=body.frequency_penalty,
            ignore_eos=body.ignore_eos,
            output_kind=RequestOutputKind.DELTA if stream else RequestOutputKind.FINAL_ONLY,
        )
    except (VLLMClientError, ValueError, TypeError) as exc:
        raise APIError(400, f"invalid sampling parameters: {exc}", param=getattr(exc, "parameter", None)) from exc


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"


async def _ask_supported_tasks(engine) -> None:
    """vLLM's AsyncLLM asks its engine core which tasks it supports on the first request and caches the answer;
    asking at startup, as vLLM's own API server does, keeps that round trip to the engine off the first request."""
    getter = getattr(engine, "get_supported_tasks", None)
    if getter is not None:
        await getter()


async def _engine_tokenizer(engine):
    getter = getattr(engine, "get_tokenizer", None)
    if getter is not None:
        tok = getter()
        return await tok if asyncio.iscoroutine(tok) else tok
    return engine.tokenizer


def _engine_unfinished(engine) -> int | None:
    processor = getattr(engine, "output_processor", None)
    counter = getattr(processor, "get_num_unfinished_requests", None)
    return counter() if counter is not None else None


def serve(settings: ServerSettings) -> None:
    """Run the server in this process until interrupted (SIGINT/SIGTERM stop the engine cleanly)."""
    import uvicorn

    settings.validate()
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(settings.log_level.upper())
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=settings.log_level,
                timeout_graceful_shutdown=10)
