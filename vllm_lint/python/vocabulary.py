"""What Python code means for serving, shared by the checkers, the module summaries and the server rewrite:
which calls load a model, which build a transformers pipeline, which block on model inference, whether a
SamplingParams call serves requests.

Rule modules import this module; nothing imports a rule module.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from vllm_lint.python.handlers import caches_load
from vllm_lint.python.model import CallSite, dotted_name
from vllm_lint.lazy_re import lazy_compile
from vllm_lint.python.walk import walk

if TYPE_CHECKING:
    from vllm_lint.python.context import PyContext
    from vllm_lint.python.handlers import Handler
    from vllm_lint.python.project import Reached
    from vllm_lint.python.semantics import Semantics

HF_GENERATIVE_MODEL = lazy_compile(r"^transformers\.(AutoModelFor\w+|\w+ForCausalLM|\w+ForConditionalGeneration|\w+LMHeadModel|\w+ForSeq2SeqLM)\.from_pretrained$")
# transformers' encoder-decoder text models (AutoModelForSeq2SeqLM and the families it loads): vLLM 0.32 serves
# none of them in its own tree (its model registry has Whisper, for speech, and points BART to a plug-in).
ENCODER_DECODER_MODEL = lazy_compile(
    r"^transformers\.(AutoModelForSeq2SeqLM|\w+ForSeq2SeqLM|(T5|MT5|UMT5|LongT5|Bart|MBart|Blenderbot|BlenderbotSmall|Pegasus"
    r"|PegasusX|LED|M2M100|NllbMoe|ProphetNet|XLMProphetNet|FSMT|BigBirdPegasus|Plbart|SwitchTransformers)ForConditionalGeneration"
    r"|MarianMTModel)\.from_pretrained$"
)
_MODEL_LOADS = ("vllm.LLM", "vllm.AsyncLLMEngine.from_engine_args", "vllm.LLMEngine.from_engine_args")
# What a fix asks for when the request carries no length of its own.
DEFAULT_MAX_TOKENS = 512


def is_pipeline_factory(qualified: str | None) -> bool:
    return qualified is not None and qualified.startswith("transformers.") and qualified.endswith(".pipeline")


def is_tokenizer_load(qualified: str | None) -> bool:
    """A transformers tokenizer's load (``AutoTokenizer.from_pretrained``, ``GPT2Tokenizer...``, and
    ``PreTrainedTokenizerFast.from_pretrained``)."""
    if qualified is None:
        return False
    return (qualified.startswith("transformers.") and qualified.endswith("Tokenizer.from_pretrained")) \
        or qualified == "transformers.PreTrainedTokenizerFast.from_pretrained"


def is_processor_load(qualified: str | None) -> bool:
    """A multimodal processor (``AutoProcessor.from_pretrained``): the engine loads the model's own, and its tokenizer."""
    return qualified is not None and qualified.startswith("transformers.") and qualified.endswith("Processor.from_pretrained")


def is_model_load(qualified: str | None) -> bool:
    if qualified is None:
        return False
    if is_pipeline_factory(qualified) or qualified in _MODEL_LOADS:
        return True
    return qualified.startswith("transformers.") and qualified.endswith(".from_pretrained")


def serves_requests(ctx: PyContext, site: CallSite) -> bool:
    semantics = ctx.semantics
    if semantics.enclosing_handler(site.function) is not None or semantics.defines_web_app:
        return True
    return any(
        semantics.callee(other.node) == "vllm.AsyncLLMEngine.from_engine_args" for other in ctx.model.calls
    )


# What a call does that matters in a request handler, and the rule that reports it there.
PIPELINE_CALL = "pipeline-call"  # VLL101
HF_GENERATE = "hf-generate"  # VLL102
LLM_GENERATE = "llm-generate"  # VLL103
MODEL_LOAD = "model-load"  # VLL104


@dataclass(frozen=True, slots=True)
class CallEffect:
    """What a call does that a request handler should not do on every request."""
    kind: str  # one of the four above
    what: str  # for messages: "a transformers pipeline", "LLM.generate()", "AutoTokenizer.from_pretrained(...)"


def thread_target(semantics: Semantics, call: cst.Call) -> cst.BaseExpression | None:
    """``f`` in ``threading.Thread(target=f, ...)``: the function the new thread runs."""
    if semantics.callee(call) != "threading.Thread":
        return None
    return next((arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value == "target"), None)


# The locks of the fix where the engine rewrite is refused in a `def` handler (python/rewrite/offload.py).
THREAD_LOCKS = frozenset({"threading.Lock", "threading.RLock"})


