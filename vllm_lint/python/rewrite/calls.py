"""Each use of the model in a handler, and the engine request it becomes (a HandlerCall): where the call is,
whether its statement lets it move, what its one prompt is, and what its result stands for.

A call in a FastAPI handler (or a Ray Serve deployment's, BentoML service's or grpc.aio servicer's method), or in
a helper one calls, is awaited; one in a plain ``def`` view of a sync framework, or in its helper, goes through the
bridge's thread; ``llm.generate_async(..., stream=True)`` iterated by an
``async for`` becomes the engine's stream in its place.
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.model import FunctionInfo, decorator_parts
from vllm_lint.python.rewrite.callers import Callers, argument_for
from vllm_lint.python.rewrite.facts import ModuleFacts, method_and_class
from vllm_lint.python.rewrite.gradio_inputs import GradioInputs
from vllm_lint.python.rewrite.grpc_inputs import GrpcInputs
from vllm_lint.python.rewrite.hf_generate import GenerateChains, OutputReads, output_reads
from vllm_lint.python.rewrite.generation import GENERATION_KEYWORDS, NotCarried, sampling_keywords
from vllm_lint.python.rewrite.lifespan import HOOKED_FRAMEWORKS
from vllm_lint.python.rewrite.names import Occurrence
from vllm_lint.python.rewrite.imports import imported_as
from vllm_lint.python.rewrite.plan import CallMode, HandlerCall, PromptCheck, Refusal, ResultShape
from vllm_lint.python.rewrite.prompts import StringTyping, local_bindings
from vllm_lint.python.rewrite.served import in_served_class
from vllm_lint.python.walk import walk
from vllm_lint.python.rewrite.shapes import (
    compares_with_none,
    evaluations,
    is_index_zero,
    is_none,
    is_plain_read,
    keyword_args,
    literal_flag,
    named_params,
    positional_args,
    returned_values,
    snippet,
)

# Frameworks that serve each request in a thread of their own: their plain ``def`` handlers stay as they are
# and submit to the engine through the bridge's event-loop thread.
SYNC_FRAMEWORKS = {
    "flask": "Flask", "django": "Django", "rest_framework": "Django REST framework", "grpc": "gRPC",
    "bottle": "Bottle", "gradio": "Gradio", "falcon": "Falcon",
}
_ASYNC_VIEW_REASON = (
    "{framework} runs each async view in an event loop of its own, which one AsyncLLMEngine cannot serve; "
    "make it a plain def view (the rewrite then bridges it to the engine), or port the app to FastAPI"
)
# Sanic 22.9 and later serve from worker processes it starts daemonic (sanic/worker/process.py, 25.12.0:
# ``daemon=True``), and vLLM's AsyncLLMEngine starts its engine core in a process of its own (vllm 0.32
# v1/engine/utils.py), which Python's multiprocessing refuses to a daemonic process. ``single_process=True``
# avoids the workers, but Sanic before 22.9 takes no such argument, so the version decides what runs.
_SANIC_REASON = (
    "Sanic (22.9 and later) serves from daemonic worker processes, in which vLLM's AsyncLLMEngine cannot start "
    "its engine-core process (Python's multiprocessing gives a daemonic process no children), and the "
    "`app.run(..., single_process=True)` that avoids them is an argument Sanic before 22.9 rejects; build the engine "
    "by hand in an `@app.before_server_start` listener (shut it down in `@app.after_server_stop`) and run the app "
    "with single_process=True, or port the handlers to FastAPI"
)
_STRING_LITERALS = (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)
_HELPER_DEPTH = 4  # helpers between a handler and the model call whose parameters are followed
_LLM_GENERATE_DROPPED = frozenset({"use_tqdm"})  # a progress bar: nothing to carry
_LLM_GENERATE_CARRIED = frozenset({"lora_request"})  # AsyncLLMEngine.generate takes it too
# LLM.chat()'s keywords (vllm/entrypoints/llm.py, 0.32) that the chat helper takes as LLM.chat() does
_LLM_CHAT_CARRIED = frozenset({
    "lora_request", "chat_template", "chat_template_content_format", "add_generation_prompt", "continue_final_message",
    "tools", "chat_template_kwargs", "tokenization_kwargs", "mm_processor_kwargs",
})
_LLM_CHAT_REFUSED = {
    "priority": "it may be a list of one per conversation; remove it for the rewrite, then pass priority= to the "
    "engine.generate(...) call of the chat_outputs helper it writes (the engine built with scheduling_policy=\"priority\")",
}
# The configs vLLM's LLMEngine held as attributes, each also a field of VllmConfig (vllm/config/vllm.py, 0.32)
_ENGINE_CONFIGS = frozenset({
    "model_config", "cache_config", "parallel_config", "scheduler_config", "device_config", "load_config", "lora_config",
    "speculative_config", "observability_config",
})
_NO_SIDE_EFFECTS_BETWEEN = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation)


def chainlit_text_fields(function: FunctionInfo) -> dict[str, frozenset[str]]:
    """An ``@cl.on_message`` callback's message parameter: its ``content`` is the user's text, a str (chainlit
    message.py, ``content: str``)."""
    params = [*function.node.params.posonly_params, *function.node.params.params]
    return {params[0].name.value: frozenset({"content"})} if len(params) == 1 else {}


class ModelCalls(ModuleFacts):
    """Turns each use of the model into a HandlerCall, or refuses with the reason."""

    def handler_of(self, call: cst.Call, what: str) -> tuple[FunctionInfo, CallMode]:
        """The handler a call is written in, and how the call reaches the engine from there."""
        site = self.sites[id(call)]
        shown = snippet(self.module, call)
        if site.function is None or site.in_main_guard:
            raise Refusal(f"`{shown}` runs outside a request handler")
        handler = self.semantics.handlers.get(site.function)
        if handler is None:
            enclosing = self.semantics.enclosing_handler(site.function)
            if enclosing is not None:
                raise Refusal(f"`{shown}` is in a function nested in {enclosing.function.name}(); only calls written in the handler itself are rewritten")
            raise Refusal(f"`{shown}` runs in {site.function.name}(), which is not a request handler")
        function = site.function
        if function.parent is not None:
            raise Refusal(f"{function.name}() is a nested function; only handlers and helpers defined at module or class level are rewritten")
        if not handler.direct:
            # A helper the handlers call: the handler the request enters decides how it reaches the engine
            # (``helpers`` checks every other caller).
            mode = self.mode_of(handler.entry, what)
            if mode is CallMode.BRIDGED and function.is_async:
                self.check_framework(handler.framework)
            return function, mode
        return function, self.mode_of(function, what)

    def mode_of(self, function: FunctionInfo, what: str) -> CallMode:
        """How a call in (or under) the handler ``function`` reaches the engine; Refusal for handlers that are not rewritten."""
        handler = self.semantics.handlers[function]
        sync_framework = SYNC_FRAMEWORKS.get(handler.framework or "")
        if handler.framework == "falcon" and function.is_async:
            # Falcon's ASGI App awaits its responders (its WSGI App refuses coroutine ones) on the server's loop;
            # the engine starts in a middleware's process_startup (lifespan.py)
            return CallMode.AWAITED
        if handler.framework == "grpc" and function.is_async:
            self.check_grpc_aio(function)
            return CallMode.AWAITED
        if sync_framework is not None:
            if function.is_async:
                self.check_framework(handler.framework)  # says why, per framework
            return CallMode.BRIDGED
        self.check_framework(handler.framework)
        if handler.framework == "bentoml":
            if not self._is_bentoml_api(function):
                raise Refusal(f"{function.name}() is not a @bentoml.api method; only BentoML's API methods are rewritten")
            self.check_bentoml_workers(function)
        if handler.framework == "litserve" and function.name != "predict":
            raise Refusal(f"the {what} is called in {function.name}(); only a LitServe API's predict() is rewritten")
        if handler.framework == "modal" and not (function.is_method and in_served_class(self.semantics, function)):
            raise Refusal(
                f"{function.name}() is a Modal function that builds no model of its own; build the model in a class's "
                "@modal.enter() method and serve it from its @modal.method()s (the rewrite then builds the engine there)"
            )
        if function.is_method and not in_served_class(self.semantics, function):
            raise Refusal(f"{function.name}() is a method; only module-level handlers and the methods of Ray Serve deployments, BentoML services, LitServe APIs and Modal classes are rewritten")
        return CallMode.AWAITED

    def check_grpc_aio(self, function: FunctionInfo) -> None:
        """An ``async def`` method of a servicer class, in a module that serves it with ``grpc.aio.server()``
        only: grpc.aio awaits it on the server's event loop, where the engine's requests then batch."""
        servers = {self.semantics.callee(site.node) for site in self.model.calls} & {"grpc.server", "grpc.aio.server"}
        if servers != {"grpc.aio.server"}:
            raise Refusal(
                f"{function.name}() is an async servicer method, but the module does not serve it with grpc.aio.server() "
                "alone; grpc.aio awaits async methods, grpc.server() does not"
            )
        if not function.is_method or function.parent is not None or function.class_info is None:
            raise Refusal(f"{function.name}() is not a method of the servicer class; only its methods are rewritten")

    def _is_bentoml_api(self, function: FunctionInfo) -> bool:
        """Decorated ``@bentoml.api`` (BentoML documents async API methods; a ``@bentoml.task`` is queued instead)."""
        for decorator in function.node.decorators:
            if self.semantics.qualify(decorator_parts(decorator)[0]) == "bentoml.api":
                return True
        return False

    def check_bentoml_workers(self, function: FunctionInfo) -> None:
        """One worker per service: each worker builds its own engine, and vLLM's takes most of a GPU's memory."""
        for decorator in method_and_class(function)[1].node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and self.semantics.qualify(expr.func) == "bentoml.service":
                workers = keyword_args(expr).get("workers")
                if workers is not None and not (isinstance(workers.value, cst.Integer) and workers.value.evaluated_value == 1):
                    raise Refusal(
                        f"`{snippet(self.module, expr)}` starts several workers, each of which would build an engine "
                        "taking most of the GPU's memory; one worker's engine batches the requests (set workers=1)"
                    )

    def stream_function_of(self, call: cst.Call) -> FunctionInfo:
        """The ``async def`` that iterates a stream: the handler, or a function nested in it (a response generator)."""
        site = self.sites[id(call)]
        shown = snippet(self.module, call)
        function = site.function
        if function is None or site.in_main_guard:
            raise Refusal(f"`{shown}` runs outside a request handler")
        handler = self.semantics.enclosing_handler(function)
        if handler is not None and not handler.direct and _nested_in(function, handler.entry):
            handler = self.semantics.handlers.get(handler.entry)  # a response generator defined in the handler
        if handler is None or not handler.direct:
            raise Refusal(f"`{shown}` runs in {function.name}(), which is not a request handler or a function nested in one")
        self.check_framework(handler.framework)
        if (handler.function.is_method and not in_served_class(self.semantics, handler.function)) or handler.function.parent is not None:
            raise Refusal(f"{handler.function.name}() is a method or nested function; only module-level handlers are rewritten")
        return function

    def string_typing(self, function: FunctionInfo, mode: CallMode, depth: int = 0) -> StringTyping:
        """What is known to be one string in the handler: FastAPI's text parameters, a Gradio text box's, a gRPC
        request's string fields; in a helper, the parameters every call passes one string (as its caller's typing
        tells)."""
        handler = self.semantics.handlers.get(function)
        if handler is not None and not handler.direct and function.parent is None:  # (a nested function sees its handler's scope)
            return StringTyping(self.model, function, text_params=self._helper_text_params(function, mode, depth))
        framework = handler.framework if handler is not None else None
        text: frozenset[str] = frozenset()
        if framework == "gradio":
            text = GradioInputs(self.ctx).text_params(function)
        elif framework == "litserve":
            text = self._litserve_text_params(function)
        inputs = GrpcInputs(self.ctx) if framework == "grpc" else None
        fields = inputs.text_fields(function) if inputs is not None else None
        if framework == "chainlit":
            fields = chainlit_text_fields(function)
        others = inputs.other_fields(function) if inputs is not None else None
        # BentoML reads a parameter's type from its annotation, and LitServe's predict takes what decode_request returns.
        fastapi_route = mode is CallMode.AWAITED and framework not in ("bentoml", "litserve", "grpc", "chainlit", *HOOKED_FRAMEWORKS)
        return StringTyping(self.model, function, fastapi_route=fastapi_route, text_params=text, text_fields=fields,
                            other_fields=others)

    def _helper_text_params(self, helper: FunctionInfo, mode: CallMode, depth: int) -> frozenset[str]:
        """The helper's parameters that each of its calls fills with one string (a default counts when it is one)."""
        if depth > _HELPER_DEPTH:
            return frozenset()
        calls = Callers(self.ctx).calls_of(helper)
        own = StringTyping(self.model, helper)
        text = set()
        for param in (*helper.node.params.posonly_params, *helper.node.params.params, *helper.node.params.kwonly_params):
            one_string = bool(calls)
            for c in calls:
                known, value = argument_for(c, helper, param)
                if value is None:
                    value = param.default if known else None
                if value is None or c.site.function is None or value is param.default:
                    # evaluated at module level (a default, a call made at import): a string literal only
                    typing = own if isinstance(value, _STRING_LITERALS) else None
                else:
                    typing = self.string_typing(c.site.function, mode, depth + 1)
                if value is None or typing is None or not typing.is_one_string(value):
                    one_string = False
                    break
            if one_string:
                text.add(param.name.value)
        return frozenset(text)

    def _litserve_text_params(self, predict: FunctionInfo) -> frozenset[str]:
        """predict()'s input when the class's decode_request returns one string on every path."""
        decode = predict.class_info.methods.get("decode_request") if predict.class_info is not None else None
        params = [*predict.node.params.posonly_params, *predict.node.params.params]
        if decode is None or len(params) < 2:
            return frozenset()
        values = returned_values(decode.node)
        typing = StringTyping(self.model, decode)
        if not values or not all(v is not None and typing.is_one_string(v) for v in values):
            return frozenset()
        return frozenset({params[1].name.value})

    def check_framework(self, framework: str | None) -> None:
        if framework == "grpc":
            raise Refusal(
                "a stream in a gRPC servicer is not rewritten; `async for` over engine.generate(...) in the "
                "grpc.aio servicer's method"
            )
        if framework in SYNC_FRAMEWORKS:
            raise Refusal(_ASYNC_VIEW_REASON.format(framework=SYNC_FRAMEWORKS[framework]))
        if framework == "sanic":
            raise Refusal(_SANIC_REASON)
        if framework not in (None, "fastapi", "ray", "bentoml", "litserve", "modal", "chainlit", *HOOKED_FRAMEWORKS):
            raise Refusal(
                f"{framework} handlers are not rewritten onto the engine (the rewrite serves FastAPI, Flask, Django, "
                "Bottle, gRPC, Gradio, Ray Serve, BentoML, LitServe, Modal, aiohttp, Quart, Starlette, Falcon and Chainlit "
                "apps); port the handlers to FastAPI by hand, after which the rewrite applies"
            )

    def check_hoistable(self, call: cst.Call, occurrence: Occurrence, depth: int) -> cst.SimpleStatementLine:
        """The statement the call is in, when evaluating the call just before it changes nothing else.

        ``depth`` counts the levels from the model's name up to the expression replaced (the call, or
        the ``await`` of it).
        """
        shown = snippet(self.module, call)
        parents = occurrence.parents[: len(occurrence.parents) - depth]  # the replaced expression's own parents
        small_index = next((i for i in range(len(parents) - 1, -1, -1) if isinstance(parents[i], cst.BaseSmallStatement)), None)
        compound = next((p for p in reversed(parents) if isinstance(p, cst.BaseCompoundStatement)), None)
        if small_index is None or (compound is not None and parents.index(compound) > small_index):
            raise Refusal(f"`{shown}` is part of a compound statement's header (if/for/while/with)")
        small = parents[small_index]
        line = parents[small_index - 1]
        if not isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
            raise Refusal(f"`{shown}` is in a statement the rewrite does not handle")
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(parents[small_index - 2], cst.IndentedBlock):
            raise Refusal(f"`{shown}` shares its line with other statements")
        between = parents[small_index + 1 :]
        # ``await pipe(x)`` and ``await pipe(x)[0]`` await what the call returns; ``await send(pipe(x))`` awaits
        # another call's result, and the call hoisted before the statement runs first as it did
        if any(isinstance(p, cst.Await) and not any(isinstance(q, cst.Call) for q in between[i + 1:]) for i, p in enumerate(between)):
            raise Refusal(f"`{shown}` is awaited, but it returns no awaitable")
        if any(isinstance(p, _NO_SIDE_EFFECTS_BETWEEN) for p in between):
            raise Refusal(f"`{shown}` is evaluated conditionally or repeatedly (inside a lambda, comprehension, `if` expression or `and`/`or`)")
        ancestors = {id(p) for p in between}
        replaced = occurrence.parents[len(occurrence.parents) - depth]
        for node in evaluations(small, skip=replaced):
            if id(node) not in ancestors:
                raise Refusal(
                    f"`{shown}` shares its statement with `{snippet(self.module, node)}`; moving the call out of "
                    "the statement could change which of the two runs first"
                )
        return line

    def one_prompt(self, typing: StringTyping, expr: cst.BaseExpression | None, call: cst.Call, what: str) -> tuple[str, bool]:
        """(the code of the one prompt, whether it was given as a one-item list)."""
        code = self.module.code_for_node
        if expr is not None and typing.is_one_string(expr):
            return code(expr), False
        batch = typing.one_item_batch(expr) if expr is not None else None
        if batch is not None:
            return batch.prompt_code or code(batch.prompt), True
        if what == "pipeline":
            shown = snippet(self.module, expr) if expr is not None else "?"
            raise Refusal(
                f"cannot tell that the pipeline input `{shown}` is one string "
                "(a list of prompts or chat messages returns another shape); annotate it `str`, or wrap it in str(...)"
            )
        if what == "model" and expr is not None:
            raise Refusal(
                f"cannot tell that the text `{snippet(self.module, expr)}` tokenised for `{snippet(self.module, call)}` is one "
                "string (a list of texts is a batch); annotate it `str`, or wrap it in str(...)"
            )
        if isinstance(expr, cst.List) and len(expr.elements) == 1 and isinstance(expr.elements[0], cst.Element):
            raise Refusal(
                f"cannot tell that the prompt `{snippet(self.module, expr.elements[0].value)}` in "
                f"`{snippet(self.module, call)}` is one string; annotate it `str`, or wrap it in str(...)"
            )
        raise Refusal(
            f"cannot tell that `{snippet(self.module, call)}` generates for one prompt string; a batch "
            "needs one engine.generate() per prompt: state that the prompts are a list of strings (a `list[str]` "
            "parameter or request field), which the rewrite gathers one request per prompt, or write that by hand"
        )

    def prompt_or_check(self, typing: StringTyping, expr: cst.BaseExpression | None, call: cst.Call, what: str,
                        function: FunctionInfo, mode: CallMode) -> tuple[str, bool, PromptCheck | None]:
        """``one_prompt``; where the prompt's type is not stated, a check at run time that it is one string (the
        framework's own bad-request answer otherwise), when the framework has one the rewrite can write."""
        try:
            return (*self.one_prompt(typing, expr, call, what), None)
        except Refusal as refusal:
            if expr is None or mode is CallMode.STREAMED:
                raise
            as_list = False
            if isinstance(expr, cst.List):
                if not (len(expr.elements) == 1 and isinstance(expr.elements[0], cst.Element)):
                    raise
                expr, as_list = expr.elements[0].value, True
            if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp, cst.Dict, cst.Set, cst.StarredElement)) or typing.stated_otherwise(expr):
                raise
            answer = self._bad_request_answer(function)
            if answer is None:
                raise Refusal(f"{refusal}; or check it at run time (`if not isinstance(prompt, str):` answer the request with an error) by hand") from None
            kind, context = answer
            return self.module.code_for_node(expr), as_list, PromptCheck(kind, context, bind=not is_plain_read(expr))

    def _bad_request_answer(self, function: FunctionInfo) -> tuple[str, str | None] | None:
        """How the handler answers a bad request: FastAPI's HTTPException, Flask's abort, a gRPC context's abort; a
        Ray Serve deployment, which has no bad-request answer of its own, raises (Ray Serve answers 500, as the
        original answered a prompt its output indexing could not read)."""
        handler = self.semantics.enclosing_handler(function)
        if handler is None:
            return None
        framework = handler.framework or "fastapi"
        if framework == "fastapi" and imported_as(self.module, {"fastapi.FastAPI", "fastapi.APIRouter"}):
            return "fastapi", None
        if framework == "flask":
            return "flask", None
        if framework in HOOKED_FRAMEWORKS:
            return framework, None
        if framework == "ray":
            return "raise", None
        if framework == "grpc" and handler.direct and function.is_method:
            params = [*function.node.params.posonly_params, *function.node.params.params]
            if len(params) == 3:
                return "grpc", params[2].name.value
        return None

    def pipeline_call(self, occurrence: Occurrence, construction: dict[str, cst.BaseExpression], full_text_default: bool) -> HandlerCall:
        call = occurrence.parent
        if not isinstance(call, cst.Call) or call.func is not occurrence.name:
            raise Refusal(f"`{snippet(self.module, occurrence.parent)}` uses the pipeline object other than by calling it")
        function, mode = self.handler_of(call, "pipeline")
        statement = self.check_hoistable(call, occurrence, 1)
        if any(arg.star for arg in call.args):
            raise Refusal(f"`{snippet(self.module, call)}` passes *args/**kwargs whose keys are unknown")
        positional = positional_args(call)
        keywords = keyword_args(call)
        prompt = positional[0].value if positional else (keywords["text_inputs"].value if "text_inputs" in keywords else None)
        if prompt is None or len(positional) > 1:
            raise Refusal(f"`{snippet(self.module, call)}` does not pass exactly one input")
        typing = self.string_typing(function, mode)
        prompt_code, batch_of_one, check = self.prompt_or_check(typing, prompt, call, "pipeline", function, mode)
        settings = [(k, v) for k, v in construction.items() if k in GENERATION_KEYWORDS]
        full_text = full_text_default
        for name, arg in keywords.items():
            if name == "text_inputs":
                continue
            if name == "return_full_text":
                flag = literal_flag(arg.value)
                if flag is None:
                    raise Refusal("return_full_text= is not a literal True/False, so the response shape is unknown")
                full_text = flag
                continue
            settings.append((name, arg.value))
        try:
            sampling = sampling_keywords(self.module, settings, pipeline=True)
        except NotCarried as exc:
            raise Refusal(str(exc)) from None
        # max_length= counts a computed prompt's tokens too: the prompt is evaluated once, into a local
        bind = sampling.counts_prompt and not is_plain_read(prompt)
        shape = ResultShape.PIPELINE_FULL_TEXT if full_text else ResultShape.PIPELINE_NEW_TEXT
        return HandlerCall(call, mode, function.node, prompt_code, sampling, call, shape, statement, batch_of_one, check=check, bind_prompt=bind)

    def llm_generate_call(self, occurrence: Occurrence) -> HandlerCall:
        attribute, call = occurrence.parent, occurrence.ancestor(2)
        if not (isinstance(attribute, cst.Attribute) and attribute.value is occurrence.name and isinstance(call, cst.Call) and call.func is attribute):
            raise Refusal(f"`{snippet(self.module, attribute)}` uses the LLM object other than by calling llm.generate(...)")
        method = attribute.attr.value
        if method == "chat":
            return self.llm_chat_call(occurrence, call)
        if method not in ("generate", "generate_async"):
            raise Refusal(f"`{snippet(self.module, call)}` calls LLM.{method}(); only LLM.generate() and LLM.chat() map onto the engine")
        if any(arg.star for arg in call.args):
            raise Refusal(f"`{snippet(self.module, call)}` passes *args/**kwargs whose keys are unknown")
        keywords = keyword_args(call)
        mode, depth = CallMode.AWAITED, 2
        if method == "generate_async":
            # Not a method of vLLM's LLM (VLL303): the author meant the engine's async generation, either
            # awaited for the final outputs or iterated as a stream (``stream=True``).
            stream = keywords.pop("stream", None)
            flag = literal_flag(stream.value) if stream is not None else False
            if flag is None:
                raise Refusal(f"`{snippet(self.module, call)}` passes stream= that is not a literal True/False")
            if flag:
                mode = CallMode.STREAMED
                loop = occurrence.ancestor(3)
                if not (isinstance(loop, cst.For) and loop.asynchronous is not None and loop.iter is call):
                    raise Refusal(f"`{snippet(self.module, call)}` is a stream that is not iterated by an `async for`")
            else:
                awaited = occurrence.ancestor(3)
                if not (isinstance(awaited, cst.Await) and awaited.expression is call):
                    raise Refusal(f"`{snippet(self.module, call)}` is not awaited, so what it was meant to return is unknown")
                depth = 3
        if mode is CallMode.STREAMED:
            function = self.stream_function_of(call)
        else:
            function, mode = self.handler_of(call, "LLM")
            if mode is CallMode.BRIDGED and depth == 3:
                raise Refusal(f"`{snippet(self.module, call)}` is awaited in a view of a framework that cannot await the engine")
        statement = self.check_hoistable(call, occurrence, depth) if mode is not CallMode.STREAMED else None
        positional = positional_args(call)
        if len(positional) > 2:
            raise Refusal(f"`{snippet(self.module, call)}` passes more arguments than prompts and sampling params")
        prompts, sampling = _input_and_sampling(positional, keywords, "prompts")
        typing = self.string_typing(function, mode)
        gathered = (
            mode is CallMode.AWAITED and method == "generate" and prompts is not None
            and (typing.is_string_list(prompts) or typing.is_built_list(prompts))
            and _module_reachable(occurrence.name)  # the gathering helper, at module level, reaches its engine
        )
        if gathered and prompts is not None:
            prompt_code, as_list, check = self.module.code_for_node(prompts), True, None
        elif mode is CallMode.STREAMED:
            prompt_code, as_list = self.one_prompt(typing, prompts, call, "LLM")
            check = None
        else:
            prompt_code, as_list, check = self.prompt_or_check(typing, prompts, call, "LLM", function, mode)
        if isinstance(sampling, (cst.List, cst.Tuple)):
            raise Refusal("a list of per-prompt SamplingParams has no single-request equivalent")
        extra = []
        for name, arg in keywords.items():
            if name in _LLM_GENERATE_DROPPED:
                continue
            if name not in _LLM_GENERATE_CARRIED:
                raise Refusal(f"LLM.{method}(..., {name}=...) has no AsyncLLMEngine.generate() equivalent here")
            if mode is CallMode.BRIDGED:
                raise Refusal(f"LLM.{method}(..., {name}=...) is not carried through the engine's thread")
            extra.append((name, arg.value))
        replaced: cst.BaseExpression = call
        shape = ResultShape.REQUEST_OUTPUT_LIST
        if method == "generate_async":
            if mode is CallMode.AWAITED:
                awaited = occurrence.ancestor(3)
                assert isinstance(awaited, cst.Await)  # checked above
                replaced = awaited
                # Awaited for a list of prompts: one output per prompt, as LLM.generate() returns; for one
                # prompt string, its output (as the engine's generate() and TensorRT-LLM's return).
                shape = ResultShape.REQUEST_OUTPUT_LIST if as_list else ResultShape.REQUEST_OUTPUT
        else:
            parent = occurrence.ancestor(3)
            if isinstance(parent, cst.Subscript) and parent.value is call and is_index_zero(parent):
                replaced, shape = parent, ResultShape.REQUEST_OUTPUT
        if gathered:
            for name, value in extra:
                self._check_one_adapter(function, name, value, method)
        return HandlerCall(call, mode, function.node, prompt_code, sampling, replaced, shape, statement,
                           extra_arguments=tuple(extra), check=check, gathered=gathered,
                           numbered=gathered and _reads_request_ids(function.node))

    def llm_chat_call(self, occurrence: Occurrence, call: cst.Call) -> HandlerCall:
        """``llm.chat(messages, params, ...)``: the conversation (or each of a list of them) rendered as LLM.chat()
        renders it, by the engine's own renderer (generation.py's CHAT_OUTPUTS_HELPER), one request each; the
        final outputs stand in for the list LLM.chat() returns. Awaited, or run on the bridge's event loop."""
        shown = snippet(self.module, call)
        function, mode = self.handler_of(call, "LLM")
        statement = self.check_hoistable(call, occurrence, 2)
        if any(arg.star for arg in call.args):
            raise Refusal(f"`{shown}` passes *args/**kwargs whose keys are unknown")
        positional, keywords = positional_args(call), keyword_args(call)
        if len(positional) > 2:
            raise Refusal(f"`{shown}` passes more arguments than messages and sampling params; name the others (chat_template=...)")
        messages, sampling = _input_and_sampling(positional, keywords, "messages")
        if messages is None:
            raise Refusal(f"`{shown}` passes no messages")
        if isinstance(sampling, (cst.List, cst.Tuple)):
            raise Refusal("a list of per-conversation SamplingParams has no single-request equivalent; give one SamplingParams")
        options = []
        for name, arg in keywords.items():
            if name in _LLM_GENERATE_DROPPED:
                continue
            if name not in _LLM_CHAT_CARRIED:
                why = _LLM_CHAT_REFUSED.get(name, "it has no AsyncLLMEngine equivalent the rewrite knows")
                raise Refusal(f"LLM.chat(..., {name}=...) is not carried onto the engine ({why})")
            options.append((name, arg.value))
        return HandlerCall(call, mode, function.node, self.module.code_for_node(messages), sampling, call,
                           ResultShape.REQUEST_OUTPUT_LIST, statement, extra_arguments=tuple(options), chat=True)

    def _check_one_adapter(self, function: FunctionInfo, keyword: str, value: cst.BaseExpression, method: str) -> None:
        """``lora_request=`` of a batch, given to each of its requests: LLM.generate takes one LoRARequest for every
        prompt, or a list of one per prompt, which one engine request cannot take. Accepted when it is a local of
        the handler bound only to None or ``LoRARequest(...)``."""
        shown = snippet(self.module, value)
        values = local_bindings(function.node).get(value.value, []) if isinstance(value, cst.Name) else []
        params = {p.name.value for p in named_params(function.node)}
        if not values or (isinstance(value, cst.Name) and value.value in params) or not all(
            v is not None and (is_none(v) or (isinstance(v, cst.Call) and (self.semantics.callee(v) or "").endswith(".LoRARequest")))
            for v in values
        ):
            raise Refusal(
                f"LLM.{method}(..., {keyword}={shown}) over a list of prompts may be one adapter for all or a list of "
                f"one per prompt; each engine request takes one: bind it to a variable of the handler assigned only None "
                "or LoRARequest(...), and pass that"
            )

    def hf_generate_call(self, occurrence: Occurrence) -> HandlerCall:
        """``out = model.generate(**tokenizer(prompt, return_tensors="pt"), ...)``: one engine request whose
        final output stands in for ``out`` as its token sequences (hf_generate)."""
        call = occurrence.ancestor(2)
        assert isinstance(call, cst.Call)
        function, mode = self.handler_of(call, "model")
        statement = self.check_hoistable(call, occurrence, 2)
        chain = GenerateChains(self.ctx).chain(call, function)
        typing = self.string_typing(function, mode)
        prompt_code, _, check = self.prompt_or_check(typing, chain.prompt, call, "model", function, mode)
        # the second value: a batch of one prompt (``text=[text]``), whose ids are the one prompt's as one row
        reads = OutputReads()
        assign = statement.body[0]
        if isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            reads = output_reads(self.module, function.node, assign.targets[0].target.value)
        elif isinstance(assign, cst.Assign) and assign.value is call:
            raise Refusal(f"`{snippet(self.module, statement)}` unpacks the generate output")
        try:
            sampling = sampling_keywords(self.module, chain.settings)
        except NotCarried as exc:
            raise Refusal(str(exc)) from None
        return HandlerCall(
            call, mode, function.node, prompt_code, sampling, call, ResultShape.TOKEN_SEQUENCES, statement,
            removed=chain.removed, prompt_lengths=chain.prompt_lengths, tokenizer=chain.tokenizer, check=check,
            prompt_ids=chain.prompt_ids, media=chain.media,
            listed_rows=reads.listed, rows_first=reads.rows_first,
            bind_prompt=sampling.counts_prompt and not is_plain_read(chain.prompt),
            token_options="".join(f", {name}={self.module.code_for_node(value)}" for name, value in chain.token_options),
        )

    def keeps_working(self, occurrence: Occurrence, binding_statement: cst.SimpleStatementLine, what: str) -> bool:
        """Whether a use of the model's variable works the same on an engine object (or is its binding)."""
        parent = occurrence.parent
        if isinstance(parent, cst.AssignTarget):
            assign = occurrence.parents[-2]  # the statement that holds the target
            if assign is binding_statement.body[0]:
                return True
            if isinstance(occurrence.name, cst.Attribute):
                raise Refusal(f"`{snippet(self.module, assign)}` assigns the {what} attribute again")
            if isinstance(assign, cst.Assign) and occurrence.function is None and is_none(assign.value):
                return True  # ``llm = None`` before start-up
            raise Refusal(f"`{snippet(self.module, assign)}` assigns the {what} variable again; give the {what} a variable of its own")
        if isinstance(parent, cst.NameItem):
            return True  # ``global llm``
        if isinstance(parent, cst.Comparison) and compares_with_none(parent):
            return True  # ``llm is None``: still true before start-up, false after
        if isinstance(parent, (cst.If, cst.While)) and parent.test is occurrence.name:
            return True
        return isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)


