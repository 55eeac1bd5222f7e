"""Run a user's FastAPI server file under uvicorn, pointed at a local model, for ``vllm-lint validate``.

``python -m vllm_lint.reference.launch --app-file server.py --model DIR --port 8101 [--max-tokens 64]``

The file is imported as it is (``vllm-lint validate`` has already made it runnable, e.g. by injecting
``app = FastAPI()``); before that, a few entry points are wrapped so that whatever model the file names, both
the "bad" and the "fixed" server run the same local model with the same decoding:

* ``transformers.pipeline(...)``: ``model``/``tokenizer`` become the model directory, ``device`` becomes the
  CPU when there is no GPU; each call of the returned pipeline generates greedily (``do_sample=False``) and
  exactly ``--max-tokens`` new tokens at most (``max_new_tokens``), other sampling options dropped.
* ``AsyncEngineArgs(...)`` / ``EngineArgs(...)``: ``model`` becomes the model directory and
  ``max_model_len`` is capped at the model's context; on the CPU backend ``kv_cache_memory_bytes``,
  ``dtype=float32``, ``enforce_eager`` and ``tensor_parallel_size=1`` are set so it starts on a laptop.
* ``AsyncLLMEngine.generate(prompt, sampling_params, ...)``: the sampling params become greedy
  (``temperature=0``) with ``max_tokens=--max-tokens``, keeping the caller's ``output_kind``.

Nothing else in the file changes: its routes, request parsing, response shape, threading and batching
behaviour are what gets measured.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path

GENERATION_KWARGS = {"max_new_tokens", "max_length", "do_sample", "temperature", "top_p", "top_k", "num_beams",
                     "repetition_penalty", "min_new_tokens", "min_length", "typical_p", "generation_config"}


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def model_context(model_dir: str) -> int | None:
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return config.get("max_position_embeddings")


class _GreedyPipeline:
    """Wraps a transformers pipeline: every call decodes greedily with a fixed number of new tokens."""

    def __init__(self, pipe, max_tokens: int):
        self._pipe, self._max_tokens = pipe, max_tokens

    def __call__(self, *args, **kwargs):
        for key in GENERATION_KWARGS:
            kwargs.pop(key, None)
        return self._pipe(*args, max_new_tokens=self._max_tokens, do_sample=False, **kwargs)

    def __getattr__(self, name):
        return getattr(self._pipe, name)


def patch_transformers(model_dir: str, max_tokens: int) -> None:
    import transformers

    original = transformers.pipeline
    cuda = _cuda_available()

    def pipeline(*args, **kwargs):
        if len(args) >= 2:  # pipeline(task, model, ...)
            args = (args[0], model_dir, *args[2:])
        else:
            kwargs["model"] = model_dir
        if kwargs.get("tokenizer") is not None:
            kwargs["tokenizer"] = model_dir
        if not cuda:
            kwargs.pop("device_map", None)
            kwargs["device"] = "cpu"
            for key in ("torch_dtype", "dtype"):
                kwargs.pop(key, None)
        return _GreedyPipeline(original(*args, **kwargs), max_tokens)

    transformers.pipeline = pipeline
    try:
        import transformers.pipelines as pipelines_module

        pipelines_module.pipeline = pipeline
    except ImportError:
        pass


def patch_vllm(model_dir: str, max_tokens: int, kv_cache_bytes: int, max_num_seqs: int | None) -> None:
    from vllm import SamplingParams
    from vllm.engine.arg_utils import EngineArgs
    from vllm.platforms import current_platform
    from vllm.v1.engine.async_llm import AsyncLLM

    cpu = current_platform.is_cpu()
    context = model_context(model_dir)
    original_post_init = EngineArgs.__post_init__

    def __post_init__(self, *args, **kwargs):
        # Runs when EngineArgs/AsyncEngineArgs(...) is built, before vLLM resolves the model name.
        self.model = model_dir
        if getattr(self, "tokenizer", None):
            self.tokenizer = model_dir
        if context and (self.max_model_len is None or self.max_model_len > context):
            self.max_model_len = context
        if cpu:
            self.kv_cache_memory_bytes = kv_cache_bytes
            self.dtype = "float32"
            self.enforce_eager = True
            self.tensor_parallel_size = 1
            self.quantization = None
            if max_num_seqs is not None:
                self.max_num_seqs = max_num_seqs
        print(f"[vllm-lint launch] engine args adjusted: model={model_dir} max_model_len={self.max_model_len}"
              f" cpu={cpu}", file=sys.stderr, flush=True)
        original_post_init(self, *args, **kwargs)

    EngineArgs.__post_init__ = __post_init__

    original_generate = AsyncLLM.generate
    signature = inspect.signature(original_generate)

    def generate(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        params = bound.arguments.get("sampling_params")
        output_kind = getattr(params, "output_kind", None)
        extra = {"output_kind": output_kind} if output_kind is not None else {}
        bound.arguments["sampling_params"] = SamplingParams(max_tokens=max_tokens, temperature=0.0, **extra)
        return original_generate(*bound.args, **bound.kwargs)

    AsyncLLM.generate = generate


def load_app(path: Path):
    spec = importlib.util.spec_from_file_location("vllm_lint_validated_server", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    app = getattr(module, "app", None)
    if app is None:
        raise SystemExit(f"{path} defines no module-level `app`")
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m vllm_lint.reference.launch")
    parser.add_argument("--app-file", required=True, type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--kv-cache-memory-bytes", type=int, default=256 * 2**20)
    parser.add_argument("--max-num-seqs", type=int, default=None)
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    source = args.app_file.read_text()
    if "transformers" in source:
        patch_transformers(args.model, args.max_tokens)
    if "vllm" in source:
        patch_vllm(args.model, args.max_tokens, args.kv_cache_memory_bytes, args.max_num_seqs)
    app = load_app(args.app_file.resolve())

    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=5)


if __name__ == "__main__":
    main()
