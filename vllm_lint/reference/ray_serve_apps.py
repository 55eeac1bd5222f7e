"""A Ray Serve application file served for ``vllm-lint validate``, on a local Ray cluster of its own.

The file runs as ``__main__`` (no command-line arguments), so that Ray pickles its deployment classes by
value, as ``serve run`` ships a script's. The application it binds at module level (``app =
Generator.bind()``), or the one its own ``serve.run(...)`` runs, is served on the launcher's host and port
by Serve's HTTP proxy. Each deployment runs one replica, with the GPUs and custom resources it asks for
dropped when the machine has no GPU: the comparison is one engine against one pipeline, on what the machine
has. The replicas build their models in Ray's worker processes, which get the launcher's patches through
:mod:`vllm_lint.reference.spawned`; their tokens are counted from the answers.
"""

from __future__ import annotations

import ast
import inspect
import os
import runpy
import sys
import threading
from pathlib import Path

from vllm_lint.reference.python_source import imported_modules
from vllm_lint.reference.request_fields import fields_read, post_routes_document

# Logical CPUs the local cluster declares: a replica that asks for a few still fits on a small machine.
_CLUSTER_CPUS = 16
_OBJECT_STORE_BYTES = 128 * 2**20


def is_ray_serve_app(source: str) -> bool:
    """A file that imports Ray Serve and declares a deployment (``@serve.deployment``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    imports = any(module == "ray.serve" or module.startswith("ray.serve.") for module in imported_modules(tree))
    declares = any(ast.unparse(d).split("(")[0].split(".")[-1] == "deployment"
                   for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                   for d in n.decorator_list)
    return imports and declares


# A second application the launcher deploys once the file's is running, so its answer means the file's is ready:
# the OpenAPI document of a deployment that reads its request by hand in ``__call__`` (no FastAPI ingress, so
# no schema of its own) on the route prefix its application runs on.
DOCUMENT_PREFIX = "/__vllm_lint__"
DOCUMENT_PATH = DOCUMENT_PREFIX + "/openapi.json"


def has_ingress(source: str) -> bool:
    """A deployment behind a FastAPI app (``@serve.ingress(app)``), which describes its own routes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(d, ast.Call) and ast.unparse(d.func).split(".")[-1] == "ingress"
               for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for d in n.decorator_list)


def _call_source(expr: ast.expr) -> str | None:
    """"json" for what a ``__call__`` parses its body with: ``await request.json()``, ``json.loads(...)``."""
    if isinstance(expr, ast.Await):
        expr = expr.value
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    parses = ast.unparse(expr.func) == "json.loads" or (expr.func.attr == "json" and not expr.args)
    return "json" if parses else None


def call_document(deployments: list, prefix: str) -> dict:
    """An OpenAPI document of the body fields the deployments' ``__call__`` methods read, each a POST route
    on ``prefix``."""
    routes = [(prefix, fields_read(d.__call__, _call_source)) for d in deployments if "__call__" in vars(d)]
    return post_routes_document("Ray Serve", [(path, fields) for path, fields in routes if fields][:1])


class _Document:
    """The launcher's own deployment: answers the document (a dict, which Serve sends as JSON)."""

    def __init__(self, document: dict) -> None:
        self.document = document

    async def __call__(self, request) -> dict:
        return self.document


def _on_this_machine(options: dict, has_gpu: bool) -> dict:
    """Deployment options for one replica on this machine; what changed is logged."""
    local = dict(options)
    changed = []
    if local.pop("autoscaling_config", None) is not None:
        changed.append("autoscaling_config dropped")
    if local.get("num_replicas", 1) != 1:
        changed.append(f"num_replicas {local['num_replicas']} -> 1")
    if "num_replicas" in local or changed:
        local["num_replicas"] = 1
    actor = local.get("ray_actor_options")
    if isinstance(actor, dict) and not has_gpu:
        kept = {k: v for k, v in actor.items() if k not in ("num_gpus", "resources", "accelerator_type")}
        if kept != actor:
            changed.append(f"ray_actor_options {actor} -> {kept} (no GPU here)")
            local["ray_actor_options"] = kept
    if local.get("placement_group_bundles") is not None and not has_gpu:
        local.pop("placement_group_bundles")
        local.pop("placement_group_strategy", None)
        changed.append("placement group dropped (no GPU here)")
    if changed:
        print(f"[vllm-lint launch] Ray Serve deployment: {'; '.join(changed)}", file=sys.stderr, flush=True)
    return local


