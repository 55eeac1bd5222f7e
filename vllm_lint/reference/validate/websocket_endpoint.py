"""A websocket-only app's endpoint: the route whose handler takes a prompt, as the launcher lists it.

The launcher serves the app's websocket routes and how each handler talks
(:mod:`vllm_lint.reference.websocket_routes`); the first route that reads a text message, or a JSON one with
a prompt-like key, is the endpoint. Each request opens a connection of its own and sends one prompt
(:mod:`vllm_lint.reference.websocket_load`), so the load's concurrency is the number of connections at once.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from vllm_lint.reference.validate.endpoint import PROMPT_FIELDS
from vllm_lint.reference.validate.errors import ValidationError
from vllm_lint.reference.websocket_load import WebSocketExchange

_FRAMES = {"text": "a text message", "json": "a JSON message", "bytes": "a binary message"}


@dataclass
class WebSocketEndpoint:
    path: str
    frame: str  # "text", "json" or "bytes"
    field: str | None = None  # the JSON message's prompt key
    messages: bool = False  # the key holds chat messages ([{"role": "user", "content": prompt}])
    greeting: int = 0
    replies: int | None = 1
    ends_with: Any = None
    where: str = "websocket"
    stream_field: str | None = None

    def request(self, prompt: str, stream: bool = False) -> WebSocketExchange:
        if self.frame == "json":
            value: Any = [{"role": "user", "content": prompt}] if self.messages else prompt
            message: str | bytes = json.dumps({self.field: value})
        else:
            message = prompt.encode() if self.frame == "bytes" else prompt
        return WebSocketExchange(self.path, message, self.greeting, self.replies, self.ends_with)

    def describe(self) -> str:
        sent = f"{_FRAMES[self.frame]} with {self.field!r}" if self.field else f"the prompt as {_FRAMES[self.frame]}"
        if self.replies == 1:
            answer = "the answer its first message"
        elif self.replies is not None:
            answer = f"the answer its next {self.replies} messages"
        else:
            answer = "the answer its messages until " + (f"{self.ends_with!r}" if self.ends_with is not None
                                                          else "the server closes")
        first = f", after {self.greeting} on connecting" if self.greeting else ""
        return f"websocket {self.path}: {sent}, {answer}{first}"


def serves_websockets(source: str) -> bool:
    """Whether a module adds a websocket route: ``@app.websocket(...)`` (``@app.websocket_route``), ``WebSocketRoute(...)``,
    ``add_websocket_route``/``add_api_websocket_route``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                   and d.func.attr in ("websocket", "websocket_route") for d in node.decorator_list):
                return True
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("WebSocketRoute", "add_websocket_route", "add_api_websocket_route"):
                return True
    return False


def endpoint_of(route: dict[str, Any]) -> WebSocketEndpoint:
    """The endpoint a listed route makes, or a ValidationError saying why validate cannot send it prompts."""
    frame, path = route.get("receives"), route["path"]
    if frame not in _FRAMES:
        raise ValidationError(f"{path}: its handler reads no message (receive_text, receive_json, receive_bytes or "
                              "iter_text, ...)")
    field, messages = None, False
    if frame == "json":
        read = list(route.get("fields") or [])
        field = next((name for name in PROMPT_FIELDS if name in read), "messages" if "messages" in read else None)
        if field is None:
            raise ValidationError(f"{path}: its handler reads no prompt-like key ({', '.join(PROMPT_FIELDS)}, messages) "
                                  f"of the JSON message it receives (it reads: {', '.join(read) or 'none'})")
        messages = field == "messages"
    replies, ends_with = route.get("replies", 1), route.get("ends_with")
    if replies is None and ends_with is None and not route.get("closes"):
        raise ValidationError(f"{path}: its handler sends a message per step of a loop for each prompt, then waits "
                              "for the next prompt with no end message: validate cannot tell where an answer ends")
    return WebSocketEndpoint(path, frame, field, messages, int(route.get("greeting") or 0), replies, ends_with)


def discover_websocket_endpoint(base_url: str, no_post_route: ValidationError) -> WebSocketEndpoint:
    """The endpoint of a server with no POST route that takes a prompt: one of its websocket routes; else
    ``no_post_route`` is raised."""
    import httpx

    from vllm_lint.reference.websocket_routes import WEBSOCKETS_PATH

    try:
        response = httpx.get(base_url + WEBSOCKETS_PATH, timeout=10, trust_env=False)
        routes = response.json() if response.status_code == 200 else []
    except (httpx.HTTPError, ValueError):
        routes = []
    if not isinstance(routes, list) or not routes:
        raise no_post_route
    problems = []
    for route in routes:
        try:
            return endpoint_of(route)
        except ValidationError as exc:
            problems.append(str(exc))
    raise ValidationError("no POST route takes a prompt, and no websocket route does: " + "; ".join(problems))
