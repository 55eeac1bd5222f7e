"""Serve a Sanic app as its file serves it, for ``vllm-lint validate``.

The file runs as ``__main__`` with no command-line arguments; the ``app.run(...)`` it makes serves on the
launcher's host and port, in Sanic's single-process mode where Sanic has it (``single_process=True``, 22.9 and
later; the settings that need Sanic's worker manager, ``workers``, ``fast``, ``auto_reload`` and ``dev``, are
dropped). Sanic 22.9 and later otherwise serve the app from a worker process they spawn, a fresh interpreter
that would import the file again without the launcher's patches; the one worker serves requests the same way
in either mode (its event loop, its listeners, its handlers). A file with no ``app.run`` (served by the
``sanic`` command) has its module-level app run the same way.

Before the app starts, the launcher adds an OpenAPI document of its routes (Sanic keeps none) with the request
fields each handler reads (``request.json``, ``request.form``, ``request.args``), so that the harness finds the
route that takes the prompt as it does in FastAPI's schema; and the count of generated tokens. Sanic runs the
app's ``before_server_start`` listeners (where a server may load its model) before it answers, so the document
answers once the app is ready.

Sanic 21.12 and later reject an app name that is not an identifier (with a space, say), which Sanic before 21.6
accepted and 21.6-21.9 warned of (sanic.dev, release notes 21.12, "Strict application and blueprint names"):
the launcher lets such a name through, as the Sanic the file was written for did, and says so.
"""

from __future__ import annotations

import ast
import inspect
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

from vllm_lint.reference.python_source import imports_and_calls
from vllm_lint.reference.request_fields import fields_read, routes_document
from vllm_lint.reference.spawned import keep_children_off_the_file

OPENAPI_PATH = "/openapi.json"
# Where a Sanic handler reads a request value from (``request.json["text"]``, ``request.args.get("text")``),
# and where an OpenAPI document puts it.
_SANIC_FIELDS = {"json": "json", "form": "form", "args": "query"}
# app.run's settings that need Sanic's worker manager, which single-process mode refuses.
_MANAGER_SETTINGS = ("workers", "fast", "auto_reload", "dev", "reload_dir")
_OWN_ROUTES = ("vllm_lint_openapi", "vllm_lint_generated_tokens")


def is_sanic_app(source: str) -> bool:
    """A file that imports sanic and builds an app with ``Sanic(...)``."""
    return imports_and_calls(source, "sanic", "Sanic")


def _request_source(expr: ast.expr) -> str | None:
    """Where a Sanic handler reads a field from: ``request.json``, ``request.form``, ``request.args``."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        return _SANIC_FIELDS.get(expr.attr)
    return None


def sanic_openapi(app) -> dict:
    """An OpenAPI document of a Sanic app's routes with no path parameter, with the fields each handler reads."""
    routes = []
    for route in app.router.routes:
        if "<" in route.path or route.name.split(".")[-1] in _OWN_ROUTES:  # a path parameter: <name:int>
            continue
        fields = fields_read(route.handler, _request_source)
        for method in sorted(route.methods & {"GET", "POST"}):
            routes.append(("/" + route.path.lstrip("/"), method.lower(), fields))
    return routes_document(app.name, routes)


class _AnyName:
    """Sanic's check of an app's name (``VALID_NAME.match``), letting through a name it would reject."""

    def __init__(self, strict) -> None:
        self._strict = strict

    def match(self, name: str):
        if not self._strict.match(name):
            print(f"[vllm-lint launch] Sanic app name {name!r}: not an identifier, which Sanic 21.12 and later "
                  "reject; let through, as Sanic before 21.12 did", file=sys.stderr, flush=True)
        return True


def allow_any_app_name() -> None:
    from sanic.base import root

    if not isinstance(root.VALID_NAME, _AnyName):
        root.VALID_NAME = _AnyName(root.VALID_NAME)  # type: ignore[assignment]


def run_settings(run: Callable, kwargs: dict, host: str, port: int) -> dict:
    """``app.run``'s keywords, on ``host:port`` in one process where this Sanic's ``run`` takes ``single_process``."""
    kept = {k: v for k, v in kwargs.items() if k not in (*_MANAGER_SETTINGS, "host", "port", "sock", "unix")}
    kept.update(host=host, port=port)
    if "single_process" in inspect.signature(run).parameters:
        kept["single_process"] = True
    return kept


def add_routes(app, stats_path: str, generated_tokens: Callable[[], int]) -> None:
    """The OpenAPI document of the app's routes and the launcher's count of generated tokens."""
    from sanic.response import json

    async def openapi(request):
        return json(sanic_openapi(app))

    async def tokens(request):
        return json({"generated_tokens": generated_tokens()})

    app.add_route(openapi, OPENAPI_PATH, methods=["GET"], name="vllm_lint_openapi")
    app.add_route(tokens, stats_path, methods=["GET"], name="vllm_lint_generated_tokens")


def run_sanic_main(path: Path, host: str, port: int, stats_path: str, generated_tokens: Callable[[], int]) -> None:
    """Run the file as ``__main__`` (no arguments), its ``app.run(...)`` serving on ``host:port``."""
    from sanic import Sanic

    allow_any_app_name()
    original_run = Sanic.run
    served = []

    def run(self, *args, **kwargs):
        served.append(self)
        add_routes(self, stats_path, generated_tokens)
        settings = run_settings(original_run, dict(zip(("host", "port"), args)) | kwargs, host, port)
        return original_run(self, **settings)

    Sanic.run = run  # type: ignore[method-assign]
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    keep_children_off_the_file(path)  # vLLM's engine core, spawned, must not run the app again
    module = runpy.run_path(str(path), run_name="__main__")
    if not served:  # served by the `sanic` command: its module-level app
        apps = [value for value in module.values() if isinstance(value, Sanic)]
        if not apps:
            raise SystemExit(f"{path} runs no Sanic app and defines none at module level")
        run(apps[0])