def held_thread_lock(semantics: Semantics, site: CallSite) -> str | None:
    """The name of the module-level lock (``name = threading.Lock()``, bound once) that a ``with name:`` of the
    call's own function holds around the call's statement, if any: the calls made under it run one at a time,
    whichever thread makes them. Not for a call in a lambda (it runs later, wherever the callable is called)."""
    function = site.function
    if function is None or site.in_lambda:
        return None
    held: list[str] = []
    around: list[list[str]] = []
    statement = site.statement
    own = function.node

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if node is statement:
                held.extend(name for names in around for name in names)
                return False
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not own:
                return False
            if isinstance(node, cst.With):
                around.append([item.item.value for item in node.items if isinstance(item.item, cst.Name) and node.asynchronous is None])
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if isinstance(original_node, cst.With):
                around.pop()

    walk(function.node, _Find())
    for name in held:
        stores = semantics.model.values.get((None, name), [])
        if name in function.params or (function, name) in semantics.model.values or len(stores) != 1:
            continue
        value, where = stores[0]
        if where is None and isinstance(value, cst.Call) and semantics.callee(value) in THREAD_LOCKS:
            return name
    return None


def call_effect(semantics: Semantics, site: CallSite) -> CallEffect | None:
    """Whether a call blocks on model inference or loads a model, and how to say which. A thread started
    on the model (``Thread(target=pipe)``, ``Thread(target=model.generate)``, the way a TextIteratorStreamer
    is fed) runs that inference per request, unbatched, as a call would."""
    call = site.node
    callee = semantics.callee(call)
    if is_model_load(callee):
        return CallEffect(MODEL_LOAD, f"{dotted_name(call.func) or callee}(...)")
    func = thread_target(semantics, call) or call.func
    producers = semantics.produced_by(func, site.function)
    if any(is_pipeline_factory(p) for p in producers):
        return CallEffect(PIPELINE_CALL, "a transformers pipeline")
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    producers = semantics.produced_by(func.value, site.function)
    if method == "generate" and not producers:
        producers = _placed_model_producers(semantics, func.value, site.function)
    if method == "generate" and any(HF_GENERATIVE_MODEL.match(p) for p in producers):
        return CallEffect(HF_GENERATE, "model.generate() of a transformers model")
    if method in ("generate", "chat", "encode") and "vllm.LLM" in producers:
        return CallEffect(LLM_GENERATE, f"LLM.{method}() runs offline batch inference")
    if method == "step" and producers & {"vllm.LLMEngine", "vllm.LLMEngine.from_engine_args"}:
        return CallEffect(LLM_GENERATE, "a synchronous LLMEngine.step() loop")
    return None


# A model placed as it is loaded (``from_pretrained(...).to("cuda").eval()``) is the model itself.
_PLACEMENT_METHODS = frozenset({"to", "cuda", "eval", "half", "float", "bfloat16"})


def _placed_model_producers(semantics: Semantics, expr: cst.BaseExpression, function) -> set[str]:
    """What loaded the model ``expr`` names when its binding places it in the same expression."""
    found = set()
    for call in semantics.bindings_of(expr, function):
        while isinstance(call.func, cst.Attribute) and call.func.attr.value in _PLACEMENT_METHODS and isinstance(call.func.value, cst.Call):
            call = call.func.value
        callee = semantics.callee(call)
        if callee:
            found.add(callee)
    return found


def handler_calls_into_project(ctx: PyContext, kind: str) -> Iterator[tuple[CallSite, Handler, Reached]]:
    """Calls in request handlers into another module of the project that lead there to an effect of ``kind``
    (the module's summary says so), one per call and effect site."""
    semantics = ctx.semantics
    if semantics.project is None:
        return
    for site in ctx.model.calls:
        if site.in_main_guard:
            continue
        handler = semantics.enclosing_handler(site.function)
        if handler is None:
            continue
        if kind == MODEL_LOAD and (semantics.is_startup_hook(site.function) or caches_load(site) or semantics.caches_result(handler)):
            continue
        seen = set()
        for reached in semantics.project_effects(site):
            where = (str(reached.path), reached.effect.line)
            if reached.effect.kind == kind and where not in seen:
                seen.add(where)
                yield site, handler, reached


def loads_through_project(ctx: PyContext, site: CallSite) -> bool:
    """Whether a call into another module of the project loads a model there."""
    return any(reached.effect.kind == MODEL_LOAD for reached in ctx.semantics.project_effects(site))


def through(ctx: PyContext, reached: Reached) -> str:
    """``through model.generate_text -> model._run (model.py:8)``, for a message."""
    import os

    project = ctx.semantics.project
    shown = os.path.relpath(reached.path, project.importer.parent) if project is not None else reached.path.name
    return f"through {' -> '.join(reached.chain)} ({shown}:{reached.effect.line})"
