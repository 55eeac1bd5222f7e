"""The launcher's serving of LitServe and Ray Serve files, and its patches in the processes they start
(no model server started)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest

from vllm_lint.reference.bentoml_services import entry_service, is_bentoml_service
from vllm_lint.reference.litserve_apps import is_litserve_server
from vllm_lint.reference.ray_serve_apps import _on_this_machine, is_ray_serve_app
from vllm_lint.reference.spawned import ENVIRONMENT_VARIABLE, SITE_DIRECTORY, hand_down

from .conftest import REPO, require_modules


@pytest.mark.parametrize("source, expected", [
    ("import litserve as ls\nif __name__ == '__main__':\n    ls.LitServer(A(), devices=1).run(port=8000)\n", True),
    ("from litserve import LitServer\nserver = LitServer(A())\n", True),
    ("import litserve as ls\nclass A(ls.LitAPI):\n    pass\n", False),  # an API, served elsewhere
    ("LitServer(A())\n", False),  # no LitServe import
    ("import litserve as ls\nls.LitServer(\n", False),  # does not parse
])
def test_a_litserve_server_is_a_file_that_builds_a_litserver(source, expected):
    assert is_litserve_server(source) is expected


@pytest.mark.parametrize("source, expected", [
    ("from ray import serve\n@serve.deployment(num_replicas=2)\nclass D:\n    pass\n", True),
    ("from ray.serve import deployment\n@deployment\nclass D:\n    pass\n", True),
    ("import ray.serve as serve\n@serve.deployment\nasync def f(request):\n    pass\n", True),
    ("import ray\n@ray.remote\nclass A:\n    pass\n", False),  # a Ray actor, not Serve
    ("from ray import serve\nhandle = serve.get_app_handle('x')\n", False),  # a client of a deployment
])
def test_a_ray_serve_app_is_a_file_that_declares_a_deployment(source, expected):
    assert is_ray_serve_app(source) is expected


@pytest.mark.parametrize("source, expected", [
    ("import bentoml\n@bentoml.service(resources={'gpu': 1})\nclass Gen:\n    pass\n", True),
    ("from bentoml import service\n@service\nclass Gen:\n    pass\n", True),
    ("import bentoml\nclient = bentoml.SyncHTTPClient('http://localhost:3000')\n", False),  # a client
    ("@service\nclass Gen:\n    pass\n", False),  # no BentoML import
])
def test_a_bentoml_service_is_a_file_that_declares_a_service_class(source, expected):
    assert is_bentoml_service(source) is expected


def test_bentoml_serves_the_service_no_other_depends_on():
    composed = textwrap.dedent("""
        import bentoml

        @bentoml.service
        class Model:
            pass

        @bentoml.service
        class Api:
            model = bentoml.depends(Model)
    """)
    assert entry_service(composed) == "Api"
    assert entry_service("import bentoml\n@bentoml.service\nclass Only:\n    pass\n") == "Only"
    two = "import bentoml\n@bentoml.service\nclass A:\n    pass\n@bentoml.service\nclass B:\n    pass\n"
    with pytest.raises(SystemExit, match="the BentoML services A, B, and 2 of them no other depends on"):
        entry_service(two)


def test_ray_deployments_run_one_replica_without_the_gpus_the_machine_lacks(capsys):
    asked = {"num_replicas": 2, "ray_actor_options": {"num_gpus": 1, "num_cpus": 2, "resources": {"a100": 1}},
             "max_ongoing_requests": 64}
    assert _on_this_machine(asked, has_gpu=False) == {
        "num_replicas": 1, "ray_actor_options": {"num_cpus": 2}, "max_ongoing_requests": 64}
    assert capsys.readouterr().err == (
        "[vllm-lint launch] Ray Serve deployment: num_replicas 2 -> 1; ray_actor_options {'num_gpus': 1, "
        "'num_cpus': 2, 'resources': {'a100': 1}} -> {'num_cpus': 2} (no GPU here)\n")
    assert _on_this_machine({"autoscaling_config": {"max_replicas": 4}}, has_gpu=False) == {"num_replicas": 1}
    with_gpu = {"ray_actor_options": {"num_gpus": 1}}
    assert _on_this_machine(with_gpu, has_gpu=True) == with_gpu
    assert _on_this_machine({}, has_gpu=False) == {}
    assert capsys.readouterr().err == ("[vllm-lint launch] Ray Serve deployment: autoscaling_config dropped\n")


def test_a_process_started_under_hand_down_patches_transformers_when_it_imports_it(tmp_path, monkeypatch):
    """A fresh interpreter (as multiprocessing's spawn and Ray's workers start) gets the launcher's patches."""
    require_modules("transformers", what="the hand-down of the launcher's patches")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    hand_down(str(tmp_path / "model"), 7, 2**20, None)
    assert os.environ["PYTHONPATH"].split(os.pathsep) == [str(SITE_DIRECTORY), str(REPO)]
    assert json.loads(os.environ[ENVIRONMENT_VARIABLE]) == {
        "model_dir": str(tmp_path / "model"), "max_tokens": 7, "kv_cache_bytes": 2**20, "max_num_seqs": None}
    probe = textwrap.dedent("""
        import sys
        print("transformers" in sys.modules)
        import pickle
        from transformers import pipeline
        print(hasattr(pipeline, "__wrapped__"), pickle.loads(pickle.dumps(pipeline)) is pipeline)
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    # Not imported at start-up (a process that never imports it pays nothing); patched once imported.
    # Pickled by its name (Ray Serve ships a deployment class with the globals it reads).
    assert result.stdout.splitlines() == ["False", "True True"]
    monkeypatch.delenv(ENVIRONMENT_VARIABLE)
    plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ))
    assert plain.stdout.splitlines() == ["False", "False True"]


def test_a_litserve_apis_raw_request_fields_are_documented():
    """decode_request(request) reads request["prompt"]: FastAPI's document has no body for it, the
    launcher's has the field, so that the harness finds the route."""
    require_modules("litserve", what="LitServe's document")
    import litserve as ls

    from vllm_lint.reference.litserve_apps import _document_raw_requests

    class TextAPI(ls.LitAPI):
        def setup(self, device):
            pass

        def decode_request(self, request):
            return str(request["prompt"])

        def predict(self, prompt):
            return prompt

    server = ls.LitServer(TextAPI(), accelerator="cpu", devices=1)
    before = server.app.openapi()["paths"]["/predict"]["post"]
    assert "requestBody" not in before
    _document_raw_requests(server)
    assert server.app.openapi()["paths"]["/predict"] == {"post": {"parameters": [], "requestBody": {
        "content": {"application/json": {"schema": {"type": "object", "properties": {"prompt": {"type": "string"}}}}}}}}
    assert "/health" in server.app.openapi()["paths"]  # the rest of FastAPI's document is kept


@pytest.mark.parametrize("source, kind", [
    ("import bentoml\n@bentoml.service\nclass S:\n    pass\n", "BENTOML"),
    ("import grpc\nserver = grpc.server(None)\nserver.add_insecure_port('[::]:50051')\n", "GRPC"),
    ("import litserve as ls\nls.LitServer(A()).run(port=8000)\n", "LITSERVE"),
    ("from ray import serve\n@serve.deployment\nclass D:\n    pass\napp = D.bind()\n", "RAY_SERVE"),
    ("import gradio as gr\ndemo = gr.Interface(fn=f, inputs='text', outputs='text')\n", "GRADIO"),
    # A Gradio app mounted into FastAPI is served by the FastAPI app's server.
    ("import gradio as gr\nfrom fastapi import FastAPI\napp = FastAPI()\n"
     "app = gr.mount_gradio_app(app, gr.Interface(fn=f, inputs='text', outputs='text'), path='/ui')\n", "APP"),
    ("import uvicorn\nfrom fastapi import FastAPI\napp = FastAPI()\nif __name__ == '__main__':\n    uvicorn.run(app)\n",
     "UVICORN_MAIN"),
    ("from django.http import JsonResponse\ndef generate(request):\n    pass\n", "DJANGO_VIEWS"),
    ("from flask import Flask\napp = Flask(__name__)\n", "APP"),
    ("from aiohttp import web\napp = web.Application()\nweb.run_app(app, port=8080)\n", "AIOHTTP"),
    # A Quart app its __main__ runs (Quart's own run, on Hypercorn) runs as its __main__; else its app is served.
    ("from quart import Quart\napp = Quart(__name__)\nif __name__ == '__main__':\n    app.run(port=8000)\n", "UVICORN_MAIN"),
    ("import asyncio, quart\napi = quart.Quart(__name__)\nif __name__ == '__main__':\n    asyncio.run(api.run_task())\n",
     "UVICORN_MAIN"),
    ("from quart import Quart\napp = Quart(__name__)\n", "APP"),
    ("import falcon.asgi\napp = falcon.asgi.App()\n", "APP"),
    ("from sanic import Sanic\napp = Sanic('a')\nif __name__ == '__main__':\n    app.run()\n", "SANIC"),
    ("import chainlit as cl\n@cl.on_message\nasync def main(message: cl.Message):\n    pass\n", "CHAINLIT"),
])
def test_the_kind_of_server_a_file_is(source, kind):
    from vllm_lint.reference.server_kinds import ServerKind, kind_of

    assert kind_of(source) is ServerKind[kind]


def test_a_ray_serve_deployment_that_reads_its_body_by_hand_is_described(tmp_path):
    """No FastAPI ingress, so no schema: the launcher describes the fields ``__call__`` reads, on the app's prefix."""
    from vllm_lint.reference.launch import import_file
    from vllm_lint.reference.ray_serve_apps import call_document, has_ingress
    from vllm_lint.reference.validate.endpoint import discover_endpoint

    server = tmp_path / "deployment.py"
    server.write_text(
        "import json\n\n"
        "class BioGpt:\n"
        "    async def __call__(self, starlette_request):\n"
        "        request = await starlette_request.body()\n"
        "        data = json.loads(request)\n"
        "        return data['prompt'] + str(data.get('max_length', 100))\n\n"
        "class Plain:\n"
        "    pass\n")
    module = import_file(server)
    document = call_document([module.Plain, module.BioGpt], "/")
    assert discover_endpoint(document).describe() == "POST / with 'prompt' in the JSON body"
    assert call_document([module.Plain], "/")["paths"] == {}
    assert not has_ingress(server.read_text())
    assert has_ingress("from ray import serve\n@serve.deployment\n@serve.ingress(app)\nclass D:\n    pass\n")


def test_a_route_prefix_given_to_the_deployment_is_kept_for_serve_run(monkeypatch):
    """Ray 2.60's deployment() takes no route_prefix (older Rays did): the launcher keeps it for serve.run."""
    require_modules("ray.serve", what="the Ray Serve deployment patch")
    from ray import serve
    from ray.serve.deployment import Deployment

    from vllm_lint.reference.ray_serve_apps import _patch_deployments

    takes_prefix = "route_prefix" in inspect.signature(serve.deployment).parameters
    monkeypatch.setattr(serve, "deployment", serve.deployment)
    monkeypatch.setattr(Deployment, "options", Deployment.options)
    prefixes: dict[str, str] = {}
    _patch_deployments(False, prefixes)

    @serve.deployment(route_prefix="/biogpt-large", health_check_timeout_s=600)
    class BioGptLarge:
        pass

    assert BioGptLarge.name == "BioGptLarge"
    assert prefixes == ({} if takes_prefix else {"BioGptLarge": "/biogpt-large"})


def test_an_aiohttp_apps_post_routes_are_described(tmp_path):
    """aiohttp keeps no schema: the launcher describes the fields its POST handlers read."""
    require_modules("aiohttp", what="the aiohttp OpenAPI test")
    from vllm_lint.reference.aiohttp_apps import aiohttp_openapi
    from vllm_lint.reference.launch import import_file
    from vllm_lint.reference.validate.endpoint import discover_endpoint

    server = tmp_path / "server.py"
    server.write_text(
        "from aiohttp import web\n"
        "routes = web.RouteTableDef()\n\n"
        "@routes.post('/generate')\n"
        "async def post_generate(request):\n"
        "    body = await request.json()\n"
        "    return web.Response(text=body.get('text', None))\n\n"
        "@routes.post('/form')\n"
        "async def form(request):\n"
        "    return web.Response(text=(await request.post())['prompt'])\n\n"
        "@routes.get('/health')\n"
        "async def health(request):\n"
        "    return web.Response(text='ok')\n\n"
        "app = web.Application()\n"
        "app.add_routes(routes)\n")
    document = aiohttp_openapi(import_file(server).app)
    assert sorted(document["paths"]) == ["/form", "/generate"]
    assert discover_endpoint({"paths": {"/generate": document["paths"]["/generate"]}}).describe() == \
        "POST /generate with 'text' in the JSON body"
    assert discover_endpoint(document).describe() == "POST /form with 'prompt' in the form body"


def test_a_quart_apps_post_routes_are_described(tmp_path):
    """Quart keeps no schema (and its url_map is Flask's, but its body reads are awaited)."""
    require_modules("quart", what="the Quart OpenAPI test")
    from vllm_lint.reference.launch import import_file
    from vllm_lint.reference.quart_apps import is_quart_app, quart_openapi
    from vllm_lint.reference.validate.endpoint import discover_endpoint

    server = tmp_path / "server.py"
    server.write_text(
        "from quart import Quart, request\n"
        "app = Quart(__name__)\n\n"
        "@app.post('/generate')\n"
        "async def generate():\n"
        "    body = await request.get_json()\n"
        "    return {'text': body['prompt']}\n\n"
        "@app.route('/form', methods=['POST'])\n"
        "async def form():\n"
        "    return (await request.form)['text']\n\n"
        "@app.post('/items/<name>')\n"
        "async def item(name):\n"
        "    return name\n\n"
        "@app.get('/health')\n"
        "async def health():\n"
        "    return 'ok'\n")
    app = import_file(server).app
    document = quart_openapi(app)
    assert is_quart_app(app)
    assert sorted(document["paths"]) == ["/form", "/generate"]
    assert discover_endpoint(document).describe() == "POST /generate with 'prompt' in the JSON body"
    assert discover_endpoint({"paths": {"/form": document["paths"]["/form"]}}).describe() == \
        "POST /form with 'text' in the form body"


def test_quarts_own_run_serves_on_the_launchers_port_without_its_reloader(monkeypatch):
    require_modules("quart", what="the Quart run patch")
    import quart

    from vllm_lint.reference.quart_apps import serve_quart_on

    calls = []
    monkeypatch.setattr(quart.Quart, "run", lambda self, host=None, port=None, debug=None, use_reloader=True, **kw:
                        calls.append(("run", host, port, debug, use_reloader)))
    monkeypatch.setattr(quart.Quart, "run_task", lambda self, host="127.0.0.1", port=5000, debug=None, **kw:
                        calls.append(("run_task", host, port, debug)))
    serve_quart_on("127.0.0.1", 8101, "/__stats__", lambda: 7)
    app = quart.Quart("server")
    app.run("0.0.0.0", 8000, True)
    app.run_task(port=9000)
    assert calls == [("run", "127.0.0.1", 8101, True, False), ("run_task", "127.0.0.1", 8101, None)]
    assert {rule.rule for rule in app.url_map.iter_rules()} >= {"/openapi.json", "/__stats__"}  # added once


@pytest.mark.parametrize("asgi", [True, False], ids=["falcon.asgi.App", "falcon.App"])
def test_a_falcon_apps_post_routes_are_described_and_served(tmp_path, asgi):
    require_modules("falcon", what="the Falcon OpenAPI test")
    from falcon import testing

    from vllm_lint.reference.falcon_apps import add_falcon_routes, falcon_openapi, is_falcon_app
    from vllm_lint.reference.launch import import_file
    from vllm_lint.reference.validate.endpoint import discover_endpoint

    maybe_async, maybe_await = ("async ", "await ") if asgi else ("", "")
    server = tmp_path / "server.py"
    server.write_text(
        f"import falcon{'.asgi' if asgi else ''}\n\n"
        "class Generate:\n"
        f"    {maybe_async}def on_post(self, req, resp):\n"
        f"        body = {maybe_await}req.get_media()\n"
        "        resp.media = {'text': body['prompt']}\n\n"
        "class Search:\n"
        f"    {maybe_async}def on_post(self, req, resp):\n"
        "        resp.media = {'text': req.get_param('query')}\n\n"
        "class Health:\n"
        f"    {maybe_async}def on_get(self, req, resp):\n"
        "        resp.media = 'ok'\n\n"
        f"app = falcon{'.asgi' if asgi else ''}.App()\n"
        "app.add_route('/generate', Generate())\n"
        "app.add_route('/search', Search())\n"
        "app.add_route('/items/{name}', Generate())\n"
        "app.add_route('/health', Health())\n")
    app = import_file(server).app
    document = falcon_openapi(app)
    assert is_falcon_app(app)
    assert sorted(document["paths"]) == ["/generate", "/search"]
    assert discover_endpoint(document).describe() == "POST /generate with 'prompt' in the JSON body"
    assert discover_endpoint({"paths": {"/search": document["paths"]["/search"]}}).describe() == \
        "POST /search with 'query' in the query string"
    add_falcon_routes(app, "/__stats__", lambda: 7)
    client = testing.TestClient(app)
    assert client.simulate_get("/openapi.json").json == document
    assert client.simulate_get("/__stats__").json == {"generated_tokens": 7}


def test_a_sanic_apps_routes_are_described_and_its_name_let_through(tmp_path, monkeypatch):
    """Sanic keeps no schema: the launcher describes the fields its handlers read (a GET route by its query
    string); a name Sanic 21.12 and later reject (a space) is let through, as older Sanic did."""
    require_modules("sanic", what="the Sanic OpenAPI test")
    from sanic import Sanic
    from sanic.base import root

    from vllm_lint.reference.launch import import_file
    from vllm_lint.reference.sanic_apps import add_routes, allow_any_app_name, sanic_openapi
    from vllm_lint.reference.validate.endpoint import discover_endpoint

    monkeypatch.setattr(root, "VALID_NAME", root.VALID_NAME)
    monkeypatch.setattr(Sanic, "_app_registry", {})
    allow_any_app_name()
    server = tmp_path / "server.py"
    server.write_text(
        "from sanic import Sanic\n"
        "from sanic.response import json\n"
        "app = Sanic('RH writing assistant')\n\n"
        "@app.route('/')\n"
        "async def test(request):\n"
        "    return json(request.args.get('text', ''))\n\n"
        "@app.route('/chat', methods=['POST'])\n"
        "async def chat(request):\n"
        "    return json(request.json['text'])\n\n"
        "@app.get('/item/<n:int>')\n"
        "async def item(request, n):\n"
        "    return json(request.args.get('text'))\n")
    app = import_file(server).app
    add_routes(app, "/__vllm_lint__/generated_tokens", lambda: 0)
    document = sanic_openapi(app)
    assert document["info"]["title"] == "RH writing assistant"
    assert sorted(document["paths"]) == ["/", "/chat"]  # not the launcher's, nor one with a path parameter
    assert discover_endpoint(document).describe() == "POST /chat with 'text' in the JSON body"
    assert discover_endpoint({"paths": {"/": document["paths"]["/"]}}).describe() == \
        "GET / with 'text' in the query string"


def test_sanic_runs_in_one_process_on_the_launchers_address():
    from vllm_lint.reference.sanic_apps import run_settings

    def run(self, host=None, port=None, *, debug=False, workers=1, auto_reload=None, dev=False, single_process=False):
        pass

    def old_run(self, host=None, port=None, *, debug=False, workers=1, auto_reload=None):  # Sanic before 22.9
        pass

    asked = {"host": "0.0.0.0", "port": 8482, "workers": 4, "dev": True, "debug": True}
    assert run_settings(run, asked, "127.0.0.1", 8101) == \
        {"host": "127.0.0.1", "port": 8101, "debug": True, "single_process": True}
    assert run_settings(old_run, asked, "127.0.0.1", 8101) == {"host": "127.0.0.1", "port": 8101, "debug": True}


def test_with_no_gpu_torchs_gpu_queries_answer_for_the_cpu(monkeypatch):
    """``torch.cuda.get_device_name(torch.cuda.current_device())`` in a server's start-up raises on a CPU build."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: its queries are torch's own")
    from vllm_lint.reference.launch import answer_gpu_queries_on_the_cpu

    for name in ("current_device", "get_device_name", "set_device", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, getattr(torch.cuda, name))
    answer_gpu_queries_on_the_cpu()
    assert torch.cuda.get_device_name(torch.cuda.current_device()) == "cpu"
    torch.cuda.set_device("cuda:0")
    torch.cuda.synchronize()
    assert not torch.cuda.is_available()


def test_a_tokenizer_named_as_transformers_4s_python_one_gives_one_texts_length_as_a_number(tiny_model_dir):
    """``tokens = GPT2Tokenizer(...)(text, return_length=True); tokens["length"] + 3``: a number in transformers 4's
    Python GPT2Tokenizer, a list of one in transformers 5's (the RedHatTraining Sanic app stopped there)."""
    require_modules("transformers", what="the tokenizer shim")
    import types

    import transformers

    from vllm_lint.reference.python_tokenizers import answer_as_python_tokenizers, python_tokenizer_names

    source = ("from transformers import AutoTokenizer, GPT2Tokenizer\n"
              "tokenizer = GPT2Tokenizer.from_pretrained('.model')\n"
              "other = AutoTokenizer.from_pretrained('.model')\n"
              "fast = transformers.GPT2TokenizerFast.from_pretrained('.model')\n")
    assert python_tokenizer_names(source, transformers) == {"GPT2Tokenizer"}
    module = types.SimpleNamespace(GPT2Tokenizer=transformers.GPT2Tokenizer, GPT2TokenizerFast=transformers.GPT2TokenizerFast)
    answer_as_python_tokenizers(module, {"GPT2Tokenizer"})
    tokenizer = module.GPT2Tokenizer.from_pretrained(tiny_model_dir)
    one = tokenizer("hello world", return_length=True)
    assert one["length"] == len(one["input_ids"])
    assert tokenizer(["hello world", "a"], return_length=True)["length"] == [len(one["input_ids"]), 2]  # a batch: a list
    if "TokenizersBackend" in {base.__name__ for base in transformers.GPT2Tokenizer.__mro__}:  # transformers 5
        assert module.GPT2TokenizerFast.from_pretrained(tiny_model_dir)("hello world", return_length=True)["length"] == [one["length"]]


def test_a_chainlit_answer_is_its_assistant_messages_as_they_ended():
    """Each message the app sends, in order: its last update, or its streamed tokens joined; the task that
    connection_successful ends before the user's message is not the answer's end."""
    from vllm_lint.reference.validate.chainlit_endpoint import Conversation, user_message

    conversation = Conversation()
    conversation.on_task_end()  # connection_successful's
    assert not conversation.ended.is_set()
    conversation.on_task_start()
    conversation.on_step({"id": "u", "type": "user_message", "output": "hi"})
    conversation.on_step({"id": "a", "type": "assistant_message", "output": ""})
    conversation.on_token({"id": "a", "token": "Hel"})
    conversation.on_token({"id": "a", "token": "lo"})
    conversation.on_step({"id": "b", "type": "assistant_message", "output": "first"})
    conversation.on_step({"id": "b", "type": "assistant_message", "output": "second"})
    conversation.on_task_end()
    assert conversation.ended.is_set() and not conversation.failed
    assert conversation.answer() == ["Hello", "second"]
    payload = user_message("a prompt")
    assert payload["message"]["output"] == "a prompt" and payload["message"]["type"] == "user_message"
