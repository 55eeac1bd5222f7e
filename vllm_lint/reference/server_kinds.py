"""What kind of server a file is, read off its source before anything of it runs: the one decision by which
the launcher serves it, the harness waits for it to be ready, and validate's preparation gives it an ``app``
or not. A file of more than one kind is the first of :class:`ServerKind`'s order.
"""

from __future__ import annotations

import ast
from enum import Enum

from vllm_lint.reference.aiohttp_apps import is_aiohttp_app
from vllm_lint.reference.bentoml_services import is_bentoml_service
from vllm_lint.reference.chainlit_apps import is_chainlit_app
from vllm_lint.reference.django_views import serves_django_views
from vllm_lint.reference.gradio_apps import is_gradio_app
from vllm_lint.reference.litserve_apps import is_litserve_server
from vllm_lint.reference.python_source import imported_packages
from vllm_lint.reference.quart_apps import quart_runs
from vllm_lint.reference.ray_serve_apps import is_ray_serve_app
from vllm_lint.reference.sanic_apps import is_sanic_app


class ServerKind(Enum):
    BENTOML = "a BentoML service, under `bentoml serve`"
    GRPC = "a gRPC server, run as its __main__"
    LITSERVE = "a LitServe API, its LitServer run as the file's __main__ runs it"
    RAY_SERVE = "a Ray Serve application, on a local Ray cluster"
    GRADIO = "a Gradio app, launched as its __main__ launches it"
    AIOHTTP = "an aiohttp app, run as its __main__ runs it (web.run_app)"
    SANIC = "a Sanic app, run as its __main__ runs it (app.run), in one process"
    CHAINLIT = "a Chainlit app, as `chainlit run` serves it"
    UVICORN_MAIN = "an ASGI app its __main__ block serves (uvicorn.run, a Quart app's run)"
    DJANGO_VIEWS = "a Django views module"
    APP = "the file's module-level `app` (FastAPI, Starlette, Flask, Quart, Falcon)"


def kind_of(source: str) -> ServerKind:
    for kind, test in ((ServerKind.BENTOML, is_bentoml_service), (ServerKind.GRPC, is_grpc_server),
                       (ServerKind.LITSERVE, is_litserve_server), (ServerKind.RAY_SERVE, is_ray_serve_app),
                       (ServerKind.GRADIO, is_gradio_app), (ServerKind.AIOHTTP, is_aiohttp_app),
                       (ServerKind.SANIC, is_sanic_app),
                       (ServerKind.CHAINLIT, is_chainlit_app),
                       (ServerKind.UVICORN_MAIN, serves_under_main),
                       (ServerKind.DJANGO_VIEWS, serves_django_views)):
        if test(source):
            return kind
    return ServerKind.APP


def is_grpc_server(source: str) -> bool:
    """A file that starts a gRPC server: it imports grpc and adds a port to a server."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    imports_grpc = "grpc" in imported_packages(tree)
    adds_port = any(isinstance(n, ast.Attribute) and n.attr in ("add_insecure_port", "add_secure_port") for n in ast.walk(tree))
    return imports_grpc and adds_port


def serves_under_main(source: str) -> bool:
    """Whether the file's ``if __name__ == "__main__":`` block (or a module function it calls) runs
    ``uvicorn.run(...)`` or its Quart app's ``run()``/``run_task()``: then the file runs as ``__main__``, as its
    author starts it."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    runs_quart = quart_runs(tree)
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in tree.body:
        if not (isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)):
            continue
        reached: list[ast.stmt] = [node]
        for called in (c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)):
            if called in functions:
                reached.append(functions[called])
        for part in reached:
            for call in (c for c in ast.walk(part) if isinstance(c, ast.Call)):
                name = ast.unparse(call.func)
                if name in ("uvicorn.run", "run") and (name != "run" or "from uvicorn import" in source):
                    return True
                if name in runs_quart:
                    return True
    return False
