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
    HF_MODEL = "transformers model"  # AutoModelForCausalLM.from_pretrained(...), called by model.generate(...)

    @property
    def what(self) -> str:
        """How messages name the object."""
        return {ModelKind.PIPELINE: "pipeline", ModelKind.LLM: "LLM", ModelKind.HF_MODEL: "model"}[self]

    @property
    def loaded_by_name(self) -> bool:
        """Built from a model name the engine loads too (the engine's arguments are written from it)."""
        return self is not ModelKind.LLM


class ResultShape(Enum):
    """What the original call returned, rebuilt from the engine's final RequestOutput."""

    PIPELINE_FULL_TEXT = "[{'generated_text': prompt + completion}, ...]"
    PIPELINE_NEW_TEXT = "[{'generated_text': completion}, ...]"
    REQUEST_OUTPUT_LIST = "[RequestOutput]"  # LLM.generate(...)
    REQUEST_OUTPUT = "RequestOutput"  # LLM.generate(...)[0]
    TOKEN_SEQUENCES = "[prompt ids + new ids, ...]"  # what model.generate returns, one row per sequence
    NEW_TEXT_PIECES = "the text each output adds"  # what a TextIteratorStreamer(skip_prompt=True) yields


class CallMode(Enum):
    """How one call of the model becomes a request to the engine."""

    AWAITED = "an async for over the engine's stream just before the statement; the call's value rebuilt from the final output"
    STREAMED = "the call is the iterable of an async for: the engine's stream takes its place"
    BRIDGED = "a plain def handler of a sync framework: the final output fetched through the engine's thread before the statement"
    THREAD_STREAMED = "a thread feeding a TextIteratorStreamer that a StreamingResponse sends: the response sends the engine's new text instead"
    LIT_STREAMED = "a thread feeding a TextIteratorStreamer that a LitServe predict() iterates: it iterates the engine's new text instead"


@dataclass(frozen=True, slots=True)
class PromptCheck:
    """A prompt whose type the code does not state, checked at run time before the engine gets it: a value
    that is not one string gets the framework's own answer to a bad request."""

    # "fastapi" (HTTPException 422), "flask" (abort(400)), "aiohttp" (HTTPBadRequest), "quart" (abort(400)), "starlette"
    # (HTTPException 400), "falcon" (HTTPBadRequest), "grpc" (context.abort(INVALID_ARGUMENT)), "raise" (TypeError)
    answer: str
    context: str | None = None  # gRPC: the servicer method's context parameter
    bind: bool = False  # the prompt is computed (a call): evaluated once, into a local, before the check


@dataclass(frozen=True, slots=True)
class MultiModalData:
    """What a vision-language processor was given beside its text (its images), which the engine takes with the
    prompt as ``{"prompt": text, "multi_modal_data": {"image": images}}``."""

    items: tuple[tuple[str, str], ...]  # (vLLM's modality key, the code of what the processor was given)
    condition: str | None = None  # the code of the test under which the processor was given them; None: always

    def engine_input(self, prompt: str) -> str:
        """The engine's prompt: the text with its data, or (where the test fails) the text alone, as the
        processor then got the text alone."""
        data = ", ".join(f'"{key}": {code}' for key, code in self.items)
        given = f'{{"prompt": {prompt}, "multi_modal_data": {{{data}}}}}'
        return given if self.condition is None else f"{given} if {self.condition} else {prompt}"


@dataclass(frozen=True, slots=True)
class LitStream:
    """What a LitServe predict() streaming through a thread needs besides the engine request (see ``lit_stream``)."""

    stream_arguments: tuple[str, ...]  # the new-text helper's prompt_text= and clean_up=, as the streamer decoded
    before: tuple[str, ...]  # statements (source) that go before the loop: the prompt's token ids
    anchor: cst.BaseStatement  # the top-level statement holding the API class: the helper goes before it
    loop: cst.For | cst.SimpleStatementLine  # ``for text in self.streamer:``, or the ``yield from self.streamer`` line
    before_loop: frozenset[int] = frozenset()  # ids of the removed lines in predict() before its loop
    # A sync generator encode_response(), ``for out in output: yield ...``: made async, its loop ``async for``
    # (LitServe hands it predict()'s async generator)
    encode_function: cst.FunctionDef | None = None
    encode_loop: cst.For | None = None
    # decode_request()'s ``inputs.to(self.model.device)``: replaced by ``inputs`` (the engine has no device; the
    # token ids reach it as a list)
    unplaced: tuple[cst.Call, ...] = ()


