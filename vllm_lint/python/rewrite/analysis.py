"""Decide whether a server module can be rewritten onto AsyncLLMEngine, and how.

The rewrite is offered only when every use of the model object is understood:
it is built once (module level, or for ``LLM`` in a startup hook), and used only
by calls written directly in FastAPI handlers, in statements where turning the
call into an ``async for`` over the engine changes nothing else. Anything else
raises Refusal with the reason, which the finding's message then carries.
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
from vllm_lint.python.rewrite.names import Occurrence, occurrences
from vllm_lint.python.rewrite.plan import (
    EngineInLifespan,
    EngineInStartupHook,
    HandlerCall,
    ModelKind,
    Refusal,
    ResultShape,
    ServerPlan,
)
from vllm_lint.python.rewrite.prompts import StringTyping
from vllm_lint.python.vocabulary import is_pipeline_factory
from vllm_lint.python.semantics import ROUTE_VERBS

FASTAPI_VERBS = frozenset({"get", "post", "put", "patch", "delete", "options", "head", "api_route", "websocket"})
_FLASK_REASON = (
    "Flask cannot await the engine (each async view runs in a fresh event loop, which one AsyncLLMEngine "
    "cannot serve); port the app to FastAPI, or serve the model with `vllm serve`"
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


def _snippet(module: cst.Module, node: cst.CSTNode) -> str:
    code = " ".join(module.code_for_node(node).split())
    return code if len(code) <= 60 else code[:57] + "..."


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

    def refuse(self, reason: str) -> Refusal:
        return Refusal(reason)

    # -- the model object ------------------------------------------------------

    def model_site(self) -> tuple[ModelKind, CallSite]:
        pipelines = [s for s in self.model.calls if is_pipeline_factory(self.semantics.callee(s.node))]
        llms = [s for s in self.model.calls if self.semantics.callee(s.node) == "vllm.LLM"]
        if pipelines and llms:
            raise self.refuse("the module loads both a transformers pipeline and a vLLM LLM")
        sites = pipelines or llms
        if not sites:
            raise self.refuse("the model object is not built in this module")
        if len(sites) > 1:
            raise self.refuse(f"the module builds {len(sites)} models; one engine per GPU is what the rewrite produces")
        return (ModelKind.PIPELINE if pipelines else ModelKind.LLM), sites[0]

    def binding(self, kind: ModelKind, site: CallSite) -> str:
        what = "pipeline" if kind is ModelKind.PIPELINE else "LLM"
        if site.in_main_guard:
            raise self.refuse(f"the {what} is built under `if __name__ == \"__main__\":`")
        statement = site.statement
        held_on = [t for t in site.assigned_to if "." in t]
        if held_on:
            raise self.refuse(
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
            raise self.refuse(f"the {what} is not assigned to one plain variable (`{_snippet(self.module, statement)}`)")
        return statement.body[0].targets[0].target.value

    def placement(self, kind: ModelKind, site: CallSite, name: str, calls: list[HandlerCall]) -> EngineInLifespan | EngineInStartupHook:
        what = "pipeline" if kind is ModelKind.PIPELINE else "LLM"
        function = site.function
        if function is None:
            if not any(statement is site.statement for statement in self.module.body):
                raise self.refuse(f"the {what} is built inside an `if`/`try` block at module level")
            return self.lifespan_placement(site.statement, calls)
        handler = self.semantics.enclosing_handler(function)
        if handler is not None:
            raise self.refuse(f"the {what} is built per request inside {handler.function.name}() (VLL104); build it once at start-up first")
        if kind is ModelKind.LLM and function.parent is None and not function.is_method and self.semantics.is_startup_hook(function) and name in function.global_names:
            return EngineInStartupHook()
        raise self.refuse(f"the {what} is built inside {function.name}(), not at module level or in a startup hook")

    # -- the app ---------------------------------------------------------------

    def lifespan_placement(self, model_statement: cst.SimpleStatementLine, calls: list[HandlerCall]) -> EngineInLifespan:
        owners = set()
        for handler in {id(c.handler): c.handler for c in calls}.values():
            owner = _route_owner(handler)
            if owner is None:
                raise self.refuse(f"{handler.name.value}() is not registered with an @app.<verb>(...) decorator, so the app that needs the lifespan handler is unknown")
            owners.add(owner)
        if len(owners) != 1:
            raise self.refuse("the handlers are registered on more than one app or router")
        app_name = owners.pop()
        if "." in app_name:
            raise self.refuse(f"the routes are on {app_name}, not on an app created in this module")
        body = list(self.module.body)
        model_index = body.index(model_statement)
        uses = occurrences(self.module, [app_name])[app_name]
        bindings = self.model.bindings.get((None, app_name), [])
        if not bindings:
            if any(not _is_route_decorator_owner(o) for o in uses):
                raise self.refuse(f"`{app_name}` is used here but not created by FastAPI(...) in this module")
            for o in uses:
                verb = o.parent.attr.value if isinstance(o.parent, cst.Attribute) else ""
                if verb not in FASTAPI_VERBS:
                    raise self.refuse(f"`@{app_name}.{verb}(...)` is not a FastAPI route decorator")
            first_use = min(_top_level_index(body, o) for o in uses)
            anchor = body[min(model_index, first_use)]
            return EngineInLifespan(model_statement, anchor, app_name, None)
        if len(bindings) != 1:
            raise self.refuse(f"`{app_name}` is assigned more than once")
        app_call = bindings[0].call
        callee = self.semantics.callee(app_call)
        if callee == "fastapi.APIRouter":
            raise self.refuse(f"the routes are on an APIRouter (`{app_name}`); the app that would run the engine's lifespan is not in this module")
        if callee != "fastapi.FastAPI":
            raise self.refuse(f"`{app_name}` is not created by FastAPI(...) in this module")
        app_site = self.sites[id(app_call)]
        if app_site.function is not None or not any(s is app_site.statement for s in body):
            raise self.refuse(f"`{app_name} = FastAPI(...)` is not a plain module-level statement")
        keywords = _keyword_args(app_call)
        if any(arg.star for arg in app_call.args):
            raise self.refuse("FastAPI(...) gets **kwargs that may already hold a lifespan handler")
        for taken in ("lifespan", "on_startup", "on_shutdown"):
            if taken in keywords:
                raise self.refuse(f"the app already has {taken}=...; add the engine to it by hand")
        for o in uses:
            attribute = o.parent.attr.value if isinstance(o.parent, cst.Attribute) else None
            if attribute in ("on_event", "add_event_handler"):
                raise self.refuse(
                    f"`{_snippet(self.module, o.parent)}` registers an event hook, which FastAPI stops running once a lifespan handler is given"
                )
            if attribute == "router":
                raise self.refuse(f"`{_snippet(self.module, o.parent)}` is used directly and may hold start-up hooks of its own")
        anchor = body[min(model_index, body.index(app_site.statement))]
        return EngineInLifespan(model_statement, anchor, app_name, app_call)

    # -- uses of the model object ----------------------------------------------

    def handler_of(self, call: cst.Call, what: str) -> FunctionInfo:
        site = self.sites[id(call)]
        shown = _snippet(self.module, call)
        if site.function is None or site.in_main_guard:
            raise self.refuse(f"`{shown}` runs outside a request handler")
        handler = self.semantics.handlers.get(site.function)
        if handler is None:
            enclosing = self.semantics.enclosing_handler(site.function)
            if enclosing is not None:
                raise self.refuse(f"`{shown}` is in a function nested in {enclosing.function.name}(); only calls written in the handler itself are rewritten")
            raise self.refuse(f"`{shown}` runs in {site.function.name}(), which is not a request handler")
        if not handler.direct:
            raise self.refuse(f"the {what} is called in helper {site.function.name}(), not in the handler itself; only handlers are made async")
        if handler.framework == "flask":
            raise self.refuse(_FLASK_REASON)
        if handler.framework not in (None, "fastapi"):
            raise self.refuse(f"{handler.framework} handlers are not rewritten (the rewrite produces a FastAPI server)")
        function = site.function
        if function.is_method or function.parent is not None:
            raise self.refuse(f"{function.name}() is a method or nested function; only module-level handlers are rewritten")
        return function

    def check_hoistable(self, call: cst.Call, occurrence: Occurrence, call_depth: int) -> cst.SimpleStatementLine:
        """The statement the call is in, when evaluating the call just before it changes nothing else."""
        shown = _snippet(self.module, call)
        parents = occurrence.parents[: len(occurrence.parents) - call_depth]  # the call's own parents
        small_index = next((i for i in range(len(parents) - 1, -1, -1) if isinstance(parents[i], cst.BaseSmallStatement)), None)
        compound = next((p for p in reversed(parents) if isinstance(p, cst.BaseCompoundStatement)), None)
        if small_index is None or (compound is not None and parents.index(compound) > small_index):
            raise self.refuse(f"`{shown}` is part of a compound statement's header (if/for/while/with)")
        small = parents[small_index]
        line = parents[small_index - 1]
        if not isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
            raise self.refuse(f"`{shown}` is in a statement the rewrite does not handle")
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not isinstance(parents[small_index - 2], cst.IndentedBlock):
            raise self.refuse(f"`{shown}` shares its line with other statements")
        between = parents[small_index + 1 :]
        if any(isinstance(p, cst.Await) for p in between):
            raise self.refuse(f"`{shown}` is awaited, but it returns no awaitable")
        if any(isinstance(p, _NO_SIDE_EFFECTS_BETWEEN) for p in between):
            raise self.refuse(f"`{shown}` is evaluated conditionally or repeatedly (inside a lambda, comprehension, `if` expression or `and`/`or`)")
        ancestors = {id(p) for p in between}
        for node in _evaluations(small, skip=call):
            if id(node) not in ancestors:
                raise self.refuse(
                    f"`{shown}` shares its statement with `{_snippet(self.module, node)}`; moving the call out of "
                    "the statement could change which of the two runs first"
                )
        return line

    def pipeline_call(self, occurrence: Occurrence, construction: dict[str, cst.BaseExpression], full_text_default: bool) -> HandlerCall:
        call = occurrence.parent
        if not isinstance(call, cst.Call) or call.func is not occurrence.name:
            raise self.refuse(f"`{_snippet(self.module, occurrence.parent)}` uses the pipeline object other than by calling it")
        function = self.handler_of(call, "pipeline")
        statement = self.check_hoistable(call, occurrence, 1)
        if any(arg.star for arg in call.args):
            raise self.refuse(f"`{_snippet(self.module, call)}` passes *args/**kwargs whose keys are unknown")
        positional = _positional(call)
        keywords = _keyword_args(call)
        prompt = positional[0].value if positional else (keywords["text_inputs"].value if "text_inputs" in keywords else None)
        if prompt is None or len(positional) > 1:
            raise self.refuse(f"`{_snippet(self.module, call)}` does not pass exactly one input")
        if not StringTyping(self.model, function).is_one_string(prompt):
            raise self.refuse(
                f"cannot tell that the pipeline input `{_snippet(self.module, prompt)}` is one string "
                "(a list of prompts or chat messages returns another shape); annotate it `str`"
            )
        settings = [(k, v) for k, v in construction.items() if k in GENERATION_KEYWORDS]
        full_text = full_text_default
        for name, arg in keywords.items():
            if name == "text_inputs":
                continue
            if name == "return_full_text":
                full_text = _literal_flag(arg.value)
                if full_text is None:
                    raise self.refuse("return_full_text= is not a literal True/False, so the response shape is unknown")
                continue
            settings.append((name, arg.value))
        try:
            sampling = sampling_keywords(self.module, settings)
        except NotCarried as exc:
            raise self.refuse(str(exc)) from None
        shape = ResultShape.PIPELINE_FULL_TEXT if full_text else ResultShape.PIPELINE_NEW_TEXT
        return HandlerCall(call, statement, function.node, prompt, sampling, call, shape)

    def llm_generate_call(self, occurrence: Occurrence) -> HandlerCall:
        attribute, call = occurrence.ancestor(1), occurrence.ancestor(2)
        if not (isinstance(attribute, cst.Attribute) and attribute.value is occurrence.name and isinstance(call, cst.Call) and call.func is attribute):
            raise self.refuse(f"`{_snippet(self.module, attribute)}` uses the LLM object other than by calling llm.generate(...)")
        method = attribute.attr.value
        if method != "generate":
            advice = " (not a vLLM method: see VLL303)" if method == "generate_async" else ""
            raise self.refuse(f"`{_snippet(self.module, call)}` calls LLM.{method}(){advice}; only LLM.generate() maps onto the engine")
        function = self.handler_of(call, "LLM")
        statement = self.check_hoistable(call, occurrence, 2)
        if any(arg.star for arg in call.args):
            raise self.refuse(f"`{_snippet(self.module, call)}` passes *args/**kwargs whose keys are unknown")
        positional = _positional(call)
        keywords = _keyword_args(call)
        if len(positional) > 2:
            raise self.refuse(f"`{_snippet(self.module, call)}` passes more arguments than prompts and sampling params")
        prompts = positional[0].value if positional else (keywords.pop("prompts").value if "prompts" in keywords else None)
        sampling = positional[1].value if len(positional) > 1 else (keywords.pop("sampling_params").value if "sampling_params" in keywords else None)
        typing = StringTyping(self.model, function)
        if isinstance(prompts, cst.List) and len(prompts.elements) == 1 and isinstance(prompts.elements[0], cst.Element):
            prompt = prompts.elements[0].value
        else:
            prompt = prompts
        if prompt is None or not typing.is_one_string(prompt):
            raise self.refuse(
                f"cannot tell that `{_snippet(self.module, call)}` generates for one prompt string; a batch "
                "needs one engine.generate() per prompt"
            )
        if isinstance(sampling, (cst.List, cst.Tuple)):
            raise self.refuse("a list of per-prompt SamplingParams has no single-request equivalent")
        extra = []
        for name, arg in keywords.items():
            if name in _LLM_GENERATE_DROPPED:
                continue
            if name not in _LLM_GENERATE_CARRIED:
                raise self.refuse(f"LLM.generate(..., {name}=...) has no AsyncLLMEngine.generate() equivalent here")
            extra.append((name, arg.value))
        parent = occurrence.ancestor(3)
        if isinstance(parent, cst.Subscript) and parent.value is call and _is_index_zero(parent):
            replaced, shape = parent, ResultShape.REQUEST_OUTPUT
        else:
            replaced, shape = call, ResultShape.REQUEST_OUTPUT_LIST
        return HandlerCall(call, statement, function.node, prompt, sampling, replaced, shape, tuple(extra))

    def classify_llm_use(self, occurrence: Occurrence, binding_statement: cst.SimpleStatementLine) -> HandlerCall | None:
        """A HandlerCall for ``llm.generate(...)``; None for uses that keep working on an engine object."""
        parent = occurrence.parent
        if isinstance(parent, cst.AssignTarget):
            assign = occurrence.ancestor(2)
            if assign is binding_statement.body[0]:
                return None
            if isinstance(assign, cst.Assign) and occurrence.function is None and _is_none(assign.value):
                return None  # ``llm = None`` before start-up
            raise self.refuse(f"`{_snippet(self.module, assign)}` assigns the LLM variable again")
        if isinstance(parent, cst.NameItem):
            return None  # ``global llm``
        if isinstance(parent, cst.Comparison) and _compares_with_none(parent):
            return None  # ``llm is None``: still true before start-up, false after
        if isinstance(parent, (cst.If, cst.While)) and parent.test is occurrence.name:
            return None
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return None
        return self.llm_generate_call(occurrence)

    # -- engine arguments --------------------------------------------------------

    def pipeline_construction(self, call: cst.Call) -> tuple[tuple[tuple[str, str], ...], dict[str, cst.BaseExpression], bool]:
        """(AsyncEngineArgs keywords, generation defaults given to the pipeline, return_full_text)."""
        if any(arg.star for arg in call.args):
            raise self.refuse("pipeline(...) gets *args/**kwargs whose keys are unknown")
        positional = _positional(call)
        keywords = _keyword_args(call)
        task_expr = positional[0].value if positional else (keywords["task"].value if "task" in keywords else None)
        task = self.semantics.fold(task_expr) if task_expr is not None else None
        if task is None or task.value != "text-generation":
            shown = repr(task.value) if task is not None else "not given"
            raise self.refuse(f"the pipeline task is {shown}; only \"text-generation\" maps onto vLLM's generate()")
        model_expr = positional[1].value if len(positional) > 1 else (keywords["model"].value if "model" in keywords else None)
        if len(positional) > 2:
            raise self.refuse("pipeline(...) gets more positional arguments than task and model")
        if model_expr is None:
            raise self.refuse("the pipeline names no model (it would load the task's default model)")
        if not self._is_model_name(model_expr):
            raise self.refuse(f"cannot tell that model=`{_snippet(self.module, model_expr)}` is a model name or path (a model object loaded in Python cannot be handed to the engine)")
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
                    raise self.refuse("the pipeline's tokenizer= is an object, not a name or path")
                engine.append((name, code(value)))
            elif name in _PIPELINE_ENGINE_KEYWORDS:
                engine.append((name, code(value)))
            elif name in ("torch_dtype", "dtype"):
                engine.append(("dtype", self._dtype(value)))
            elif name in OUTPUT_OPTIONS:
                flag = _literal_flag(value)
                if flag is None:
                    raise self.refuse(f"the pipeline's {name}= is not a literal True/False, so the response shape is unknown")
                full_text = flag
            elif name in GENERATION_KEYWORDS:
                if self.semantics.fold(value) is None:
                    raise self.refuse(f"the pipeline's {name}= is not a constant, so it cannot move into the handler")
                generation[name] = value
            else:
                raise self.refuse(f"the pipeline keyword {name}= has no AsyncEngineArgs equivalent")
        engine += [
            ("gpu_memory_utilization", f"{SAFE_GPU_MEMORY_UTILIZATION:.2f}"),
            ("max_model_len", str(self.ctx.settings.fix_max_model_len)),
            ("enable_prefix_caching", "True"),
        ]
        return tuple(engine), generation, full_text

    def check_llm_construction(self, call: cst.Call) -> None:
        if any(arg.star for arg in call.args):
            raise self.refuse("LLM(...) gets *args/**kwargs that may hold arguments AsyncEngineArgs lacks")
        if len(_positional(call)) > 1:
            raise self.refuse("LLM(...) gets positional arguments beyond the model")
        known = self.ctx.api.async_engine_args
        for name in _keyword_args(call):
            if name not in known:
                raise self.refuse(f"LLM keyword {name}= is not an AsyncEngineArgs field")

    def _is_model_name(self, expr: cst.BaseExpression) -> bool:
        value = self.semantics.fold(expr)
        if value is not None:
            return isinstance(value.value, str)
        if isinstance(expr, cst.Call):
            return self.semantics.callee(expr) in ("os.getenv", "os.environ.get") or dotted_name(expr.func) in ("os.getenv", "os.environ.get")
        if isinstance(expr, cst.Subscript):
            return (self.semantics.qualify(expr.value) or dotted_name(expr.value)) == "os.environ"
        return False

    def _dtype(self, expr: cst.BaseExpression) -> str:
        qualified = self.semantics.qualify(expr) or ""
        if qualified.startswith("torch.") and qualified[6:] in _TORCH_DTYPES:
            return repr(_TORCH_DTYPES[qualified[6:]]).replace("'", '"')
        value = self.semantics.fold(expr)
        if value is not None and value.value in _DTYPE_STRINGS:
            return self.module.code_for_node(expr)
        raise self.refuse(f"the pipeline's dtype `{_snippet(self.module, expr)}` has no known vLLM dtype name")

    # -- handlers ----------------------------------------------------------------

    def handlers_made_async(self, calls: list[HandlerCall]) -> tuple[cst.FunctionDef, ...]:
        sync = {id(c.handler): c.handler for c in calls if c.handler.asynchronous is None}
        if not sync:
            return ()
        uses = occurrences(self.module, {h.name.value for h in sync.values()})
        for handler in sync.values():
            name = handler.name.value
            for o in uses[name]:
                if not _registers_route(o):
                    raise self.refuse(f"{name}() is also used as `{_snippet(self.module, o.parent)}`; as an async def it would hand that caller a coroutine")
            if _yields(handler):
                raise self.refuse(f"{name}() is a generator; making it async would change what it returns")
            blocking = self._blocking_call_in(handler)
            if blocking is not None:
                raise self.refuse(
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
    uses = occurrences(ctx.module, [name])[name]
    calls: list[HandlerCall] = []
    engine_arguments: tuple[tuple[str, str], ...] = ()
    if kind is ModelKind.PIPELINE:
        engine_arguments, generation, full_text = analysis.pipeline_construction(site.node)
        for o in uses:
            if isinstance(o.parent, cst.AssignTarget) and o.ancestor(2) is statement.body[0]:
                continue
            calls.append(analysis.pipeline_call(o, generation, full_text))
    else:
        analysis.check_llm_construction(site.node)
        for o in uses:
            handler_call = analysis.classify_llm_use(o, statement)
            if handler_call is not None:
                calls.append(handler_call)
    if not calls:
        raise Refusal("the model object is never called in a request handler")
    seen: set[int] = set()
    for c in calls:
        if id(c.statement) in seen:
            raise Refusal(f"one statement calls the model twice (`{_snippet(ctx.module, c.statement)}`)")
        seen.add(id(c.statement))
    placement = analysis.placement(kind, site, name, calls)
    return ServerPlan(
        kind=kind,
        model_name=name,
        model_call=site.node,
        engine_arguments=engine_arguments,
        placement=placement,
        calls=tuple(calls),
        handlers_made_async=analysis.handlers_made_async(calls),
    )


# -- small shape tests -----------------------------------------------------------


def _route_owner(function: cst.FunctionDef) -> str | None:
    """``app`` for ``@app.post("/x")`` (other decorators, such as rate limiters, are skipped)."""
    for decorator in function.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ROUTE_VERBS:
            return dotted_name(expr.func.value)
    return None


def _is_route_decorator_owner(o: Occurrence) -> bool:
    attribute, call, decorator = o.ancestor(1), o.ancestor(2), o.ancestor(3)
    return (
        isinstance(attribute, cst.Attribute)
        and attribute.value is o.name
        and isinstance(call, cst.Call)
        and call.func is attribute
        and isinstance(decorator, cst.Decorator)
    )


def _top_level_index(body: list[cst.BaseStatement], o: Occurrence) -> int:
    ids = {id(p) for p in o.parents}
    return next(i for i, statement in enumerate(body) if id(statement) in ids)


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
    """Calls, awaits and yields in a statement, not descending into one skipped call."""

    def __init__(self, skip: cst.Call) -> None:
        super().__init__()
        self.skip = skip
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.skip:
            return False
        if isinstance(node, (cst.Call, cst.Await, cst.Yield)):
            self.found.append(node)
        return True


def _evaluations(statement: cst.CSTNode, skip: cst.Call) -> list[cst.CSTNode]:
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