def _patch_deployments(has_gpu: bool, route_prefixes: dict[str, str]) -> None:
    """Deployments declared for this machine; a ``route_prefix`` given to ``@serve.deployment``, which Ray no
    longer takes there (2.60 raises TypeError), kept by deployment name in ``route_prefixes`` for serve.run."""
    from ray import serve
    from ray.serve.deployment import Deployment

    original_decorator, original_options = serve.deployment, Deployment.options
    takes_prefix = "route_prefix" in inspect.signature(original_decorator).parameters

    def deployment(_func_or_class=None, **options):
        options = _on_this_machine(options, has_gpu)
        prefix = None if takes_prefix else options.pop("route_prefix", None)

        def declare(target):
            declared = original_decorator(target, **options)
            if prefix is not None:
                route_prefixes[declared.name] = prefix
                print(f"[vllm-lint launch] Ray Serve deployment {declared.name}: route_prefix {prefix!r} given to "
                      "serve.run (this Ray's deployment() takes none)", file=sys.stderr, flush=True)
            return declared

        return declare(_func_or_class) if _func_or_class is not None else declare

    def options(self, *args, **kwargs):
        return original_options(self, *args, **_on_this_machine(kwargs, has_gpu))

    serve.deployment = deployment
    Deployment.options = options


def run_ray_serve_main(path: Path, host: str, port: int, has_gpu: bool) -> None:
    import ray
    from ray import serve
    from ray.serve.deployment import Application

    route_prefixes: dict[str, str] = {}
    _patch_deployments(has_gpu, route_prefixes)
    ray.init(num_cpus=max(_CLUSTER_CPUS, os.cpu_count() or 1), include_dashboard=False,
             object_store_memory=_OBJECT_STORE_BYTES)
    http_options = {"host": host, "port": port}
    serve.start(http_options=http_options)
    original_run = serve.run
    ran = []

    def init(*args, **kwargs):  # the file's own ray.init(): the cluster is up already
        return ray.get_runtime_context()

    def start(*args, **kwargs):  # the file's own serve.start(): Serve is up already, on the launcher's port
        return None

    def prefix_of(application) -> str | None:
        return route_prefixes.get(getattr(getattr(application, "_bound_deployment", None), "name", None) or "")

    def run(target, *args, **kwargs):
        kwargs["blocking"] = False  # the launcher keeps the process alive
        if "route_prefix" not in kwargs and prefix_of(target) is not None:
            kwargs["route_prefix"] = prefix_of(target)
        ran.append(target)
        return original_run(target, *args, **kwargs)

    ray.init, serve.start, serve.run = init, start, run
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    namespace = runpy.run_path(str(path), run_name="__main__")
    if not ran:
        applications = {name: value for name, value in namespace.items() if isinstance(value, Application)}
        if len(applications) != 1:
            raise SystemExit(f"{path.name} binds {len(applications)} Ray Serve applications at module level "
                             f"({', '.join(applications) or 'none'}) and runs none: validate serves the one it binds")
        (name, application), = applications.items()
        print(f"[vllm-lint launch] serve.run({name}) on {host}:{port}", file=sys.stderr, flush=True)
        run(application)
    # serve.run has returned: the file's application is running.
    classes = [getattr(getattr(a, "_bound_deployment", None), "func_or_class", None) for a in ran]
    document = call_document([c for c in classes if isinstance(c, type)], prefix_of(ran[0]) or "/")
    original_run(serve.deployment(_Document, name="vllm_lint_document").bind(document), name="vllm_lint",
                 route_prefix=DOCUMENT_PREFIX, blocking=False)
    threading.Event().wait()
