"""A LitServe API file served for ``vllm-lint validate``, as its ``__main__`` serves it.

The file runs as ``__main__`` (no command-line arguments). Its ``LitServer.run(...)`` serves on the
launcher's host and port, without writing LitServe's ``client.py`` beside the user's file. The API's model
is built in LitServe's spawned inference workers, which get the launcher's patches through
:mod:`vllm_lint.reference.spawned`. The server is ready when LitServe's health check answers 200, once
every worker has run ``setup()``.

An API whose ``decode_request(request)`` takes the raw request has no request schema in FastAPI's
document; the fields it reads (``request["prompt"]``) are put in the document, so that the harness finds the
route as for FastAPI.
"""

from __future__ import annotations

import ast
import inspect
import runpy
import sys
from pathlib import Path

from vllm_lint.reference.python_source import imports_and_calls
from vllm_lint.reference.request_fields import fields_read, post_routes_document

HEALTH_PATH = "/health"


def is_litserve_server(source: str) -> bool:
    """A file that imports LitServe and builds a ``LitServer``."""
    return imports_and_calls(source, "litserve", "LitServer")


def run_litserve_main(path: Path, host: str, port: int) -> None:
    import litserve
    import litserve.mcp
    import litserve.server

    if not getattr(litserve.mcp, "_is_mcp_installed", True):
        # LitServe (0.2.19) mounts its MCP server when the `mcp` package is installed, but imports the parts
        # it needs only with `fastmcp` too: with the MCP SDK alone, run() fails (NameError: MCPServer).
        litserve.server._MCP_AVAILABLE = False
    original_run = litserve.LitServer.run
    signature = inspect.signature(original_run)

    def run(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.arguments.update(host=host, port=port, generate_client_file=False)
        _document_raw_requests(self)
        print(f"[vllm-lint launch] LitServer.run on {host}:{port}", file=sys.stderr, flush=True)
        return original_run(*bound.args, **bound.kwargs)

    litserve.LitServer.run = run
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    runpy.run_path(str(path), run_name="__main__")
    raise SystemExit(f"{path.name} never calls LitServer.run(): validate serves the LitServer its "
                     "`if __name__ == \"__main__\":` block runs")


def _raw_request(expr: ast.expr) -> str | None:
    """"json" for ``request``, the parsed JSON body LitServe gives ``decode_request``."""
    return "json" if isinstance(expr, ast.Name) and expr.id == "request" else None


def _document_raw_requests(server) -> None:
    raw = []
    for api in server.litapi_connector:
        parameter = inspect.signature(api.decode_request).parameters.get("request")
        if parameter is None or parameter.annotation is not inspect.Parameter.empty:
            continue  # a typed request: FastAPI's document has its schema
        raw.append((api.api_path, fields_read(api.decode_request, _raw_request)))
    if raw:
        document = server.app.openapi()
        document["paths"].update(post_routes_document("LitServe", raw)["paths"])
        server.app.openapi_schema = document
