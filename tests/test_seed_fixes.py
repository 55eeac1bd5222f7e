"""Acceptance of the fixes on the seed code: `check --fix --unsafe-fixes` on copies of seeds/code/*.py.

Every file still compiles, a second run changes nothing, no finding that carried a fix is left, and the
seed's pipeline server comes out as a FastAPI + AsyncLLMEngine server that lints clean. The seeds in
../shared are only read; the fixes run on copies in a temporary directory.
"""

from __future__ import annotations

import ast
import json
import shutil

import pytest

from lintutil import lint_file_paths, run_cli

PIPELINE_SERVER = "000_bad_pipeline_server.py"


@pytest.fixture
def fixed_seeds(seeds, tmp_path):
    sources = sorted(seeds.glob("*.py"))
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
    assert json.loads(result.stdout) is not None


def test_pipeline_seed_becomes_a_clean_async_engine_server(fixed_seeds):
    directory, before, shown = fixed_seeds
    assert [d.code for d in before[PIPELINE_SERVER]] == ["VLL101"]
    assert f"{PIPELINE_SERVER}: 1 x VLL101" in shown
    path = directory / PIPELINE_SERVER
    assert lint_file_paths([path]) == []
    tree = ast.parse(path.read_text())
    imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert {("fastapi", "FastAPI"), ("vllm", "AsyncLLMEngine"), ("vllm", "AsyncEngineArgs"), ("vllm", "SamplingParams")} <= imported
    assert not any(module == "transformers" for module, _ in imported)
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert isinstance(functions["chat"], ast.AsyncFunctionDef) and isinstance(functions["lifespan"], ast.AsyncFunctionDef)
    assert any(isinstance(node, ast.AsyncFor) for node in ast.walk(functions["chat"]))
    text = path.read_text()
    assert "app = FastAPI(lifespan=lifespan)" in text
    assert 'model="meta-llama/Llama-3.1-8B-Instruct"' in text and "max_model_len=8192" in text


def test_unfixable_seed_server_says_why(fixed_seeds):
    directory, before, _ = fixed_seeds
    llm_findings = [d for d in before["004_server.py"] if d.code == "VLL103"]
    assert llm_findings and all(d.fix is None and "no automatic fix: " in d.message for d in llm_findings)
    left = {d.code for d in lint_file_paths([directory / "004_server.py"])}
    assert "VLL103" in left and not {"VLL301", "VLL502"} & left
