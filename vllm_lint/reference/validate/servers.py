"""A prepared server file under the launcher (:mod:`vllm_lint.reference.launch`) on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import vllm_lint
from vllm_lint.reference import bentoml_services, chainlit_apps, decoding, gradio_apps, litserve_apps, ray_serve_apps
from vllm_lint.reference.processes import ServerExited, ServerNotReady, free_port, kill_process_tree, wait_listening, wait_ready
from vllm_lint.reference.server_kinds import ServerKind, kind_of
from vllm_lint.reference.validate.errors import ValidationError
from vllm_lint.reference.validate.prepare import PreparedSource


# Servers that answer before they are ready to serve, and the path that answers 200 once they are:
# Gradio's API description (launch() has started Gradio's server, after the file built its model), LitServe's
# health check (once its inference workers are set up), BentoML's readiness probe, and for Ray Serve the
# launcher's own document, which it deploys once the file's application runs (ray_serve_apps.DOCUMENT_PATH), and
# Chainlit's health check (it keeps no OpenAPI document).
_READY_WHEN_OK = {ServerKind.GRADIO: gradio_apps.API_INFO_PATH, ServerKind.LITSERVE: litserve_apps.HEALTH_PATH,
                  ServerKind.BENTOML: bentoml_services.READY_PATH, ServerKind.RAY_SERVE: ray_serve_apps.DOCUMENT_PATH,
                  ServerKind.CHAINLIT: chainlit_apps.READY_PATH}


class ServerProcess:
    """One server file under the launcher, in its own process group; always fully killed on exit."""

    def __init__(self, source: PreparedSource, model: Path, max_tokens: int, *, log_dir: Path,
                 kv_cache_bytes: int = 256 * 2**20, max_num_seqs: int | None = 16,
                 start_timeout: float = 600.0):
        self.source, self.model, self.max_tokens = source, model, max_tokens
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"{source.role}.log"
        self.decoding_log = log_dir / f"{source.role}.decoding.jsonl"  # each request's decoding (reference/decoding.py)
        self.kv_cache_bytes, self.max_num_seqs = kv_cache_bytes, max_num_seqs
        self.start_timeout = start_timeout
        self.kind = kind_of(source.path.read_text())
        self.address = f"127.0.0.1:{self.port}"  # where a gRPC server listens
        self.proc: subprocess.Popen | None = None
        self.startup_s: float | None = None

    @property
    def grpc(self) -> bool:
        return self.kind is ServerKind.GRPC

    @property
    def gradio(self) -> bool:
        return self.kind is ServerKind.GRADIO

    @property
    def openapi_path(self) -> str:
        if self.kind is ServerKind.BENTOML:
            return bentoml_services.OPENAPI_PATH
        if self.kind is ServerKind.RAY_SERVE and not ray_serve_apps.has_ingress(self.source.path.read_text()):
            return ray_serve_apps.DOCUMENT_PATH  # the launcher's, of what the deployment reads by hand
        return "/openapi.json"

    def __enter__(self) -> "ServerProcess":
        cmd = [sys.executable, "-m", "vllm_lint.reference.launch", "--app-file", str(self.source.path),
               "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
               "--max-tokens", str(self.max_tokens), "--kv-cache-memory-bytes", str(self.kv_cache_bytes)]
        if self.max_num_seqs:
            cmd += ["--max-num-seqs", str(self.max_num_seqs)]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", VLLM_NO_USAGE_STATS="1",
                   PYTHONUNBUFFERED="1", **self.source.environment)
        self.decoding_log.unlink(missing_ok=True)
        env[decoding.ENVIRONMENT_VARIABLE] = str(self.decoding_log)
        # The launcher must import the vllm_lint this harness runs from, installed or not.
        package_root = str(Path(vllm_lint.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._log = open(self.log_path, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, cwd=self.source.path.parent)
        try:
            self._wait_ready(self.proc)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.startup_s = time.perf_counter() - t0
        return self

    def _wait_ready(self, proc: subprocess.Popen) -> None:
        try:
            if self.grpc:
                # The port accepts once server.start() has run, after the servicer (and its model) is built.
                wait_listening(self.port, proc, timeout=self.start_timeout)
            elif self.kind in _READY_WHEN_OK:
                wait_ready(self.base_url + _READY_WHEN_OK[self.kind], proc, timeout=self.start_timeout,
                           status=200)
            else:
                # Any HTTP answer: uvicorn is up and the lifespan start-up has finished.
                wait_ready(self.base_url + "/openapi.json", proc, timeout=self.start_timeout)
        except ServerExited as exc:
            raise ValidationError(f"the {self.source.role} server exited with {exc.returncode}:\n"
                                  + self.log_tail()) from None
        except ServerNotReady:
            raise ValidationError(f"the {self.source.role} server did not start within {self.start_timeout:.0f}s:\n"
                                  + self.log_tail()) from None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            kill_process_tree(self.proc)
            self.proc = None
        if getattr(self, "_log", None):
            self._log.close()
