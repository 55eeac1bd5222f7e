"""VLL101-VLL105: serving architecture."""

from __future__ import annotations

from collections.abc import Iterator

from vllm_lint.python.context import PyContext, PyFinding
from vllm_lint.python.model import CallSite
from vllm_lint.python.rewrite import server_rewrite
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
    is_model_load,
    loads_through_project,
    through,
)
from vllm_lint.registry import python_rule


def _blocking_consequence(handler: Handler) -> str:
    if handler.runs_on_event_loop:
        return "blocks the event loop: every other request waits until it finishes"
    return "serialises requests, one GPU pass each: no batching across concurrent requests"


def _in_handler(ctx: PyContext, site: CallSite) -> Handler | None:
    if site.in_main_guard:
        return None
    return ctx.semantics.enclosing_handler(site.function)


class _LazyRewrite:
    """The AsyncLLMEngine rewrite of the module, analysed once and only when a finding needs it."""

    def __init__(self, ctx: PyContext) -> None:
        self._ctx = ctx
        self._outcome = None

    def get(self):
        if self._outcome is None:
            self._outcome = server_rewrite(self._ctx)
        return self._outcome


@python_rule("VLL101")
def sync_pipeline_in_handler(ctx: PyContext) -> Iterator[PyFinding]:
    rewrite = _LazyRewrite(ctx)
    for site, handler, _ in _effects_in_handlers(ctx, PIPELINE_CALL):
        outcome = rewrite.get()
        yield PyFinding(
            code="VLL101",
            message=(
                f"transformers pipeline called inside a request handler ({handler.shown}): it "
                f"{_blocking_consequence(handler)}; serve with vLLM's AsyncLLMEngine instead"
                + outcome.message_suffix()
            ),
            node=site.node,
            statement=site.statement,
            fix=outcome.fix,
        )
    for site, handler, reached in handler_calls_into_project(ctx, PIPELINE_CALL):
        yield PyFinding(
            code="VLL101",
            message=(
                f"transformers pipeline called inside a request handler ({handler.shown}), {through(ctx, reached)}: "
                f"it {_blocking_consequence(handler)}; serve with vLLM's AsyncLLMEngine instead"
            ),
            node=site.node,
            statement=site.statement,
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


@python_rule("VLL102")
def hf_generate_in_handler(ctx: PyContext) -> Iterator[PyFinding]:
    for site, handler, _ in _effects_in_handlers(ctx, HF_GENERATE):
        yield PyFinding(
            code="VLL102",
            message=(
                f"transformers model.generate() called inside a request handler ({handler.shown}): it "
                f"{_blocking_consequence(handler)}; serve with vLLM's AsyncLLMEngine (see VLL101's fix)"
            ),
            node=site.node,
            statement=site.statement,
        )
    for site, handler, reached in handler_calls_into_project(ctx, HF_GENERATE):
        yield PyFinding(
            code="VLL102",
            message=(
                f"transformers model.generate() called inside a request handler ({handler.shown}), "
                f"{through(ctx, reached)}: it {_blocking_consequence(handler)}; serve with vLLM's AsyncLLMEngine"
            ),
            node=site.node,
            statement=site.statement,
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
    for site, handler, reached in handler_calls_into_project(ctx, LLM_GENERATE):
        yield PyFinding(
            code="VLL103",
            message=(
                f"{reached.effect.what} inside a request handler ({handler.shown}), {through(ctx, reached)}: "
                f"it {_blocking_consequence(handler)}; use AsyncLLMEngine"
            ),
            node=site.node,
            statement=site.statement,
        )


@python_rule("VLL104")
def model_load_in_handler(ctx: PyContext) -> Iterator[PyFinding]:
    for site, handler, effect in _effects_in_handlers(ctx, MODEL_LOAD):
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
        )
    for site, handler, reached in handler_calls_into_project(ctx, MODEL_LOAD):
        yield PyFinding(
            code="VLL104",
            message=(
                f"{reached.effect.what} loads a model inside a request handler ({handler.shown}), "
                f"{through(ctx, reached)}: every request pays the full load time and memory; load once at start-up"
            ),
            node=site.node,
            statement=site.statement,
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
