"""The real-world corpus tools (benchmarks/realworld) on a few files written here, so they cannot rot.

The corpus itself is public code CI cannot fetch; these tests restore from a git repository made here and run
the runner's measurements on it: a FastAPI server the rewrite handles, one it refuses, two that build their
LLM per request (rewritten after VLL104's fix, and refused after it), a shell launch, a
Python file with a real syntax error, and a negative (Ollama).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REALWORLD = Path(__file__).resolve().parent.parent / "benchmarks" / "realworld"

SERVER = '''from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
pipe = pipeline("text-generation", model="gpt2")


@app.post("/generate")
def generate(prompt: str):
    return pipe(prompt)[0]["generated_text"]
'''

ASR_SERVER = '''from fastapi import FastAPI
from transformers import pipeline

app = FastAPI()
asr = pipeline("automatic-speech-recognition", model="openai/whisper-small")


@app.post("/transcribe")
def transcribe(path: str):
    return asr(path)["text"]
'''

# An LLM built on every request (VLL104): its fix moves the load out, then the rewrite follows; with two
# models the rewrite then refuses, and says why.
PER_REQUEST = '''from fastapi import FastAPI
from vllm import LLM

app = FastAPI()


@app.post("/generate")
async def generate(prompt: str):
    llm = LLM(model="facebook/opt-125m")
    return llm.generate(prompt)[0].outputs[0].text
'''

TWO_PER_REQUEST = PER_REQUEST.replace(
    '    llm = LLM(model="facebook/opt-125m")\n',
    '    llm = LLM(model="facebook/opt-125m")\n    judge = LLM(model="gpt2")\n    judge.generate(prompt)\n')

LAUNCH = '''#!/bin/bash
set -euo pipefail
MODEL=${MODEL:-Qwen/Qwen2.5-7B-Instruct}
vllm serve "$MODEL" \\
  --port 8000 \\
  --max-model-len 8192
'''

BROKEN = "from vllm import LLM\nllm = LLM(model='gpt2'\nprint(llm)\n"

OLLAMA = "services:\n  ollama:\n    image: ollama/ollama:latest\n    ports: ['11434:11434']\n"

FILES = {
    ("acme/server", "app.py", "python"): SERVER,
    ("acme/asr", "svc/asr.py", "python"): ASR_SERVER,
    ("acme/per-request", "main.py", "python"): PER_REQUEST,
    ("acme/two-per-request", "main.py", "python"): TWO_PER_REQUEST,
    ("acme/launch", "scripts/start.sh", "shell"): LAUNCH,
    ("acme/broken", "bad.py", "python"): BROKEN,
    ("acme/local", "docker-compose.yml", "negative"): OLLAMA,
}


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"realworld_{name}", REALWORLD / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout.strip()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Mirrors (one ordinary clone per repository, owner/name), a manifest, and the restored folder."""
    root = tmp_path_factory.mktemp("realworld")
    mirrors = root / "mirrors"
    rows = ["repository\tcommit\tpath\tkind\twhy"]
    for (repository, path, kind), text in FILES.items():
        checkout = mirrors / repository
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(text, encoding="utf-8")
        (checkout / "requirements.txt").write_text("vllm==0.8.5\n", encoding="utf-8")
        git("init", "-q", cwd=checkout)
        git("add", ".", cwd=checkout)
        git("commit", "-qm", "x", cwd=checkout)
        commit = git("rev-parse", "HEAD", cwd=checkout)
        rows.append(f"{repository}\t{commit}\t{path}\t{kind}\twritten for the test")
        rows.append(f"{repository}\t{commit}\trequirements.txt\tcontext\tpins")
    rows.append(f"acme/gone\t{'0' * 40}\tapp.py\tpython\tnot mirrored")
    manifest = root / "manifest.tsv"
    manifest.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = root / "restored"
    result = load("restore").restore(manifest, mirrors, out)
    return manifest, out, result


def test_restore_writes_every_mirrored_file_and_skips_a_missing_repository(corpus):
    _manifest, out, result = corpus
    assert result["absent"] == ["acme/gone"]
    assert result["missing"] == []
    assert result["written"] == 2 * len(FILES)
    assert (out / "acme+server" / "app.py").read_text(encoding="utf-8") == SERVER
    assert (out / "acme+asr" / "requirements.txt").read_text(encoding="utf-8") == "vllm==0.8.5\n"


def test_runner_counts_rewrites_refusals_and_checks_syntax_errors(corpus, tmp_path):
    manifest, out, _ = corpus
    run = load("run")
    report = run.measure(out, manifest)
    python = report["per_kind"]["python"]
    assert report["files"] == len(FILES) and report["missing"] == 1
    assert python["rewritten"] == 2 and python["broken"] == 0
    # the speech pipeline's `def` route: FastAPI's worker threads, so the fallback runs its calls under a lock
    assert python["offloaded"] == 1 and python["refused"] == 1
    [(_, why)] = [(f, why) for f, outcome, why in report["outcomes"] if outcome == "offloaded"]
    assert "automatic-speech-recognition" in why
    assert any("the module builds 2 models" in reason for reason in report["refusals"]["python"])  # after VLL104's fix
    assert report["hidden"] == []
    assert python["VLL000"] == 1 and python["false syntax"] == 0  # ast.parse rejects bad.py too
    assert sum(report["codes_by_kind"]["negative"].values()) == 0
    assert report["per_kind"]["shell"]["VLL000"] == 0
    text = run.render(report, tmp_path / "no-triage.tsv", 0.0)
    assert "| python | 5 |" in text
    if not report["opaque_available"]:
        assert run.OPAQUE_NA in text


def test_own_tools_accept_valid_files_and_reject_broken_ones(tmp_path):
    run = load("run")
    script = tmp_path / "ok.sh"
    script.write_text(LAUNCH, encoding="utf-8")
    assert run.own_tool_rejects(script) is None
    script.write_text("if then fi\n", encoding="utf-8")
    assert run.own_tool_rejects(script)
    notebook = tmp_path / "n.ipynb"
    notebook.write_text('{"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "outputs": [], "execution_count": null, '
                        '"source": ["!pip install vllm\\n", "from vllm import LLM\\n"]}], "metadata": {}, '
                        '"nbformat": 4, "nbformat_minor": 5}', encoding="utf-8")
    assert run.own_tool_rejects(notebook) is None  # a shell escape is the notebook's own syntax
