"""The AsyncLLMEngine rewrite (VLL101/VLL103's unsafe fix), the VLL502 fix and the shared import helpers.

The YAML examples (tests/test_rule_examples.py) pin whole fixed files; these tests pin the
edges: why a fix is refused, what survives byte for byte, and the import edits on their own.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file
from vllm_lint.python.rewrite.imports import NameTaken, ensure_imported, remove_unused_imports

from lintutil import lint_text

NO_FIX = "; no automatic fix: "


def fixed(tmp_path: Path, source: str, name: str = "server.py", **settings) -> tuple[str, dict[str, int]]:
    path = tmp_path / name
    path.write_bytes(source.encode())
    outcome = fix_file(path, settings=Settings(root=tmp_path, **settings))
    return outcome.fixed.decode(), dict(outcome.applied)


def findings(tmp_path: Path, source: str, code: str):
    return [d for d in lint_text(tmp_path, "server.py", textwrap.dedent(source)) if d.code == code]


APP = """\
from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="gpt2")
"""

REFUSED = {
    "flask": (
        """\
        from flask import Flask
        from transformers import pipeline
        app = Flask(__name__)
        pipe = pipeline("text-generation", model="gpt2")
        @app.post("/g")
        def g(prompt: str):
            return pipe(prompt)[0]["generated_text"]
        """,
        "Flask cannot await the engine",
    ),
    "untyped input": (
        APP + """
@app.post("/g")
async def g(request):
    data = await request.json()
    return pipe(data["prompt"])
""",
        "is one string",
    ),
    "escaping object": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt), pipe.tokenizer
""",
        "uses the pipeline object other than by calling it",
    ),
    "helper": (
        APP + """
def run(prompt):
    return pipe(prompt)

@app.post("/g")
def g(prompt: str):
    return run(prompt)
""",
        "called in helper run()",
    ),
    "handler called directly": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt)

def cli():
    print(g("hello"))
""",
        "would hand that caller a coroutine",
    ),
    "blocking call in a sync handler": (
        APP + """
import time

@app.post("/g")
def g(prompt: str):
    time.sleep(0.1)
    return pipe(prompt)
