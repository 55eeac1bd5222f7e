"""The fix offered where the engine rewrite is refused (python/rewrite/offload.py): each blocking model call of
an async handler runs in a worker thread, one at a time under a lock, and the module re-lints clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.offload import OFFLOAD_TITLE, THREAD_LOCK_TITLE

from lintutil import lint_text

SUMMARIZER = '''\
from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
summarizer = pipeline("summarization", model="facebook/bart-large-cnn")


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/summarize")
async def summarize(text: str):
    # Blocks the event loop!
    return summarizer(text, max_length=60)[0]["summary_text"]  # synchronous call


@app.post("/titles")
async def titles(text: str):
    result = summarizer(text, max_length=8)  # the short form
    return result
'''

SUMMARIZER_FIXED = '''\
import asyncio
from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
summarizer = pipeline("summarization", model="facebook/bart-large-cnn")


model_lock = asyncio.Lock()  # the model calls run one at a time, as on the event loop before


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/summarize")
async def summarize(text: str):
    async with model_lock:
        return (await asyncio.to_thread(summarizer, text, max_length=60))[0]["summary_text"]


@app.post("/titles")
async def titles(text: str):
    async with model_lock:
        result = await asyncio.to_thread(summarizer, text, max_length=8)  # the short form
    return result
'''


def _findings(tmp_path: Path, source: str):
    return [d for d in lint_text(tmp_path, "server.py", textwrap.dedent(source)) if d.code in ("VLL101", "VLL102", "VLL103")]


def _fixed(tmp_path: Path, source: str) -> tuple[str, dict[str, int]]:
    path = tmp_path / "server.py"
    path.write_text(source)
    outcome = fix_file(path, settings=Settings(root=tmp_path))
    return outcome.fixed.decode(), dict(outcome.applied)


def test_a_refused_pipeline_runs_in_a_worker_thread_under_a_lock(tmp_path):
    [first, second] = _findings(tmp_path, SUMMARIZER)
    assert first.message == (
        "transformers pipeline called inside a request handler (summarize): it blocks the event loop: every other "
        "request waits until it finishes; serve with vLLM's AsyncLLMEngine instead; the engine rewrite is refused (the "
        "pipeline task is 'summarization'; only \"text-generation\" maps onto vLLM's generate() (vLLM does not serve "
        "this task); to batch requests on the engine, serve a generative model with pipeline(\"text-generation\", "
        "model=...), which the rewrite then moves onto it; until then an `async def` handler should run the call in a "
        "worker thread (`await asyncio.to_thread(...)`), and a plain `def` handler already runs in the framework's "
        "worker threads); "
        "the fix offered instead runs each call in a worker thread, one at a time: it frees the event loop but does "
        "not batch"
    )
    assert first.fix is not None and second.fix is not None
    assert first.fix.message == second.fix.message == OFFLOAD_TITLE and "frees the event loop, does not batch" in OFFLOAD_TITLE
    fixed, applied = _fixed(tmp_path, SUMMARIZER)
    assert applied == {"VLL101": 1}  # one whole-module edit
    assert fixed == SUMMARIZER_FIXED
    assert _findings(tmp_path, fixed) == []
    again, applied_again = _fixed(tmp_path, fixed)
    assert (again, applied_again) == (fixed, {})


def test_a_call_in_a_comprehension_gets_no_fix(tmp_path):
    source = SUMMARIZER.replace(
        "    result = summarizer(text, max_length=8)  # the short form\n",
        "    result = [summarizer(part, max_length=8) for part in text.split()]\n",
    )
    found = _findings(tmp_path, source)
    assert [d.fix for d in found] == [None, None]
    assert all("; no automatic fix: the pipeline task is 'summarization'" in d.message for d in found)


FLASK_SUMMARIZER = """\
from flask import Flask, request
from transformers import pipeline

app = Flask(__name__)
summarizer = pipeline("summarization", model="facebook/bart-large-cnn")


@app.post("/summarize")
def summarize():
    return summarizer(request.form["text"])[0]["summary_text"]  # Blocks!
"""
FLASK_SUMMARIZER_FIXED = """\
import threading
from flask import Flask, request
from transformers import pipeline

app = Flask(__name__)
summarizer = pipeline("summarization", model="facebook/bart-large-cnn")


model_lock = threading.RLock()  # one model call at a time: the model and its tokenizer are not safe from two threads at once


@app.post("/summarize")
def summarize():
    with model_lock:
        return summarizer(request.form["text"])[0]["summary_text"]
"""
SEQ2SEQ_HELPER = """\
from fastapi import FastAPI
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

app = FastAPI()
tokenizer = AutoTokenizer.from_pretrained("google/flan-t5-base")
model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-base")


def answer(line):
    tokens = tokenizer(line, return_tensors="pt")
    outputs = model.generate(**tokens, max_new_tokens=20)
    return tokenizer.batch_decode(outputs, skip_special_tokens=True)[0]


