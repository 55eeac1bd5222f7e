"""What a Python module tells the project rules: the vLLM servers it starts (command lines it runs) and the
model names its OpenAI clients ask a known base URL for."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import libcst as cst

from vllm_lint.diagnostics import Position
from vllm_lint.launch.record import Launch
from vllm_lint.project.facts import FileFacts, ModelRequest
from vllm_lint.project.servers import server_fact
from vllm_lint.python.context import PyContext
from vllm_lint.python.model import CallSite

# Clients of an OpenAI-compatible server (vLLM's), and the calls that name a model.
_OPENAI_CLIENTS = frozenset({"openai.OpenAI", "openai.AsyncOpenAI"})
_MODEL_CALLS = ("chat.completions.create", "completions.create", "embeddings.create", "responses.create")

Span = Callable[[cst.CSTNode], tuple[Position, Position]]


def _static_text(ctx: PyContext, node: cst.BaseExpression) -> str | None:
    """A string written in the module (a literal or a module constant), not an environment default."""
    value = ctx.semantics.fold(node)
    if value is None or value.origin is not None or not isinstance(value.value, str):
        return None
    return value.value


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def _base_url(ctx: PyContext, receiver: cst.BaseExpression, site: CallSite) -> str | None:
    """The base URL of the one OpenAI client ``receiver`` can be, when written in the module."""
    constructors = [receiver] if isinstance(receiver, cst.Call) else ctx.semantics.bindings_of(receiver, site.function)
    if len(constructors) != 1 or ctx.semantics.callee(constructors[0]) not in _OPENAI_CLIENTS:
        return None
    constructor = constructors[0]
    if any(arg.star for arg in constructor.args):
        return None
    argument = _keyword(constructor, "base_url")
    return _static_text(ctx, argument.value) if argument is not None else None


def _receiver(func: cst.BaseExpression) -> cst.BaseExpression | None:
    for path in _MODEL_CALLS:
        node = func
        for name in reversed(path.split(".")):
            if not isinstance(node, cst.Attribute) or node.attr.value != name:
                break
            node = node.value
        else:
            return node
    return None


def launch_anchor(launch: Launch, statement: cst.CSTNode) -> cst.CSTNode:
    """Where a launch's server fact is placed: its own anchor node, else the statement that holds it."""
    return launch.anchor if isinstance(launch.anchor, cst.CSTNode) else statement


def python_facts(ctx: PyContext, launches: Iterable[tuple[Launch, object, cst.CSTNode]], span: Span) -> FileFacts:
    facts = FileFacts()
    for launch, _, statement in launches:
        server = server_fact(launch, span(launch_anchor(launch, statement))[0].line)
        if server is not None:
            facts.servers.append(server)
    for site in ctx.model.calls:
        receiver = _receiver(site.node.func)
        model = _keyword(site.node, "model") if receiver is not None else None
        if receiver is None or model is None or any(arg.star for arg in site.node.args):
            continue
        name = _static_text(ctx, model.value)
        base_url = _base_url(ctx, receiver, site) if name else None
        if name is None or base_url is None:
            continue
        start, end = span(model.value)
        noqa = {start.line}
        if not isinstance(site.statement, cst.Module):
            noqa.add(span(site.statement)[0].line)
        facts.requests.append(ModelRequest(base_url, name, start, end, tuple(sorted(noqa))))
    return facts