""",
        "also calls `time.sleep(0.1)`, which would block the event loop",
    ),
    "streamer": (
        APP + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt, streamer=object())
""",
        "streamer= cannot be carried over",
    ),
    "non-text task": (
        APP.replace('"text-generation"', '"summarization"') + """
@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "task is 'summarization'",
    ),
    "on_event hooks would stop running": (
        APP + """
@app.on_event("startup")
def hello():
    print("hello")

@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "FastAPI stops running once a lifespan handler is given",
    ),
    "evaluation order": (
        APP + """
import time

@app.post("/g")
def g(prompt: str):
    return {"t": time.time(), "out": pipe(prompt)}
""",
        "could change which of the two runs first",
    ),
    "conditional call": (
        APP + """
@app.post("/g")
def g(prompt: str, cached: str = ""):
    return cached or pipe(prompt)
""",
        "evaluated conditionally",
    ),
    "call outside a handler": (
        APP + """
pipe("warm up")

@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "runs outside a request handler",
    ),
    "two models": (
        APP + """
other = pipeline("text-generation", model="gpt2")

@app.post("/g")
def g(prompt: str):
    return pipe(prompt), other(prompt)
""",
        "builds 2 models",
    ),
    "name taken": (
        APP + """
uuid4 = "not the function"

@app.post("/g")
def g(prompt: str):
    return pipe(prompt)
""",
        "uuid4 is already used",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_rewrite_says_why(tmp_path, case, snapshots):
    source, reason = REFUSED[case]
    found = findings(tmp_path, source, "VLL101")
    assert [d.fix for d in found] == [None] * (2 if case == "two models" else 1)
    assert all(NO_FIX in d.message and reason in d.message for d in found), [d.message for d in found]
    snapshots.assert_match(f"rewrite-refusals/VLL101 {case}", "".join(f"{d.start.line}:{d.start.column}: {d.message}\n" for d in found))


LLM_REFUSED = {
    "generate_async": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        async def g(prompt: str):
            return await llm.generate_async(prompt)
        """,
        "not a vLLM method",
    ),
    "batch": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m")
        @app.post("/g")
        def g(prompts: list[str]):
            return llm.generate(prompts)
        """,
        "a batch needs one engine.generate() per prompt",
    ),
    "LLM-only keyword": (
        """\
        from fastapi import FastAPI
        from vllm import LLM
        app = FastAPI()
        llm = LLM(model="m", chat_template="x")
        @app.post("/g")
        def g(prompt: str):
            return llm.generate(prompt)
        """,
        "chat_template= is not an AsyncEngineArgs field",
    ),
}


@pytest.mark.parametrize("case", sorted(LLM_REFUSED))
def test_refused_llm_rewrite_says_why(tmp_path, case, snapshots):
    source, reason = LLM_REFUSED[case]
    [finding] = findings(tmp_path, source, "VLL103")
    assert finding.fix is None and NO_FIX in finding.message and reason in finding.message, finding.message
    snapshots.assert_match(f"rewrite-refusals/VLL103 {case}", f"{finding.start.line}:{finding.start.column}: {finding.message}\n")


def test_no_stale_refusal_snapshots(snapshots):
    snapshots.assert_only("rewrite-refusals", [*(f"VLL101 {c}" for c in REFUSED), *(f"VLL103 {c}" for c in LLM_REFUSED)])


def test_untouched_code_and_crlf_survive_byte_for_byte(tmp_path, snapshots):
    source = (
        "import os\r\n"
        "from fastapi import FastAPI\r\n"
        "from transformers import pipeline\r\n"
        "\r\n"
        "app = FastAPI()\r\n"
        "pipe = pipeline('text-generation', model=os.getenv('MODEL', 'gpt2'))  # the model\r\n"
        "\r\n"
        "\r\n"
        "class Odd:   # spacing kept\r\n"
        "    x  =  1\r\n"
        "\r\n"
        "\r\n"
        "@app.get('/g')\r\n"
        "def g(q: str):\r\n"
        "    # a comment that stays\r\n"
        "    result = pipe('Q: ' + q, num_return_sequences=2, stop_strings=['\\n'])\r\n"
        "    return [r['generated_text'] for r in result]\r\n"
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL101": 1}
    assert "\n" not in text.replace("\r\n", "")
    snapshots.assert_match("rewrites/crlf pipeline server (CRLF shown as LF)", text.replace("\r\n", "\n"))
    lines = text.split("\r\n")
    for kept in ("class Odd:   # spacing kept", "    x  =  1", "    # a comment that stays", "    return [r['generated_text'] for r in result]"):
        assert kept in lines
    assert "    )  # the model" in lines  # the load's trailing comment moves with it
    assert "model=os.getenv('MODEL', 'gpt2')," in text
    assert "SamplingParams(n=2, stop=['\\n'], include_stop_str_in_output=True, max_tokens=512)" in text
    assert "async def g(q: str):" in text
    compile(text, "server.py", "exec")


def test_fix_max_model_len_setting_is_used(tmp_path):
    source = APP + '\n@app.post("/g")\ndef g(prompt: str):\n    return pipe(prompt)\n'
    text, _ = fixed(tmp_path, source, fix_max_model_len=1024)
    assert "max_model_len=1024," in text


def test_llm_rewrite_keeps_list_and_item_shapes(tmp_path, snapshots):
    source = textwrap.dedent(
        """\
        from fastapi import FastAPI
        from vllm import LLM, SamplingParams

        app = FastAPI()
        llm = LLM("m", gpu_memory_utilization=0.8, max_model_len=2048)
        params = SamplingParams(max_tokens=32)


        @app.post("/one")
        def one(prompt: str):
            return llm.generate([prompt], params)[0].outputs[0].text


        @app.post("/all")
        async def all_outputs(prompt: str):
            outputs = llm.generate(prompt, sampling_params=params, use_tqdm=False)
            return [o.outputs[0].text for o in outputs]
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL103": 1}
    snapshots.assert_match("rewrites/LLM server with list and item shapes", text)
    assert 'AsyncEngineArgs(model="m", gpu_memory_utilization=0.8, max_model_len=2048, enable_prefix_caching=True)' in text
    assert "    return request_output.outputs[0].text\n" in text
    assert "    outputs = [request_output]\n" in text
    assert text.count("async def") == 3  # lifespan + both handlers
    assert "use_tqdm" not in text and "from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams\n" in text
    assert lint_text(tmp_path, "again.py", text) == []


