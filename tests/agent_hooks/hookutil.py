"""Helpers for the hook tests: the project, the documented payloads, running the hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
PAYLOADS = HERE / "payloads"

# A server with one finding that has a safe fix (VLL301) and one whose fix is unsafe (VLL101).
BAD_SERVER = '''from fastapi import FastAPI
from transformers import pipeline
from vllm import SamplingParams

app = FastAPI()
pipe = pipeline("text-generation", model="meta-llama/Llama-3.1-8B-Instruct")
params = SamplingParams(max_tokens=64, temprature=0.7)


@app.post("/chat")
def chat(prompt: str):
    output = pipe(prompt, max_new_tokens=256)
    return output[0]["generated_text"]
'''
CLEAN = 'def add(a: int, b: int) -> int:\n    return a + b\n'


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str


def payload_text(name: str, root: Path, file_name: str = "server.py") -> str:
    """A fixture's payload for a project at ``root``, about ``file_name`` (relative, or absolute)."""
    payload = json.loads((PAYLOADS / f"{name}.json").read_text())["payload"]
    text = json.dumps(payload).replace("{ROOT}/server.py", "{ROOT}/" + file_name if not file_name.startswith("/") else file_name)
    text = text.replace('"server.py"', json.dumps(file_name)).replace(" server.py", " " + file_name)
    return text.replace("{ROOT}", str(root))


def run_hook(agent: str, stdin: str, cwd: Path, env: dict | None = None) -> Ran:
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_PROJECT_DIR")}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "hook", agent],
        input=stdin, capture_output=True, text=True, cwd=cwd, env=environment, timeout=60,
    )
    return Ran(done.returncode, done.stdout, done.stderr)
