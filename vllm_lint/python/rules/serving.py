"""VLL101-VLL106: serving architecture."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import libcst as cst

from vllm_lint.diagnostics import Applicability, Severity
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.model import CallSite, FunctionInfo
from vllm_lint.python.handlers import Handler
from vllm_lint.python.vocabulary import (
    HF_GENERATE,
    LLM_GENERATE,
    MODEL_LOAD,
    PIPELINE_CALL,
    CallEffect,
    caches_load,
    call_effect,
    handler_calls_into_project,
    held_thread_lock,
    is_model_load,
    loads_through_project,
    thread_target,
    through,
)
from vllm_lint.registry import python_rule

if TYPE_CHECKING:
    from vllm_lint.python.project import Reached
    from vllm_lint.python.rewrite import ServerRewriteOutcome


def _blocking_consequence(handler: Handler, site: CallSite | None = None, ctx: PyContext | None = None) -> str:
    if site is not None and ctx is not None and thread_target(ctx.semantics, site.node) is not None:
        return "runs one unbatched generation per request, each in a thread of its own: no batching across concurrent requests"
    if handler.runs_on_event_loop:
        return "blocks the event loop: every other request waits until it finishes"
    return "serialises requests, one GPU pass each: no batching across concurrent requests"


def _locked_note(ctx: PyContext, site: CallSite, handler: Handler, what: str) -> PyFinding | None:
    """An info-level note, in place of the error, for a call that a plain `def` handler makes under a module-level
    lock (``with model_lock:``, the fix offered where the engine rewrite is refused; python/rewrite/offload.py):
    the framework's worker threads make such calls one at a time, so nothing is unsafe, but nothing batches."""
    if not handler.runs_in_threads or site.function is None or site.function.is_async:
        return None
    lock = held_thread_lock(ctx.semantics, site)
    if lock is None:
        return None
    return PyFinding(
        message=(
            f"{what} inside a request handler ({handler.shown}): it runs under `{lock}`, one call at a time in the "
            "framework's worker threads: no batching across concurrent requests; serve with vLLM's AsyncLLMEngine "
            "to batch them"
        ),
        node=site.node,
        statement=site.statement,
        severity=Severity.INFO,
    )


def _in_handler(ctx: PyContext, site: CallSite) -> Handler | None:
    if site.in_main_guard:
        return None
    return ctx.semantics.enclosing_handler(site.function)


class _LazyRewrite:
    """The AsyncLLMEngine rewrite of the module, analysed once and only when a finding needs it (the rewrite
    package, too, is imported only then)."""

    def __init__(self, ctx: PyContext) -> None:
        self._ctx = ctx
        self._outcome: ServerRewriteOutcome | None = None

    def get(self) -> ServerRewriteOutcome:
        if self._outcome is None:
            from vllm_lint.python.rewrite import server_rewrite

            self._outcome = server_rewrite(self._ctx)
        return self._outcome


@python_rule("VLL101")
def sync_pipeline_in_handler(ctx: PyContext) -> Iterator[PyFinding]:
    rewrite = _LazyRewrite(ctx)
    for site, handler, _ in _effects_in_handlers(ctx, PIPELINE_CALL):
        note = _locked_note(ctx, site, handler, "transformers pipeline called")
        if note is not None:
            yield note
            continue
        outcome = rewrite.get()
        yield PyFinding(
            code="VLL101",
            message=(
                f"transformers pipeline called inside a request handler ({handler.shown}): it "
                f"{_blocking_consequence(handler, site, ctx)}; serve with vLLM's AsyncLLMEngine instead"
                + outcome.message_suffix()
            ),
            node=site.node,
            statement=site.statement,
            fix=outcome.fix,
        )
    yield from _through_project(
        ctx, "VLL101", PIPELINE_CALL,
        lambda handler, reached, chain: f"transformers pipeline called inside a request handler ({handler.shown}), "
        f"{chain}: it {_blocking_consequence(handler)}; serve with vLLM's AsyncLLMEngine instead",
    )


def _effects_in_handlers(ctx: PyContext, kind: str) -> Iterator[tuple[CallSite, Handler, CallEffect]]:
    """Calls of this module, inside request handlers, that do ``kind`` (vocabulary.call_effect)."""
    for site in ctx.model.calls:
        handler = _in_handler(ctx, site)
        if handler is None:
            continue
        effect = call_effect(ctx.semantics, site)
        if effect is not None and effect.kind == kind:
            yield site, handler, effect


