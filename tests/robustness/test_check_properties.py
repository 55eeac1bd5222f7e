"""Property tests: ``check`` (and ``check --fix --unsafe-fixes``) on generated hostile bytes and text, on every
surface at once (Python, shell, Dockerfile, compose and Kubernetes YAML, Markdown): never a traceback, exit
code 0 or 1 only, every finding a known rule code at a real position of a real file (VLL000 allowed); a
Python file the fixer changed still compiles.

Generated *valid* Python (hypothesmith), for linting and fixing, is tests/test_fix_properties.py's.
"""

from __future__ import annotations

import ast
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_lint.rulebook import all_codes

CODES = set(all_codes())
SURFACES = {  # file name -> a prefix that makes the surface's pre-filter let the file through
    "app.py": b"from vllm import LLM, SamplingParams\n",
    "run.sh": b"#!/bin/sh\n",
    "Dockerfile": b"FROM vllm/vllm-openai\n",
    "compose.yaml": b"services:\n",
    "deploy.yaml": b"kind: Deployment\n",
    "README.md": b"# Serving\n```bash\n",
}
WORDS = [
    # what the rules look for
    "vllm", "vllm serve", " serve ", "python -m vllm.entrypoints.openai.api_server", "--model", "m",
    "--gpu-memory-utilization", "--gpu_memory_utilization=", "0.98", "1.5", "-1", "0x10", "1e309", "nan",
    "--max-model-len", "--tensor-parallel-size", "--quantization", "awq", "--host", "0.0.0.0", "--api-key",
    "LLM(", "AsyncLLMEngine.from_engine_args(", "AsyncEngineArgs(", "SamplingParams(", "max_new_tokens=",
    "gpu_memory_utilization=", "max_model_len=", "pipeline(", "from_pretrained(", ".generate(", "uvicorn.run(",
    "workers=4", "@app.post('/x')", "async def f(request):", "def f(request):", "from vllm.engine.async_llm_engine import",
    "import vllm", "from fastapi import FastAPI", "app = FastAPI()", "return", "await", "lambda", "**kw", "*a",
    # structure and punctuation
    "(", ")", "[", "]", "{", "}", ",", ":", "=", "'", '"', "'''", '"""', "\\", "#", "# noqa", "# noqa: VLL202",
    "# vllm-lint: skip-file", "<!-- noqa -->", "$(", "`", "${X:-", "}", "<<EOF", "EOF", "&&", "|", ";", "$VLLM",
    "```", "```bash", "```python", "```yaml", "~~~", "$ ", "> ",
    "services:", "  a:", "    command:", "    entrypoint:", "    environment:", "      - X=1", "kind: Deployment",
    "containers:", "- name: vllm", "  args:", "&a", "*a", "<<: *a", "!!python/object/apply:os.system", "!!binary",
    "---", "...", "%YAML 1.1", "? ", "- ", "|", ">-",
    "CMD [", "ENTRYPOINT", "RUN", "ENV", "ARG", "FROM", "\\\n",
    # whitespace and bytes that trip decoders
    " ", "  ", "\t", "\n", "\r\n", "\r", "\x0c", "\x0b", "\ufeff", "\u2028", "é", "\U0001f600", "\x00",
]
_text = st.lists(st.sampled_from(WORDS), max_size=60).map("".join)
_bytes = st.one_of(
    st.binary(max_size=400),
    _text.map(lambda t: t.encode("utf-8")),
    st.tuples(_text, st.binary(max_size=8), _text).map(lambda p: p[0].encode() + p[1] + p[2].encode()),
    _text.map(lambda t: t.encode("utf-16")),
)
_files = st.fixed_dictionaries({name: st.tuples(st.booleans(), _bytes) for name in SURFACES})


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Load LibCST, the rules and the vLLM API snapshot once here, so that the parser processes forked for
    each example inherit them (a cold child spends ~0.5 s on that; the property is about the files)."""
    import vllm_lint.python.checker  # noqa: F401
    from vllm_lint.rulebook import load_rules
    from vllm_lint.vllm_api import load_api

    load_rules()
    load_api(None)


def _run(args: list[str], cwd: Path):
    import os

    from click.testing import CliRunner

    from vllm_lint.cli.main import cli

    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback would have reached the user
    return result


def _check_findings(stdout: str, files: dict[str, bytes]) -> None:
    for finding in json.loads(stdout):
        assert finding["code"] in CODES, finding
        assert finding["filename"] in files, finding
        # Every character some parser takes for a line break (pyyaml: also U+2028, U+2029, U+0085), and +1 for
        # VLL000: pyyaml puts "unexpected end of stream" one line past the last line of a file without a final newline.
        lines = len(files[finding["filename"]].decode("utf-8", "replace").splitlines()) + 1
        assert 1 <= finding["location"]["row"] <= lines + (finding["code"] == "VLL000"), finding
        assert finding["location"]["column"] >= 1, finding
        assert finding["message"], finding


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_files)
def test_check_and_fix_on_hostile_bytes_never_crash(generated):
    files = {name: (SURFACES[name] if prefixed else b"") + data for name, (prefixed, data) in generated.items()}
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for name, data in files.items():
            (root / name).write_bytes(data)
        result = _run(["check", "--no-cache", "--isolated", "--output-format", "json", "."], root)
        assert result.exit_code in (0, 1), result.output
        _check_findings(result.stdout, files)
        assert (result.exit_code == 1) == (json.loads(result.stdout) != [])

        fixed = _run(["check", "--fix", "--unsafe-fixes", "--no-cache", "--isolated", "--output-format", "json", "."], root)
        assert fixed.exit_code in (0, 1), fixed.output
        after = (root / "app.py").read_bytes()
        if after != files["app.py"]:  # a fix was applied: the Python file must still compile
            ast.parse(after)