def config_probe(o: Occurrence) -> cst.Attribute | cst.Call | None:
    """A read of the offline LLM's engine configuration in a function (which runs once the engine exists):
    ``llm.llm_engine.lora_config`` (the ``llm.llm_engine`` node) or ``hasattr(llm, "llm_engine")`` (the call).

    vLLM's (V0) LLMEngine held its configs as attributes (``lora_config``, ...), each VllmConfig's field of that
    name; the engine holds the same VllmConfig as ``vllm_config``, whose field has the same value (LoRAConfig, or
    None when LoRA is off). The read keeps the meaning it was written with: the V1 LLMEngine of vLLM 0.32 keeps
    only ``model_config`` and ``observability_config`` as attributes, so there ``llm.llm_engine.lora_config``
    raised AttributeError."""
    if o.function is None:
        return None
    attribute, outer = o.ancestor(1), o.ancestor(2)
    if isinstance(attribute, cst.Attribute) and attribute.value is o.name and attribute.attr.value == "llm_engine" \
            and isinstance(outer, cst.Attribute) and outer.value is attribute and outer.attr.value in _ENGINE_CONFIGS:
        return attribute
    arg, call = o.ancestor(1), o.ancestor(2)
    if isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "hasattr" \
            and len(call.args) == 2 and call.args[0] is arg and arg.keyword is None and not arg.star \
            and isinstance(name := call.args[1].value, cst.SimpleString) and name.evaluated_value == "llm_engine":
        return call
    return None