def _through_project(
    ctx: PyContext, code: str, kind: str, describe: Callable[[Handler, Reached, str], str]
) -> Iterator[PyFinding]:
    """``code`` at each call of a handler into another module of the project that does ``kind``; ``describe``
    says it from the handler, what it reaches and the chain of calls (``through model.generate_text -> ...``)."""
    for site, handler, reached in handler_calls_into_project(ctx, kind):
        yield PyFinding(code=code, message=describe(handler, reached, through(ctx, reached)), node=site.node, statement=site.statement)


@python_rule("VLL102")
def hf_generate_in_handler(ctx: PyContext) -> Iterator[PyFinding]:
    rewrite = _LazyRewrite(ctx)
    for site, handler, _ in _effects_in_handlers(ctx, HF_GENERATE):
        note = _locked_note(ctx, site, handler, "transformers model.generate() called")
        if note is not None:
            yield note
            continue
        outcome = rewrite.get()
        yield PyFinding(
            code="VLL102",
            message=(
                f"transformers model.generate() called inside a request handler ({handler.shown}): it "
                f"{_blocking_consequence(handler, site, ctx)}; serve with vLLM's AsyncLLMEngine instead"
                + outcome.message_suffix()
            ),
            node=site.node,
            statement=site.statement,
            fix=outcome.fix,
        )
    yield from _through_project(
        ctx, "VLL102", HF_GENERATE,
        lambda handler, reached, chain: f"transformers model.generate() called inside a request handler "
        f"({handler.shown}), {chain}: it {_blocking_consequence(handler)}; serve with vLLM's AsyncLLMEngine",
    )


@python_rule("VLL103")
def offline_llm_in_server(ctx: PyContext) -> Iterator[PyFinding]:
    semantics = ctx.semantics
    if semantics.is_test_file:
        return
    rewrite = _LazyRewrite(ctx)
    constructions = [
        site for site in ctx.model.calls if semantics.callee(site.node) == "vllm.LLM" and not site.in_main_guard
    ]
    if constructions and semantics.defines_web_app:
        for site in constructions:
            outcome = rewrite.get()
            yield PyFinding(
                code="VLL103",
                message=(
                    "vLLM's offline LLM class constructed in a web server: LLM.generate() blocks until every "
                    "prompt finishes and cannot serve concurrent requests; use AsyncLLMEngine"
                    + outcome.message_suffix()
                ),
                node=site.node,
                statement=site.statement,
                fix=outcome.fix,
            )
        return
    for site, handler, effect in _effects_in_handlers(ctx, LLM_GENERATE):
        note = _locked_note(ctx, site, handler, effect.what)
        if note is not None:
            yield note
            continue
        outcome = rewrite.get()
        yield PyFinding(
            code="VLL103",
            message=(
                f"{effect.what} inside a request handler ({handler.shown}): it {_blocking_consequence(handler)}; "
                f"use AsyncLLMEngine{outcome.message_suffix()}"
            ),
            node=site.node,
            statement=site.statement,
            fix=outcome.fix,
        )
    yield from _through_project(
        ctx, "VLL103", LLM_GENERATE,
        lambda handler, reached, chain: f"{reached.effect.what} inside a request handler ({handler.shown}), {chain}: "
        f"it {_blocking_consequence(handler)}; use AsyncLLMEngine",
    )


@python_rule("VLL104")
def model_load_in_handler(ctx: PyContext) -> Iterator[PyFinding]:
    for site, handler, effect in _effects_in_handlers(ctx, MODEL_LOAD):
        from vllm_lint.python.rewrite.hoist import hoisted_load  # the rewrite package only where a rule fires

        if ctx.semantics.is_startup_hook(site.function) or caches_load(site) or ctx.semantics.caches_result(handler):
            continue  # once at start-up, or cached: a global, self.x, an @lru_cache'd loader
        yield PyFinding(
            code="VLL104",
            message=(
                f"{effect.what} loads a model inside a request handler ({handler.shown}): every request "
                "pays the full load time and memory; load once at start-up (module level or a lifespan handler)"
            ),
            node=site.node,
            statement=site.statement,
            fix=hoisted_load(ctx, site, handler),
        )
    yield from _through_project(
        ctx, "VLL104", MODEL_LOAD,
        lambda handler, reached, chain: f"{reached.effect.what} loads a model inside a request handler "
        f"({handler.shown}), {chain}: every request pays the full load time and memory; load once at start-up",
    )


def _loads_model_at_startup(ctx: PyContext) -> bool:
    for site in ctx.model.calls:
        if not (site.function is None or ctx.semantics.is_startup_hook(site.function)):
            continue
        if is_model_load(ctx.semantics.callee(site.node)) or loads_through_project(ctx, site):
            return True
    return False


