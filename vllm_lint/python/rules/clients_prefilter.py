"""When VLL107 and VLL108 (clients.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

from collections.abc import Iterable

from vllm_lint.python.llm_clients import POOLED_CLIENTS, SYNC_CLIENTS, SYNC_FUNCTIONS
from vllm_lint.python.prefilter import Condition, FileBytes, handler_in_tree, imports_client_library, may_have_handlers, present
from vllm_lint.python.tree_facts import final_name


def _blocking_client_in_async_handler(file: FileBytes) -> bool:
    """A synchronous LLM client's call (python/llm_clients.py) in ``async def`` handler code."""
    code = file.code
    return present(code, b"async") and imports_client_library(code) and may_have_handlers(code, file.path)


def _client_in_handler(file: FileBytes) -> bool:
    """A pooled client built in handler code."""
    return imports_client_library(file.code) and may_have_handlers(file.code, file.path)


def _last_parts(names: Iterable[str]) -> frozenset[str]:
    return frozenset(name.rpartition(".")[2] for name in names)


# The last part of each blocking call's callee: a function's (``litellm.completion``) or the last attribute of a
# client's call (``client.chat.completions.create``, whose client may come from another module).
_BLOCKING_FINALS = _last_parts(SYNC_FUNCTIONS) | _last_parts(call for client in SYNC_CLIENTS.values() for call in client.calls)
_POOLED_FINALS = tuple(_last_parts(POOLED_CLIENTS))


def _blocking_call_in_tree(file: FileBytes) -> bool:
    """A call VLL107 can read as blocking (its callee's last part, or a name bound to it, is one of them), in a
    module with a request handler."""
    facts = file.facts()
    names = facts.names_for(_BLOCKING_FINALS)
    return any(final_name(call.func) in names for call in facts.calls) and handler_in_tree(file)


def _pooled_client_built_in_tree(file: FileBytes) -> bool:
    """A call semantics.callee may name one of the pooled clients' constructors (``TreeFacts.calls_of``), in a
    module with a request handler."""
    return bool(file.facts().calls_of(_POOLED_FINALS)) and handler_in_tree(file)


PREFILTER = {
    "VLL107": (Condition("a client library and an async request handler", _blocking_client_in_async_handler, tree_holds=_blocking_call_in_tree),),
    "VLL108": (Condition("a client library and a request handler", _client_in_handler, tree_holds=_pooled_client_built_in_tree),),
}
