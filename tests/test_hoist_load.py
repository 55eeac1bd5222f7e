"""VLL104's fix: a load made per request moves to module level only when it builds the same object there.

The rule YAML's examples pin the fixed files; these tests pin where the fix is not offered, and that the
server rewrite follows it in the same --fix run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_lint.config import Settings
from vllm_lint.engine.fixer import fix_file

from lintutil import lint_text

HANDLER = """\
from fastapi import FastAPI
from vllm import LLM

app = FastAPI()
MODEL = "m"
{before}

@app.post("/g")
async def g(prompt: str):
    {load}
    return llm.generate(prompt)[0].outputs[0].text
{after}
"""


def _vll104(tmp_path: Path, before: str = "", load: str = "llm = LLM(model=MODEL)", after: str = ""):
    source = HANDLER.format(before=before, load=load, after=after)
    [finding] = [d for d in lint_text(tmp_path, "server.py", source) if d.code == "VLL104"]
    return finding


def test_a_static_load_is_offered_the_fix(tmp_path):
    assert _vll104(tmp_path).fix is not None


@pytest.mark.parametrize("change", [
    pytest.param({"load": 'llm = LLM(model=os.getenv("MODEL"))', "before": "import os"}, id="a call in the arguments"),
    pytest.param({"load": "llm = LLM(model=prompt)"}, id="a parameter in the arguments"),
    pytest.param({"after": 'MODEL = "other"'}, id="a name bound again below the handler"),
    pytest.param({"before": "def switch():\n    global MODEL\n    MODEL = 'other'"}, id="a name a function rebinds"),
    pytest.param({"before": "llm = None"}, id="the variable is the module's too"),
    pytest.param({"load": "llm = LLM(model=UNKNOWN)"}, id="a name the module does not bind"),
    pytest.param({"load": "if prompt:\n        llm = LLM(model=MODEL)"}, id="a load inside a block"),
])
def test_a_load_that_could_differ_per_request_is_not_moved(tmp_path, change):
    assert _vll104(tmp_path, **change).fix is None


def test_the_server_rewrite_follows_in_the_same_run(tmp_path):
    path = tmp_path / "server.py"
    path.write_text(HANDLER.format(before="", load="llm = LLM(model=MODEL)", after=""))
    outcome = fix_file(path, settings=Settings(root=tmp_path))
    fixed = outcome.fixed.decode()
    assert dict(outcome.applied) == {"VLL104": 1, "VLL103": 1}, fixed
    assert "AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model=MODEL" in fixed and "async for request_output in llm.generate(" in fixed
    compile(fixed, "server.py", "exec")
    assert not [d for d in lint_text(tmp_path, "again.py", fixed) if d.code in ("VLL103", "VLL104")]