@python_rule("VLL105")
def multi_worker_model_server(ctx: PyContext) -> Iterator[PyFinding]:
    candidates = []
    for site in ctx.model.calls:
        if ctx.semantics.callee(site.node) not in ("uvicorn.run", "hypercorn.run"):
            continue
        for arg in site.node.args:
            if arg.keyword is not None and arg.keyword.value == "workers":
                value = ctx.semantics.fold(arg.value, site.function)
                if value is not None and isinstance(value.value, int) and value.value > 1:
                    candidates.append((site, arg, value.value))
    if not candidates or not _loads_model_at_startup(ctx):
        return
    for site, arg, workers in candidates:
        yield PyFinding(
            code="VLL105",
            message=(
                f"{workers} workers for an app that loads a model at start-up: {workers} copies of the model "
                "compete for one GPU's memory; run one worker and let the engine batch requests"
            ),
            node=arg,
            statement=site.statement,
        )


# What builds an async engine whose generate()/encode() take a request id (canonical names, semantics.VLLM_CANONICAL).
_ASYNC_ENGINES = frozenset({"vllm.AsyncLLMEngine", "vllm.AsyncLLMEngine.from_engine_args", "vllm.AsyncLLMEngine.from_vllm_config"})
_REQUEST_ID_POSITION = {"generate": 2, "encode": 2}  # (prompt, sampling/pooling params, request_id): vllm/v1/engine/async_llm.py:698 and :994


def _request_id_arg(call: cst.Call, method: str, positional_ok: bool) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "request_id":
            return arg
    positional = [arg for arg in call.args if arg.keyword is None]
    if not positional_ok or any(arg.star for arg in positional) or len(positional) <= _REQUEST_ID_POSITION[method]:
        return None
    return positional[_REQUEST_ID_POSITION[method]]


def _same_for_every_request(ctx: PyContext, value: cst.BaseExpression, function: FunctionInfo | None) -> str | None:
    """How ``value`` is the same id on every call, or None when it may differ (or the reader cannot tell)."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.Integer)):
        return "a literal"
    if isinstance(value, cst.FormattedString) and not any(isinstance(p, cst.FormattedStringExpression) for p in value.parts):
        return "a literal"
    if not isinstance(value, cst.Name):
        return None
    name = value.value
    scope = function
    while scope is not None:
        if name in scope.params or name in scope.bound_names or name in scope.global_names:
            return None
        scope = scope.parent
    if ctx.model.constants.get(name) is None or any(name in f.global_names for f in ctx.model.functions):
        return None  # not a module-level value, assigned more than once, or rebound by a function
    return f"the module-level {name}, set once at import"


# vLLM keeps the id it is given as the request's external id (vllm/v1/engine/input_processor.py:354, 0.32.0) and
# abort(id) cancels every request under it (vllm/v1/engine/output_processor.py:552-582).
@python_rule("VLL106")
def constant_request_id(ctx: PyContext) -> Iterator[PyFinding]:
    imports_vllm = ctx.semantics.imports_any(("vllm",))
    for site in ctx.model.calls:
        func = site.node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _REQUEST_ID_POSITION:
            continue
        handler = _in_handler(ctx, site)
        if handler is None:
            continue
        producers = ctx.semantics.produced_by(func.value, site.function)
        engine = bool(producers & _ASYNC_ENGINES)
        # An engine this module does not build (``request.app.state.engine``) counts when the module uses vLLM.
        if not engine and (producers or not imports_vllm):
            continue
        arg = _request_id_arg(site.node, func.attr.value, positional_ok=engine)
        what = _same_for_every_request(ctx, arg.value, site.function) if arg is not None else None
        if arg is None or what is None:
            continue
        yield PyFinding(
            code="VLL106",
            message=(
                f"request_id is {what} in request handler {handler.function.name}: every request shares it, so "
                "abort() for one disconnected client cancels all of them, and outputs, logs and metrics of "
                "concurrent requests carry the same id; make a fresh id per request (uuid.uuid4().hex)"
            ),
            node=arg.value,
            statement=site.statement,
            fix=_fresh_id_fix(ctx.module, arg.value),
        )


def _fresh_id_fix(module: cst.Module, value: cst.BaseExpression) -> PyFix | None:
    from vllm_lint.python.rewrite.imports import NameTaken, ensure_imported

    try:
        with_import, uuid4 = ensure_imported(module, "uuid", "uuid4")
    except NameTaken:
        return None
    replacement = cst.parse_expression(f"{uuid4}().hex")
    return PyFix(
        title=f"Use {uuid4}().hex, a fresh id per request",
        applicability=Applicability.UNSAFE,
        build=lambda: [NodeEdit(value, replacement), NodeEdit(module, with_import)],
    )