def test_vll502_keeps_body_and_status(tmp_path, snapshots):
    source = textwrap.dedent(
        """\
        from fastapi import FastAPI, status

        app = FastAPI()


        @app.get("/x")
        async def x(flag: bool):
            if flag:
                return ({"error": "busy", "retry": [1, 2.5, None]}, status.HTTP_503_SERVICE_UNAVAILABLE)
            return {"ok": True}
        """
    )
    text, applied = fixed(tmp_path, source)
    assert applied == {"VLL502": 1}
    snapshots.assert_match("rewrites/VLL502 tuple with a status constant", text)
    assert 'return JSONResponse({"error": "busy", "retry": [1, 2.5, None]}, status_code=status.HTTP_503_SERVICE_UNAVAILABLE)' in text
    assert "from fastapi.responses import JSONResponse\n" in text and "jsonable_encoder" not in text


def test_fix_file_returns_the_fixed_source_without_writing(tmp_path):
    path = tmp_path / "server.py"
    source = APP + '\n@app.post("/g")\ndef g(prompt: str):\n    return pipe(prompt)\n'
    path.write_text(source)
    outcome = fix_file(path, settings=Settings(root=tmp_path))
    assert path.read_text() == source
    assert outcome.applied["VLL101"] == 1 and b"AsyncLLMEngine" in outcome.fixed
    assert fix_file(path, unsafe=False, settings=Settings(root=tmp_path)).fixed == source.encode()


# -- import helpers ---------------------------------------------------------------


def _module(source: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(source))


def test_ensure_imported_reuses_extends_and_adds():
    module = _module(
        """\
        import uuid
        from vllm import LLM, SamplingParams
        from vllm.sampling_params import SamplingParams as SP
        x = 1
        """
    )
    module, local = ensure_imported(module, "uuid", "uuid4")
    assert local == "uuid.uuid4"
    module, local = ensure_imported(module, "vllm", "SamplingParams")
    assert local == "SamplingParams"
    module, local = ensure_imported(module, "vllm", "AsyncLLMEngine")
    assert local == "AsyncLLMEngine"
    module, local = ensure_imported(module, "contextlib", "asynccontextmanager")
    module, local = ensure_imported(module, "fastapi.responses", "JSONResponse")
    assert module.code == textwrap.dedent(
        """\
        import uuid
        from contextlib import asynccontextmanager
        from vllm import AsyncLLMEngine, LLM, SamplingParams
        from vllm.sampling_params import SamplingParams as SP
        from fastapi.responses import JSONResponse
        x = 1
        """
    )


def test_ensure_imported_keeps_a_parenthesised_layout_and_refuses_taken_names():
    module = _module(
        """\
        from vllm import (
            SamplingParams,  # why
            LLM
        )
        """
    )
    module, _ = ensure_imported(module, "vllm", "AsyncEngineArgs")
    assert module.code == "from vllm import (\n    SamplingParams,  # why\n    LLM,\n    AsyncEngineArgs\n)\n"
    both = _module("import vllm\nfrom vllm import LLM\n")
    both, local = ensure_imported(both, "vllm", "AsyncLLMEngine")
    assert local == "AsyncLLMEngine" and both.code == "import vllm\nfrom vllm import AsyncLLMEngine, LLM\n"
    with pytest.raises(NameTaken):
        ensure_imported(_module("JSONResponse = None\n"), "fastapi.responses", "JSONResponse")


def test_remove_unused_imports_touches_only_candidates():
    module = _module(
        """\
        # header
        import os, sys
        from vllm import LLM, SamplingParams
        # about transformers
        from transformers import pipeline
        params = SamplingParams()
        """
    )
    result = remove_unused_imports(module, {"LLM", "pipeline", "sys", "SamplingParams"})
    assert result.code == "# header\nimport os\nfrom vllm import SamplingParams\n# about transformers\nparams = SamplingParams()\n"
    exported = _module("from vllm import LLM\n__all__ = ['LLM']\n")
    assert remove_unused_imports(exported, {"LLM"}).code == exported.code
