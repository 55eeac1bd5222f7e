"""The web and serving frameworks whose request handlers the Python rules look inside, as data.

One row per framework: the modules that name it, the objects that are its apps, how a function becomes one
of its handlers, which code of it runs once at start-up, and whether its handlers run on an event loop.
``handlers.py`` reads these tables to find the handlers of a module; ``docs/handlers.md`` is generated
from them (``python -m vllm_lint.python.handler_table``; a test fails when the page drifts), so the page
users read and the code that decides cannot disagree.

Names are qualified as the module model resolves them through imports (``from fastapi import FastAPI``
and ``import fastapi as f`` both give ``fastapi.FastAPI``). Nothing here imports LibCST.
"""

from __future__ import annotations

from dataclasses import dataclass

HTTP_VERBS = frozenset({"get", "post", "put", "patch", "delete", "options", "head", "trace"})
# How many calls deep code reached from a handler (or a start-up hook) still counts as inside it.
MAX_CALL_DEPTH = 6


@dataclass(frozen=True, slots=True)
class Framework:
    """A web framework: how its code registers handlers and start-up hooks, and how they run."""
    name: str  # what Handler.framework says
    title: str
    modules: tuple[str, ...]  # import prefixes that name it
    registers: tuple[str, ...]  # how a function becomes a handler (the docs' words)
    startup: tuple[str, ...] = ()  # code that runs once, before requests (the docs' words)
    # Whether an ``async def`` handler runs on the server's event loop (a blocking call there stalls every
    # other request), and whether a plain ``def`` one does too (Tornado runs it on its IOLoop).
    async_on_loop: bool = True
    sync_on_loop: bool = False
    # Whether a plain ``def`` handler that is not on the event loop runs in the framework's worker threads, several
    # at once, so that its model calls may overlap (the fix where the engine rewrite is refused serialises them
    # under a lock). Only where the framework itself does so, whatever server runs it.
    sync_in_threads: bool = False
    # Whether an app object of this framework takes route decorators ``@app.<verb>(...)``: then any
    # ``@x.<verb>(...)`` in a module that imports it is a route.
    route_decorators: bool = False
    loop_note: str = ""  # when sync_on_loop does not always hold (the docs' words)


FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        "fastapi", "FastAPI", ("fastapi",),
        ("`@app.get/post/put/patch/delete/api_route/websocket(path)` on an app or an `APIRouter` (included into an app anywhere)",
         "`app.add_api_route(path, fn)`, `app.add_api_websocket_route(path, fn)`, `app.post(path)(fn)`",
         "`APIRoute(path, fn)`"),
        ("`FastAPI(lifespan=fn)`", "`@app.on_event(\"startup\")`", "`app.add_event_handler(\"startup\", fn)`"),
        route_decorators=True,
        # "When you declare a path operation function with normal def instead of async def, it is run in an
        # external threadpool" (fastapi.tiangolo.com/async/, "Path operation functions").
        sync_in_threads=True,
    ),
    Framework(
        "starlette", "Starlette", ("starlette",),
        ("`Route(path, fn)`, `WebSocketRoute(path, fn)`", "`app.add_route(path, fn)`, `app.add_websocket_route(path, fn)`",
         "`@app.route(path)`", "methods of an `HTTPEndpoint` / `WebSocketEndpoint` subclass"),
        ("`Starlette(lifespan=fn)`, `Starlette(on_startup=[fn])`",),
        route_decorators=True,
        # starlette/routing.py request_response: a sync endpoint is awaited through run_in_threadpool.
        sync_in_threads=True,
    ),
    Framework(
        "flask", "Flask", ("flask",),
        ("`@app.route(path)`, `@app.get/post/...(path)` on an app or a `Blueprint`", "`app.add_url_rule(rule, endpoint, fn)` / `view_func=fn`",
         "HTTP-verb methods of a `MethodView`, `dispatch_request` of a `View` (a fresh instance per request)"),
        ("`@app.before_first_request`",),
        # Flask runs an async view in an event loop of its own, on the request's thread.
        async_on_loop=False,
        route_decorators=True,
        # Flask.run() serves threaded by default (flask/app.py: options.setdefault("threaded", True)).
        sync_in_threads=True,
    ),
    Framework(
        "quart", "Quart", ("quart",),
        ("`@app.route(path)`, `@app.get/post/.../websocket(path)` on an app or a `Blueprint`", "`app.add_url_rule(...)`",
         "HTTP-verb methods of a `MethodView`"),
        ("`@app.before_serving`", "`@app.while_serving`"),
        route_decorators=True,
        # quart/utils.py run_sync: a sync view runs in the loop's default executor (a thread pool).
        sync_in_threads=True,
    ),
    Framework(
        "django", "Django", ("django",),
        ("a function of `views.py` whose first parameter is `request`",
         "a function decorated `@require_http_methods`/`@require_POST`/`@require_GET`/`@csrf_exempt`",
         "HTTP-verb methods of a class-based `View` (`django.views.View`, the generic views; a fresh instance per request)",
         "`path(route, fn)` / `re_path(route, fn)` in the same module"),
        ("`AppConfig.ready()`",),
    ),
    Framework(
        "rest_framework", "Django REST framework", ("rest_framework",),
        ("`@api_view([...])` functions", "HTTP-verb methods of an `APIView` / generic view",
         "`list/create/retrieve/update/partial_update/destroy` and `@action` methods of a ViewSet"),
        async_on_loop=False,
    ),
    Framework(
        "aiohttp", "aiohttp", ("aiohttp",),
        ("`@routes.get/post/...(path)` on a `RouteTableDef`", "`web.get/post/...(path, fn)` and `web.route(method, path, fn)` in `app.add_routes([...])`",
         "`app.router.add_get/add_post/.../add_route(...)`", "HTTP-verb methods of a `web.View`"),
        ("`app.on_startup.append(fn)`", "`app.cleanup_ctx.append(fn)`"),
        route_decorators=True,
    ),
    Framework(
        "falcon", "Falcon", ("falcon",),
        ("`on_get/on_post/...` responders (and suffixed ones, `on_get_<suffix>`) of any class in a module that imports falcon "
         "(a resource, whether or not this module passes it to `app.add_route(path, resource)`)",),
        ("an ASGI middleware's `process_startup` (`falcon.asgi.App`)",),
    ),
    Framework(
        "chainlit", "Chainlit", ("chainlit",),
        ("a function decorated `@cl.on_message`",),
        ("`@cl.on_app_startup` (Chainlit 2.4.400 and later)",),
        # Chainlit awaits the callback on its server's event loop, and calls a plain def one there too
        # (chainlit utils.py wrap_user_function).
        sync_on_loop=True,
    ),
    Framework(
        "sanic", "Sanic", ("sanic",),
        ("`@app.route/get/post/.../websocket(path)` on an app or a `Blueprint`", "`app.add_route(fn, uri)`",
         "HTTP-verb methods of an `HTTPMethodView`"),
        ("`@app.before_server_start`, `@app.main_process_start`, `@app.listener(\"before_server_start\")`",),
        route_decorators=True,
    ),
    Framework(
        "tornado", "Tornado", ("tornado",),
        ("HTTP-verb methods of a `RequestHandler` subclass (a fresh instance per request)",
         "`open`/`on_message` of a `WebSocketHandler`"),
        # Tornado runs every handler method on its IOLoop, `def` ones included.
        sync_on_loop=True,
    ),
    Framework(
        "litestar", "Litestar", ("litestar",),
        ("functions decorated `@get/@post/@put/@patch/@delete/@route/@websocket(path)` from litestar, module-level or in a `Controller`",),
        ("`Litestar(on_startup=[fn])`, `Litestar(lifespan=[fn])`",),
        # A sync handler runs on the event loop unless its decorator says ``sync_to_thread=True``.
        sync_on_loop=True,
        loop_note="unless the decorator says `sync_to_thread=True`",
        # With sync_to_thread=True, Litestar runs it in a worker thread (anyio's thread pool).
        sync_in_threads=True,
    ),
    Framework(
        "bottle", "Bottle", ("bottle",),
        ("`@app.route/get/post/...(path)`, `@route(path)`",),
        async_on_loop=False,
        route_decorators=True,
    ),
    Framework(
        "grpc", "gRPC", ("grpc",),
        ("public methods of a class that subclasses a generated `*Servicer`",),
        ("the servicer's `__init__` (one instance per server)",),
    ),
    Framework(
        "ray", "Ray Serve", ("ray.serve", "ray"),
        ("`__call__` of a `@serve.deployment` class", "`@app.<verb>(path)` methods of a `@serve.ingress(app)` class",
         "a `@serve.deployment` function"),
        ("the deployment's `__init__` (once per replica)",),
    ),
    Framework(
        "bentoml", "BentoML", ("bentoml",),
        ("`@bentoml.api` / `@bentoml.task` methods of a `@bentoml.service` class",),
        ("the service's `__init__` (once per worker)",),
    ),
    Framework(
        "litserve", "LitServe", ("litserve",),
        ("`predict` (and `decode_request`/`encode_request`) of a `LitAPI` subclass",),
        ("`setup(self, device)`", "the API's `__init__`"),
    ),
    Framework(
        "modal", "Modal", ("modal",),
        ("a function decorated `@modal.fastapi_endpoint` / `@modal.web_endpoint`",
         "`@modal.method` / `@modal.fastapi_endpoint` methods of an `@app.cls` class",
         "the routes of the app an `@modal.asgi_app`/`@modal.wsgi_app` function returns (by that app's framework)"),
        ("`@modal.enter()` methods", "the class's `__init__`"),
    ),
    Framework(
        "gradio", "Gradio", ("gradio",),
        ("`gr.Interface(fn, ...)` / `gr.Interface(fn=...)`, `gr.ChatInterface(fn)`",
         "event listeners: `btn.click(fn, ...)`, `.submit/.change/.input/.select/.upload/.load/.then/...(fn)`, `gr.on(triggers, fn)`, and their decorator form",
         "only when built at module level: a demo built under `if __name__ == \"__main__\":` is not a server"),
        # gradio/blocks.py call_function: a sync fn runs through anyio.to_thread.run_sync (its thread pool).
        sync_in_threads=True,
    ),
)

