"""Decide whether a server module can be rewritten onto AsyncLLMEngine, and how.

The rewrite is offered only when every use of the model object is understood:
it is built once (module level, under ``if __name__ == "__main__":`` before the
app is served, or in a start-up hook), and used only by calls written directly
in FastAPI handlers, in statements where turning the call into an ``async for``
over the engine changes nothing else, or as the stream an ``async for`` in the
handler iterates. Anything else raises Refusal with the reason, which the
finding's message then carries.
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.walk import walk  # read-only visits without rebuilding the tree

from vllm_lint.launch.defaults import SAFE_GPU_MEMORY_UTILIZATION
from vllm_lint.python.context import PyContext
from vllm_lint.python.model import CallSite, FunctionInfo, dotted_name
from vllm_lint.python.rewrite.generation import (
    GENERATION_KEYWORDS,
    OUTPUT_OPTIONS,
    NotCarried,
    sampling_keywords,
)
from vllm_lint.python.rewrite.lifespan import handlers_app, plan_lifespan, snippet as _snippet
from vllm_lint.python.rewrite.names import Occurrence, occurrences
from vllm_lint.python.rewrite.plan import (
    Bridge,
    BuiltInPlace,
    CallMode,
    HandlerCall,
    Lifespan,
    ModelKind,
    Refusal,
    ResultShape,
    ServerPlan,
)
from vllm_lint.python.rewrite.prompts import StringTyping, bound_names
from vllm_lint.python.vocabulary import is_pipeline_factory

# Frameworks that serve each request in a thread of their own: their plain ``def`` handlers stay as they are
# and submit to the engine through the bridge's event-loop thread.
SYNC_FRAMEWORKS = {"flask": "Flask", "django": "Django", "grpc": "gRPC"}
_ASYNC_VIEW_REASON = (
    "{framework} runs each async view in an event loop of its own, which one AsyncLLMEngine cannot serve; "
    "make it a plain def view (the rewrite then bridges it to the engine), or port the app to FastAPI"
)
_TORCH_DTYPES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32", "float": "float32"}
_DTYPE_STRINGS = frozenset({"auto", "float16", "half", "bfloat16", "float32", "float"})
_PIPELINE_PLACEMENT = frozenset({"device", "device_map"})  # vLLM places the model on the GPU(s) itself
_PIPELINE_ENGINE_KEYWORDS = ("tokenizer", "revision", "trust_remote_code")
_LLM_GENERATE_DROPPED = frozenset({"use_tqdm"})  # a progress bar: nothing to carry
_LLM_GENERATE_CARRIED = frozenset({"lora_request"})  # AsyncLLMEngine.generate takes it too
# What a plain ``def`` handler may do in its worker thread but an ``async def`` one must not.
_BLOCKING_CALLS = frozenset({"time.sleep", "os.system", "os.popen", "socket.create_connection"})
_BLOCKING_MODULES = ("requests.", "urllib.request.", "subprocess.", "httpx.Client", "sqlite3.", "psycopg2.", "pymysql.", "smtplib.")
_BLOCKING_BUILTINS = frozenset({"open", "input"})
_NO_SIDE_EFFECTS_BETWEEN = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp, cst.BooleanOperation)
_SERVE_CALLS = frozenset({"uvicorn.run"})


def _keyword_args(call: cst.Call) -> dict[str, cst.Arg]:
    return {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}


def _positional(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


class _Analysis:
    def __init__(self, ctx: PyContext) -> None:
        self.ctx = ctx
        self.module = ctx.module
        self.model = ctx.model
        self.semantics = ctx.semantics
        self.sites = {id(site.node): site for site in ctx.model.calls}

    # -- the model object ------------------------------------------------------

    def model_site(self) -> tuple[ModelKind, CallSite]:
        pipelines = [s for s in self.model.calls if is_pipeline_factory(self.semantics.callee(s.node))]
        llms = [s for s in self.model.calls if self.semantics.callee(s.node) == "vllm.LLM"]
        if pipelines and llms:
            raise Refusal("the module loads both a transformers pipeline and a vLLM LLM")
        sites = pipelines or llms
        if not sites:
            raise Refusal("the model object is not built in this module")
        if len(sites) > 1:
            raise Refusal(f"the module builds {len(sites)} models; one engine per GPU is what the rewrite produces")
        return (ModelKind.PIPELINE if pipelines else ModelKind.LLM), sites[0]

    def binding(self, kind: ModelKind, site: CallSite) -> str:
        what = "pipeline" if kind is ModelKind.PIPELINE else "LLM"
        statement = site.statement
        held_on = [t for t in site.assigned_to if "." in t]
        if held_on:
            raise Refusal(
                f"the {what} is held on an object (`{held_on[0]}`); the rewrite handles module-level FastAPI servers"
            )
        if not (
            isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign)
            and statement.body[0].value is site.node
            and len(statement.body[0].targets) == 1
            and isinstance(statement.body[0].targets[0].target, cst.Name)
        ):
            raise Refusal(f"the {what} is not assigned to one plain variable (`{_snippet(self.module, statement)}`)")
        return statement.body[0].targets[0].target.value

    def placement(self, kind: ModelKind, site: CallSite, name: str, calls: list[HandlerCall]) -> Lifespan | BuiltInPlace:
        what = "pipeline" if kind is ModelKind.PIPELINE else "LLM"
        function = site.function
        statement = site.statement
        assert isinstance(statement, cst.SimpleStatementLine)
        handlers = list({id(node): node for node in map(self.handler_node_of, calls)}.values())
        if any(c.mode is CallMode.BRIDGED for c in calls):
            return self.bridge_placement(site, name, calls, what)
        if function is None:
            if site.in_main_guard:
                self.check_main_guard_load(statement, handlers, what)
            elif not any(s is statement for s in self.module.body):
                raise Refusal(f"the {what} is built inside an `if`/`try` block at module level")
            return plan_lifespan(self.ctx, self.sites, handlers, name, statement, None)
        handler = self.semantics.enclosing_handler(function)
        if handler is not None:
            raise Refusal(f"the {what} is built per request inside {handler.function.name}() (VLL104); build it once at start-up first")
        if function.parent is not None or function.is_method or name not in function.global_names:
            raise Refusal(f"the {what} is built inside {function.name}(), not at module level or in a startup hook")
        if not _directly_in(function.node, statement):
            raise Refusal(f"the {what} is built inside a block of {function.name}(); build it at the top of the start-up hook")
        if _is_lifespan_function(self.semantics, function):
            return BuiltInPlace()
        if not self.semantics.is_startup_hook(function):
            raise Refusal(f"the {what} is built inside {function.name}(), not at module level or in a startup hook")
        return plan_lifespan(self.ctx, self.sites, handlers, name, None, function.node)

    def bridge_placement(self, site: CallSite, name: str, calls: list[HandlerCall], what: str) -> Bridge:
        """The engine's thread is started where the model was loaded: at import, under ``__main__`` before
        the app runs, or in the function that loaded it into a module variable."""
        frameworks = {self.semantics.enclosing_handler(self.sites[id(c.call)].function).framework for c in calls}
        if any(c.mode is not CallMode.BRIDGED for c in calls) or len(frameworks) != 1:
            raise Refusal("the module serves the model from handlers of more than one framework")
        function = site.function
        if function is not None:
            handler = self.semantics.enclosing_handler(function)
            if handler is not None:
                raise Refusal(f"the {what} is built per request inside {handler.function.name}() (VLL104); build it once at start-up first")
            if function.parent is not None or function.is_method or name not in function.global_names:
                raise Refusal(f"the {what} is built inside {function.name}(), not into a module variable")
        body = list(self.module.body)
        indexes = [_top_level_index_of(body, site.statement)]
        for app, framework in self.semantics.app_objects.items():
            for binding in self.model.bindings.get((None, app), []):
                app_site = self.sites[id(binding.call)]
                if app_site.function is None and any(s is app_site.statement for s in body):
                    indexes.append(body.index(app_site.statement))
        return Bridge(body[min(indexes)], SYNC_FRAMEWORKS[frameworks.pop()])

    def handler_node_of(self, call: HandlerCall) -> cst.FunctionDef:
        """The request handler a call is in (a stream's function is nested in it)."""
        handler = self.semantics.enclosing_handler(self.sites[id(call.call)].function)
        assert handler is not None
        return handler.function.node

    def check_main_guard_load(self, statement: cst.SimpleStatementLine, handlers: list[cst.FunctionDef], what: str) -> None:
        """A load under ``if __name__ == "__main__":`` moves into the lifespan handler when that block then
        serves the app object itself (the lifespan runs inside that call) with the load's names unchanged."""
        guard = next((s for s in self.module.body if isinstance(s, cst.If) and _directly_in(s, statement)), None)
        if guard is None:
            raise Refusal(f"the {what} is built in a nested block under `if __name__ == \"__main__\":`")
        app_name = handlers_app(self.module, handlers)
        block = list(guard.body.body)
        after = block[block.index(statement) + 1 :]
        served = None
        for index, later in enumerate(after):
            call = _only_call(later)
            if call is not None and (self.semantics.callee(call) in _SERVE_CALLS):
                served = index
                first = _positional(call)[:1]
                if not (first and isinstance(first[0].value, cst.Name) and first[0].value.value == app_name):
                    raise Refusal(
                        f"`{_snippet(self.module, call)}` serves the app by its import string, which imports the module "
                        f"again without running this `__main__` block; pass the app object ({app_name})"
                    )
                break
        if served is None:
            raise Refusal(f"the {what} is built under `if __name__ == \"__main__\":`, but that block does not then serve `{app_name}` with uvicorn.run(...)")
        assign = statement.body[0]
        assert isinstance(assign, cst.Assign)
        used = {n for n, found in occurrences(assign.value, _names_read(assign.value)).items() if found}
        changed = set().union(*(bound_names(s) for s in after[:served])) if served else set()
        if used & changed:
            name = sorted(used & changed)[0]
            raise Refusal(f"`{name}` changes between the {what}'s load and uvicorn.run(...); the lifespan handler would see the new value")

    # -- uses of the model object ----------------------------------------------

    def handler_of(self, call: cst.Call, what: str) -> tuple[FunctionInfo, CallMode]:
        """The handler a call is written in, and how the call reaches the engine from there."""
        site = self.sites[id(call)]
        shown = _snippet(self.module, call)
        if site.function is None or site.in_main_guard:
            raise Refusal(f"`{shown}` runs outside a request handler")
        handler = self.semantics.handlers.get(site.function)
        if handler is None:
            enclosing = self.semantics.enclosing_handler(site.function)
            if enclosing is not None:
                raise Refusal(f"`{shown}` is in a function nested in {enclosing.function.name}(); only calls written in the handler itself are rewritten")
            raise Refusal(f"`{shown}` runs in {site.function.name}(), which is not a request handler")
        if not handler.direct:
            raise Refusal(f"the {what} is called in helper {site.function.name}(), not in the handler itself; only handlers are rewritten")
        function = site.function
        if function.parent is not None:
            raise Refusal(f"{function.name}() is a nested function; only handlers defined at module or class level are rewritten")
        sync_framework = SYNC_FRAMEWORKS.get(handler.framework or "")
        if sync_framework is not None:
            if function.is_async:
                self.check_framework(handler.framework)  # says why, per framework
            return function, CallMode.BRIDGED
        self.check_framework(handler.framework)
        if function.is_method:
            raise Refusal(f"{function.name}() is a method; only module-level handlers are rewritten")
        return function, CallMode.AWAITED

    def stream_function_of(self, call: cst.Call) -> FunctionInfo:
        """The ``async def`` that iterates a stream: the handler, or a function nested in it (a response generator)."""
        site = self.sites[id(call)]
        shown = _snippet(self.module, call)
        function = site.function
        if function is None or site.in_main_guard:
            raise Refusal(f"`{shown}` runs outside a request handler")
        handler = self.semantics.enclosing_handler(function)
        if handler is None or not handler.direct:
            raise Refusal(f"`{shown}` runs in {function.name}(), which is not a request handler or a function nested in one")
        self.check_framework(handler.framework)
        if handler.function.is_method or handler.function.parent is not None:
            raise Refusal(f"{handler.function.name}() is a method or nested function; only module-level handlers are rewritten")
        return function

    def check_framework(self, framework: str | None) -> None:
        if framework in SYNC_FRAMEWORKS:
            raise Refusal(_ASYNC_VIEW_REASON.format(framework=SYNC_FRAMEWORKS[framework]))
        if framework not in (None, "fastapi"):
            raise Refusal(f"{framework} handlers are not rewritten (the rewrite produces a FastAPI server)")

    def check_hoistable(self, call: cst.Call, occurrence: Occurrence, depth: int) -> cst.SimpleStatementLine:
        """The statement the call is in, when evaluating the call just before it changes nothing else.

        ``depth`` counts the levels from the model's name up to the expression replaced (the call, or
        the ``await`` of it).
        """
        shown = _snippet(self.module, call)
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
        if any(isinstance(p, cst.Await) for p in between):
            raise Refusal(f"`{shown}` is awaited, but it returns no awaitable")
        if any(isinstance(p, _NO_SIDE_EFFECTS_BETWEEN) for p in between):
            raise Refusal(f"`{shown}` is evaluated conditionally or repeatedly (inside a lambda, comprehension, `if` expression or `and`/`or`)")
        ancestors = {id(p) for p in between}
        replaced = occurrence.parents[len(occurrence.parents) - depth]
        for node in _evaluations(small, skip=replaced):
            if id(node) not in ancestors:
                raise Refusal(
                    f"`{shown}` shares its statement with `{_snippet(self.module, node)}`; moving the call out of "
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
            shown = _snippet(self.module, expr) if expr is not None else "?"
            raise Refusal(
                f"cannot tell that the pipeline input `{shown}` is one string "
                "(a list of prompts or chat messages returns another shape); annotate it `str`, or wrap it in str(...)"
            )
        raise Refusal(
            f"cannot tell that `{_snippet(self.module, call)}` generates for one prompt string; a batch "
            "needs one engine.generate() per prompt"
        )

    def pipeline_call(self, occurrence: Occurrence, construction: dict[str, cst.BaseExpression], full_text_default: bool) -> HandlerCall:
        call = occurrence.parent
        if not isinstance(call, cst.Call) or call.func is not occurrence.name:
            raise Refusal(f"`{_snippet(self.module, occurrence.parent)}` uses the pipeline object other than by calling it")
        function, mode = self.handler_of(call, "pipeline")
        statement = self.check_hoistable(call, occurrence, 1)
        if any(arg.star for arg in call.args):
            raise Refusal(f"`{_snippet(self.module, call)}` passes *args/**kwargs whose keys are unknown")
        positional = _positional(call)
        keywords = _keyword_args(call)
        prompt = positional[0].value if positional else (keywords["text_inputs"].value if "text_inputs" in keywords else None)
        if prompt is None or len(positional) > 1:
            raise Refusal(f"`{_snippet(self.module, call)}` does not pass exactly one input")
        typing = StringTyping(self.model, function, fastapi_route=mode is CallMode.AWAITED)
        prompt_code, batch_of_one = self.one_prompt(typing, prompt, call, "pipeline")
        settings = [(k, v) for k, v in construction.items() if k in GENERATION_KEYWORDS]
        full_text = full_text_default
        for name, arg in keywords.items():
            if name == "text_inputs":
                continue
            if name == "return_full_text":
                full_text = _literal_flag(arg.value)
                if full_text is None:
                    raise Refusal("return_full_text= is not a literal True/False, so the response shape is unknown")
                continue
            settings.append((name, arg.value))
        try:
            sampling = sampling_keywords(self.module, settings)
        except NotCarried as exc:
            raise Refusal(str(exc)) from None
        if sampling.counts_prompt and not _is_plain_read(prompt):
            raise Refusal(
                f"max_length= counts the prompt's tokens, and the prompt `{_snippet(self.module, prompt)}` is computed "
                "in the call; give the pipeline max_new_tokens=, or bind the prompt to a variable first"
            )
        shape = ResultShape.PIPELINE_FULL_TEXT if full_text else ResultShape.PIPELINE_NEW_TEXT
        return HandlerCall(call, mode, function.node, prompt_code, sampling, call, shape, statement, batch_of_one)

    def llm_generate_call(self, occurrence: Occurrence) -> HandlerCall:
        attribute, call = occurrence.ancestor(1), occurrence.ancestor(2)
        if not (isinstance(attribute, cst.Attribute) and attribute.value is occurrence.name and isinstance(call, cst.Call) and call.func is attribute):
            raise Refusal(f"`{_snippet(self.module, attribute)}` uses the LLM object other than by calling llm.generate(...)")
        method = attribute.attr.value
        if method not in ("generate", "generate_async"):
            advice = (
                "; render the messages with the tokenizer's chat template and call generate(), or serve the model "
                "with `vllm serve` (its /v1/chat/completions)" if method == "chat" else ""
            )
            raise Refusal(f"`{_snippet(self.module, call)}` calls LLM.{method}(); only LLM.generate() maps onto the engine{advice}")
        if any(arg.star for arg in call.args):
            raise Refusal(f"`{_snippet(self.module, call)}` passes *args/**kwargs whose keys are unknown")
        keywords = _keyword_args(call)
        mode, depth = CallMode.AWAITED, 2
        if method == "generate_async":
            # Not a method of vLLM's LLM (VLL303): the author meant the engine's async generation, either
            # awaited for the final outputs or iterated as a stream (``stream=True``).
            stream = keywords.pop("stream", None)
            flag = _literal_flag(stream.value) if stream is not None else False
            if flag is None:
                raise Refusal(f"`{_snippet(self.module, call)}` passes stream= that is not a literal True/False")
            if flag:
                mode = CallMode.STREAMED
                loop = occurrence.ancestor(3)
                if not (isinstance(loop, cst.For) and loop.asynchronous is not None and loop.iter is call):
                    raise Refusal(f"`{_snippet(self.module, call)}` is a stream that is not iterated by an `async for`")
            else:
                awaited = occurrence.ancestor(3)
                if not (isinstance(awaited, cst.Await) and awaited.expression is call):
                    raise Refusal(f"`{_snippet(self.module, call)}` is not awaited, so what it was meant to return is unknown")
                depth = 3
        if mode is CallMode.STREAMED:
            function = self.stream_function_of(call)
        else:
            function, mode = self.handler_of(call, "LLM")
            if mode is CallMode.BRIDGED and depth == 3:
                raise Refusal(f"`{_snippet(self.module, call)}` is awaited in a view of a framework that cannot await the engine")
        statement = self.check_hoistable(call, occurrence, depth) if mode is not CallMode.STREAMED else None
        positional = _positional(call)
        if len(positional) > 2:
            raise Refusal(f"`{_snippet(self.module, call)}` passes more arguments than prompts and sampling params")
        prompts = positional[0].value if positional else (keywords.pop("prompts").value if "prompts" in keywords else None)
        sampling = positional[1].value if len(positional) > 1 else (keywords.pop("sampling_params").value if "sampling_params" in keywords else None)
        typing = StringTyping(self.model, function, fastapi_route=mode is CallMode.AWAITED)
        prompt_code, as_list = self.one_prompt(typing, prompts, call, "LLM")
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
                replaced = occurrence.ancestor(3)  # the await
                # Awaited for a list of prompts: one output per prompt, as LLM.generate() returns; for one
                # prompt string, its output (as the engine's generate() and TensorRT-LLM's return).
                shape = ResultShape.REQUEST_OUTPUT_LIST if as_list else ResultShape.REQUEST_OUTPUT
        else:
            parent = occurrence.ancestor(3)
            if isinstance(parent, cst.Subscript) and parent.value is call and _is_index_zero(parent):
                replaced, shape = parent, ResultShape.REQUEST_OUTPUT
        return HandlerCall(call, mode, function.node, prompt_code, sampling, replaced, shape, statement, extra_arguments=tuple(extra))

    def keeps_working(self, occurrence: Occurrence, binding_statement: cst.SimpleStatementLine, what: str) -> bool:
        """Whether a use of the model's variable works the same on an engine object (or is its binding)."""
        parent = occurrence.parent
        if isinstance(parent, cst.AssignTarget):
            assign = occurrence.ancestor(2)
            if assign is binding_statement.body[0]:
                return True
            if isinstance(assign, cst.Assign) and occurrence.function is None and _is_none(assign.value):
                return True  # ``llm = None`` before start-up
            raise Refusal(f"`{_snippet(self.module, assign)}` assigns the {what} variable again")
        if isinstance(parent, cst.NameItem):
            return True  # ``global llm``
        if isinstance(parent, cst.Comparison) and _compares_with_none(parent):
            return True  # ``llm is None``: still true before start-up, false after
        if isinstance(parent, (cst.If, cst.While)) and parent.test is occurrence.name:
            return True
        return isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)

    # -- engine arguments --------------------------------------------------------

    def pipeline_construction(self, call: cst.Call) -> tuple[tuple[tuple[str, str], ...], dict[str, cst.BaseExpression], bool]:
        """(AsyncEngineArgs keywords, generation defaults given to the pipeline, return_full_text)."""
        if any(arg.star for arg in call.args):
            raise Refusal("pipeline(...) gets *args/**kwargs whose keys are unknown")
        positional = _positional(call)
        keywords = _keyword_args(call)
        task_expr = positional[0].value if positional else (keywords["task"].value if "task" in keywords else None)
        task = self.semantics.fold(task_expr) if task_expr is not None else None
        if task is None or task.value != "text-generation":
            shown = repr(task.value) if task is not None else "not given"
            raise Refusal(
                f"the pipeline task is {shown}; only \"text-generation\" maps onto vLLM's generate() (vLLM does not serve "
                "this task); keep the pipeline off the event loop (a worker thread or process), or serve a generative model"
            )
        model_expr = positional[1].value if len(positional) > 1 else (keywords["model"].value if "model" in keywords else None)
        if len(positional) > 2:
            raise Refusal("pipeline(...) gets more positional arguments than task and model")
        if model_expr is None:
            raise Refusal("the pipeline names no model (it would load the task's default model)")
        if not self._is_model_name(model_expr):
            raise Refusal(f"cannot tell that model=`{_snippet(self.module, model_expr)}` is a model name or path (a model object loaded in Python cannot be handed to the engine)")
        code = self.module.code_for_node
        engine: list[tuple[str, str]] = [("model", code(model_expr))]
        generation: dict[str, cst.BaseExpression] = {}
        full_text = True
        for name, arg in keywords.items():
            if name in ("task", "model") or name in _PIPELINE_PLACEMENT:
                continue
            value = arg.value
            if name == "tokenizer":
                if not self._is_model_name(value):
                    raise Refusal("the pipeline's tokenizer= is an object, not a name or path")
                engine.append((name, code(value)))
            elif name in _PIPELINE_ENGINE_KEYWORDS:
                engine.append((name, code(value)))
            elif name in ("torch_dtype", "dtype"):
                engine.append(("dtype", self._dtype(value)))
            elif name in OUTPUT_OPTIONS:
                flag = _literal_flag(value)
                if flag is None:
                    raise Refusal(f"the pipeline's {name}= is not a literal True/False, so the response shape is unknown")
                full_text = flag
            elif name in GENERATION_KEYWORDS:
                if self.semantics.fold(value) is None:
                    raise Refusal(f"the pipeline's {name}= is not a constant, so it cannot move into the handler")
                generation[name] = value
            else:
                raise Refusal(f"the pipeline keyword {name}= has no AsyncEngineArgs equivalent")
        engine += [
            ("gpu_memory_utilization", f"{SAFE_GPU_MEMORY_UTILIZATION:.2f}"),
            ("max_model_len", str(self.ctx.settings.fix_max_model_len)),
            ("enable_prefix_caching", "True"),
        ]
        return tuple(engine), generation, full_text

    def check_llm_construction(self, call: cst.Call) -> None:
        if any(arg.star for arg in call.args):
            raise Refusal("LLM(...) gets *args/**kwargs that may hold arguments AsyncEngineArgs lacks")
        if len(_positional(call)) > 1:
            raise Refusal("LLM(...) gets positional arguments beyond the model")
        known = self.ctx.api.async_engine_args
        for name in _keyword_args(call):
            if name not in known:
                raise Refusal(f"LLM keyword {name}= is not an AsyncEngineArgs field")

    def _is_model_name(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A string: a constant, an environment variable, a module variable bound once to one, or a
        command-line option parsed by argparse."""
        if depth > 8:
            return False
        value = self.semantics.fold(expr)
        if value is not None:
            return isinstance(value.value, str)
        if isinstance(expr, cst.Call):
            return self.semantics.callee(expr) in ("os.getenv", "os.environ.get") or dotted_name(expr.func) in ("os.getenv", "os.environ.get")
        if isinstance(expr, cst.Subscript):
            return (self.semantics.qualify(expr.value) or dotted_name(expr.value)) == "os.environ"
        if isinstance(expr, cst.Name):
            bound = self.model.constants.get(expr.value)
            return bound is not None and self._is_model_name(bound, depth + 1)
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
            # ``os.getenv("MODEL") or "gpt2"``
            return self._is_model_name(expr.left, depth + 1) and self._is_model_name(expr.right, depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            return self._is_string_option(expr.value.value, expr.attr.value)
        return False

    def _is_string_option(self, namespace: str, option: str) -> bool:
        """``args.model`` where ``args = parser.parse_args()`` and ``parser.add_argument("--model")`` takes one string."""
        parsed = self.model.constants.get(namespace)
        if not (isinstance(parsed, cst.Call) and isinstance(parsed.func, cst.Attribute) and parsed.func.attr.value == "parse_args" and not parsed.args):
            return False
        parser = dotted_name(parsed.func.value)
        for site in self.model.calls:
            call = site.node
            if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument" and dotted_name(call.func.value) == parser):
                continue
            flags = [self.semantics.fold(a.value) for a in call.args if a.keyword is None]
            names = {f.value for f in flags if f is not None and isinstance(f.value, str)}
            keywords = _keyword_args(call)
            dest = self.semantics.fold(keywords["dest"].value) if "dest" in keywords else None
            declared = dest.value if dest is not None else next(
                (n.lstrip("-").replace("-", "_") for n in sorted(names, key=lambda n: not n.startswith("--")) if n.startswith("-")), None
            )
            if declared != option:
                continue
            kind = keywords.get("type")
            return not ({"action", "nargs", "const"} & set(keywords)) and (kind is None or dotted_name(kind.value) == "str")
        return False

    def _dtype(self, expr: cst.BaseExpression) -> str:
        qualified = self.semantics.qualify(expr) or ""
        if qualified.startswith("torch.") and qualified[6:] in _TORCH_DTYPES:
            return repr(_TORCH_DTYPES[qualified[6:]]).replace("'", '"')
        value = self.semantics.fold(expr)
        if value is not None and value.value in _DTYPE_STRINGS:
            return self.module.code_for_node(expr)
        raise Refusal(f"the pipeline's dtype `{_snippet(self.module, expr)}` has no known vLLM dtype name")

    # -- handlers ----------------------------------------------------------------

    def handlers_made_async(self, calls: list[HandlerCall]) -> tuple[cst.FunctionDef, ...]:
        sync = {id(c.function): c.function for c in calls if c.function.asynchronous is None}
        if not sync:
            return ()
        uses = occurrences(self.module, {h.name.value for h in sync.values()})
        for handler in sync.values():
            name = handler.name.value
            for o in uses[name]:
                if not _registers_route(o):
                    raise Refusal(f"{name}() is also used as `{_snippet(self.module, o.parent)}`; as an async def it would hand that caller a coroutine")
            if _yields(handler):
                raise Refusal(f"{name}() is a generator; making it async would change what it returns")
            blocking = self._blocking_call_in(handler)
            if blocking is not None:
                raise Refusal(
                    f"{name}() also calls `{_snippet(self.module, blocking)}`, which would block the event loop "
                    "once the handler is async (FastAPI runs a plain def handler in a thread)"
                )
        return tuple(sync.values())

    def _blocking_call_in(self, handler: cst.FunctionDef) -> cst.Call | None:
        """A call written in ``handler`` that blocks its thread (sleep, file, network or process I/O)."""
        for site in self.model.calls:
            if site.function is None or site.function.node is not handler:
                continue
            callee = self.semantics.callee(site.node) or ""
            plain = dotted_name(site.node.func)
            if callee in _BLOCKING_CALLS or callee.startswith(_BLOCKING_MODULES) or (
                plain in _BLOCKING_BUILTINS and plain not in self.model.aliases and plain not in self.model.module_functions
            ):
                return site.node
        return None


def plan_server_rewrite(ctx: PyContext) -> ServerPlan:
    """The plan for rewriting ``ctx``'s module, or Refusal with the reason."""
    analysis = _Analysis(ctx)
    kind, site = analysis.model_site()
    name = analysis.binding(kind, site)
    statement = site.statement
    assert isinstance(statement, cst.SimpleStatementLine)
    what = "pipeline" if kind is ModelKind.PIPELINE else "LLM"
    uses = occurrences(ctx.module, [name])[name]
    calls: list[HandlerCall] = []
    kept: list[Occurrence] = []  # uses that keep working on the engine object
    engine_arguments: tuple[tuple[str, str], ...] = ()
    if kind is ModelKind.PIPELINE:
        engine_arguments, generation, full_text = analysis.pipeline_construction(site.node)
    else:
        analysis.check_llm_construction(site.node)
    for o in uses:
        if analysis.keeps_working(o, statement, what):
            if not (isinstance(o.parent, cst.AssignTarget) and o.ancestor(2) is statement.body[0]):
                kept.append(o)
        elif kind is ModelKind.PIPELINE:
            calls.append(analysis.pipeline_call(o, generation, full_text))
        else:
            calls.append(analysis.llm_generate_call(o))
    if not calls:
        raise Refusal("the model object is never called in a request handler")
    seen: set[int] = set()
    for c in calls:
        if c.statement is None:
            continue
        if id(c.statement) in seen:
            raise Refusal(f"one statement calls the model twice (`{_snippet(ctx.module, c.statement)}`)")
        seen.add(id(c.statement))
    placement = analysis.placement(kind, site, name, calls)
    if kind is ModelKind.PIPELINE and kept and site.function is None:
        shown = _snippet(ctx.module, kept[0].parent)
        raise Refusal(f"`{shown}` uses the pipeline variable, which the engine built at start-up replaces")
    return ServerPlan(
        kind=kind,
        model_name=name,
        model_call=site.node,
        model_statement=statement,
        engine_arguments=engine_arguments,
        placement=placement,
        calls=tuple(calls),
        handlers_made_async=analysis.handlers_made_async([c for c in calls if c.mode is CallMode.AWAITED]),
        renames_model=kind is ModelKind.PIPELINE and site.function is None,
    )


# -- small shape tests -----------------------------------------------------------


def _is_plain_read(expr: cst.BaseExpression) -> bool:
    """A variable, an attribute of one or an item at a literal index: reading it twice gives the same value."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return _is_plain_read(expr.value)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        index = expr.slice[0].slice.value
        return isinstance(index, (cst.Integer, cst.SimpleString)) and _is_plain_read(expr.value)
    if isinstance(expr, cst.List) and len(expr.elements) == 1:
        return _is_plain_read(expr.elements[0].value)
    return False


def _top_level_index_of(body: list[cst.BaseStatement], statement: cst.CSTNode) -> int:
    """The index of the top-level statement that is or contains ``statement``."""
    for index, top in enumerate(body):
        if top is statement:
            return index
    found = _Contains(statement)
    for index, top in enumerate(body):
        walk(top, found)
        if found.found:
            return index
    raise ValueError("statement not in the module")


class _Contains(cst.CSTVisitor):
    def __init__(self, target: cst.CSTNode) -> None:
        super().__init__()
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.target:
            self.found = True
        return not self.found


def _directly_in(parent: cst.CSTNode, statement: cst.BaseStatement) -> bool:
    """Whether ``statement`` is one of the statements of ``parent``'s own block (a def or an if)."""
    body = getattr(parent, "body", None)
    return isinstance(body, cst.IndentedBlock) and any(s is statement for s in body.body)


def _is_lifespan_function(semantics, function: FunctionInfo) -> bool:
    """An ``@asynccontextmanager`` function: the app's own lifespan handler."""
    for decorator in function.node.decorators:
        expr = decorator.decorator
        name = semantics.qualify(expr) or dotted_name(expr) or ""
        if name.endswith("asynccontextmanager"):
            return True
    return False


def _only_call(statement: cst.BaseStatement) -> cst.Call | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Expr):
        value = statement.body[0].value
        return value if isinstance(value, cst.Call) else None
    return None


class _ReadNames(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _names_read(node: cst.CSTNode) -> set[str]:
    visitor = _ReadNames()
    walk(node, visitor)
    return visitor.names


def _registers_route(o: Occurrence) -> bool:
    """``app.add_api_route("/x", handler)``: FastAPI calls async handlers just as well."""
    arg, call = o.ancestor(1), o.ancestor(2)
    return (
        isinstance(arg, cst.Arg)
        and isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ("add_api_route", "add_api_websocket_route")
    )


class _Evaluations(cst.CSTVisitor):
    """Calls, awaits and yields in a statement, not descending into one skipped node."""

    def __init__(self, skip: cst.CSTNode) -> None:
        super().__init__()
        self.skip = skip
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.skip:
            return False
        if isinstance(node, (cst.Call, cst.Await, cst.Yield)):
            self.found.append(node)
        return True


def _evaluations(statement: cst.CSTNode, skip: cst.CSTNode) -> list[cst.CSTNode]:
    visitor = _Evaluations(skip)
    walk(statement, visitor)
    return visitor.found


class _Yields(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        return self._depth == 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


def _yields(function: cst.FunctionDef) -> bool:
    visitor = _Yields()
    walk(function, visitor)
    return visitor.found


def _literal_flag(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _compares_with_none(comparison: cst.Comparison) -> bool:
    return len(comparison.comparisons) == 1 and isinstance(comparison.comparisons[0].operator, (cst.Is, cst.IsNot)) and (
        _is_none(comparison.left) or _is_none(comparison.comparisons[0].comparator)
    )


def _is_index_zero(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    index = subscript.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"
