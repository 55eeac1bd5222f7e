"""The load generator's websocket driver: one connection per request, loopback only, the same records as HTTP's.

A request connects to the route, reads the messages the server sends first (a greeting), sends the prompt as
one message and reads the answer: a number of messages, or messages until a given end message or until the
server closes. Its latency runs from the connection's start to the answer's last message, its time to first
byte to the answer's first message. A message that is a JSON object or array is recorded as JSON (the
server may ``send_text(json.dumps(...))`` as well as ``send_json``), any other as text; an answer of
several messages is recorded as a stream of them, as an event stream's ``data:`` payloads are.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from vllm_lint.reference.loadgen import LoadResult, Record, check_loopback, drive

OK = 200  # a Record's status for a full answer (the load's records are HTTP-shaped)
MESSAGES = "application/x-websocket-messages"  # a Record's content type for an answer of several messages


@dataclass
class WebSocketExchange:
    """One prompt over one websocket connection."""

    path: str
    message: str | bytes
    greeting: int = 0  # messages the server sends on connecting, before it reads a prompt
    replies: int | None = 1  # messages that make the answer; None: until ``ends_with`` or the server closes
    ends_with: Any = None  # the (decoded) message that ends an answer of ``replies=None``; not part of it


def decode_message(message: str | bytes) -> tuple[Any, str]:
    """A message's value and content type: JSON for an object or array, else text."""
    text = message.decode("utf-8", errors="replace") if isinstance(message, bytes) else message
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text), "application/json"
        except ValueError:
            pass
    return text, "text/plain"


async def run_websocket_load(
    base_url: str,
    make_request: Callable[[int], WebSocketExchange],
    *,
    requests: int,
    concurrency: int,
    timeout: float = 300.0,
    max_seconds: float = 600.0,
    headers: dict[str, str] | None = None,
    count_tokens: Callable[[Record], int] | None = None,
    progress: Callable[[str], None] | None = None,
) -> LoadResult:
    """:func:`vllm_lint.reference.loadgen.run_load` for websocket routes: ``concurrency`` connections at once."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

    check_loopback(base_url)
    ws_base = "ws" + base_url[len("http"):] if base_url.startswith("http") else base_url
    # A connection is closed in the background once its answer is in: a server whose handler blocks its
    # event loop answers the closing handshake only when it next yields, and that wait is not the request's.
    closing: set[asyncio.Task] = set()

    async def one(i: int) -> Record:
        spec = make_request(i)
        t0 = time.perf_counter()
        ttfb = None
        answer: list[Any] = []
        kind = "text/plain"

        async def exchange() -> None:
            nonlocal ttfb, kind
            # No pings: a bad server's handler may block its event loop for longer than a ping's timeout.
            connection = await connect(ws_base + spec.path, proxy=None, ping_interval=None, open_timeout=None,
                                       max_size=None, compression=None, additional_headers=headers)
            try:
                for _ in range(spec.greeting):
                    await connection.recv()
                await connection.send(spec.message)
                while spec.replies is None or len(answer) < spec.replies:
                    try:
                        message = await connection.recv()
                    except ConnectionClosed:
                        if spec.replies is None and spec.ends_with is None and answer:
                            return  # the answer ends with the connection
                        raise
                    if ttfb is None:
                        ttfb = time.perf_counter() - t0
                    value, kind = decode_message(message)
                    if spec.replies is None and spec.ends_with is not None and value == spec.ends_with:
                        return
                    answer.append(value)
            finally:
                task = asyncio.create_task(connection.close())
                closing.add(task)
                task.add_done_callback(closing.discard)

        try:
            await asyncio.wait_for(exchange(), timeout)
        except InvalidStatus as exc:
            status = exc.response.status_code
            return Record(i, status, time.perf_counter() - t0, ttfb, error=f"HTTP {status}: the websocket upgrade was refused")
        except ConnectionClosed as exc:
            code = f" with {exc.rcvd.code}{' ' + exc.rcvd.reason if exc.rcvd.reason else ''}" if exc.rcvd else ""
            return Record(i, None, time.perf_counter() - t0, ttfb,
                          error=f"the server closed the websocket{code} after {len(answer)} of the answer's messages")
        except asyncio.TimeoutError:
            return Record(i, None, time.perf_counter() - t0, ttfb, error=f"no full answer within {timeout:g}s")
        except (WebSocketException, OSError) as exc:
            return Record(i, None, time.perf_counter() - t0, ttfb, error=f"{type(exc).__name__}: {exc}")
        latency = time.perf_counter() - t0
        if spec.replies == 1:
            record = Record(i, OK, latency, ttfb, answer[0], kind)
        else:
            record = Record(i, OK, latency, ttfb, answer, MESSAGES, streamed=True)
        if count_tokens is not None:
            record.tokens = count_tokens(record)
        return record

    try:
        return await drive(one, requests=requests, concurrency=concurrency, max_seconds=max_seconds, progress=progress)
    finally:
        if closing:
            await asyncio.wait(set(closing), timeout=timeout)
