"""The fix offered where the engine rewrite is refused (python/rewrite/offload.py): each blocking model call of
an async handler runs in a worker thread, one at a time under a lock, and the module re-lints clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.offload import OFFLOAD_TITLE

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


def test_a_sync_framework_gets_no_fix(tmp_path):
    source = '''\
from flask import Flask, request
from transformers import pipeline

app = Flask(__name__)
summarizer = pipeline("summarization", model="facebook/bart-large-cnn")


@app.post("/summarize")
def summarize():
    return summarizer(request.form["text"])[0]["summary_text"]
'''
    [finding] = _findings(tmp_path, source)
    assert finding.fix is None and "; no automatic fix: " in finding.message


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