BY_NAME = {framework.name: framework for framework in FRAMEWORKS}


# -- apps ------------------------------------------------------------------------------------------

# Calls that make an app or router object (``app = FastAPI()``), with their framework.
APP_FACTORIES = {
    "fastapi.FastAPI": "fastapi",
    "fastapi.APIRouter": "fastapi",
    "fastapi.routing.APIRouter": "fastapi",
    "starlette.applications.Starlette": "starlette",
    "starlette.routing.Router": "starlette",
    "flask.Flask": "flask",
    "flask.Blueprint": "flask",
    "quart.Quart": "quart",
    "quart.Blueprint": "quart",
    "sanic.Sanic": "sanic",
    "sanic.Blueprint": "sanic",
    "aiohttp.web.Application": "aiohttp",
    "aiohttp.web.RouteTableDef": "aiohttp",
    "falcon.App": "falcon",
    "falcon.API": "falcon",
    "falcon.asgi.App": "falcon",
    "litestar.Litestar": "litestar",
    "litestar.Router": "litestar",
    "bottle.Bottle": "bottle",
    "tornado.web.Application": "tornado",
    "grpc.server": "grpc",
    "grpc.aio.server": "grpc",
    "gradio.Blocks": "gradio",
    "gradio.Interface": "gradio",
    "gradio.ChatInterface": "gradio",
    "modal.App": "modal",
    "modal.Stub": "modal",
}
# Route decorators' and route registrations' method names, on any app object.
ROUTE_VERBS = HTTP_VERBS | {"api_route", "websocket", "route", "view"}

# -- handlers registered by a call ---------------------------------------------------------------

