"""VLL107 (a blocking LLM client call on the event loop) and VLL108 (a client built per request)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.llm_clients import POOLED_CLIENTS, SYNC_CLIENTS, SYNC_FUNCTIONS
from vllm_lint.python.model import CallSite, FunctionInfo, decorator_parts, dotted_name
from vllm_lint.python.rewrite.imports import NameTaken, ensure_imported
from vllm_lint.python.rewrite.names import occurrences
from vllm_lint.python.handlers import Handler
from vllm_lint.python.walk import walk
from vllm_lint.registry import python_rule

_MAX_CALL_DEPTH = max(call.count(".") + 1 for client in SYNC_CLIENTS.values() for call in client.calls)


@dataclass(frozen=True, slots=True)
class _Blocking:
    """A blocking client call."""
    shown: str  # what the message calls it: ``OpenAI.chat.completions.create``
    qualified: str  # the client class, or the function itself
    receiver: cst.BaseExpression | None  # the client object the call is made on (None: a module-level function)


def _peel(func: cst.BaseExpression, depth: int) -> tuple[cst.BaseExpression, str] | None:
    """The expression ``depth`` attributes below ``func``, and the attribute path above it."""
    names = []
    node = func
    for _ in range(depth):
        if not isinstance(node, cst.Attribute):
            return None
        names.append(node.attr.value)
        node = node.value
    return node, ".".join(reversed(names))


def _blocking_call(ctx: PyContext, site: CallSite) -> _Blocking | None:
    callee = ctx.semantics.callee(site.node)
    if callee in SYNC_FUNCTIONS:
        return _Blocking(callee, callee, None)
    for depth in range(1, _MAX_CALL_DEPTH + 1):
        peeled = _peel(site.node.func, depth)
        if peeled is None:
            return None
        receiver, path = peeled
        for producer in ctx.semantics.produced_by(receiver, site.function):
            client = SYNC_CLIENTS.get(producer)
            if client is not None and path in client.calls:
                return _Blocking(f"{producer.rsplit('.', 1)[-1]}.{path}", producer, receiver)
    return None


def _awaitable_here(site: CallSite) -> bool:
    """Code where the call itself runs on the event loop and an ``await`` may be written: an ``async def``
    body, not a lambda (those are handed to a thread pool or called back later)."""
    return site.function is not None and site.function.is_async and not site.in_lambda


def _called_from_async_handler(ctx: PyContext, function: FunctionInfo) -> Handler | None:
    """The async handler that calls this plain function directly (not through a lambda or a thread)."""
    if function.parent is not None or function.is_async:
        return None
    names = {function.name} if not function.is_method else {f"self.{function.name}"}
    for site in ctx.model.calls:
        caller = site.function
        if caller is None or not _awaitable_here(site) or dotted_name(site.node.func) not in names:
            continue
        handler = ctx.semantics.enclosing_handler(caller)
        if handler is not None and handler.runs_on_event_loop:
            return handler
    return None


def _event_loop_handler(ctx: PyContext, site: CallSite) -> Handler | None:
    if site.in_main_guard or site.in_lambda or site.function is None:
        return None
    if site.function.is_async:
        handler = ctx.semantics.enclosing_handler(site.function)
        return handler if handler is not None and handler.runs_on_event_loop else None
    return _called_from_async_handler(ctx, site.function) if site.function in ctx.semantics.handlers else None


@python_rule("VLL107")
def blocking_llm_client_in_async_handler(ctx: PyContext) -> Iterator[PyFinding]:
    for site in ctx.model.calls:
        blocking = _blocking_call(ctx, site)
        if blocking is None:
            continue
        handler = _event_loop_handler(ctx, site)
        if handler is None:
            continue
        yield PyFinding(
            message=(
                f"{blocking.shown}() is a synchronous call in async request handler {handler.function.name}: it "
                "blocks the event loop for the whole generation, so every other request (health checks included) "
                "waits; use the async client and await it, or run the call in a thread (asyncio.to_thread)"
            ),
            node=site.node,
            statement=site.statement,
            fix=PyFix(
                applicability=Applicability.UNSAFE,
                build=partial(_awaited, ctx, site, blocking),
            ),
        )


# -- the fix: the async twin, awaited ------------------------------------------------------------


def _awaitable_calls(ctx: PyContext, sites: list[CallSite]) -> bool:
    """Every call can be awaited where it is written, and returns the same shape once awaited (a
    ``stream=`` call would need ``async for`` as well)."""
    return all(
        _awaitable_here(site) and not any(arg.keyword is not None and arg.keyword.value == "stream" for arg in site.node.args)
        for site in sites
    )


def _parent_of(ctx: PyContext, call: cst.Call, head: str) -> cst.CSTNode | None:
    """The node holding ``call``, found through the occurrences of the name its callee starts with."""
    for occurrence in occurrences(ctx.module, {head})[head]:
        for index, node in enumerate(occurrence.parents):
            if node is call:
                return occurrence.parents[index - 1] if index else None
    return None


def _await(call: cst.Call, parent: cst.CSTNode | None, original: cst.Call | None = None) -> cst.BaseExpression:
    """``await call``, in place of ``original`` (``call`` itself by default) under ``parent``."""
    # ``await`` binds less tightly than attribute access, subscription and calls: ``(await c.create()).choices``
    written = original or call
    needs_parentheses = (
        (isinstance(parent, cst.Attribute) and parent.value is written)
        or (isinstance(parent, cst.Subscript) and parent.value is written)
        or (isinstance(parent, cst.Call) and parent.func is written)
    )
    bare = call.with_changes(lpar=[], rpar=[])
    if needs_parentheses:
        return cst.Await(bare, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Await(bare, lpar=call.lpar, rpar=call.rpar)


def _twin(ctx: PyContext, func: cst.BaseExpression, qualified: str, twin: str) -> tuple[cst.BaseExpression, list[NodeEdit]] | None:
    """``func`` (which names ``qualified``) made to name ``twin`` of the same module, and the import edits that
    takes: ``mod.Sync`` becomes ``mod.Twin``; a name imported only for this use has its import renamed;
    otherwise the twin is imported beside it."""
    if isinstance(func, cst.Attribute):
        return func.with_changes(attr=cst.Name(twin)), []
    if not isinstance(func, cst.Name):
        return None
    uses = occurrences(ctx.module, {func.value})[func.value]
    imports = [u for u in uses if isinstance(u.parent, cst.ImportAlias)]
    if len(uses) == 2 and len(imports) == 1 and any(u.name is func for u in uses):
        alias = imports[0].parent
        statement = imports[0].ancestor(2)
        if (isinstance(alias, cst.ImportAlias) and alias.asname is None and isinstance(statement, cst.ImportFrom)
                and statement.module is not None and dotted_name(statement.module) == qualified.rsplit(".", 1)[0]):
            return cst.Name(twin), [NodeEdit(alias.name, cst.Name(twin))]
    try:
        module, expression = ensure_imported(ctx.module, qualified.rsplit(".", 1)[0], twin)
    except NameTaken:
        return None
    return cst.parse_expression(expression), [NodeEdit(ctx.module, module)]


def _awaited(ctx: PyContext, site: CallSite, blocking: _Blocking) -> list[NodeEdit]:
    if blocking.receiver is None:
        return _awaited_function(ctx, site, blocking)
    return _awaited_client(ctx, blocking)


def _awaited_function(ctx: PyContext, site: CallSite, blocking: _Blocking) -> list[NodeEdit]:
    twin = SYNC_FUNCTIONS[blocking.qualified]
    head = (dotted_name(site.node.func) or "").split(".")[0]
    if twin is None or not head or not _awaitable_calls(ctx, [site]):
        return []
    renamed = _twin(ctx, site.node.func, blocking.qualified, twin)
    if renamed is None:
        return []
    func, imports = renamed
    awaited = _await(site.node.with_changes(func=func), _parent_of(ctx, site.node, head), site.node)
    return [NodeEdit(site.node, awaited), *imports]


def _awaited_client(ctx: PyContext, blocking: _Blocking) -> list[NodeEdit]:
    """A module-level client whose every use is one of its blocking calls in async code: build the async
    twin instead and await each call."""
    receiver = blocking.receiver
    if not isinstance(receiver, cst.Name):
        return []
    name = receiver.value
    bindings = ctx.model.bindings.get((None, name), [])
    if len(bindings) != 1 or bindings[0].function is not None:
        return []
    constructor = bindings[0].call
    client = SYNC_CLIENTS[blocking.qualified]
    calls = {id(site.node): site for site in ctx.model.calls}
    uses: list[tuple[CallSite, cst.CSTNode | None]] = []
    for occurrence in occurrences(ctx.module, {name})[name]:
        parent = occurrence.parent
        if isinstance(parent, cst.AssignTarget):
            continue
        site = _client_call(occurrence.name, occurrence.parents, client.calls, calls)
        if site is None:
            return []  # the client is used some other way: an async one would not do there
        index = occurrence.parents.index(site.node)
        uses.append((site, occurrence.parents[index - 1] if index else None))
    if not uses or not _awaitable_calls(ctx, [site for site, _ in uses]):
        return []
    renamed = _twin(ctx, constructor.func, blocking.qualified, client.async_twin)
    if renamed is None:
        return []
    func, imports = renamed
    awaits = [NodeEdit(site.node, _await(site.node, parent)) for site, parent in uses]
    return [NodeEdit(constructor.func, func), *awaits, *imports]


def _client_call(name: cst.Name, parents: tuple[cst.CSTNode, ...], paths: tuple[str, ...], calls: dict[int, CallSite]) -> CallSite | None:
    """The call a client name is the receiver of (``client.chat.completions.create(...)``), when its path is one of ``paths``."""
    names = []
    below: cst.CSTNode = name
    for node in reversed(parents):
        if isinstance(node, cst.Attribute) and node.value is below:
            names.append(node.attr.value)
            below = node
            continue
        if isinstance(node, cst.Call) and node.func is below and ".".join(names) in paths:
            return calls.get(id(node))
        return None
    return None


# -- VLL108 ----------------------------------------------------------------------------------------


class _Closes(cst.CSTVisitor):
    """Whether a function closes one of ``names``: ``with name:``/``async with name:``, ``name.close()``, ``name.aclose()``."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names, self.found = names, False

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.found |= isinstance(node.item, cst.Name) and node.item.value in self.names

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("close", "aclose"):
            self.found |= dotted_name(func.value) in self.names


