"""The fix where the engine rewrite is refused: the blocking model calls run one at a time, with the same
arguments and answers, and the requests still do not batch.

- In an ``async def`` handler on an event loop, each call runs in a worker thread (``await
  asyncio.to_thread(pipe, prompt)``) under one ``asyncio.Lock`` of the module, as the event loop ran them one at a
  time before: the event loop is free meanwhile (other routes, a health check, answer).
- In a plain ``def`` handler that the framework already runs in its worker threads, several at once
  (handler_table's ``sync_in_threads``: FastAPI, Starlette, Flask, Quart, Gradio, ...), each call's statement
  runs inside ``with model_lock:``, one ``threading.RLock()`` of the module, with the statements of the same block
  that use a transformers tokenizer or processor (and those between them). A transformers model and its fast
  tokenizer are not safe to call from two threads at once: the tokenizer's Rust object raises "RuntimeError:
  Already borrowed" when a second thread uses it mid-call (huggingface/tokenizers#537, huggingface/transformers#47085),
  and concurrent ``generate()`` calls on one model can share its per-call state (huggingface/transformers#48286).
  Re-entrant, so a locked statement that calls a helper taking the lock too does not deadlock. A tokenizer used
  in another block or function stays outside the lock.

Offered only when every such call of the module can be moved so (a statement of its function's own body, not a
lambda, a comprehension, a generator's ``yield`` or a thread's target), all of one kind, and nothing else of
VLL101-VLL103 stays reported (vLLM's offline ``LLM`` built in a web app is reported whatever calls it). The
serving rules read a call under such a lock as fixed this way (vocabulary.held_thread_lock): an info-level note
that it does not batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFix
from vllm_lint.python.rewrite.imports import NameTaken, ensure_module_imported
from vllm_lint.python.rewrite.layout import insert_before_first_block, without_blocking_remarks
from vllm_lint.python.rewrite.names import FreshNames, names_in
from vllm_lint.python.model import FunctionInfo
from vllm_lint.python.semantics import Semantics
from vllm_lint.python.vocabulary import (
    HF_GENERATE,
    LLM_GENERATE,
    PIPELINE_CALL,
    call_effect,
    held_thread_lock,
    is_processor_load,
    is_tokenizer_load,
    thread_target,
)
from vllm_lint.python.walk import walk

OFFLOAD_TITLE = (
    "Run each blocking model call in a worker thread (await asyncio.to_thread(...)), one at a time under a lock: "
    "frees the event loop, does not batch (the engine rewrite is refused; the message says why)"
)
THREAD_LOCK_TITLE = (
    "Run the blocking model calls one at a time under a lock (with model_lock:), which the framework's worker threads "
    "would otherwise run at once on one model: the same answers, does not batch (the engine rewrite is refused; the "
    "message says why)"
)
_BLOCKING = frozenset({PIPELINE_CALL, HF_GENERATE, LLM_GENERATE})


@dataclass(frozen=True, slots=True)
class Fallback:
    fix: PyFix
    said: str  # what the finding's message says of the fix


_OFFLOAD_SAID = "runs each call in a worker thread, one at a time: it frees the event loop but does not batch"
_THREAD_LOCK_SAID = (
    "runs the calls one at a time under a lock, which the framework's worker threads would otherwise run at once "
    "on one model (not safe from two threads): it does not batch"
)
_NESTED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef)


def offload_fallback(ctx: PyContext) -> Fallback | None:
    """The fix, or None where some blocking call of the module cannot be moved or locked."""
    semantics = ctx.semantics
    if semantics.defines_web_app and any(semantics.callee(site.node) == "vllm.LLM" for site in ctx.model.calls):
        return None  # VLL103 reports the construction itself
    serves_grpc_aio = any(semantics.callee(site.node) == "grpc.aio.server" for site in ctx.model.calls)
    calls: dict[int, cst.Call] = {}
    statements: dict[int, cst.SimpleStatementLine] = {}
    functions: dict[int, FunctionInfo] = {}  # by statement
    kinds = set()
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
            function is None or site.in_lambda or thread_target(semantics, site.node) is not None
            or not isinstance(statement, cst.SimpleStatementLine) or not _directly_in(function.node, statement, site.node)
        ):
            return None
        if function.is_async and handler.runs_on_event_loop:
            if handler.framework == "grpc" and not serves_grpc_aio:
                return None  # a sync gRPC server cannot await the method
            kinds.add("offload")
        elif not function.is_async and handler.runs_in_threads and held_thread_lock(semantics, site) is None:
            kinds.add("lock")
        else:
            return None
        calls[id(site.node)] = site.node
        statements[id(statement)] = statement
        functions[id(statement)] = function
    if not calls or len(kinds) != 1:
        return None  # two kinds: two locks would not keep the calls of both one at a time
    module = ctx.module
    locked = kinds == {"lock"}
    spans = _lock_spans(semantics, statements, functions) if locked else {}
    if spans is None:
        return None

    def build() -> list[NodeEdit]:
        return [NodeEdit(module, _locked(module, spans, statements) if locked else _offloaded(module, calls, statements))]

    try:
        _names(module, "threading" if locked else "asyncio")
    except NameTaken:
        return None
    fix = PyFix(title=THREAD_LOCK_TITLE if locked else OFFLOAD_TITLE, applicability=Applicability.UNSAFE,
                build=build if ctx.fix_edits else None)
    return Fallback(fix, _THREAD_LOCK_SAID if locked else _OFFLOAD_SAID)


_Spans = dict[int, list[tuple[int, int]]]  # by id of an indented block: its (first, last) statements under the lock


def _lock_spans(
    semantics: Semantics, statements: dict[int, cst.SimpleStatementLine], functions: dict[int, FunctionInfo]
) -> _Spans | None:
    """Where ``with model_lock:`` goes: in each block that holds a blocking statement, that statement, or, where
    statements of the block use a tokenizer, the run from the first such statement to the last. None where a
    run would yield: the lock would stay held while the generator's consumer, maybe on another thread, waits."""
    spans: _Spans = {}
    for key, statement in statements.items():
        function = functions[key]
        block = _block_of(function.node, statement)
        if block is None:
            return None
        if id(block) in spans:
            continue
        body = list(block.body)
        blocking = [i for i, line in enumerate(body) if id(line) in statements]
        tokenizing = [i for i, line in enumerate(body) if _uses_tokenizer(semantics, line, function)]
        if tokenizing:
            runs = [(min(blocking + tokenizing), max(blocking + tokenizing))]
        else:
            runs = [(i, i) for i in blocking]
        if any(_yields(line) for first, last in runs for line in body[first:last + 1]):
            return None
        spans[id(block)] = runs
    return spans


