"""Describe a Falcon app for ``vllm-lint validate``, which serves it as Falcon's docs say to.

A ``falcon.asgi.App`` is served by uvicorn, whose lifespan start-up runs each middleware's ``process_startup``
(where a fix builds its engine) before it listens; a ``falcon.App`` (WSGI) by werkzeug's threaded server, a
thread per request as the WSGI servers Falcon's docs name serve it (gunicorn's threads, waitress), the app's
module-level code (its engine) run as the file was imported. Falcon keeps no schema: the launcher adds an
OpenAPI document of the app's POST routes with the request fields each responder reads (``await
req.get_media()``, ``req.media``, ``req.get_param("prompt")``, ``req.params``), so that the harness finds the
route that takes the prompt as in FastAPI's schema, and a route with the count of tokens generated.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from typing import Callable

from vllm_lint.reference.request_fields import attribute_source, fields_read, post_routes_document

OPENAPI_PATH = "/openapi.json"
# What a responder reads a request value from: the body as its media handler parses it (JSON, or a form with
# Falcon's URL-encoded handler), awaited on ASGI or not, and the query string.
_FALCON_FIELDS = {"get_media": "json", "media": "json", "params": "query"}


def is_falcon_app(app) -> bool:
    """A ``falcon.App`` or ``falcon.asgi.App`` (a subclass of it)."""
    falcon = sys.modules.get("falcon")
    return falcon is not None and isinstance(app, falcon.App)


def is_asgi(app) -> bool:
    asgi = sys.modules.get("falcon.asgi")
    return asgi is not None and isinstance(app, asgi.App)


def _falcon_source(expr: ast.expr) -> str | None:
    """"json" or "query" for ``await req.get_media()``, ``req.media``, ``req.params``."""
    return attribute_source(expr, _FALCON_FIELDS)


def _params_read(responder: Callable) -> dict[str, str]:
    """``req.get_param("prompt")`` (and its typed kin, ``get_param_as_int``): query parameters."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(responder)))
    except (OSError, TypeError, SyntaxError):
        return {}
    return {node.args[0].value: "query" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith("get_param") and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)}


def falcon_openapi(app) -> dict:
    """An OpenAPI document of a Falcon app's POST routes (those without a field in their path), with the fields
    each responder reads."""
    from falcon.inspect import inspect_routes

    routes = []
    for route in inspect_routes(app):
        if "{" in route.path or not any(m.method == "POST" and not m.internal for m in route.methods):
            continue
        found = app._router.find(route.path)  # the resource's responders, as a request to the path finds them
        if found is None:
            continue
        responder = found[1]["POST"]
        routes.append((route.path, {**_params_read(responder), **fields_read(responder, _falcon_source)}))
    return post_routes_document(type(app).__name__, routes)


def add_falcon_routes(app, stats_path: str, generated_tokens: Callable[[], int]) -> None:
    """Serve the app's OpenAPI document and the count of tokens generated, as the app's own responders."""
    document = falcon_openapi(app)
    asgi = is_asgi(app)

    def resource(answer: Callable[[], dict]) -> object:
        if asgi:  # falcon.asgi refuses a responder that is not a coroutine function
            class Answer:
                async def on_get(self, req, resp):
                    resp.media = answer()
        else:
            class Answer:  # type: ignore[no-redef]
                def on_get(self, req, resp):
                    resp.media = answer()
        return Answer()

    app.add_route(OPENAPI_PATH, resource(lambda: document))
    app.add_route(stats_path, resource(lambda: {"generated_tokens": generated_tokens()}))
