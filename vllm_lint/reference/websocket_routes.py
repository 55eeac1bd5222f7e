"""The websocket routes of a FastAPI or Starlette app and how each handler talks, for ``vllm-lint validate``.

The launcher serves them at :data:`WEBSOCKETS_PATH` (a GET route left out of the OpenAPI schema), read from
the running app's routes, so that routers, prefixes and mounts are where the app puts them. What a handler
reads and sends is read off its source, as :mod:`vllm_lint.reference.request_fields` reads a Flask view's:

* the message it takes: ``await websocket.receive_text()`` (or ``receive_json``/``receive_bytes``, or
  ``async for prompt in websocket.iter_text()``); a text message it parses (``json.loads(text)``,
  ``Model.model_validate_json(text)``) is a JSON one;
* for a JSON message, the keys it reads (``data["prompt"]``, ``data.get("prompt")``, or the attributes of a
  model built from it: ``Request(**data).prompt``);
* what it sends before it reads a prompt (a greeting), and per prompt: one message, a fixed number, or a
  message per step of a loop (a token stream), then a constant message (``"[DONE]"``) or the connection's end.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from typing import Any

WEBSOCKETS_PATH = "/__vllm_lint__/websockets"

_RECEIVES = {"receive_text": "text", "receive_json": "json", "receive_bytes": "bytes",
             "iter_text": "text", "iter_json": "json", "iter_bytes": "bytes"}
_SENDS = ("send_text", "send_json", "send_bytes")
_PARSES = ("loads",)  # json.loads(text): a dict
_MODEL_PARSES = ("model_validate_json", "parse_raw")  # Model.model_validate_json(text): a model
_MODEL_BUILDS = ("model_validate", "parse_obj")  # Model.model_validate(data); Model(**data) too
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# What a path parameter is given: "0" is a valid str, int and float (FastAPI converts a typed parameter).
_UUID = "00000000-0000-0000-0000-000000000000"


def handler_protocol(source: str) -> dict[str, Any]:
    """How the first function in ``source``, a websocket handler, talks (the keys of :func:`websocket_routes`'
    entries but ``path``)."""
    tree = ast.parse(textwrap.dedent(source))
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    none: dict[str, Any] = {"receives": None, "fields": [], "greeting": 0, "replies": 1, "ends_with": None,
                            "closes": True}
    if func is None:
        return none
    parents = {child: node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}
    receive = min((n for n in ast.walk(func) if isinstance(n, ast.Call) and _method(n) in _RECEIVES), key=_position, default=None)
    if receive is None:
        return none
    frame = _RECEIVES[_method(receive)]  # type: ignore[index]
    received = _bound_to(receive, parents)
    parsed, models = set(), set()
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and _parses(node.value, received, _PARSES):
            parsed |= _names(node.targets)
        elif isinstance(node, ast.Assign) and _parses(node.value, received, _MODEL_PARSES):
            models |= _names(node.targets)
    if frame == "text" and (parsed or models):
        frame, payload = "json", parsed
    else:
        payload = received if frame == "json" else set()
    fields = _keys_read(func, payload, models) if frame == "json" else []
    loop = _prompt_loop(receive, parents)
    section = loop if loop is not None else func
    sends = sorted((n for n in ast.walk(section) if isinstance(n, ast.Call) and _method(n) in _SENDS
                    and not _guarded(n, parents, section, (ast.ExceptHandler,))), key=_position)
    # A greeting: what the handler sends on every connection before it reads the prompt, in its prompt loop or before it.
    before = [s for s in ast.walk(func) if _method(s) in _SENDS and _position(s) < _position(receive)
              and not _guarded(s, parents, func, (ast.If, ast.ExceptHandler, *_LOOPS), allowed=loop)]
    after = [s for s in sends if _position(s) > _position(receive)]
    streamed = [s for s in after if _guarded(s, parents, section, _LOOPS)]
    if not streamed:
        replies = sum(1 for s in after if not _guarded(s, parents, section, (ast.If,)))
        return {"receives": frame, "fields": fields, "greeting": len(before), "replies": max(replies, 1),
                "ends_with": None, "closes": loop is None}
    last = max(streamed, key=_position)
    ends = [s for s in after if _position(s) > _position(last) and not _guarded(s, parents, section, (ast.If, *_LOOPS))]
    closes = loop is None or any(_method(n) == "close" and _position(n) > _position(last) for n in ast.walk(section))
    return {"receives": frame, "fields": fields, "greeting": len(before), "replies": None,
            "ends_with": _literal(ends[0]) if ends else None, "closes": closes}


def websocket_routes(app) -> list[dict[str, Any]]:
    """Each websocket route of ``app`` (a FastAPI or Starlette app): its path, with any path parameter
    filled in, and how its handler talks (:func:`handler_protocol`)."""
    from starlette.routing import Mount, WebSocketRoute

    found: list[dict[str, Any]] = []

    def walk(routes, prefix: str) -> None:
        for route in routes:
            if isinstance(route, WebSocketRoute):
                found.append({"path": prefix + _concrete(route), **_protocol_of(route.endpoint)})
            elif isinstance(route, Mount):
                walk(route.routes, prefix + route.path)

    walk(getattr(app, "routes", None) or [], "")
    return found


def add_websockets_route(app) -> None:
    """Serve :func:`websocket_routes` at :data:`WEBSOCKETS_PATH` on a FastAPI or Starlette app."""
    router = getattr(app, "router", None)
    if router is None or not hasattr(router, "routes") or not hasattr(app, "user_middleware"):
        return  # not a Starlette app (Flask's url_map has no websocket routes)
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def listing(request):
        return JSONResponse(websocket_routes(app))

    router.routes.insert(0, Route(WEBSOCKETS_PATH, listing, methods=["GET"], include_in_schema=False))


def _protocol_of(endpoint) -> dict[str, Any]:
    try:
        source = inspect.getsource(endpoint)
    except (OSError, TypeError):
        source = ""
    try:
        protocol = handler_protocol(source)
    except SyntaxError:
        protocol = handler_protocol("")
    if protocol["ends_with"] is not None:
        try:
            json.dumps(protocol["ends_with"])
        except (TypeError, ValueError):
            protocol["ends_with"] = None
    return protocol


def _concrete(route) -> str:
    path = route.path_format
    for name, convertor in route.param_convertors.items():
        value = _UUID if type(convertor).__name__ == "UUIDConvertor" else "0"
        path = path.replace("{" + name + "}", value)
    return path


def _method(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _names(targets: list[ast.expr]) -> set[str]:
    return {t.id for t in targets if isinstance(t, ast.Name)}


def _bound_to(receive: ast.Call, parents: dict[ast.AST, ast.AST]) -> set[str]:
    """The name the received message is bound to: ``x = await ws.receive_text()``, ``async for x in ws.iter_text()``."""
    node: ast.AST = receive
    while isinstance(parents.get(node), ast.Await):
        node = parents[node]
    parent = parents.get(node)
    if isinstance(parent, ast.Assign):
        return _names(parent.targets)
    if isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
        return {parent.target.id}
    if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is node and isinstance(parent.target, ast.Name):
        return {parent.target.id}
    return set()


def _parses(value: ast.expr, text: set[str], names: tuple[str, ...]) -> bool:
    """``json.loads(text)`` (``names``: ``loads``), or the same around the receive itself."""
    if not isinstance(value, ast.Call) or _method(value) not in names or not value.args:
        return False
    arg = value.args[0]
    while isinstance(arg, ast.Await):
        arg = arg.value
    return (isinstance(arg, ast.Name) and arg.id in text) or _method(arg) == "receive_text"


def _keys_read(func: ast.AST, payload: set[str], models: set[str]) -> list[str]:
    """The keys read off the JSON message: ``data["k"]``, ``data.get("k")``, or ``m.k`` of ``m = Model(**data)``
    (or of ``models``, the models parsed from the message's text)."""
    models = set(models)
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            spread = any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id in payload for k in call.keywords)
            validated = _method(call) in _MODEL_BUILDS and call.args \
                and isinstance(call.args[0], ast.Name) and call.args[0].id in payload
            if spread or validated:
                models |= _names(node.targets)
    keys: list[str] = []
    for node in sorted(ast.walk(func), key=_position):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in payload \
                and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in payload \
                and node.args and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in models:
            key = node.attr
        if isinstance(key, str) and key not in keys:
            keys.append(key)
    return keys


def _prompt_loop(receive: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The loop that reads one prompt per turn: the nearest loop around the receive (or the ``async for``
    over ``iter_text()`` itself)."""
    node = parents.get(receive)
    while node is not None:
        if isinstance(node, _LOOPS):
            return node
        node = parents.get(node)
    return None


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST], section: ast.AST, kinds: tuple[type, ...],
             allowed: ast.AST | None = None) -> bool:
    """Whether ``node`` sits inside a ``kinds`` node (a loop, an ``if``, an ``except``) within ``section``,
    other than ``allowed``."""
    around = parents.get(node)
    while around is not None and around is not section:
        if isinstance(around, kinds) and around is not allowed:
            return True
        around = parents.get(around)
    return False


def _literal(send: ast.Call) -> Any:
    try:
        return ast.literal_eval(send.args[0]) if send.args else None
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