# ``app.<method>(..., fn, ...)``: the keywords that name the handler (else: the argument that is one of the
# module's functions). Sanic's add_route takes the handler first, aiohttp's last: the function decides.
REGISTRATION_METHODS = {
    "add_api_route": ("endpoint",),
    "add_api_websocket_route": ("endpoint",),
    "add_route": ("endpoint", "route", "handler"),
    "add_websocket_route": ("endpoint", "route"),
    "add_url_rule": ("view_func",),
    "add_get": ("handler",),
    "add_post": ("handler",),
    "add_put": ("handler",),
    "add_patch": ("handler",),
    "add_delete": ("handler",),
    "add_head": ("handler",),
    "add_view": ("handler",),
}
# Calls that build a route object from a handler, with the keywords that name it.
ROUTE_CONSTRUCTORS = {
    "starlette.routing.Route": ("starlette", ("endpoint",)),
    "starlette.routing.WebSocketRoute": ("starlette", ("endpoint",)),
    "fastapi.routing.APIRoute": ("fastapi", ("endpoint",)),
    "fastapi.routing.APIWebSocketRoute": ("fastapi", ("endpoint",)),
    "django.urls.path": ("django", ("view",)),
    "django.urls.re_path": ("django", ("view",)),
    **{f"aiohttp.web.{verb}": ("aiohttp", ("handler",)) for verb in (*HTTP_VERBS, "view", "route")},
}

# -- handlers by decorator -------------------------------------------------------------------------

# Decorators that make a module-level function a handler by themselves (bare or called).
FUNCTION_DECORATORS = {
    **{f"litestar.{verb}": "litestar" for verb in (*HTTP_VERBS, "route", "websocket")},
    **{f"litestar.handlers.{verb}": "litestar" for verb in (*HTTP_VERBS, "route", "websocket")},
    "rest_framework.decorators.api_view": "rest_framework",
    "django.views.decorators.http.require_http_methods": "django",
    "django.views.decorators.http.require_POST": "django",
    "django.views.decorators.http.require_GET": "django",
    "django.views.decorators.http.require_safe": "django",
    "django.views.decorators.csrf.csrf_exempt": "django",
    "modal.fastapi_endpoint": "modal",
    "modal.web_endpoint": "modal",
    "ray.serve.deployment": "ray",
    "chainlit.on_message": "chainlit",
    "bottle.route": "bottle",
    **{f"bottle.{verb}": "bottle" for verb in ("get", "post", "put", "delete", "patch")},
}

# -- handlers that are methods -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClassShape:
    """A framework's class whose methods handle requests."""
    framework: str
    methods: frozenset[str]  # the methods that handle requests
    per_request: bool  # a fresh instance per request: its __init__ runs per request too
    public_methods: bool = False  # every public method is a handler (gRPC servicers)