@app.get("/ai")
def prompt(line: str) -> str:
    return answer(line)
"""
GRADIO_NO_TASK = """\
import gradio as gr
from transformers import pipeline

chatbot = pipeline(model="facebook/blenderbot-400M-distill")


def reply(message, history):
    conversation = chatbot(message)
    return conversation[0]["generated_text"]


demo = gr.ChatInterface(reply)
demo.launch()
"""


@pytest.mark.parametrize(("source", "locked"), [
    (FLASK_SUMMARIZER, '    with model_lock:\n        return summarizer(request.form["text"])[0]["summary_text"]\n'),
    (FLASK_SUMMARIZER.replace("\n", "\r\n"), '    with model_lock:\r\n        return summarizer(request.form["text"])[0]["summary_text"]\r\n'),
    # the tokenizer's statements beside the call run under the lock too
    (SEQ2SEQ_HELPER, "def answer(line):\n    with model_lock:\n        tokens = tokenizer(line, return_tensors=\"pt\")\n"
     "        outputs = model.generate(**tokens, max_new_tokens=20)\n"
     "        return tokenizer.batch_decode(outputs, skip_special_tokens=True)[0]\n"),
    (GRADIO_NO_TASK, "    with model_lock:\n        conversation = chatbot(message)\n"),
], ids=["flask", "flask-crlf", "fastapi-helper", "gradio"])
def test_a_def_handler_run_in_worker_threads_gets_its_model_calls_under_one_lock(tmp_path, source, locked):
    """Where the framework runs `def` handlers in its worker threads, several at once, the refused module's
    model calls run one at a time under a module-level lock; the re-lint leaves only an info-level note."""
    [finding] = _findings(tmp_path, source)
    assert finding.fix is not None and finding.fix.message == THREAD_LOCK_TITLE
    assert "the engine rewrite is refused (" in finding.message and finding.message.endswith(
        "the fix offered instead runs the calls one at a time under a lock, which the framework's worker threads "
        "would otherwise run at once on one model (not safe from two threads): it does not batch")
    path = tmp_path / "server.py"
    path.write_bytes(source.encode())
    outcome = fix_file(path, settings=Settings(root=tmp_path))
    fixed = outcome.fixed.decode()
    assert dict(outcome.applied) == {finding.code: 1} and locked in fixed
    newline = "\r\n" if "\r\n" in source else "\n"
    assert fixed.count(newline) == len(fixed.splitlines())  # CRLF kept
    assert "threading.RLock()" in fixed and fixed.startswith("import threading" + newline)
    [note] = _findings(tmp_path, fixed)
    assert (note.code, note.severity.value, note.fix) == (finding.code, "info", None)
    assert "runs under `model_lock`, one call at a time in the framework's worker threads: no batching" in note.message
    path.write_bytes(outcome.fixed)
    assert fix_file(path, settings=Settings(root=tmp_path)).fixed == outcome.fixed  # fixed once


def test_the_flask_fix_keeps_every_other_byte(tmp_path):
    fixed, applied = _fixed(tmp_path, FLASK_SUMMARIZER)
    assert (fixed, applied) == (FLASK_SUMMARIZER_FIXED, {"VLL101": 1})


@pytest.mark.parametrize("change", [
    # the lock made per request serialises nothing
    lambda s: s.replace("    with model_lock:\n", "    model_lock = threading.RLock()\n    with model_lock:\n"),
    # a name bound twice may not be the lock
    lambda s: s.replace("\n\n@app.post", "\nmodel_lock = None\n\n@app.post"),
    # another context manager
    lambda s: s.replace("    with model_lock:\n", "    with open('log.txt'):\n"),
    # not a threading lock
    lambda s: s.replace("threading.RLock()", "threading.Event()"),
    # Bottle's default server is not run in threads
    lambda s: s.replace("from flask import Flask, request", "from bottle import Bottle, request").replace(
        "app = Flask(__name__)", "app = Bottle()").replace('@app.post("/summarize")', '@app.route("/summarize")'),
], ids=["local-lock", "rebound", "other-with", "not-a-lock", "bottle"])
def test_a_def_handler_without_a_module_lock_stays_an_error(tmp_path, change):
    [finding] = _findings(tmp_path, change(FLASK_SUMMARIZER_FIXED))
    assert finding.severity.value == "error"


@pytest.mark.parametrize("source", [
    # a generator would hold the lock while its consumer, maybe another thread, waits
    GRADIO_NO_TASK.replace("    conversation = chatbot(message)\n    return", "    yield chatbot(message)\n    return"),
    # one async handler and one def handler: two locks would not keep them one at a time
    FLASK_SUMMARIZER.replace("from flask import", "from quart import").replace("Flask(", "Quart(").replace("Flask,", "Quart,")
    + '\n\n@app.post("/short")\nasync def short():\n    text = summarizer("a b c")\n    return text\n',
    # Bottle's default server is not run in threads: nothing to serialise
    FLASK_SUMMARIZER.replace("from flask import Flask, request", "from bottle import Bottle, request").replace(
        "app = Flask(__name__)", "app = Bottle()").replace('@app.post("/summarize")', '@app.route("/summarize")'),
], ids=["generator", "async-and-def", "bottle"])
def test_no_lock_fallback_where_it_would_not_keep_behaviour(tmp_path, source):
    found = _findings(tmp_path, source)
    assert found and all(d.fix is None and "; no automatic fix: " in d.message for d in found)


def test_a_sanic_handler_keeps_its_framework_and_leaves_the_event_loop(tmp_path):
    source = '''\
from sanic import Sanic
from sanic.response import json
from transformers import pipeline

app = Sanic("writer")
generator = pipeline("text-generation", model="gpt2")


@app.route("/")
async def write(request):
    text = request.args.get("text", "")
    predictions = generator(text, max_length=20)
    return json([p["generated_text"] for p in predictions])
'''
    [finding] = _findings(tmp_path, source)
    assert finding.fix is not None
    assert finding.message.endswith(
        "the engine rewrite is refused (Sanic (22.9 and later) serves from daemonic worker processes, in which vLLM's "
        "AsyncLLMEngine cannot start its engine-core process (Python's multiprocessing gives a daemonic process no "
        "children), and the `app.run(..., single_process=True)` that avoids them is an argument Sanic before 22.9 "
        "rejects; build the engine by hand in an `@app.before_server_start` listener (shut it down in "
        "`@app.after_server_stop`) and run the app with single_process=True, or port the handlers to FastAPI); the fix "
        "offered instead runs each call in a worker thread, "
        "one at a time: it frees the event loop but does not batch"
    )
    fixed, _ = _fixed(tmp_path, source)
    assert "    async with model_lock:\n        predictions = await asyncio.to_thread(generator, text, max_length=20)\n" in fixed
    assert _findings(tmp_path, fixed) == []


def test_an_aiohttp_app_with_cleanup_hooks_keeps_its_model_and_leaves_the_event_loop(tmp_path):
    source = '''\
from aiohttp import web
from transformers import pipeline

generator = pipeline("text-generation", model="gpt2")


async def write(request):
    text = request.query.get("text", "")
    predictions = generator(text, max_new_tokens=20)
    return web.json_response([p["generated_text"] for p in predictions])


async def close(app):
    print("bye")


app = web.Application()
app.on_cleanup.append(close)
app.router.add_get("/", write)
'''
    [finding] = _findings(tmp_path, source)
    assert finding.fix is not None
    assert "the engine rewrite is refused (`app.on_cleanup` registers clean-up hooks, which aiohttp runs after the " \
        "engine's clean-up has shut it down; move them into the cleanup context by hand)" in finding.message


FALCON_INIT = '''\
import falcon.asgi
from transformers import pipeline


class Generate:
    def __init__(self):
        self.generator = pipeline("text-generation", model="gpt2")

    async def on_post(self, req, resp):
        body = await req.get_media()
        resp.media = self.generator(str(body["prompt"]), max_new_tokens=20)
'''
CHAINLIT_STARTUP = '''\
import chainlit as cl
from transformers import pipeline

generator = pipeline("text-generation", model="gpt2")


@cl.on_app_startup
def hello():
    print("up")


@cl.on_message
async def main(message: cl.Message):
    await cl.Message(content=generator(message.content)[0]["generated_text"]).send()
'''


@pytest.mark.parametrize(("source", "reason"), [
    (FALCON_INIT + '\n\napp = falcon.asgi.App()\napp.add_route("/", Generate())\n',
     "the pipeline is built in Generate.__init__(), which runs where its object is made, as the module is imported, "
     "before Falcon's event loop; build it by a module-level statement of its own"),
    (FALCON_INIT.replace('        self.generator = pipeline("text-generation", model="gpt2")\n', "        pass\n")
     .replace("self.generator(", "generator(").replace("\n\nclass", '\ngenerator = pipeline("text-generation", model="gpt2")\n\n\nclass')
     + '\n\ndef create_app():\n    app = falcon.asgi.App()\n    app.add_route("/", Generate())\n    return app\n',
     "`falcon.asgi.App()` is not bound by a plain module-level `app = falcon.asgi.App()`"),
    (CHAINLIT_STARTUP, "hello() is the app's @cl.on_app_startup callback already, and Chainlit keeps one (a second replaces it); "
     "start and shut down the engine in it by hand"),
])
def test_falcon_and_chainlit_refusals_say_what_to_change(tmp_path, source, reason):
    [finding] = _findings(tmp_path, source)
    assert reason in finding.message
    assert finding.fix is not None  # the worker-thread fallback
