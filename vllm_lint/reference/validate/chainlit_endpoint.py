"""A Chainlit app's endpoint: a user message sent over Chainlit's socket.io protocol, as its web page sends one.

Chainlit has no HTTP route that takes a message: its page connects a socket.io client to ``/ws/socket.io`` with
``{"sessionId", "clientType"}`` as its auth, emits ``connection_successful`` and then ``client_message`` with
the message as a step (``{"id", "type": "user_message", "output": text, "createdAt"}``); the app's
``@cl.on_message`` runs between a ``task_start`` and a ``task_end`` event, and each message it sends comes as a
``new_message`` step (``update_message`` when it is changed, ``stream_token`` for each streamed token)
(chainlit 2.12 ``socket.py``, ``emitter.py``). Each request here is one such session, as one user's first message
in a new chat: the answer is recorded as the list of the assistant messages' texts, in the order they came,
each as it ended (its last update, or its streamed tokens joined), read by the comparison as it reads an HTTP
body.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from vllm_lint.reference.loadgen import LoadResult, Record, check_loopback, drive

SOCKET_IO_PATH = "/ws/socket.io"
OK = 200  # a Record's status for a task that ended
FAILED = 500  # and for one whose answer is Chainlit's error message (the callback raised)


def user_message(prompt: str) -> dict[str, Any]:
    """``client_message``'s payload for one message typed by the user, as Chainlit's page sends it."""
    step = {"id": str(uuid.uuid4()), "name": "User", "type": "user_message", "output": prompt,
            "createdAt": dt.datetime.now(dt.timezone.utc).isoformat()}
    return {"message": step, "fileReferences": []}


class Conversation:
    """The events of one session that make up the app's answer to one message."""

    def __init__(self) -> None:
        self.started = False
        self.ended = asyncio.Event()
        self.first_output: float | None = None
        self.order: list[str] = []
        self.texts: dict[str, str] = {}
        self.failed = False

    def on_task_start(self) -> None:
        self.started = True

    def on_task_end(self) -> None:
        if self.started:  # connection_successful ends a task of its own before the message is sent
            self.ended.set()

    def on_step(self, step: dict) -> None:
        """A ``new_message`` or ``update_message``: an assistant message's text so far."""
        if step.get("type") not in ("assistant_message", None) or not isinstance(step.get("output"), str):
            return
        self._seen(step["id"])
        self.texts[step["id"]] = step["output"]
        self.failed = self.failed or bool(step.get("isError"))

    def on_token(self, data: dict) -> None:
        if data.get("isInput"):
            return
        self._seen(data["id"])
        self.texts[data["id"]] = self.texts.get(data["id"], "") + data.get("token", "")

    def _seen(self, step_id: str) -> None:
        if self.first_output is None:
            self.first_output = time.perf_counter()
        if step_id not in self.order:
            self.order.append(step_id)

    def answer(self) -> list[str]:
        return [self.texts[step_id] for step_id in self.order]


@dataclass
class ChainlitEndpoint:
    where: str = "chainlit"
    stream_field: str | None = None

    def describe(self) -> str:
        return "Chainlit's socket.io client_message (one new chat session per prompt), the answer its assistant messages"

    async def run_load(self, base_url: str, prompt: Callable[[int], str], *, requests: int, concurrency: int,
                       timeout: float, max_seconds: float, count_tokens: Callable[[Record], int] | None,
                       progress: Callable[[str], None] | None) -> LoadResult:
        check_loopback(base_url)

        async def one(i: int) -> Record:
            t0 = time.perf_counter()
            try:
                conversation = await asyncio.wait_for(_converse(base_url, prompt(i)), timeout)
            except Exception as exc:  # noqa: BLE001 - socketio's ConnectionError and its kin, timeouts, OSError
                return Record(i, None, time.perf_counter() - t0, None, error=f"{type(exc).__name__}: {exc}")
            latency = time.perf_counter() - t0
            ttfb = None if conversation.first_output is None else conversation.first_output - t0
            answer = conversation.answer()
            if conversation.failed:
                return Record(i, FAILED, latency, ttfb, answer, "application/json",
                              error=f"Chainlit error message: {' '.join(answer)[:200]}")
            record = Record(i, OK, latency, ttfb, answer, "application/json")
            if count_tokens is not None:
                record.tokens = count_tokens(record)
            return record

        return await drive(one, requests=requests, concurrency=concurrency, max_seconds=max_seconds, progress=progress)


async def _converse(base_url: str, prompt: str) -> Conversation:
    import socketio

    client = socketio.AsyncClient(reconnection=False)
    conversation = Conversation()
    client.on("task_start", lambda *_: conversation.on_task_start())
    client.on("task_end", lambda *_: conversation.on_task_end())
    client.on("new_message", conversation.on_step)
    client.on("update_message", conversation.on_step)
    client.on("stream_token", conversation.on_token)
    await client.connect(base_url, socketio_path=SOCKET_IO_PATH, transports=["websocket"],
                         auth={"sessionId": str(uuid.uuid4()), "clientType": "webapp", "userEnv": "{}"})
    try:
        await client.emit("connection_successful")
        await client.emit("client_message", user_message(prompt))
        await conversation.ended.wait()
    finally:
        await client.disconnect()
    return conversation