@dataclass(frozen=True, slots=True)
class HandlerCall:
    """One ``pipe(...)`` / ``llm.generate(...)`` in a handler, to become a request to the engine."""

    call: cst.Call
    mode: CallMode
    function: cst.FunctionDef  # the handler, or for a stream the async function nested in it that iterates it
    prompt: str  # the code of the one prompt string
    sampling: SamplingKeywords | cst.BaseExpression | None  # keywords to build, the caller's object, or the default
    replaced: cst.BaseExpression  # the expression whose value the final output (or the stream) stands in for
    shape: ResultShape
    # AWAITED/BRIDGED: the final output is fetched just before it; THREAD_STREAMED: the response's return line,
    # which the removed statements' comments move above
    statement: cst.SimpleStatementLine | None = None
    batch_of_one: bool = False  # a pipeline given ``[prompt]`` returns one list per prompt
    extra_arguments: tuple[tuple[str, cst.BaseExpression], ...] = ()  # carried to engine.generate
    # THREAD_STREAMED: the streamer, the thread and its start; a model.generate chain: the tokenizer call
    removed: tuple[cst.BaseStatement, ...] = ()
    prompt_lengths: tuple[cst.BaseExpression, ...] = ()  # reads of the prompt's token count, from the final output
    # reads of the tokenizer's ids as a batch of rows (``zip(inputs.input_ids, out)``): the prompt's ids, one row
    prompt_ids: tuple[cst.BaseExpression, ...] = ()
    media: MultiModalData | None = None  # a processor's images, given to the engine with the prompt
    tokenizer: cst.BaseExpression | None = None  # a model.generate chain: the tokenizer object its prompt went through
    # a model.generate chain: the code of the tokenizer call's keywords that change the ids (", truncation=True"),
    # kept on the call whose ids the engine is given as {"prompt_token_ids": ...}
    token_options: str = ""
    # a model.generate chain: ``out[0].tolist()`` calls on a row of its output, which is a list already
    listed_rows: tuple[cst.Call, ...] = ()
    # a model.generate chain: ``out[:, n:][0]`` reads of its output, which read the row first (``out[0][n:]``)
    rows_first: tuple[cst.Subscript, ...] = ()
    check: PromptCheck | None = None  # the prompt is checked to be one string at run time
    # the prompt is computed and read twice (max_length= counts its tokens): evaluated once, into a local
    bind_prompt: bool = False
    # ``prompt`` is a list of strings (``LLM.generate(prompts)``): one engine request per item, gathered, their
    # final outputs in the list's order as LLM.generate returns them
    gathered: bool = False
    # gathered requests get request ids numbered in the list's order, as LLM.generate numbers its requests
    # (the handler reads ``output.request_id``)
    numbered: bool = False
    lit: LitStream | None = None  # LIT_STREAMED: the rest of what the loop needs
    # ``LLM.chat(messages, ...)``: ``prompt`` is the messages' code and ``extra_arguments`` LLM.chat()'s own keywords;
    # the chat helper renders and requests them, its list of final outputs standing in for the call's
    chat: bool = False


@dataclass(frozen=True, slots=True)
class AwaitedCall:
    """A call of a helper made ``async def``: it gets ``await`` (in parentheses where its value is indexed,
    called or an attribute read, which ``await`` would otherwise take in)."""

    call: cst.Call
    parenthesized: bool
    # ``await loop.run_in_executor(None, lambda: helper(...))``: the executor call, which the helper's call
    # replaces (the ``await`` is there already, and now awaits the helper's coroutine for the same value)
    executor: cst.Call | None = None


@dataclass(frozen=True, slots=True)
class EventHook:
    """``@app.on_event("startup")`` on a module-level function: the lifespan handler calls it instead."""

    function: cst.FunctionDef
    decorator: int  # the index of the on_event decorator, removed
    event: str  # "startup" or "shutdown"


@dataclass(frozen=True, slots=True)
class Lifespan:
    """The engine is built in a FastAPI lifespan handler that also runs the app's event hooks (or an aiohttp
    app's cleanup context, the same async generator)."""

    app_name: str
    app_call: cst.Call | None  # ``FastAPI(...)`` that gets ``lifespan=``; None: the module gets an app
    anchor: cst.BaseStatement  # the lifespan block goes right before this top-level statement
    moved_model: cst.SimpleStatementLine | None  # a load moved into the lifespan (its comments move with it); None: a hook builds it
    hooks: tuple[EventHook, ...] = ()
    # "aiohttp", "quart": the handler is a plain async generator (no decorator), which the statement
    # ``app_statement`` (``app = web.Application()``, ``app = Quart(...)``) is followed by registering
    # (``app.cleanup_ctx.append(...)``, ``app.while_serving(...)``): the app runs it up to its ``yield`` at
    # start-up and the rest as it stops, as FastAPI runs a lifespan handler; "starlette": ``lifespan=`` as FastAPI's;
    # "falcon": its two halves are a middleware's process_startup and process_shutdown, which ``app_statement`` is
    # followed by adding; "chainlit": they are @cl.on_app_startup and @cl.on_app_shutdown functions (no app)
    framework: str = "fastapi"
    app_statement: cst.SimpleStatementLine | None = None


