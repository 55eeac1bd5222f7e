"""When VLL101-VLL105 (serving.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

from vllm_lint.python.prefilter import Condition, FileBytes, may_be_web_app, handler_clue, mentions_vllm_engine


def _model_used_in_handler(file: FileBytes) -> bool:
    """A model load or call (transformers, a vLLM engine) and a request handler to reach it from."""
    code, path = file.code, file.path
    return (b"transformers" in code or mentions_vllm_engine(code, path)) and handler_clue(code, path)


def _offline_llm_in_web_app(file: FileBytes) -> bool:
    return mentions_vllm_engine(file.code, file.path) and may_be_web_app(file.code, file.path)


def _multi_worker_server(file: FileBytes) -> bool:
    code = file.code
    return b"workers" in code and (b"uvicorn" in code or b"hypercorn" in code)


MODEL_IN_HANDLER = Condition("a model loaded or called in a request handler", _model_used_in_handler)

PREFILTER = {
    "VLL101": (MODEL_IN_HANDLER,),
    "VLL102": (MODEL_IN_HANDLER,),
    "VLL103": (MODEL_IN_HANDLER, Condition("a vLLM LLM in a module with a web app", _offline_llm_in_web_app)),
    "VLL104": (MODEL_IN_HANDLER,),
    "VLL105": (Condition("uvicorn or hypercorn with workers", _multi_worker_server),),
}
