"""Serve an aiohttp app as its file serves it, for ``vllm-lint validate``.

The file runs as ``__main__`` with no command-line arguments; the ``web.run_app(app, ...)`` it makes serves on
the launcher's host and port, the rest of the call kept. Before the app starts, the launcher adds an OpenAPI
document of its POST routes (aiohttp keeps none) with the request fields each handler reads (``await
request.json()``, ``await request.post()``, ``request.query``), so that the harness finds the route that takes
the prompt as it does in FastAPI's schema. aiohttp runs the app's start-up (its ``on_startup`` and
``cleanup_ctx``, where a fix builds its engine) before it listens, so the document answers once the app is ready.
"""

from __future__ import annotations

import ast
import runpy
import sys
from pathlib import Path

from vllm_lint.reference.python_source import imports_and_calls
from vllm_lint.reference.request_fields import awaited_read, fields_read, post_routes_document
from vllm_lint.reference.spawned import keep_children_off_the_file

OPENAPI_PATH = "/openapi.json"
# What an aiohttp handler awaits to read a body by hand, and where an OpenAPI document puts it.
_AIOHTTP_BODIES = {"json": "json", "post": "form"}


def is_aiohttp_app(source: str) -> bool:
    """A file that imports aiohttp and runs an app with ``web.run_app(...)``."""
    return imports_and_calls(source, "aiohttp", "run_app")


def _request_source(expr: ast.expr) -> str | None:
    """Where an aiohttp handler reads a field from: ``await request.json()``, ``await request.post()`` (a form),
    ``request.query``."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.attr == "query":
        return "query"
    return _AIOHTTP_BODIES.get(awaited_read(expr) or "")


def aiohttp_openapi(app) -> dict:
    """An OpenAPI document of an aiohttp app's POST routes, with the fields each handler reads."""
    routes = [(route.resource.canonical, fields_read(route.handler, _request_source))
              for route in app.router.routes() if route.method == "POST" and route.resource is not None]
    return post_routes_document("aiohttp", routes)


def run_aiohttp_main(path: Path, host: str, port: int) -> None:
    """Run the file as ``__main__`` (no arguments), its ``web.run_app(app, ...)`` serving on ``host:port``."""
    from aiohttp import web

    original_run_app = web.run_app

    def run_app(app, *args, **kwargs):
        document = aiohttp_openapi(app)

        async def openapi(request):
            return web.json_response(document)

        app.router.add_get(OPENAPI_PATH, openapi)
        kwargs.update(host=host, port=port)
        kwargs.pop("path", None)
        kwargs.pop("sock", None)
        return original_run_app(app, *args, **kwargs)

    web.run_app = run_app
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    keep_children_off_the_file(path)  # vLLM's engine core, spawned, must not run the app again
    runpy.run_path(str(path), run_name="__main__")