@dataclass(frozen=True, slots=True)
class BuiltInPlace:
    """The engine is built where the model was: in the app's own lifespan handler, or in the ``__init__``
    of the class that holds it (a Ray Serve deployment: one engine per replica, shut down with it, as
    vLLM's engine shuts down when it is garbage-collected)."""

    # A LitServe API's instantiations, which get ``enable_async=True``: LitServe awaits an async predict,
    # running requests concurrently on the worker's event loop, only when the LitAPI was built with it.
    enable_async_calls: tuple[cst.Call, ...] = ()
    # The LitServer(...) calls that name no devices=, which get devices=1: LitServe would start a worker per
    # GPU, and each one's engine would take GPU 0 (vLLM spreads one engine over GPUs with tensor_parallel_size).
    one_device_servers: tuple[cst.Call, ...] = ()
    # The statements building a LitServer whose workers_per_device= is a setting read at run time (a command-line
    # option), with that setting's code: each gets a check before it that stops the server at start-up unless it
    # is 1 (a second worker would build a second engine on GPU 0)
    worker_checks: tuple[tuple[cst.CSTNode, str], ...] = ()
    # A Modal class: Modal gives a container one input at a time unless the class is @modal.concurrent; the
    # class gets it (None: it has it, or the older allow_concurrent_inputs=), and a @modal.exit() method that
    # shuts the engine down.
    modal_class: cst.ClassDef | None = None
    modal_concurrent: bool = False


@dataclass(frozen=True, slots=True)
class Bridge:
    """A sync framework's server: the engine runs on the event-loop thread of a helper class (see
    ``bridge``), built where the model was built."""

    anchor: cst.BaseStatement  # the helper class goes right before this top-level statement
    framework: str  # as the helper's docstring names it: "Flask", "Django", "gRPC"
    # Gradio's registrations of the callbacks that call the engine, which get a concurrency_limit: Gradio runs
    # one call of an event at a time by default, and requests batch only when they overlap.
    raised_limits: tuple[cst.Call, ...] = ()


@dataclass(frozen=True, slots=True)
class Construction:
    """Another ``llm = LLM(...)`` that builds the model on a path exclusive of the first's (an ``except``'s
    fallback, an ``else``): it becomes the engine's construction too."""

    call: cst.Call
    statement: cst.SimpleStatementLine
    spread_engine_keywords: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ServerPlan:
    """What the server rewrite changes in a module, worked out before any edit."""
    kind: ModelKind
    model_name: str  # the variable that held the pipeline / LLM (``self.x``; a module dict's entry: ``MODELS["llm"]``)
    model_call: cst.Call  # pipeline(...) / LLM(...)
    model_statement: cst.SimpleStatementLine  # ``name = pipeline(...)``
    engine_arguments: tuple[tuple[str, str], ...]  # pipeline: AsyncEngineArgs keywords as code
    placement: Lifespan | BuiltInPlace | Bridge
    calls: tuple[HandlerCall, ...]
    handlers_made_async: tuple[cst.FunctionDef, ...]
    helpers_made_async: tuple[cst.FunctionDef, ...] = ()  # helpers the handlers call, each call of them awaited
    awaited_calls: tuple[AwaitedCall, ...] = ()
    # A plain class's __init__ builds the model on ``self``: the variable of its one object, whose statement
    # (``generator = Generator()``) is what the lifespan handler runs; None when the model is not on an object
    # the module builds.
    instance: str | None = None
    # A pipeline loaded at module scope leaves its variable behind and the engine gets a name of its own;
    # an engine built in a function (a start-up hook) keeps the variable its ``global`` statement names.
    renames_model: bool = False
    # The model's statement binds the dict that holds it (``MODELS = {"llm": LLM(...)}``): it becomes ``MODELS = {}``
    # and the entry's own assignment (``MODELS["llm"] = <engine>``), which is what moves or changes.
    model_dict: str | None = None
    # ``model.eval()``, ``model.to(device)``: lines on the model that mean nothing to the engine, removed
    removed_lines: tuple[cst.SimpleStatementLine, ...] = ()
    # A pipeline that names no model: (its task, the longest max_model_len to allow). The engine loads what
    # pipeline() would: the installed transformers' default model for the task at its revision, read at start-up
    # by a helper written into the module (generation.py's PIPELINE_DEFAULT_HELPER)
    default_model: tuple[str, int] | None = None
    # ``llm.get_default_sampling_params()`` in a function: the engine's model config gives the same defaults
    default_params_calls: tuple[cst.Call, ...] = ()
    # The keys of the ``**dict`` arguments of ``LLM(**params)``, which AsyncEngineArgs gets as they are: the
    # engine's defaults the rewrite adds leave these out
    spread_engine_keywords: frozenset[str] = frozenset()
    alternatives: tuple[Construction, ...] = ()
    # ``llm = None`` after the yield of the app's own lifespan handler: the engine is shut down first
    releases: tuple[cst.SimpleStatementLine, ...] = ()
    # LLM.llm_engine's config reads (``llm.llm_engine.lora_config``: the ``llm.llm_engine`` node) and
    # ``hasattr(llm, "llm_engine")``: the engine holds the same configs in ``vllm_config``
    config_probes: tuple[cst.Attribute | cst.Call, ...] = ()
    # ``if __name__ == "__main__":`` demos that await a helper: run in the lifespan handler (script.py)
    scripts: tuple[cst.If, ...] = ()
    # calls of the module's blocking functions in the functions made async: awaited in a worker thread
    offloaded_calls: tuple[AwaitedCall, ...] = ()
