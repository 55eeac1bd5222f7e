"""Property: on any valid Python, linting never raises and fixing (unsafe fixes included) never
produces a file that does not parse.

Inputs come from hypothesmith (random programs from Python's grammar, and random LibCST trees),
alone and glued in front of small servers that the fixes rewrite, so the rewrites meet odd code
around them. Bounded to run in seconds.
"""

from __future__ import annotations

import libcst as cst
import pytest

hypothesis = pytest.importorskip("hypothesis")
hypothesmith = pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, assume, event, given, settings  # noqa: E402 - after the importorskip above
from hypothesis import strategies as st  # noqa: E402 - after the importorskip above

from vllm_lint.config import Settings, enabled_codes  # noqa: E402 - after the importorskip above
from vllm_lint.engine.fixer import FixPolicy, fix_bytes  # noqa: E402 - after the importorskip above
from vllm_lint.surfaces.python import PYTHON  # noqa: E402 - after the importorskip above
from vllm_lint.rulebook import all_codes  # noqa: E402 - after the importorskip above
from vllm_lint.engine.runner import RunOptions  # noqa: E402 - after the importorskip above

SERVERS = [
    # VLL101's rewrite
    (
        'from transformers import pipeline\npipe = pipeline("text-generation", model="gpt2")\n\n'
        '@app.post("/chat")\ndef chat(prompt: str):\n    out = pipe(prompt, max_new_tokens=8)\n    return out[0]["generated_text"]\n'
    ),
    # VLL103's rewrite
    (
        'from fastapi import FastAPI\nfrom vllm import LLM, SamplingParams\napp = FastAPI()\nllm = LLM(model="m")\n\n'
        '@app.post("/g")\ndef g(prompt: str):\n    return llm.generate([prompt], SamplingParams(max_tokens=8))[0].outputs[0].text\n'
    ),
    # VLL502's fix
    'from fastapi import FastAPI\napp = FastAPI()\n\n@app.get("/x")\nasync def x():\n    return {"error": "no"}, 503\n',
]

programs = st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())
inputs = st.one_of(
    programs,
    st.tuples(programs, st.sampled_from(SERVERS)).map(lambda pair: pair[0].rstrip("\\") + "\n" + pair[1]),
    st.tuples(st.sampled_from(SERVERS), programs).map(lambda pair: pair[0] + "\n" + pair[1]),
)


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return False
    return True


def _compiles(text: str) -> bool:
    try:
        compile(text, "generated.py", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


@pytest.fixture(scope="module")
def options(tmp_path_factory):
    codes = all_codes()
    config = Settings(root=tmp_path_factory.mktemp("props"))
    return RunOptions(config, enabled_codes(config, codes), codes)


# hypothesmith's programs are slow and large to generate; filter_too_much stays on, so assume() cannot
# quietly discard most inputs.
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=inputs)
def test_fixing_never_breaks_a_file(options, tmp_path_factory, source):
    assume(_parses(source) and _compiles(source))
    path = tmp_path_factory.getbasetemp() / "generated.py"
    data = source.encode("utf-8", errors="surrogatepass")
    # fix_bytes lints first: an internal error in any rule raises here and fails the test.
    outcome = fix_bytes(path, data, PYTHON, options, FixPolicy(unsafe=True, fixable=frozenset(options.codes)))
    event(f"fixed: {sorted(outcome.applied)}")
    fixed = outcome.fixed.decode("utf-8", errors="surrogatepass")
    assert _parses(fixed)
    assert _compiles(fixed), fixed
    assert not [d for d in outcome.remaining if d.code == "VLL000"]
