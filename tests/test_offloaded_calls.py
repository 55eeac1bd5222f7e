"""A module function that blocks its thread, called by a function the rewrite makes async
(helpers.offloaded_calls): awaited in a worker thread, or refused where it cannot be awaited in place."""

from __future__ import annotations

from pathlib import Path

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.offload import THREAD_LOCK_TITLE

from lintutil import fixed_server, lint_text


def _fixed(tmp_path: Path, source: str) -> str:
    return fixed_server(tmp_path, source, {"VLL102": 1})


# A module function that blocks its thread (directly, or through the functions it calls), called by a function
# the rewrite makes async: it runs in a worker thread, as the framework ran the whole sync function in one.
FETCHING = """\
import requests
from fastapi import FastAPI
from transformers import AutoModelForCausalLM, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2")
app = FastAPI()

def fetch(url):
    return requests.get(url, timeout=5).text

def context_of(url):
    return fetch(url)[:200]

@app.post("/g")
def g(prompt: str, url: str):
    prompt = context_of(url).strip() + prompt
    inputs = tokenizer(prompt, return_tensors="pt")
    return {"text": tokenizer.decode(model.generate(**inputs, max_new_tokens=8)[0])}
"""


def test_a_blocking_module_function_runs_in_a_worker_thread(tmp_path):
    result = _fixed(tmp_path, FETCHING)
    assert "    prompt = (await asyncio.to_thread(context_of, url)).strip() + prompt\n" in result, result
    assert "import asyncio\n" in result and "return fetch(url)[:200]\n" in result, result
    compile(result, "server.py", "exec")
    again = tmp_path / "again.py"
    again.write_text(result)
    assert fix_file(again, settings=Settings(root=tmp_path)).fixed.decode() == result


def test_a_blocking_call_in_a_comprehension_is_refused(tmp_path):
    source = FETCHING.replace("context_of(url).strip() + prompt", '"".join([context_of(u) for u in url.split()]) + prompt')
    [finding] = [d for d in lint_text(tmp_path, "server.py", source) if d.code == "VLL102"]
    # the engine rewrite is refused; g() is a `def` route FastAPI runs in worker threads: the lock fallback instead
    assert "blocks its thread (through context_of()), inside a lambda or comprehension of g()" in finding.message, finding.message
    assert finding.fix is not None and finding.fix.message == THREAD_LOCK_TITLE
