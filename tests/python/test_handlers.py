"""Which functions of a module are request handlers (python/handlers.py), framework by framework: exact."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from vllm_lint.python.model import build_model
from vllm_lint.python.semantics import Semantics


def _found(source: str, path: str = "app.py") -> tuple[set[tuple[str, str | None, str]], set[str]]:
    model = build_model(cst.parse_module(textwrap.dedent(source)))
    semantics = Semantics(model, path)
    handlers = {
        (h.shown, h.framework, "loop" if h.runs_on_event_loop else "worker") for h in semantics.handlers.values()
    }
    hooks = {f"{f.class_info.name}.{f.name}" if f.is_method and f.class_info else f.name for f in semantics.startup_hooks}
    return handlers, hooks


CASES = [
    pytest.param(
        """
        from fastapi import APIRouter, FastAPI
        app = FastAPI()
        router = APIRouter()
        async def chat(prompt): return run(prompt)
        def run(p): return helper(p)
        def helper(p): return p
        app.post("/chat")(chat)
        def other(x): return x
        app.add_api_route("/other", other, methods=["POST"])
        @router.websocket("/ws")
        async def ws(websocket): pass
        """,
        {("chat", "fastapi", "loop"), ("chat -> run", "fastapi", "loop"), ("chat -> run -> helper", "fastapi", "loop"),
         ("other", "fastapi", "worker"), ("ws", "fastapi", "loop")},
        set(),
        id="fastapi",
    ),
    pytest.param(
        """
        from contextlib import asynccontextmanager
        from fastapi import FastAPI
        def load(): return 1
        @asynccontextmanager
        async def lifespan(app):
            load()
            yield
        app = FastAPI(lifespan=lifespan)
        @app.on_event("startup")
        def warm(): pass
        @app.on_event("shutdown")
        def stop(): pass
        """,
        set(),
        {"lifespan", "load", "warm"},
        id="fastapi start-up hooks",
    ),
    pytest.param(
        """
        from starlette.applications import Starlette
        from starlette.routing import Route, WebSocketRoute
        from starlette.endpoints import HTTPEndpoint
        async def home(request): pass
        async def feed(websocket): pass
        class Items(HTTPEndpoint):
            async def get(self, request): pass
            def _helper(self): pass
        app = Starlette(routes=[Route("/", home), WebSocketRoute("/ws", endpoint=feed)], on_startup=[home])
        """,
        {("home", "starlette", "loop"), ("feed", "starlette", "loop"), ("Items.get", "starlette", "loop")},
        {"home"},
        id="starlette",
    ),
    pytest.param(
        """
        from flask import Flask
        from flask.views import MethodView
        app = Flask(__name__)
        def index(): return "x"
        app.add_url_rule("/", "index", index)
        class Chat(MethodView):
            def post(self): return "x"
            def helper(self): pass
        def create_app():
            inner = Flask(__name__)
            @inner.route("/y")
            async def y(): return 1
            return inner
        """,
        {("index", "flask", "worker"), ("Chat.post", "flask", "worker"), ("y", "flask", "worker")},
        set(),
        id="flask",
    ),
    pytest.param(
        """
        from django.http import JsonResponse
        from django.views import View
        from django.views.generic import TemplateView
        from rest_framework.decorators import api_view, action
        from rest_framework.views import APIView
        from rest_framework import viewsets
        def chat(request): return JsonResponse({})
        def _util(x): pass
        @api_view(["POST"])
        def gen(req): pass
        class V(View):
            def __init__(self, **kwargs): pass
            async def post(self, request): pass
        class Page(TemplateView):
            def get_context_data(self, **kwargs): pass
        class A(APIView):
            def get(self, request): pass
        class VS(viewsets.ModelViewSet):
            def list(self, request): pass
            @action(detail=True)
            def publish(self, request, pk=None): pass
            def helper(self): pass
        """,
        {("chat", "django", "worker"), ("gen", "rest_framework", "worker"), ("V.__init__", "django", "worker"),
         ("V.post", "django", "loop"), ("Page.get_context_data", "django", "worker"), ("A.get", "rest_framework", "worker"),
         ("VS.list", "rest_framework", "worker"), ("VS.publish", "rest_framework", "worker")},
        set(),
        id="django and DRF in views.py",
    ),
    pytest.param(
        """
        from aiohttp import web
        import tornado.web
        from litestar import get, post
        from sanic import Sanic
        from bottle import route
        routes = web.RouteTableDef()
        @routes.post("/a")
        async def a(request): pass
        async def b(request): pass
        aioapp = web.Application()
        aioapp.add_routes([web.post("/b", b)])
        aioapp.on_startup.append(b)
        class TH(tornado.web.RequestHandler):
            def get(self): pass
        @get("/ls")
        def ls_get() -> str: pass
        @post("/ls2", sync_to_thread=True)
        def ls_post() -> str: pass
        sanic = Sanic("x")
        @sanic.post("/s")
        async def s(request): pass
        @route("/old")
        def old(): pass
        """,
        {("a", "aiohttp", "loop"), ("b", "aiohttp", "loop"), ("TH.get", "tornado", "loop"), ("ls_get", "litestar", "loop"),
         ("ls_post", "litestar", "worker"), ("s", "sanic", "loop"), ("old", "bottle", "worker")},
        {"b"},
        id="aiohttp, tornado, litestar, sanic, bottle",
    ),
    pytest.param(
        """
        import gradio as gr
        from ray import serve
        import bentoml
        import litserve as ls
        import modal
        import hello_pb2_grpc
        def respond(msg, history): return msg
        demo = gr.ChatInterface(respond)
        with gr.Blocks() as blocks:
            btn = gr.Button()
            def clicked(x): return x
            btn.click(clicked, inputs=None, outputs=None)
            @btn.submit(inputs=None, outputs=None)
            def submitted(x): return x
        @serve.deployment
        class Dep:
            def __init__(self): pass
            async def __call__(self, request): pass
            def other(self): pass
        @bentoml.service
        class Svc:
            def __init__(self): pass
            @bentoml.api
            def generate(self, prompt: str) -> str: pass
        class Lit(ls.LitAPI):
            def setup(self, device): pass
            def predict(self, x): pass
        app = modal.App("x")
        @app.cls(gpu="A10G")
        class M:
            @modal.enter()
            def load(self): pass
            @modal.method()
            def generate(self, p): pass
        @app.function()
        @modal.fastapi_endpoint(method="POST")
        def web_ep(item: dict): pass
        @app.function()
        def batch(): pass
        class G(hello_pb2_grpc.GreeterServicer):
            def __init__(self): pass
            async def SayHello(self, request, context): pass
        """,
        {("respond", "gradio", "worker"), ("clicked", "gradio", "worker"), ("submitted", "gradio", "worker"),
         ("Dep.__call__", "ray", "loop"), ("Svc.generate", "bentoml", "worker"), ("Lit.predict", "litserve", "worker"),
         ("M.generate", "modal", "worker"), ("web_ep", "modal", "worker"), ("G.SayHello", "grpc", "loop")},
        {"Dep.__init__", "Svc.__init__", "Lit.setup", "M.load", "G.__init__"},
        id="gradio, ray, bentoml, litserve, modal, grpc",
    ),
    pytest.param(
        """
        import gradio as gr
        from celery import Celery, shared_task
        capp = Celery("x")
        @capp.task
        def job(x): return x
        @shared_task
        def other(x): return x
        def generate(p): return p
        def build():
            with gr.Blocks() as demo:
                gr.Button().click(generate)
            return demo
        if __name__ == "__main__":
            gr.Interface(fn=generate, inputs="text", outputs="text").launch()
            build().launch()
        """,
        set(),
        set(),
        id="traps: celery, a gradio demo only __main__ builds",
    ),
    pytest.param(
        """
        import gradio as gr
        def generate(p): return p
        def build():
            with gr.Blocks() as demo:
                gr.Button().click(generate)
            return demo
        demo = build()
        """,
        {("generate", "gradio", "worker")},
        set(),
        id="a gradio demo built by a function the module calls",
    ),
    pytest.param(
        """
        @app.post("/snippet")
        async def snippet(prompt): pass
        @cache.get(key)
        def not_a_route(): pass
        """,
        {("snippet", None, "loop")},
        set(),
        id="a snippet without its app: the path is enough",
    ),
]


@pytest.mark.parametrize(("source", "handlers", "hooks"), CASES)
def test_handlers(source, handlers, hooks):
    path = "views.py" if "django" in source else "app.py"
    assert _found(source, path) == (handlers, hooks)


def test_a_test_file_has_no_handlers():
    assert _found("from fastapi import FastAPI\napp = FastAPI()\n@app.get('/')\ndef f(): pass\n", "tests/test_app.py") == (set(), set())


def test_the_handler_model():
    source = textwrap.dedent(
        """
        from fastapi import FastAPI
        app = FastAPI()
        class Engine:
            def run(self, p): return p
        engine = Engine()
        @app.post("/x")
        async def handle(p):
            return engine.run(p)
        """
    )
    semantics = Semantics(build_model(cst.parse_module(source)), "app.py")
    reached = next(h for h in semantics.handlers.values() if not h.direct)
    assert (reached.function.name, reached.entry.name, [f.name for f in reached.via]) == ("run", "handle", ["run"])
    assert reached.class_info is not None and reached.class_info.name == "Engine"
    assert (reached.framework, reached.runs_on_event_loop, reached.shown) == ("fastapi", True, "handle -> Engine.run")