_VERB_METHODS = HTTP_VERBS | {"dispatch"}
_VIEWSET_METHODS = _VERB_METHODS | {"list", "create", "retrieve", "update", "partial_update", "destroy"}
# Base classes (qualified) whose subclasses handle requests.
CLASS_BASES = {
    **{f"django.views.{name}": ClassShape("django", _VERB_METHODS, True) for name in ("View", "generic.View", "generic.base.View")},
    **{
        f"django.views.generic.{name}": ClassShape("django", _VERB_METHODS | {"form_valid", "get_context_data"}, True)
        for name in ("TemplateView", "FormView", "ListView", "DetailView", "CreateView", "UpdateView", "DeleteView", "RedirectView")
    },
    "rest_framework.views.APIView": ClassShape("rest_framework", _VERB_METHODS, True),
    **{
        f"rest_framework.generics.{name}": ClassShape("rest_framework", _VERB_METHODS | {"perform_create", "perform_update"}, True)
        for name in ("GenericAPIView", "CreateAPIView", "ListAPIView", "RetrieveAPIView", "ListCreateAPIView", "RetrieveUpdateAPIView", "RetrieveUpdateDestroyAPIView", "UpdateAPIView", "DestroyAPIView")
    },
    **{
        f"rest_framework.viewsets.{name}": ClassShape("rest_framework", _VIEWSET_METHODS, True)
        for name in ("ViewSet", "GenericViewSet", "ModelViewSet", "ReadOnlyModelViewSet", "ViewSetMixin")
    },
    "flask.views.MethodView": ClassShape("flask", HTTP_VERBS, True),
    "flask.views.View": ClassShape("flask", frozenset({"dispatch_request"}), True),
    "quart.views.MethodView": ClassShape("quart", HTTP_VERBS, True),
    "quart.views.View": ClassShape("quart", frozenset({"dispatch_request"}), True),
    "starlette.endpoints.HTTPEndpoint": ClassShape("starlette", HTTP_VERBS, True),
    "starlette.endpoints.WebSocketEndpoint": ClassShape("starlette", frozenset({"on_connect", "on_receive", "on_disconnect"}), True),
    "aiohttp.web.View": ClassShape("aiohttp", HTTP_VERBS, True),
    "sanic.views.HTTPMethodView": ClassShape("sanic", HTTP_VERBS, True),
    "tornado.web.RequestHandler": ClassShape("tornado", HTTP_VERBS | {"prepare"}, True),
    "tornado.websocket.WebSocketHandler": ClassShape("tornado", HTTP_VERBS | {"open", "on_message"}, True),
    "litserve.LitAPI": ClassShape("litserve", frozenset({"predict", "decode_request", "encode_request"}), False),
    "litserve.api.LitAPI": ClassShape("litserve", frozenset({"predict", "decode_request", "encode_request"}), False),
}
# Falcon finds a resource's responders by name: ``on_<verb>`` and, for a route added with ``suffix=``,
# ``on_<verb>_<suffix>`` (falcon/routing/util.py ``map_http_methods``); the resource itself has no base class.
FALCON_RESPONDER_VERBS = HTTP_VERBS | {"websocket"}


def is_falcon_responder(name: str) -> bool:
    """``on_get``, ``on_post_collection``: a name Falcon serves as a responder."""
    return name.startswith("on_") and name[3:].split("_", 1)[0] in FALCON_RESPONDER_VERBS


# A generated gRPC servicer base: ``helloworld_pb2_grpc.GreeterServicer``.
GRPC_SERVICER = ClassShape("grpc", frozenset(), False, public_methods=True)

# Class decorators that make a class a server whose methods take requests; the method decorators (or
# names) that mark those methods.
CLASS_DECORATORS = {
    "ray.serve.deployment": "ray",
    "ray.serve.ingress": "ray",
    "bentoml.service": "bentoml",
}
# ``@app.cls(...)`` where ``app = modal.App(...)``: the app factory and the method name of the decorator.
MODAL_CLASS_DECORATOR = "cls"
METHOD_DECORATORS = {
    "bentoml.api": "bentoml",
    "bentoml.task": "bentoml",
    "modal.method": "modal",
    "modal.fastapi_endpoint": "modal",
    "modal.web_endpoint": "modal",
    "modal.batched": "modal",
    "rest_framework.decorators.action": "rest_framework",
}
# What a Ray Serve deployment serves by name.
RAY_CALL_METHOD = "__call__"

# -- callbacks (Gradio) --------------------------------------------------------------------------------

# ``gr.Interface(fn, ...)``: the callback is the first positional argument or ``fn=``.
CALLBACK_CONSTRUCTORS = {"gradio.Interface": "gradio", "gradio.ChatInterface": "gradio", "gradio.on": "gradio"}
# ``component.<listener>(fn, ...)`` in a module that imports gradio; also as a decorator.
GRADIO_LISTENERS = frozenset({
    "click", "submit", "change", "input", "select", "upload", "release", "blur", "focus", "load", "then",
    "success", "stream", "like", "edit", "clear", "play", "pause", "stop", "end", "start_recording",
    "stop_recording", "retry", "undo", "example_select", "key_up", "double_click", "expand", "collapse",
})

