"""The fix where the engine rewrite is refused: each blocking model call in an ``async def`` handler runs in a
worker thread (``await asyncio.to_thread(pipe, prompt)``), one at a time under one ``asyncio.Lock`` of the
module, as the event loop ran them one at a time before. The answers are the same call's; what changes is that
the event loop is free meanwhile (other routes, a health check, answer); the requests still do not batch.

Offered only when every such call of the module can be moved so (a statement of the handler's own body, not a
lambda, a comprehension or a thread's target) and nothing else of VLL101-VLL103 stays reported (vLLM's offline
``LLM`` built in a web app is reported whatever calls it).
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFix
from vllm_lint.python.rewrite.imports import NameTaken, ensure_module_imported
from vllm_lint.python.rewrite.layout import insert_before_first_block, without_blocking_remarks
from vllm_lint.python.rewrite.names import FreshNames, names_in
from vllm_lint.python.vocabulary import HF_GENERATE, LLM_GENERATE, PIPELINE_CALL, call_effect, thread_target
from vllm_lint.python.walk import walk

OFFLOAD_TITLE = (
    "Run each blocking model call in a worker thread (await asyncio.to_thread(...)), one at a time under a lock: "
    "frees the event loop, does not batch (the engine rewrite is refused; the message says why)"
)
_BLOCKING = frozenset({PIPELINE_CALL, HF_GENERATE, LLM_GENERATE})
_NESTED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef)


def offload_fallback(ctx: PyContext) -> PyFix | None:
    """The fix, or None where some blocking call of the module cannot be moved to a worker thread."""
    semantics = ctx.semantics
    if semantics.defines_web_app and any(semantics.callee(site.node) == "vllm.LLM" for site in ctx.model.calls):
        return None  # VLL103 reports the construction itself
    serves_grpc_aio = any(semantics.callee(site.node) == "grpc.aio.server" for site in ctx.model.calls)
    calls: dict[int, cst.Call] = {}
    statements: dict[int, cst.SimpleStatementLine] = {}
    for site in ctx.model.calls:
        effect = call_effect(semantics, site)
        if effect is None or effect.kind not in _BLOCKING:
            continue
        handler = None if site.in_main_guard else semantics.enclosing_handler(site.function)
        if handler is None:
            continue  # not reported: nothing to move
        function = site.function
        statement = site.statement
        if (
            function is None or not function.is_async or not handler.runs_on_event_loop or site.in_lambda
            or (handler.framework == "grpc" and not serves_grpc_aio)  # a sync gRPC server cannot await the method
            or thread_target(semantics, site.node) is not None or not isinstance(statement, cst.SimpleStatementLine)
            or not _directly_in(function.node, statement, site.node)
        ):
            return None
        calls[id(site.node)] = site.node
        statements[id(statement)] = statement
    if not calls:
        return None
    module = ctx.module

    def build() -> list[NodeEdit]:
        return [NodeEdit(module, _offloaded(module, calls, statements))]

    try:
        _names(module)
    except NameTaken:
        return None
    return PyFix(title=OFFLOAD_TITLE, applicability=Applicability.UNSAFE, build=build if ctx.fix_edits else None)


def _names(module: cst.Module) -> tuple[cst.Module, str, str]:
    """The module with ``import asyncio``, the name it is bound to, and a fresh name for the lock."""
    taken = names_in(module)
    with_asyncio, asyncio = ensure_module_imported(module, "asyncio", names=taken)
    return with_asyncio, asyncio, FreshNames(taken | {asyncio}).take("model_lock")


def _directly_in(function: cst.FunctionDef, statement: cst.SimpleStatementLine, call: cst.Call) -> bool:
    """``statement`` is in ``function``'s own body (not a nested function's) and ``call`` in it outside any
    lambda or comprehension, where ``await`` can be written."""
    found = {"statement": False, "call": False}

    class _Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0

        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is statement:
                found["statement"] = self.depth == 0
            if node is call:
                found["call"] = self.depth == 0
            if isinstance(node, _NESTED) and node is not function:
                self.depth += 1
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if isinstance(original_node, _NESTED) and original_node is not function:
                self.depth -= 1

    walk(function, _Find())
    return found["statement"] and found["call"]


def _offloaded(module: cst.Module, calls: dict[int, cst.Call], statements: dict[int, cst.SimpleStatementLine]) -> cst.Module:
    with_asyncio, asyncio, lock = _names(module)
    to_thread = cst.parse_expression(f"{asyncio}.to_thread")

    class _Offload(cst.CSTTransformer):
        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
            if id(original_node) not in calls:
                return updated_node
            moved = updated_node.with_changes(func=to_thread, args=[cst.Arg(updated_node.func), *updated_node.args], lpar=[], rpar=[])
            return cst.Await(expression=moved, lpar=updated_node.lpar, rpar=updated_node.rpar)

        def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
            return updated_node.with_changes(value=_parenthesized(original_node.value, updated_node.value))

        def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
            return updated_node.with_changes(value=_parenthesized(original_node.value, updated_node.value))

        def leave_SimpleStatementLine(
            self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
        ) -> cst.BaseStatement:
            if id(original_node) not in statements:
                return updated_node
            line = without_blocking_remarks(updated_node)
            return cst.With(
                items=[cst.WithItem(cst.Name(lock))], asynchronous=cst.Asynchronous(),
                body=cst.IndentedBlock(body=[line.with_changes(leading_lines=[])]), leading_lines=line.leading_lines,
            )

    def _parenthesized(original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression:
        """``(await f(x))[0]``: an awaited call whose value is read, which ``await`` would otherwise take in."""
        if id(original) in calls and isinstance(updated, cst.Await) and not updated.lpar:
            return updated.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated

    rewritten = with_asyncio.visit(_Offload())
    assert isinstance(rewritten, cst.Module)
    comment = "# the model calls run one at a time, as on the event loop before"
    lock_line = cst.parse_statement(f"{lock} = {asyncio}.Lock()  {comment}\n", config=rewritten.config_for_parsing)
    return insert_before_first_block(rewritten, [lock_line], asyncio)
