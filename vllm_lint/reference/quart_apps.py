"""Serve a Quart app as Quart serves it, for ``vllm-lint validate``.

Quart is ASGI, but keeps Flask's ``url_map`` and ``view_functions``: it must not be taken for a Flask app (a
WSGI server calls it with two arguments, not ASGI's three). ``app.run()`` serves it on Hypercorn (Quart's
``run_task``), which runs the app's start-up (``before_serving``, ``while_serving``, where a fix builds its
engine) before it listens, so the launcher's document answers once the app is ready. A file whose
``if __name__ == "__main__":`` block runs the app (``app.run(...)``, ``app.run_task(...)``) runs as
``__main__`` (``server_kinds.serves_under_main``), as its author starts it; a file that only builds ``app``
is served by ``app.run()`` all the same. Either way the app serves on the launcher's host and port, without
Quart's reloader (it would restart the process when a file changes), the rest of the call kept.

Before the app starts, the launcher adds an OpenAPI document of its POST routes (Quart keeps none) with the
request fields each view reads (``await request.get_json()``, ``await request.form``, ``request.args``), as
for Flask, and the count of tokens generated.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Callable

from vllm_lint.reference.python_source import imported_packages
from vllm_lint.reference.request_fields import url_map_openapi

OPENAPI_PATH = "/openapi.json"
# What serves a Quart app: its own methods, over Hypercorn.
_RUNS = ("run", "run_task")


def quart_app_names(tree: ast.Module) -> set[str]:
    """The module-level names a file that imports quart binds to ``Quart(...)``."""
    if "quart" not in imported_packages(tree):
        return set()
    return {target.id for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func).split(".")[-1] == "Quart"
            for target in node.targets if isinstance(target, ast.Name)}


def quart_runs(tree: ast.Module) -> set[str]:
    """The calls that serve the file's Quart app (``app.run``, ``app.run_task``), as ``ast.unparse`` writes them."""
    return {f"{name}.{method}" for name in quart_app_names(tree) for method in _RUNS}


def is_quart_app(app) -> bool:
    quart = sys.modules.get("quart")
    return quart is not None and isinstance(app, quart.Quart)


def quart_openapi(app) -> dict:
    """An OpenAPI document of a Quart app's POST routes, with the fields each view reads."""
    return url_map_openapi(app)


def describe_quart(app, stats_path: str, generated_tokens: Callable[[], int]) -> None:
    """Add the document and the token count to the app, once (``run`` calls ``run_task``)."""
    if getattr(app, "_vllm_lint_described", False):
        return
    app._vllm_lint_described = True
    document = quart_openapi(app)

    async def openapi():
        return document

    async def tokens():
        return {"generated_tokens": generated_tokens()}

    app.add_url_rule(OPENAPI_PATH, "vllm_lint_openapi", openapi, methods=["GET"])
    app.add_url_rule(stats_path, "vllm_lint_generated_tokens", tokens, methods=["GET"])


def serve_quart_on(host: str, port: int, stats_path: str, generated_tokens: Callable[[], int]) -> None:
    """Make every Quart app this process runs (``app.run``, ``app.run_task``) serve on ``host:port``, described."""
    from quart import Quart

    def moved(original, **overrides):
        signature = inspect.signature(original)

        def method(self, *args, **kwargs):
            describe_quart(self, stats_path, generated_tokens)
            bound = signature.bind(self, *args, **kwargs)
            bound.arguments.update(host=host, port=port, **overrides)
            return original(*bound.args, **bound.kwargs)

        return method

    Quart.run = moved(Quart.run, use_reloader=False)  # type: ignore[method-assign]
    Quart.run_task = moved(Quart.run_task)  # type: ignore[method-assign]
