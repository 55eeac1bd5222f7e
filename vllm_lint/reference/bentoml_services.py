"""A BentoML service file served for ``vllm-lint validate`` by ``bentoml serve``, as its author serves it.

The launcher becomes ``python -m bentoml serve <module>:<Service> --host H --port P`` (an ``exec``: the same
process, so the harness stops it and its workers as any server). BentoML imports the module in its worker
processes, which get the launcher's patches through :mod:`vllm_lint.reference.spawned`; their tokens are
counted from the answers. BentoML answers ``/readyz`` once the service is built, and keeps its OpenAPI
document at ``/docs.json``.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

from vllm_lint.reference.python_source import imported_packages

READY_PATH = "/readyz"
OPENAPI_PATH = "/docs.json"


def _service_classes(tree: ast.Module) -> list[ast.ClassDef]:
    def is_service(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return ast.unparse(target) in ("bentoml.service", "service")

    return [n for n in tree.body if isinstance(n, ast.ClassDef) and any(is_service(d) for d in n.decorator_list)]


def is_bentoml_service(source: str) -> bool:
    """A file that imports BentoML and declares a ``@bentoml.service`` class."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return "bentoml" in imported_packages(tree) and bool(_service_classes(tree))


def entry_service(source: str) -> str:
    """The service ``bentoml serve`` is given: the file's one service, or the one no other depends on."""
    services = _service_classes(ast.parse(source))
    depended = {ast.unparse(call.args[0]) for service in services for call in ast.walk(service)
                if isinstance(call, ast.Call) and ast.unparse(call.func) in ("bentoml.depends", "depends")
                and call.args}
    entries = [s.name for s in services if s.name not in depended]
    if len(entries) != 1:
        raise SystemExit(f"the file declares the BentoML services {', '.join(s.name for s in services)}, and "
                         f"{len(entries)} of them no other depends on: validate serves one entry service")
    return entries[0]


def exec_bentoml_serve(path: Path, source: str, host: str, port: int) -> None:
    """Replace this process with ``bentoml serve`` of the file's entry service on ``host:port``."""
    command = [sys.executable, "-m", "bentoml", "serve", f"{path.stem}:{entry_service(source)}",
               "--host", host, "--port", str(port), "--working-dir", str(path.parent)]
    os.environ.setdefault("BENTOML_DO_NOT_TRACK", "True")
    print(f"[vllm-lint launch] {' '.join(command[1:])}", file=sys.stderr, flush=True)
    os.execv(sys.executable, command)
