"""The pre-filter's tree stage (python/tree_facts.py) lets through what the checkers can report and keeps out the
shapes its byte tests cannot tell apart: a class statement that reads like a call, a module that calls a class it
defines itself, a name that holds another one.

The findings side is the recall test's (tests/test_prefilter_recall.py): every rule example's findings survive.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_lint.python import prefilter
from vllm_lint.vllm_api import load_api

API = load_api(None)


def _passes(code: str, *codes: str, name: str = "module.py") -> bool:
    return prefilter.may_match(code.encode(), Path(name), frozenset(codes), lambda: API)


def _assert_reported_and_passed(tmp_path, monkeypatch, code: str, source: str, name: str) -> None:
    """The rule reports ``source`` when nothing is filtered, and the pre-filter lets it through."""
    from lintutil import lint_text

    monkeypatch.setenv("VLLM_LINT_NO_PREFILTER", "1")
    assert code in {d.code for d in lint_text(tmp_path, name, source, select=(code,))}, "the shape is not one the rule reports"
    assert _passes(source, code, name=name)


# vLLM's own sampling_params.py in small: the class statement and its own calls of it, never the imported class.
OWN_CLASS = '''
class SamplingParams(
    Base,
    omit_defaults=True,
):
    n: int = 1

    def clone(self):
        return SamplingParams(n=self.n)
'''


@pytest.mark.parametrize("code", ["VLL301", "VLL302"])
def test_a_module_defining_samplingparams_is_not_parsed(code):
    assert not _passes(OWN_CLASS, code)


@pytest.mark.parametrize(
    "source",
    [
        "from vllm import SamplingParams\nparams = SamplingParams(temperature=0)\n",
        "import vllm\nparams = vllm.SamplingParams(\n    temperature=0,\n)\n",
        "from vllm import SamplingParams as SP\nparams = SP(temperature=0)\n",
        "from vllm import SamplingParams\nMake: type = SamplingParams\nparams = Make(temperature=0)\n",
        "def f():\n    from vllm.sampling_params import SamplingParams\n    return SamplingParams(temperature=0)\n",
    ],
)
def test_an_imported_samplingparams_call_without_max_tokens_is_parsed(source):
    assert _passes(source, "VLL302")


def test_a_samplingparams_call_with_max_tokens_or_spread_is_not_parsed_for_vll302():
    assert not _passes("from vllm import SamplingParams\np = SamplingParams(max_tokens=8)\n", "VLL302")
    assert not _passes("from vllm import SamplingParams\np = SamplingParams(**kwargs)\n", "VLL302")
    assert _passes("from vllm import SamplingParams\np = SamplingParams(max_token=8)\n", "VLL301")


# vLLM's own arg_utils.py in small: subclassing and annotations name the class, nothing constructs it.
OWN_ENGINE_ARGS = '''
from dataclasses import dataclass

@dataclass
class EngineArgs:
    model: str = "m"

class AsyncEngineArgs(EngineArgs):
    def clone(self, other: EngineArgs) -> "AsyncEngineArgs":
        return self
'''


def test_a_module_that_only_subclasses_engineargs_is_not_parsed_for_launches():
    assert not _passes(OWN_ENGINE_ARGS, "VLL201")


def test_a_class_or_def_statement_is_no_call_to_the_byte_stage(monkeypatch):
    """``class AsyncEngineArgs(EngineArgs):`` reads like a call of AsyncEngineArgs: the byte stage itself now keeps
    it out, with no ``ast`` parse (vLLM's arg_utils.py was the cold run's costliest tree read)."""

    def no_tree(raw: bytes) -> None:
        raise AssertionError("the tree was read")

    monkeypatch.setattr(prefilter, "_tree_facts_of", no_tree)
    assert not _passes(OWN_ENGINE_ARGS, "VLL201")
    assert not _passes("class LLM(Base):\n    pass\n\nasync  def   EngineArgs(x):\n    pass\n", "VLL201")
    for call in ("x = LLM(model='m')", "class Mixed(LLM(model='m')):\n    pass", "myclass = 1; LLM(model='m')"):
        assert prefilter._ENGINES[0].may_be_called(call.encode()), call


@pytest.mark.parametrize(
    "source",
    [
        "from vllm import LLM\nllm = LLM(model='m')\n",
        "from vllm import LLM as Engine\nllm = Engine(\n    model='m',\n)\n",
        "import vllm\nllm = vllm.LLM(model='m')\n",
        "from vllm import EngineArgs\nMake: type = EngineArgs\nargs = Make(model='m')\n",
        "from vllm.engine.arg_utils import AsyncEngineArgs\nargs = AsyncEngineArgs(model='m')\n",
    ],
)
def test_an_engine_construction_is_parsed(source):
    assert _passes(source, "VLL201")


def test_on_event_inside_a_longer_name_is_not_a_startup_hook():
    model = "import transformers\nmodel = transformers.AutoModel.from_pretrained('m')\n"
    assert not _passes(model + "self._projection_events = None\n", "VLL503")
    hook = "from fastapi import FastAPI\napp = FastAPI()\n@app . on_event('startup')\ndef load():\n    pass\n"
    assert _passes(model + hook, "VLL503")


# The quoted-command test once was one pattern that began with a set of bytes; the split one must agree with it.
_ONE_PATTERN = re.compile(
    rb"[\"']vllm(?:" + prefilter._BETWEEN_ITEMS + rb"|" + prefilter._BETWEEN_WORDS + rb")serve\b"
)


@pytest.mark.parametrize(
    "raw",
    [
        b'["vllm", "serve", "m"]',
        b"['vllm',\n    # the server\n    'serve']",
        b'"vllm serve m"',
        b'"vllm \\\n serve"',
        b'x = "vllm" + "serve"',
        b"'vllm', r'serve'",
        b'"vllm"\n"served"',
        b'vllm serve',
        b'"vllm\'vllm", "serve"',
    ],
)
def test_the_quoted_command_test_agrees_with_the_one_pattern(raw):
    assert prefilter._quoted_vllm_serve(raw) == (_ONE_PATTERN.search(raw) is not None)


def test_a_comment_in_a_command_list_or_an_import_list_is_read_to_its_line_s_end():
    # A comment's "#"s and a ")" in it: each comment is one run to the line's end (no backtracking through its "#"s;
    # 40 of them once meant 2**40 tries), and a ")" in it does not close the import list.
    many = b"# " * 40
    assert prefilter._quoted_vllm_serve(b'cmd = ["vllm",  ' + many + b'\n    "serve", "m"]\n')
    assert not prefilter._quoted_vllm_serve(b'cmd = ["vllm",  ' + many + b"\n")
    from vllm_lint.python.rules.api_prefilter import _FROM_IMPORT

    # unclosed: read by the one-line branch, up to the comment
    assert _FROM_IMPORT.findall(b"from vllm import (LLM,  " + many + b"\n") == [(b"vllm", b"(LLM,  ")]
    found = _FROM_IMPORT.findall(b"from vllm import (  # see f(x)\n    LLM,\n    NoSuchName,\n)\n")
    assert found and b"NoSuchName" in found[0][1]


def test_a_long_continued_import_list_without_vllm_is_read_in_one_pass():
    """Each blank run around a comma is read one way (an item that could take or leave it meant 2**40 tries for
    these 40 names, as in h2ogpt's src/gen.py); the lists that do name vLLM are still found, item for item."""
    from vllm_lint.python.rules.api_prefilter import _IMPORT, _import_items

    names = b", ".join(b"name_%d" % i for i in range(40))
    assert _IMPORT.findall(b"from utils import " + names + b", \\\n    more_names\nimport vllm_x\n") == []
    found = _IMPORT.findall(b"import os,  sys , \\\n    vllm.entrypoints as e, json\nimport a as b,vllm\n")
    assert [_import_items(names) for names in found] == [
        [("os", None), ("sys", None), ("vllm.entrypoints", "e"), ("json", None)], [("a", "b"), ("vllm", None)],
    ]


# -- the tree stage of VLL105-VLL108 and VLL502: each shape the rule reports passes (checked against the linter with
# the pre-filter off), and a module the byte test lets through but holding no such call or return is kept out.
SERVER = "from fastapi import FastAPI\napp = FastAPI()\n"
REPORTED = [
    ("VLL105", "import uvicorn\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('m')\n" + SERVER
     + "if __name__ == '__main__':\n    uvicorn.run('server:app', workers=4)\n"),
    ("VLL105", "from uvicorn import run as serve_app\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('m')\n"
     + SERVER + "serve_app('server:app',\n          workers=4)\n"),
    ("VLL106", "import uuid\nfrom vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams\n" + SERVER
     + "engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model='m'))\n@app.post('/g')\nasync def g(p: str):\n"
     "    async for out in engine.generate(p, SamplingParams(max_tokens=8), 'req'):\n        pass\n"),
    ("VLL106", "import vllm\n" + SERVER + "REQUEST = 'fixed'\n@app.post('/g')\nasync def g(request, p: str):\n"
     "    engine = request.app.state.engine\n    async for out in engine.generate(p, None, request_id=REQUEST):\n        pass\n"),
    ("VLL107", "from openai import OpenAI\n" + SERVER + "client = OpenAI()\n@app.post('/c')\nasync def c(p: str):\n"
     "    return client.chat.completions.create(model='m', messages=[])\n"),
    ("VLL107", "import litellm\nfrom litellm import completion as complete\n" + SERVER
     + "@app.post('/c')\nasync def c(p: str):\n    return complete(model='m', messages=[])\n"),
    ("VLL108", "import httpx\n" + SERVER + "@app.post('/c')\nasync def c(p: str):\n    client = httpx.AsyncClient()\n"
     "    return (await client.get('http://x')).text\n"),
    ("VLL108", "from openai import AsyncOpenAI as Client\n" + SERVER
     + "@app.post('/c')\nasync def c(p: str):\n    client = Client(base_url='http://x')\n    return 1\n"),
    ("VLL502", SERVER + "@app.get('/h')\nasync def h():\n    return (\n        {'ok': False},\n        503,\n    )\n"),
    # registered by name, not decorated: a registration call, a route decorator applied by hand, a partial
    ("VLL502", SERVER + "async def h():\n    return {'ok': False}, 503\napp.add_api_route('/h', h)\n"),
    ("VLL502", SERVER + "async def h():\n    return {'ok': False}, 503\napp.get('/h')(h)\n"),
    ("VLL502", "import functools\n" + SERVER + "async def h(x):\n    return {'ok': x}, 503\n"
     "app.add_api_route('/h', functools.partial(h, 1))\n"),
    # a route decorator called by hand, with any verb and on any expression naming the handler
    ("VLL101", "from transformers import pipeline\n" + SERVER + "generator = pipeline('text-generation')\n"
     "async def g(p: str):\n    return generator(p)\napp.get('/g')(g)\n"),
    ("VLL101", "from functools import partial\nfrom transformers import pipeline\n" + SERVER
     + "generator = pipeline('text-generation')\nasync def g(p: str, n: int):\n    return generator(p)\n"
     "app.post(path=str('/g'))(partial(g, n=1))\n"),
]


def test_the_byte_clue_of_a_route_called_by_hand_has_every_route_verb():
    from vllm_lint.python.handler_table import ROUTE_VERBS

    assert set(prefilter._ROUTE_VERBS.decode().split("|")) == ROUTE_VERBS


@pytest.mark.parametrize(("code", "source"), REPORTED, ids=[f"{code}-{i}" for i, (code, _) in enumerate(REPORTED)])
def test_what_the_rule_reports_passes_the_tree_stage(tmp_path, monkeypatch, code, source):
    _assert_reported_and_passed(tmp_path, monkeypatch, code, source, "server.py")


KEPT_OUT = [
    # uvicorn and "workers" in the module, no run(..., workers=...) call
    ("VLL105", "import uvicorn\nworkers = 4\nconfig = uvicorn.Config('server:app')\nprint(workers)\n"),
    # request_id only read, generate() given a fresh id built in the call
    ("VLL106", "from vllm import AsyncLLMEngine\n" + SERVER + "@app.post('/g')\nasync def g(request_id: str):\n"
     "    engine = AsyncLLMEngine.from_engine_args(None)\n    return engine.generate('p', None, str(uuid4()))\n"),
    # an async handler and an OpenAI import, but only the async client's calls
    ("VLL107", "from openai import AsyncOpenAI\n" + SERVER + "client = AsyncOpenAI()\n@app.post('/c')\nasync def c(p: str):\n"
     "    return await client.chat.completions.acreate(model='m')\n"),
    # a request handler and httpx imported for its exceptions only
    ("VLL108", "import httpx\n" + SERVER + "@app.post('/c')\nasync def c(p: str):\n    raise httpx.HTTPError('x')\n"),
    # a FastAPI module whose only tuple return is a helper's three values
    ("VLL502", SERVER + "@app.get('/h')\nasync def h():\n    return {'ok': True}\ndef pair():\n    return 1, 2, 3\n"),
    # a handler that calls a helper returning a pair: only the helper's own return is a pair, and it is only called
    ("VLL502", SERVER + "def pair():\n    return {'ok': False}, 503\n@app.get('/h')\nasync def h():\n"
     "    body, status = pair()\n    return body\n"),
    # a handler with a nested function returning a pair: the handler's own returns are no pair
    ("VLL502", SERVER + "@app.get('/h')\nasync def h():\n    def inner():\n        return 1, 503\n    return inner()[0]\n"),
]


@pytest.mark.parametrize(("code", "source"), KEPT_OUT, ids=[f"{code}-{i}" for i, (code, _) in enumerate(KEPT_OUT)])
def test_a_module_without_what_the_rule_reads_is_kept_out(code, source):
    from vllm_lint.python.prefilter import FileBytes, code_only, conditions_of

    data = source.encode()
    byte_tests = [c.holds for c in conditions_of(frozenset({code}))]
    assert any(holds(FileBytes(code_only(data), data, Path("server.py"), lambda: API)) for holds in byte_tests), "the byte test alone keeps it out"
    assert not _passes(source, code, name="server.py")


# -- launches in command lines: "serve" as a word of its own, or a -m module the extractor reads as a launch
LAUNCHED = [
    ("VLL201", 'import subprocess\nsubprocess.run(["vllm", "serve", "m"])\n'),
    ("VLL201", 'import subprocess\nsubprocess.run(\n    [\n        "vllm",\n        "serve",\n        "m",\n    ]\n)\n'),
    ("VLL201", 'import os\nos.system("vllm serve m --port 8000")\n'),
    ("VLL201", 'import subprocess, sys\nsubprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", "m"])\n'),
    ("VLL303", 'import subprocess, sys\nsubprocess.Popen([sys.executable, "-m", "vllm.no_such_module"])\n'),
    ("VLL201", 'from os import execvp as run\nrun("vllm", ["vllm", "serve", "m"])\n'),
    ("VLL201", 'import os\nos . system("vllm serve m")\n'),
]


@pytest.mark.parametrize(("code", "source"), LAUNCHED, ids=[f"{code}-{i}" for i, (code, _) in enumerate(LAUNCHED)])
def test_a_command_line_launch_passes_the_tree_stage(tmp_path, monkeypatch, code, source):
    _assert_reported_and_passed(tmp_path, monkeypatch, code, source, "launch.py")


def test_a_vllm_module_run_with_dash_m_that_starts_no_server_is_kept_out():
    # vLLM's own tools start helper modules of theirs; "serve" inside a module's name is not the word serve
    source = 'import subprocess, sys\nsubprocess.run([sys.executable, "-m", "vllm.sampling_params"])\nNAME = "vllm.snapshot.server"\n'
    assert "vllm.sampling_params" in API.modules
    assert not _passes(source, "VLL201", "VLL303")
    assert _passes(source.replace("vllm.sampling_params", "vllm.entrypoints.openai.api_server"), "VLL201")


def test_a_prefix_of_a_module_name_is_no_module_launched(tmp_path, monkeypatch):
    # vLLM's registry.py in small: a name prefix in a string is no -m module, for the extractor or the pre-filter
    prefix = 'PREFIX = "vllm.model_executor.models."\n'
    source = 'import subprocess, sys\nsubprocess.run([sys.executable, "-m", "vllm.sampling_params"])\n' + prefix
    assert not _passes(source, "VLL303")
    from lintutil import lint_text

    monkeypatch.setenv("VLLM_LINT_NO_PREFILTER", "1")
    dotted = source.replace('"vllm.sampling_params"', '"vllm.model_executor.models."')
    assert lint_text(tmp_path, "launch.py", dotted, select=("VLL303",)) == []


def test_process_words_inside_other_words_start_nothing():
    # "execute" and "filesystem" hold "exec" and "system": no callee the command-line extractor reads is named
    source = 'import vllm\nexecute(filesystem, "vllm serve m")\n'
    assert not prefilter.COMMAND_LINE_LAUNCH.holds(prefilter.FileBytes(source.encode(), source.encode(), Path("m.py"), lambda: API))
    assert _passes(source.replace("filesystem", "os.system"), "VLL201")


# -- request handlers read off the tree (prefilter.handler_in_tree), for the rules on models in handlers
LOAD = "    model = AutoModelForCausalLM.from_pretrained('m')\n    return str(model)\n"
HF = "from transformers import AutoModelForCausalLM\n"
HANDLED = [
    ("VLL104", HF + SERVER + "@app.post('/g')\ndef g(p: str):\n" + LOAD),
    ("VLL104", HF + SERVER + "def g(p: str):\n" + LOAD + "app.add_api_route('/g', g, methods=['POST'])\n"),
    ("VLL104", HF + "from starlette.applications import Starlette\nfrom starlette.routing import Route as R\n"
     "async def g(request):\n" + LOAD + "app = Starlette(routes=[R('/g', endpoint=g)])\n"),
    ("VLL104", HF + "from flask import Flask\nfrom flask.views import MethodView\napp = Flask(__name__)\n"
     "class G(MethodView):\n    def post(self):\n" + LOAD.replace("    ", "        ") + "app.add_url_rule('/g', view_func=G.as_view('g'))\n"),
    ("VLL104", HF + "import gradio as gr\ndef g(p):\n" + LOAD + "demo = gr.Interface(fn=g, inputs='text', outputs='text')\n"),
    # a Falcon resource: responders by name, registered (add_route) in another module
    ("VLL104", HF + "import falcon\nclass G:\n    def on_post(self, req, resp):\n" + LOAD.replace("    ", "        ")),
]


@pytest.mark.parametrize(("code", "source"), HANDLED, ids=[f"{code}-{i}" for i, (code, _) in enumerate(HANDLED)])
def test_a_request_handler_passes_the_tree_stage(tmp_path, monkeypatch, code, source):
    _assert_reported_and_passed(tmp_path, monkeypatch, code, source, "server.py")


def test_a_module_with_handler_words_but_no_handler_is_kept_out():
    # vLLM's processor.py in small: transformers, a "View" in a type and dict.get calls; aiohttp.web.get is a
    # route constructor only where aiohttp is imported, and called through an imported name, not a dict's get
    source = HF + "from collections.abc import KeysView\ncache = {}\ndef load(keys: KeysView):\n" + LOAD.replace("return", "cache.get(1)\n    return")
    assert not _passes(source, "VLL101", "VLL102", "VLL103", "VLL104")
    assert not _passes("from aiohttp import web\n" + source, "VLL104")
    assert _passes("from aiohttp import web\n" + source + "routes = [web.get('/', load)]\n", "VLL104")


# Route constructors called under another name: the byte test lets the module through on its import of the framework
# (these were hidden by the byte test alone), the tree stage by the table's names through the alias.
ALIASED_ROUTES = [
    HF + "from aiohttp import web as w\nasync def g(request):\n" + LOAD.replace("return str(model)", "return w.Response(text=str(model))")
    + "app = w.Application()\napp.add_routes([w.post('/g', g)])\n",
    HF + "from django import urls\ndef g(request):\n" + LOAD + "urlpatterns = [urls.path('g/', g)]\n",
]


@pytest.mark.parametrize("source", ALIASED_ROUTES, ids=["aiohttp-web-as-w", "django-urls-module"])
def test_a_route_built_under_another_name_passes(tmp_path, monkeypatch, source):
    _assert_reported_and_passed(tmp_path, monkeypatch, "VLL104", source, "server.py")


# ``@<owner>.<verb>(...)`` is a route only where handlers.py can read one (its _route_framework): the owner may
# hold an app, a framework with route decorators is imported, or the first argument is a URL path.
def test_a_library_decorator_named_like_a_verb_is_no_route():
    # vLLM's diffusion_gemma.py in small: torch's config patch, in a module that imports no web framework
    source = HF + "import torch\n@torch._dynamo.config.patch(recompile_limit=64)\ndef g(p: str):\n" + LOAD
    assert not _passes(source, "VLL101", "VLL102", "VLL103", "VLL104")


VERB_ROUTES = [
    HF + "from main import app\n@app.patch('/g')\ndef g(p: str):\n" + LOAD,  # an app from another module
    HF + "import api\n@api.router.post('/g')\ndef g(p: str):\n" + LOAD,  # a plain import, a URL path
    HF + "import fastapi\nimport api\n@api.app.post(path='/g')\ndef g(p: str):\n" + LOAD,  # a framework imported
    HF + "from fastapi import FastAPI\nserver = FastAPI()\n@server.patch('/g')\ndef g(p: str):\n" + LOAD,
]


@pytest.mark.parametrize("source", VERB_ROUTES, ids=["from-import", "url-path", "framework-imported", "assigned-app"])
def test_a_route_decorator_passes_the_tree_stage(tmp_path, monkeypatch, source):
    _assert_reported_and_passed(tmp_path, monkeypatch, "VLL104", source, "server.py")


# What the cross-module rules ask of a module before its imports are summarised (surfaces/python.py): a handler or a
# start-up hook in its tree, in each shape handlers.py registers a start-up hook by.
STARTUP_HOOKS = [
    "from fastapi import FastAPI\napp = FastAPI()\nasync def warm():\n    pass\napp.add_event_handler('startup', warm)\n",
    "from fastapi import FastAPI\nasync def warm(app):\n    yield\napp = FastAPI(lifespan=warm)\n",
    "from aiohttp import web\nasync def warm(app):\n    pass\napp = web.Application()\napp.on_startup.append(warm)\n",
    "from fastapi import FastAPI\napp = FastAPI()\nasync def startup_event():\n    pass\n",
    "import contextlib\n@contextlib.asynccontextmanager\nasync def warm(app):\n    yield\n",
    "from fastapi import FastAPI\napp = FastAPI()\n@app.on_event('startup')\nasync def warm():\n    pass\n",
]


@pytest.mark.parametrize("source", STARTUP_HOOKS, ids=["add_event_handler", "lifespan", "on_startup-list", "named", "contextmanager", "on_event"])
def test_a_start_up_hook_counts_as_a_handler_for_the_cross_module_rules(source):
    assert prefilter.handlers_in_tree(source.encode(), Path("app.py"), lambda: API)


def test_handler_words_without_a_handler_or_hook_do_not_count_for_the_cross_module_rules():
    source = "import torch\nfrom model import generate\n@torch._dynamo.config.patch(recompile_limit=64)\ndef run(p):\n    return generate(p)\n"
    assert prefilter.may_have_handlers(source.encode(), Path("worker.py"))  # the byte test's "@....patch("
    assert not prefilter.handlers_in_tree(source.encode(), Path("worker.py"), lambda: API)