class _RequestIdReads(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.found = self.found or node.attr.value == "request_id"


def _input_and_sampling(positional: list[cst.Arg], keywords: dict[str, cst.Arg], first: str) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """The two leading parameters of ``LLM.generate``/``LLM.chat`` (``first``, then ``sampling_params``), given by
    position or by keyword; the keywords read are taken out of ``keywords``, which the caller checks after."""
    given = positional[0].value if positional else (keywords.pop(first).value if first in keywords else None)
    sampling = positional[1].value if len(positional) > 1 else (keywords.pop("sampling_params").value if "sampling_params" in keywords else None)
    return given, sampling


def _reads_request_ids(function: cst.FunctionDef) -> bool:
    """The handler reads ``.request_id`` (``sorted(outputs, key=lambda o: int(o.request_id))``): LLM.generate
    numbers its requests "0", "1", ... in the order of its prompts, which a random id would not keep."""
    reads = _RequestIdReads()
    walk(function, reads)
    return reads.found


def _module_reachable(model: cst.BaseExpression) -> bool:
    """A module-level LLM (``llm``, or a module dict's entry ``MODELS["llm"]``), or one held by the module's one
    object of a plain class (``server.llm``)."""
    return isinstance(model, cst.Name) or (isinstance(model, cst.Subscript) and isinstance(model.value, cst.Name)) or (
        isinstance(model, cst.Attribute) and isinstance(model.value, cst.Name) and model.value.value not in ("self", "cls")
    )


def _nested_in(function: FunctionInfo, outer: FunctionInfo) -> bool:
    scope = function.parent
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False