def _closed(site: CallSite) -> bool:
    statement = site.statement
    if isinstance(statement, cst.With) and any(item.item is site.node for item in statement.items):
        return True
    if not site.assigned_to or site.function is None:
        return False
    visitor = _Closes(set(site.assigned_to))
    walk(site.function.node, visitor)
    return visitor.found


def _built_once(ctx: PyContext, site: CallSite) -> bool:
    """Start-up code, a cached factory (``@lru_cache``), or a lazily filled global/attribute."""
    function = site.function
    if ctx.semantics.is_startup_hook(function):
        return True
    while function is not None:
        for decorator in function.node.decorators:
            name = dotted_name(decorator_parts(decorator)[0]) or ""
            if name.rsplit(".", 1)[-1] in ("lru_cache", "cache", "cached_property", "cache_resource"):
                return True
        function = function.parent
    return any(t.startswith("self.") or (site.function is not None and t in site.function.global_names) for t in site.assigned_to)


def _local(name: str, function: FunctionInfo | None) -> bool:
    while function is not None:
        if name in function.params or name in function.bound_names:
            return True
        function = function.parent
    return False


def _request_independent(ctx: PyContext, expr: cst.BaseExpression, function: FunctionInfo | None) -> bool:
    """An argument that is the same on every request: literals, module-level names and attributes of them,
    environment lookups (not a per-user API key or anything else read from the request)."""
    if ctx.semantics.fold(expr) is not None:
        return True
    if isinstance(expr, (cst.Name, cst.Attribute)):
        head = dotted_name(expr)
        return head is not None and head.split(".")[0] not in ("self", "cls") and not _local(head.split(".")[0], function)
    if isinstance(expr, cst.Subscript):
        return _request_independent(ctx, expr.value, function) and all(
            isinstance(item.slice, cst.Index) and _request_independent(ctx, item.slice.value, function) for item in expr.slice
        )
    if isinstance(expr, cst.Call) and ctx.semantics.callee(expr) in ("os.getenv", "os.environ.get"):
        return all(_request_independent(ctx, arg.value, function) for arg in expr.args)
    return False


@python_rule("VLL108")
def llm_client_per_request(ctx: PyContext) -> Iterator[PyFinding]:
    for site in ctx.model.calls:
        callee = ctx.semantics.callee(site.node)
        if callee not in POOLED_CLIENTS or site.in_main_guard or site.in_lambda:
            continue
        handler = ctx.semantics.enclosing_handler(site.function)
        if handler is None or _built_once(ctx, site) or _closed(site):
            continue
        if not all(not arg.star and _request_independent(ctx, arg.value, site.function) for arg in site.node.args):
            continue  # built from the request (a per-user key): one shared client would not do
        shown = dotted_name(site.node.func) or callee
        yield PyFinding(
            message=(
                f"{shown}(...) builds a new client in request handler {handler.function.name} and never closes it: "
                "each request opens its own connection pool (new TCP and TLS handshakes, sockets left open until "
                "garbage collection); build one client at start-up and share it"
            ),
            node=site.node,
            statement=site.statement,
        )
