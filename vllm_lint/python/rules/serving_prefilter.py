"""When VLL101-VLL106 (serving.py) can fire, read off a file's bytes (see vllm_lint.python.prefilter)."""

from __future__ import annotations

import ast
import re

from vllm_lint.lazy_re import lazy_compile
from vllm_lint.python.prefilter import (
    Condition,
    FileBytes,
    handler_clue,
    handler_in_tree,
    may_be_web_app,
    may_have_handlers,
    mentions_vllm_engine,
    present,
    word_matches,
)


def _model_used_in_handler(file: FileBytes) -> bool:
    """A model load or call (transformers, a vLLM engine) and a request handler to reach it from."""
    code, path = file.code, file.path
    return (present(code, b"transformers") or mentions_vllm_engine(code, path)) and handler_clue(code, path)


def _offline_llm_in_web_app(file: FileBytes) -> bool:
    return mentions_vllm_engine(file.code, file.path) and may_be_web_app(file.code, file.path)


def _multi_worker_server(file: FileBytes) -> bool:
    code = file.code
    return present(code, b"workers") and (present(code, b"uvicorn") or present(code, b"hypercorn"))


def _workers_keyword_in_tree(file: FileBytes) -> bool:
    """VLL105 reads a ``workers=`` keyword of a call semantics.callee names ``uvicorn.run`` or ``hypercorn.run``:
    its callee's last part is ``run`` or a name bound to it (``TreeFacts.calls_of``)."""
    return any(keyword.arg == "workers" for call in file.facts().calls_of(("run",)) for keyword in call.keywords)


_REQUEST_ID_KEYWORD = lazy_compile(rb"request_id[ \t]*=(?!=)[ \t]*(?:[\"'0-9]|[fFrRuUbB]{1,2}[\"']|(\w+))")


# What a string is on the pass over code alone (prefilter.code_only), prefix and all.
_STRING_PLACEHOLDER = re.compile(rb"[fFrRuUbB]{0,2}S")


def _request_id_in_handler(file: FileBytes) -> bool:
    """``request_id=`` a literal or a module-level name, or an id passed positionally to an engine this module
    builds; in a module with request handlers."""
    code = file.code
    engine = present(code, b"from_engine_args") or present(code, b"AsyncLLM")
    if not (engine or present(code, b"request_id")) or not may_have_handlers(code, file.path):
        return False
    if engine:
        return True
    for match in word_matches(_REQUEST_ID_KEYWORD, code, allow_dot=False):
        name = match.group(1)
        if name is None or _STRING_PLACEHOLDER.fullmatch(name) or re.search(rb"^" + re.escape(name) + rb"[ \t]*(?::[^=\n]*)?=(?!=)", code, re.MULTILINE):
            return True  # a literal, or a name assigned at the top level (the checker decides whether it stays one)
    return False


# What VLL106 can call the same id on every call (serving._same_for_every_request): a literal, an f-string without
# fields, a name. ``ast`` gives a literal string, number or a concatenation of literals one Constant.
_SAME_ID_NODES = (ast.Constant, ast.JoinedStr, ast.Name)
_REQUEST_ID_METHODS = frozenset({"generate", "encode"})


def _request_id_in_tree(file: FileBytes) -> bool:
    """An ``<x>.generate(...)`` or ``<x>.encode(...)`` call whose ``request_id=`` keyword or third positional argument
    is one of ``_SAME_ID_NODES``: the only arguments VLL106 reads (serving._request_id_arg; ``**kwargs`` comes after
    every positional argument, so the third is the same one in both trees); in a module with a request handler."""
    for call in file.facts().calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in _REQUEST_ID_METHODS:
            continue
        if any(keyword.arg == "request_id" and isinstance(keyword.value, _SAME_ID_NODES) for keyword in call.keywords):
            return handler_in_tree(file)
        if len(call.args) > 2 and isinstance(call.args[2], _SAME_ID_NODES):
            return handler_in_tree(file)
    return False


MODEL_IN_HANDLER = Condition("a model loaded or called in a request handler", _model_used_in_handler, tree_holds=handler_in_tree)

PREFILTER = {
    "VLL101": (MODEL_IN_HANDLER,),
    "VLL102": (MODEL_IN_HANDLER,),
    "VLL103": (MODEL_IN_HANDLER, Condition("a vLLM LLM in a module with a web app", _offline_llm_in_web_app)),
    "VLL104": (MODEL_IN_HANDLER,),
    "VLL105": (Condition("uvicorn or hypercorn with workers", _multi_worker_server, tree_holds=_workers_keyword_in_tree),),
    "VLL106": (Condition("a request id or an async engine in a module with request handlers", _request_id_in_handler, tree_holds=_request_id_in_tree),),
}
