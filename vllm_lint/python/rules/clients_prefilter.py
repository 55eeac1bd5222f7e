"""When VLL107 and VLL108 (clients.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

from vllm_lint.python.prefilter import Condition, FileBytes, imports_client_library, may_have_handlers


def _blocking_client_in_async_handler(file: FileBytes) -> bool:
    """A synchronous LLM client's call (python/llm_clients.py) in ``async def`` handler code."""
    code = file.code
    return b"async" in code and imports_client_library(code) and may_have_handlers(code, file.path)


def _client_in_handler(file: FileBytes) -> bool:
    """A pooled client built in handler code."""
    return imports_client_library(file.code) and may_have_handlers(file.code, file.path)


PREFILTER = {
    "VLL107": (Condition("a client library and an async request handler", _blocking_client_in_async_handler),),
    "VLL108": (Condition("a client library and a request handler", _client_in_handler),),
}