def _block_of(function: cst.FunctionDef, statement: cst.CSTNode) -> cst.IndentedBlock | None:
    """The indented block of ``function``'s own code whose body holds ``statement``."""
    found: list[cst.IndentedBlock] = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not function:
                return False
            if isinstance(node, cst.IndentedBlock) and any(line is statement for line in node.body):
                found.append(node)
            return not found

    walk(function, _Find())
    return found[0] if found else None


def _uses_tokenizer(semantics: Semantics, statement: cst.CSTNode, function: FunctionInfo) -> bool:
    """``statement`` calls a transformers tokenizer or processor, or one of its methods (``tok(text)``,
    ``tok.decode(ids)``)."""
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            for expr in (func, func.value) if isinstance(func, cst.Attribute) else (func,):
                if any(is_tokenizer_load(p) or is_processor_load(p) for p in semantics.produced_by(expr, function)):
                    found.append(node)

    walk(statement, _Find())
    return bool(found)


def _yields(statement: cst.CSTNode) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Yield(self, node: cst.Yield) -> None:
            found.append(node)

    walk(statement, _Find())
    return bool(found)


def _names(module: cst.Module, lock_module: str) -> tuple[cst.Module, str, str]:
    """The module with ``import <lock_module>`` (asyncio, threading), the name it is bound to, and a fresh name
    for the lock."""
    taken = names_in(module)
    with_import, bound = ensure_module_imported(module, lock_module, names=taken)
    return with_import, bound, FreshNames(taken | {bound}).take("model_lock")


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
    with_asyncio, asyncio, lock = _names(module, "asyncio")
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
            return _under(lock, updated_node, asynchronous=True)

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


def _locked(module: cst.Module, spans: _Spans, statements: dict[int, cst.SimpleStatementLine]) -> cst.Module:
    with_threading, threading, lock = _names(module, "threading")

    class _Lock(cst.CSTTransformer):
        def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
            runs = spans.get(id(original_node))
            if runs is None:
                return updated_node
            body = list(updated_node.body)
            for index, line in enumerate(original_node.body):  # the same statements, in the same places
                if id(line) in statements:
                    body[index] = without_blocking_remarks(cast(cst.SimpleStatementLine, body[index]))
            for first, last in reversed(runs):
                body[first:last + 1] = [_around(lock, body[first:last + 1], asynchronous=False)]
            return updated_node.with_changes(body=body)

    rewritten = with_threading.visit(_Lock())
    assert isinstance(rewritten, cst.Module)
    comment = "# one model call at a time: the model and its tokenizer are not safe from two threads at once"
    lock_line = cst.parse_statement(f"{lock} = {threading}.RLock()  {comment}\n", config=rewritten.config_for_parsing)
    return insert_before_first_block(rewritten, [lock_line], threading)


def _under(lock: str, statement: cst.SimpleStatementLine, *, asynchronous: bool) -> cst.With:
    """``[async] with lock:`` around ``statement``, which keeps its comments but those saying the call blocks."""
    return _around(lock, [without_blocking_remarks(statement)], asynchronous=asynchronous)


def _around(lock: str, lines: list[cst.BaseStatement], *, asynchronous: bool) -> cst.With:
    """``[async] with lock:`` around ``lines``; the first one's comments and blank lines go above the ``with``."""
    first = lines[0]
    assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return cst.With(
        items=[cst.WithItem(cst.Name(lock))], asynchronous=cst.Asynchronous() if asynchronous else None,
        body=cst.IndentedBlock(body=[first.with_changes(leading_lines=[]), *lines[1:]]), leading_lines=first.leading_lines,
    )