# -- start-up hooks ------------------------------------------------------------------------------------

# Decorators (their last dotted part, on an app object or bare) that make a function run once at start-up.
STARTUP_DECORATOR_NAMES = frozenset({
    "on_event", "before_serving", "while_serving", "before_first_request", "before_server_start",
    "after_server_start", "main_process_start", "listener", "on_app_startup",
})
STARTUP_DECORATORS = frozenset({"contextlib.asynccontextmanager", "contextlib.contextmanager", "modal.enter"})
# Keywords of an app factory that take start-up hooks: FastAPI(lifespan=fn), Starlette(on_startup=[fn]).
STARTUP_KEYWORDS = frozenset({"lifespan", "on_startup"})
# ``app.on_startup.append(fn)`` (aiohttp), ``app.add_event_handler("startup", fn)`` (FastAPI/Starlette).
STARTUP_LISTS = frozenset({"on_startup", "cleanup_ctx"})
# Methods that run once per replica or worker of a class-based server (not per request).
STARTUP_METHODS = frozenset({"__init__", "setup", "ready"})
# Names that, on their own, say a module-level function is a start-up hook.
STARTUP_FUNCTION_NAMES = frozenset({"lifespan", "startup", "on_startup", "startup_event"})


# -- the docs page ---------------------------------------------------------------------------------------

DOCS_PATH = "docs/handlers.md"


def render_docs() -> str:
    """docs/handlers.md, from the tables above."""
    lines = [
        "# Request handlers vllm-lint knows",
        "",
        "<!-- Generated by `python -m vllm_lint.python.handler_table` from vllm_lint/python/handler_table.py;",
        "     tests/python/test_handler_table.py fails when this page and the table differ. -->",
        "",
        "The serving rules (VLL101-VLL104, VLL502, and the online checks of VLL302) look inside *request handlers*:",
        "code that runs once per request a server receives. A function is a handler when its framework makes it",
        "one, by any of the shapes below, with names resolved through the module's imports (`from fastapi import",
        "FastAPI as F` is FastAPI). When the app object cannot be resolved, a route decorator's shape is enough:",
        "`@x.post(...)` in a module that imports a framework with route decorators, or `@x.post(\"/path\")` anywhere.",
        "",
        "Code reached from a handler through calls to functions and methods of the same module counts as inside",
        f"it (up to {MAX_CALL_DEPTH} calls deep); code in another module of the project counts through that module's summary",
        "(what its functions do that matters: load a model, block on generation, build an engine), and is",
        "reported at the handler's call, naming the chain. Code reached from a start-up hook runs once.",
        "",
        "Never a handler: code under `if __name__ == \"__main__\":`, test files, a Celery or RQ task, a",
        "queue-fed worker, an offline batch script.",
        "",
        "| framework | a handler is | runs once at start-up | a blocking call in a handler |",
        "|---|---|---|---|",
    ]
    for framework in FRAMEWORKS:
        if framework.sync_on_loop:
            blocking = "blocks the event loop, in `def` and `async def` handlers alike"
            if framework.loop_note:
                blocking += f" ({framework.loop_note})"
        elif framework.async_on_loop:
            blocking = "`async def`: blocks the event loop; `def`: holds a worker thread"
        else:
            blocking = "holds the worker (thread or process) serving the request"
        if framework.sync_in_threads and not framework.sync_on_loop:
            blocking += "; `def` handlers run several at once in its worker threads"
        startup = "; ".join(framework.startup) if framework.startup else "module-level code"
        lines.append(f"| {framework.title} | {'; '.join(framework.registers)} | {startup} | {blocking} |")
    lines += [
        "",
        "Instances of the class-based views marked *a fresh instance per request* are built per request, so",
        "their `__init__` runs per request too: a model loaded there is loaded per request (VLL104).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    from pathlib import Path

    target = Path(__file__).resolve().parents[2] / DOCS_PATH
    target.write_text(render_docs(), encoding="utf-8")
    sys.stdout.write(f"wrote {target}\n")
