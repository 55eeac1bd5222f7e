"""Acceptance of the fixes on the seed code: `check --fix --unsafe-fixes` on copies of seeds/code/*.py.

Every file still compiles, a second run changes nothing, no finding that carried a fix is left, and the
seeds' servers (the pipeline server and the blog's LLM server) come out as FastAPI + AsyncLLMEngine servers
that lint clean. The fixes run on copies in a temporary directory. (The diff each seed gets is a snapshot:
test_seeds.py.)
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from fixture_files import SEEDS
from lintutil import lint_file_paths, run_cli

PIPELINE_SERVER = "000_bad_pipeline_server.py"


@pytest.fixture
def fixed_seeds(tmp_path):
    sources = sorted(SEEDS.glob("*.py"))
    assert any(p.name == PIPELINE_SERVER for p in sources)
    for source in sources:
        shutil.copyfile(source, tmp_path / source.name)
    before = {p.name: lint_file_paths([tmp_path / p.name]) for p in sources}
    result = run_cli("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--show-fixes", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp_path, before, result.stdout


def test_fixed_seeds_compile_and_lose_every_fixable_finding(fixed_seeds):
    directory, before, _ = fixed_seeds
    for name, diagnostics in before.items():
        text = (directory / name).read_text()
        compile(text, name, "exec")
        fixable = {d.code for d in diagnostics if d.fix is not None}
        left = {d.code for d in lint_file_paths([directory / name])}
        assert not fixable & left, f"{name}: {sorted(fixable & left)} still reported after fixing"


def test_second_fix_run_changes_nothing(fixed_seeds):
    directory, _, _ = fixed_seeds
    first = {p.name: p.read_bytes() for p in directory.glob("*.py")}
    result = run_cli("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", "--output-format", "json", str(directory))
    assert result.returncode == 0, result.stderr
    assert {p.name: p.read_bytes() for p in directory.glob("*.py")} == first
    left = [(Path(item["filename"]).name, item["code"], item["location"]["row"]) for item in json.loads(result.stdout)]
    assert left == []  # seed 004 included: its VLL103, VLL303 and VLL503 went with the rewrite


def test_the_fixes_applied_are_listed(fixed_seeds):
    directory, _, shown = fixed_seeds
    listed = shown[shown.index("Fixed:\n"):].replace(f"{directory}/", "")
    assert listed == (
        "Fixed:\n"
        "  000_bad_pipeline_server.py: 1 x VLL101\n"
        "  000_good_async_engine_server.py: 1 x VLL203\n"
        "  000_good_async_engine_server.py: 1 x VLL302\n"
        "  000_good_async_engine_server.py: 1 x VLL501\n"
        "  004_server.py: 1 x VLL103\n"
        "  004_server.py: 1 x VLL301\n"
        "  004_server.py: 1 x VLL502\n"
        "Fixed 7 findings.\n"
    )


def test_pipeline_seed_becomes_a_clean_async_engine_server(fixed_seeds):
    directory, before, _ = fixed_seeds
    assert [d.code for d in before[PIPELINE_SERVER]] == ["VLL101"]
    path = directory / PIPELINE_SERVER
    assert lint_file_paths([path]) == []
    tree = ast.parse(path.read_text())
    imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == {("contextlib", "asynccontextmanager"), ("uuid", "uuid4"), ("fastapi", "FastAPI"),
                        ("vllm", "AsyncLLMEngine"), ("vllm", "AsyncEngineArgs"), ("vllm", "SamplingParams")}
    # transformers' import is gone, and no other module is imported whole (the decoding helper needs none)
    assert [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names] == []
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert isinstance(functions["chat"], ast.AsyncFunctionDef) and isinstance(functions["lifespan"], ast.AsyncFunctionDef)
    assert any(isinstance(node, ast.AsyncFor) for node in ast.walk(functions["chat"]))
    text = path.read_text()
    assert "app = FastAPI(lifespan=lifespan)" in text
    assert 'model="meta-llama/Llama-3.1-8B-Instruct"' in text and "max_model_len=8192" in text


def test_blog_seed_becomes_an_async_engine_server_in_one_pass(fixed_seeds):
    """Seed 004: lifespan (the startup hook kept, called from it), max_tokens, JSONResponse with the status
    code, and generate_async, awaited and streamed, on the engine's generate()."""
    directory, before, shown = fixed_seeds
    assert sorted(d.code for d in before["004_server.py"] if d.fix is not None) == ["VLL103", "VLL301", "VLL502"]
    assert "004_server.py: 1 x VLL103" in shown and "004_server.py: 1 x VLL301" in shown and "004_server.py: 1 x VLL502" in shown
    path = directory / "004_server.py"
    assert lint_file_paths([path]) == []
    text = path.read_text()
    assert "app = FastAPI(lifespan=lifespan)" in text and "    await startup_event()\n    yield\n    llm.shutdown()\n" in text
    assert '@app.on_event("startup")' not in text and "generate_async" not in text and "max_new_tokens" not in text
    assert 'return JSONResponse({"error": "Model not loaded yet. Please wait."}, status_code=503)' in text
    assert "async for output in llm.generate(prompts[0], sampling_params, request_id=uuid4().hex):" in text
    assert "    llm = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(\n        model=MODEL_PATH," in text
