"""The data a server rewrite is made of: what the analysis decided, for the transformer to apply."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import libcst as cst

from vllm_lint.python.rewrite.generation import SamplingKeywords


class Refusal(Exception):
    """The module cannot be rewritten safely; the message says why (it ends up in the finding)."""


class ModelKind(str, Enum):
    PIPELINE = "transformers pipeline"
    LLM = "vLLM LLM"


class ResultShape(Enum):
    """What the original call returned, rebuilt from the engine's final RequestOutput."""

    PIPELINE_FULL_TEXT = "[{'generated_text': prompt + completion}, ...]"
    PIPELINE_NEW_TEXT = "[{'generated_text': completion}, ...]"
    REQUEST_OUTPUT_LIST = "[RequestOutput]"  # LLM.generate(...)
    REQUEST_OUTPUT = "RequestOutput"  # LLM.generate(...)[0]


@dataclass(frozen=True, slots=True)
class HandlerCall:
    """One ``pipe(...)`` / ``llm.generate(...)`` in a handler, to become an ``async for`` over the engine."""

    call: cst.Call
    statement: cst.SimpleStatementLine  # the engine stream is inserted just before it
    handler: cst.FunctionDef
    prompt: cst.BaseExpression
    sampling: SamplingKeywords | cst.BaseExpression | None  # keywords to build, the caller's object, or the default
    replaced: cst.BaseExpression  # the expression whose value the final output stands in for
    shape: ResultShape
    extra_arguments: tuple[tuple[str, cst.BaseExpression], ...] = ()  # carried to engine.generate


@dataclass(frozen=True, slots=True)
class EngineInLifespan:
    """A module-level model load: the engine is built in a FastAPI lifespan handler instead."""

    model_statement: cst.SimpleStatementLine  # removed; its comments move with the engine
    anchor: cst.BaseStatement  # the lifespan block goes right before this top-level statement
    app_name: str
    app_call: cst.Call | None  # ``FastAPI(...)`` that gets ``lifespan=``; None: the module gets one


@dataclass(frozen=True, slots=True)
class EngineInStartupHook:
    """``global llm; llm = LLM(...)`` in a startup hook: the call is replaced where it is."""


@dataclass(frozen=True, slots=True)
class ServerPlan:
    kind: ModelKind
    model_name: str  # the variable that held the pipeline / LLM
    model_call: cst.Call  # pipeline(...) / LLM(...)
    engine_arguments: tuple[tuple[str, str], ...]  # pipeline: AsyncEngineArgs keywords as code
    placement: EngineInLifespan | EngineInStartupHook
    calls: tuple[HandlerCall, ...]
    handlers_made_async: tuple[cst.FunctionDef, ...]
