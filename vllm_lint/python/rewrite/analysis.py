"""Decide whether a server module can be rewritten onto AsyncLLMEngine, and how.

The rewrite is offered only when every use of the model object is understood:
it is built once (at module level, under ``if __name__ == "__main__":`` before
the app is served, in a start-up hook, or on ``self`` in a deployment's or
servicer's ``__init__``: see ``placement``), its arguments map onto
AsyncEngineArgs (``construction``), and every use is a call in a handler (or
in a helper the handlers call, made async up to them: ``helpers``) that becomes
one engine request, or a use that works the same on the engine (``calls``). A
model on ``self`` of a plain class is built where the class's one object is.
Anything else raises Refusal with the reason, which the finding's message then
carries.
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.context import PyContext
from vllm_lint.python.model import AttributeRead, CallSite, ClassInfo, FunctionInfo, dotted_name
from vllm_lint.python.rewrite.alternatives import exclusive_block, is_binding_of, same_variable
from vllm_lint.python.rewrite.callers import Callers
from vllm_lint.python.rewrite.calls import ModelCalls, config_probe
from vllm_lint.python.rewrite.construction import EngineConstruction
from vllm_lint.python.rewrite.entries import Entry, entry_uses, held_on_object, literal_entry, subscript_entry
from vllm_lint.python.rewrite.facts import ModuleFacts, method_and_class
from vllm_lint.python.rewrite.helpers import AsyncHelpers
from vllm_lint.python.rewrite.hf_generate import MODEL_HOUSEKEEPING, device_print_line, housekeeping_line
from vllm_lint.python.rewrite.lit_stream import LitServeStreams
from vllm_lint.python.rewrite.names import Occurrence, attribute_occurrences, occurrences
from vllm_lint.python.rewrite.placement import EnginePlacement
from vllm_lint.python.rewrite.prompts import rebound_names
from vllm_lint.python.rewrite.rebinding import earlier_value_uses
from vllm_lint.python.rewrite.lifespan import lifespan_release
from vllm_lint.python.rewrite.plan import CallMode, Construction, HandlerCall, ModelKind, Refusal, ServerPlan
from vllm_lint.python.rewrite.script import check_script
from vllm_lint.python.rewrite.served import LITSERVE_API, MODAL_CLASS, is_modal_lifecycle, served_class_kind
from vllm_lint.python.rewrite.shapes import directly_in, is_none, named_params, only_call, snippet
from vllm_lint.python.rewrite.streamer import ThreadedStreams
from vllm_lint.python.vocabulary import HF_GENERATIVE_MODEL, is_pipeline_factory, thread_target

class _Analysis(ModuleFacts):
    """The model object: where it is built, what holds it, and the handlers that become async."""

    def registered(self, function: cst.FunctionDef) -> bool:
        """A function the framework calls for a request, not a helper of one."""
        handler = next((h for f, h in self.semantics.handlers.items() if f.node is function), None)
        return handler is not None and handler.direct

    def model_site(self) -> tuple[ModelKind, CallSite, tuple[CallSite, ...]]:
        """The model's construction, and the others that build it instead on other paths (alternatives)."""
        pipelines = [s for s in self.model.calls if is_pipeline_factory(self.semantics.callee(s.node))]
        llms = [s for s in self.model.calls if self.semantics.callee(s.node) == "vllm.LLM"]
        hf_models = [s for s in self.model.calls if HF_GENERATIVE_MODEL.match(self.semantics.callee(s.node) or "")]
        if len(pipelines) == 1 and hf_models and all(self._only_fed_to(s, pipelines[0].node) for s in hf_models):
            hf_models = []  # the pipeline wraps the model the module loaded: the engine loads its name
        found = [(kind, sites) for kind, sites in ((ModelKind.PIPELINE, pipelines), (ModelKind.LLM, llms), (ModelKind.HF_MODEL, hf_models)) if sites]
        if len(found) > 1:
            raise Refusal(f"the module loads both a {found[0][0].value} and a {found[1][0].value}; one engine per GPU is what the rewrite produces; serve each model from a server of its own (then each rewrites), or load the one the handlers generate with")
        if not found:
            raise Refusal("the model object is not built in this module")
        kind, sites = found[0]
        if len(sites) > 1 and not self._alternatives(kind, sites):
            raise Refusal(
                f"the module builds {len(sites)} models; one engine per GPU is what the rewrite produces: build one model "
                "once at start-up (a server per model, if several are served), then the rewrite applies"
                + ("; LLMs assigned to one variable by every branch of an if/else, or by a try and each of its excepts "
                   "(a fallback), build one and are rewritten" if kind is ModelKind.LLM else "")
            )
        return kind, sites[0], tuple(sites[1:])

    def _alternatives(self, kind: ModelKind, sites: list[CallSite]) -> bool:
        """LLMs built into one variable by the branches of one if/else or try/except: one model at run time."""
        first = sites[0].statement
        assign = first.body[0] if isinstance(first, cst.SimpleStatementLine) and first.body else None
        target = assign.targets[0].target if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
        return kind is ModelKind.LLM and isinstance(target, cst.Name) and same_variable(sites, target.value) \
            and exclusive_block(self.module, sites) is not None

    def _only_fed_to(self, load: CallSite, pipeline: cst.Call) -> bool:
        """The model ``load`` builds is held in a module variable that only ``pipeline``'s model= reads (besides
        ``.eval()``-like lines, which go with it)."""
        statement = load.statement
        if load.function is not None or not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        assign = statement.body[0]
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name)
                and _loaded_value(assign.value, ModelKind.HF_MODEL) is load.node):
            return False
        name = assign.targets[0].target.value
        model_arg = next((a.value for a in pipeline.args if a.keyword is not None and a.keyword.value == "model"), None)
        for o in occurrences(self.module, [name])[name]:
            if o.name is model_arg or housekeeping_line(o) is not None:
                continue
            if isinstance(o.parent, cst.AssignTarget) and o.ancestor(2) is assign:
                continue
            return False
        return True

    def fed_model_lines(self, pipeline: cst.Call) -> list[cst.SimpleStatementLine]:
        """The lines of a model the pipeline wraps (its load, its ``.eval()``-like lines), which go: the engine
        loads the model itself."""
        model_arg = next((a.value for a in pipeline.args if a.keyword is not None and a.keyword.value == "model"), None)
        if not isinstance(model_arg, cst.Name):
            return []
        lines: list[cst.SimpleStatementLine] = []
        for o in occurrences(self.module, [model_arg.value])[model_arg.value]:
            line: cst.CSTNode | None = housekeeping_line(o)
            if line is None and isinstance(o.parent, cst.AssignTarget):
                line = o.ancestor(3)
            if isinstance(line, cst.SimpleStatementLine) and all(line is not seen for seen in lines):
                lines.append(line)
        return lines

    def entry(self, kind: ModelKind, site: CallSite) -> Entry | None:
        """The dict entry that holds the model (``MODELS["llm"] = LLM(...)``, ``MODELS = {"llm": LLM(...)}``), if so."""
        statement = site.statement
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Assign)
                and len(statement.body[0].targets) == 1):
            return None
        assign = statement.body[0]
        if _loaded_value(assign.value, kind) is site.node:
            return subscript_entry(assign.targets[0].target)
        elements = assign.value.elements if isinstance(assign.value, cst.Dict) else ()
        element = next((e for e in elements if isinstance(e, cst.DictElement) and _loaded_value(e.value, kind) is site.node), None)
        return literal_entry(assign, element.value, kind.what) if element is not None else None

    def binding(self, kind: ModelKind, site: CallSite) -> str:
        """The variable that holds the model: a plain name, or ``self.x`` set in a class's ``__init__``."""
        what = kind.what
        statement = site.statement
        if not (
            isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Assign)
            and _loaded_value(statement.body[0].value, kind) is site.node
            and len(statement.body[0].targets) == 1
            and isinstance(statement.body[0].targets[0].target, (cst.Name, cst.Attribute))
        ):
            raise Refusal(f"the {what} is not assigned to one plain variable (`{snippet(self.module, statement)}`)")
        target = statement.body[0].targets[0].target
        if isinstance(target, cst.Name):
            return target.value
        held_on = dotted_name(target) or snippet(self.module, target)
        function = site.function
        # A LitServe API builds its model in setup(), which LitServe calls once per worker.
        served = served_class_kind(self.semantics, function) if function is not None else None
        builder = "setup" if served == LITSERVE_API else "__init__"
        if served == MODAL_CLASS and function is not None and is_modal_lifecycle(self.semantics, function, "enter"):
            builder = function.name  # Modal runs a class's @modal.enter() methods once per container
        if builder == "__init__" and function is not None and function.name != builder and self.loader_called_by_init(function):
            builder = function.name  # ``self.load_model()`` at the top of __init__: run once, as __init__ is
        if not (
            held_on.startswith("self.") and held_on.count(".") == 1 and function is not None and function.is_method
            and function.name == builder and function.class_info is not None
        ):
            raise Refusal(
                f"the {what} is held on an object (`{held_on}`); the rewrite handles a model held in a module "
                "variable, on `self` in the __init__ of a plain class the module builds once (or in a method only its "
                "__init__ calls, as a statement of its own), a Ray Serve deployment, "
                "BentoML service or gRPC servicer, in a LitServe API's setup(), or in a Modal class's @modal.enter() method"
            )
        if not directly_in(function.node, statement):
            raise Refusal(f"the {what} is built inside a block of {builder}(); build it at the top of {builder}()")
        return held_on

    def loader_called_by_init(self, method: FunctionInfo) -> bool:
        """``method`` is a plain method of a class that its ``__init__`` calls once, as a statement of its own
        block (``self.load_model()``), and nothing else calls or reads: it runs once per object, as __init__ does."""
        klass = method.class_info
        init = klass.methods.get("__init__") if klass is not None and method.is_method else None
        if klass is None or init is None or method.node.decorators or served_class_kind(self.semantics, method) is not None:
            return False
        uses = attribute_occurrences(klass.node, "self", method.name)
        if len(uses) != 1 or uses[0].function is not init.node:
            return False
        call, statement = uses[0].ancestor(1), uses[0].ancestor(3)
        if not (isinstance(call, cst.Call) and call.func is uses[0].name and not call.args
                and isinstance(statement, cst.SimpleStatementLine) and only_call(statement) is call and directly_in(init.node, statement)):
            return False
        callers = Callers(self.ctx)
        if callers.framework_owned(klass):
            return True
        return not attribute_occurrences(self.module, callers.instance(klass).name, method.name)

    def model_uses(self, name: str, site: CallSite) -> list[Occurrence]:
        """Every use of the model's variable; for ``self.x``, in its class, which must be the only place."""
        if "." not in name:
            return occurrences(self.module, [name])[name]
        attribute = name.split(".", 1)[1]
        method, klass = method_and_class(site.function)
        uses = attribute_occurrences(klass.node, "self", attribute)
        through_object = self._read_through_object(klass, attribute)
        inside = {id(o.name) for o in (*uses, *through_object)}
        uses = [o for o in uses if not self._placeholder(o, method, site)] + through_object
        for read in self.model.attribute_reads:
            if read.node.attr.value == attribute and id(read.node) not in inside and not _other_typed_parameter(read, klass.node):
                raise Refusal(f"`{snippet(self.module, read.node)}` reads the model's attribute from outside {klass.name}")
        return uses

    def _read_through_object(self, klass: ClassInfo, attribute: str) -> list[Occurrence]:
        """``generator.llm`` outside the class, ``generator`` the one object of a plain class the module builds
        (whose construction moves into the start-up hook): the engine is read from the same object."""
        callers = Callers(self.ctx)
        if callers.framework_owned(klass):
            return []
        owners = [r.node.value for r in self.model.attribute_reads if r.node.attr.value == attribute]
        if not any(isinstance(owner, cst.Name) and owner.value not in ("self", "cls") for owner in owners):
            return []
        try:
            instance = callers.instance(klass)
        except Refusal:
            return []  # reads outside the class refuse below, with the reason
        return attribute_occurrences(self.module, instance.name, attribute)

    def _placeholder(self, o: Occurrence, builder: FunctionInfo, site: CallSite) -> bool:
        """``self.llm = None`` in __init__ before the model is built (there, or by the loader __init__ calls):
        no request reaches the object before __init__ has finished, so none sees the placeholder."""
        klass = builder.class_info
        init = klass.methods.get("__init__") if klass is not None else None
        statement = o.ancestor(3)
        if init is None or o.function is not init.node or not isinstance(o.parent, cst.AssignTarget):
            return False
        assign = o.ancestor(2)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and is_none(assign.value) and directly_in(init.node, statement)):
            return False
        body = list(init.node.body.body)
        built_at = site.statement if builder is init else next(
            (s for s in body if (call := only_call(s)) is not None and isinstance(call.func, cst.Attribute)
             and call.func.attr.value == builder.name), None)
        order = [id(s) for s in body]
        return built_at is not None and id(built_at) in order and order.index(id(statement)) < order.index(id(built_at))

    def routes_without_calls(self, kind: ModelKind) -> tuple[FunctionInfo, ...]:
        """A FastAPI server that builds an LLM and never uses it (a file that ends before its handler calls it,
        say): the engine built at start-up in its place is as unused, so the routes of the app only say where."""
        handlers = [h for h in self.semantics.handlers.values() if h.direct]
        if kind is not ModelKind.LLM or not handlers or any(h.framework not in (None, "fastapi") or h.function.is_method or h.function.parent is not None for h in handlers):
            raise Refusal("the model object is never called in a request handler")
        return tuple(h.function for h in handlers)

    def handlers_made_async(self, handlers: list[cst.FunctionDef]) -> tuple[cst.FunctionDef, ...]:
        sync = {id(h): h for h in handlers if h.asynchronous is None}
        if not sync:
            return ()
        uses = occurrences(self.module, {h.name.value for h in sync.values()})
        checks = AsyncHelpers(self.ctx)
        for handler in sync.values():
            name = handler.name.value
            for o in uses[name]:
                if not _registers_route(o):
                    raise Refusal(f"{name}() is also used as `{snippet(self.module, o.parent)}`; as an async def it would hand that caller a coroutine")
            checks.check_made_async(handler, f"{name}()", "handler")
        return tuple(sync.values())


def plan_server_rewrite(ctx: PyContext) -> ServerPlan:
    """The plan for rewriting ``ctx``'s module, or Refusal with the reason."""
    analysis, calls_of, construction = _Analysis(ctx), ModelCalls(ctx), EngineConstruction(ctx)
    kind, site, alternatives = analysis.model_site()
    entry = analysis.entry(kind, site)
    name = entry.code if entry is not None else analysis.binding(kind, site)
    statement = site.statement
    assert isinstance(statement, cst.SimpleStatementLine)
    what = kind.what
    uses = entry_uses(ctx.module, entry, statement, what) if entry is not None else analysis.model_uses(name, site)
    if entry is None and "." not in name:  # a value the variable held before the model, used only before it is built, stays
        earlier = {id(o.name) for o in earlier_value_uses(ctx.module, statement, uses, what)}
        uses = [o for o in uses if id(o.name) not in earlier]
    calls: list[HandlerCall] = []
    kept: list[Occurrence] = []  # uses that keep working on the engine object
    engine_arguments: tuple[tuple[str, str], ...] = ()
    generation: dict[str, cst.BaseExpression] = {}
    full_text = True
    removed_lines: list[cst.SimpleStatementLine] = []
    default_model: tuple[str, int] | None = None
    if kind is ModelKind.PIPELINE:
        engine_arguments, generation, full_text = construction.pipeline_construction(site.node)
        if not any(keyword == "model" for keyword, _ in engine_arguments):  # pipeline("text-generation") alone
            default_model = ("text-generation", construction.default_max_model_len())
        removed_lines += analysis.fed_model_lines(site.node) if any(HF_GENERATIVE_MODEL.match(ctx.semantics.callee(s.node) or "") for s in ctx.model.calls) else []
    spread: frozenset[str] = frozenset()
    if kind is ModelKind.LLM:
        spread = construction.check_llm_construction(site.node)
    others = tuple(Construction(a.node, a.statement, construction.check_llm_construction(a.node)) for a in alternatives
                   if isinstance(a.statement, cst.SimpleStatementLine))
    uses = [o for o in uses if not is_binding_of(o, [a.statement for a in others])]
    if kind is ModelKind.PIPELINE:
        lit, threaded = LitServeStreams(ctx), ThreadedStreams(ctx)
        streams = [c for o in uses if (c := lit.lit_stream(o, kind, generation) or threaded.threaded_stream(o, generation)) is not None]
        taken = {id(line) for c in streams for line in c.removed}
        uses = [o for o in uses if not any(id(p) in taken for p in o.parents)]  # e.g. the streamer's pipe.tokenizer
        calls.extend(streams)
    if kind is ModelKind.HF_MODEL:
        construction.check_decoder_only(site.node)  # before the generate calls, whose own refusals would mislead
        uses, removed_lines = _without_housekeeping(uses, ctx.module)
        generates = [calls_of.hf_generate_call(o) for o in uses if _calls_generate(o)]
        generates += [c for o in uses if (c := LitServeStreams(ctx).lit_stream(o, kind, {})) is not None]
        taken = {id(line) for c in generates for line in (*c.removed, *(c.lit.unplaced if c.lit else ()))}
        uses = [o for o in uses if not _calls_generate(o) and not any(id(p) in taken for p in o.parents)]  # ``.to(model.device)``
        calls.extend(generates)
        engine_arguments = construction.hf_model_construction(site.node, generates)
    default_params = [params for o in uses if (params := _default_params_call(o, kind)) is not None]
    uses = [o for o in uses if _default_params_call(o, kind) is None]
    # ``llm = None`` after the app lifespan's yield (the engine's shutdown goes before it); ``llm.llm_engine.lora_config``
    releases = [line for o in uses if (line := lifespan_release(ctx.semantics, o, site.function)) is not None]
    probes = [node for o in uses if kind is ModelKind.LLM and (node := config_probe(o)) is not None]
    uses = [o for o in uses if lifespan_release(ctx.semantics, o, site.function) is None and not (kind is ModelKind.LLM and config_probe(o))]
    for o in uses:
        if calls_of.keeps_working(o, statement, what):
            if not (isinstance(o.parent, cst.AssignTarget) and o.ancestor(2) is statement.body[0]):
                kept.append(o)
        elif kind is ModelKind.PIPELINE:
            calls.append(calls_of.pipeline_call(o, generation, full_text))
        elif kind is ModelKind.HF_MODEL and (thread := _thread_on_generate(ctx, o)) is not None:
            raise Refusal(
                f"`{snippet(ctx.module, thread)}` runs model.generate in a thread that feeds a TextIteratorStreamer; "
                "the rewrite streams it only in a LitServe predict(), and a pipeline's thread in a FastAPI route: iterate "
                "`engine.generate(prompt, SamplingParams(...), request_id)` in the handler by hand and send each output's new text"
            )
        elif kind is ModelKind.HF_MODEL:
            raise Refusal(
                f"`{snippet(ctx.module, o.parent)}` uses the model other than by model.generate(...); the engine "
                "that replaces it has no such attribute: remove that use (the engine places its inputs itself), or "
                "keep it on a model of its own"
            )
        else:
            calls.append(calls_of.llm_generate_call(o))
    routes = analysis.routes_without_calls(kind) if not calls else ()
    seen: set[int] = set()
    for c in calls:
        if c.statement is None:
            continue
        if id(c.statement) in seen:
            raise Refusal(f"one statement calls the model twice (`{snippet(ctx.module, c.statement)}`)")
        seen.add(id(c.statement))
    awaiting = list({id(c.function): c.function for c in calls if c.mode in (CallMode.AWAITED, CallMode.THREAD_STREAMED)}.values())
    helpers = AsyncHelpers(ctx)
    chain = helpers.chain(awaiting, what)
    helpers.check_bridged([c.function for c in calls if c.mode is CallMode.BRIDGED])
    registered = [f for f in awaiting if analysis.registered(f)]
    block = exclusive_block(ctx.module, [site, *alternatives]) if alternatives else None
    placement = EnginePlacement(ctx).placement(kind, site, name, calls, (*chain.handlers, *routes), block)
    for script, helper in chain.scripts:
        check_script(ctx, script, placement, helper)
    if kind.loaded_by_name and kept and site.function is None:
        shown = snippet(ctx.module, kept[0].parent)
        raise Refusal(f"`{shown}` uses the pipeline variable, which the engine built at start-up replaces")
    made_async = analysis.handlers_made_async([*registered, *(h.node for h in chain.handlers)])
    return ServerPlan(
        kind=kind,
        model_name=name,
        model_call=site.node,
        model_statement=statement,
        engine_arguments=engine_arguments,
        placement=placement,
        calls=tuple(calls),
        handlers_made_async=made_async,
        helpers_made_async=chain.helpers,
        awaited_calls=chain.awaited,
        renames_model=kind.loaded_by_name and site.function is None and entry is None,
        model_dict=entry.variable if entry is not None and entry.literal else None,
        instance=_instance_name(ctx, site, name),
        removed_lines=(*removed_lines, *chain.removed_lines),
        default_model=default_model,
        default_params_calls=tuple(default_params),
        spread_engine_keywords=spread,
        alternatives=others,
        releases=tuple(releases),
        config_probes=tuple(probes),
        scripts=tuple(script for script, _ in chain.scripts),
        offloaded_calls=helpers.offloaded_calls([*made_async, *chain.helpers]),
    )


def _registers_route(o: Occurrence) -> bool:
    """``app.add_api_route("/x", handler)``: FastAPI calls async handlers just as well."""
    arg, call = o.ancestor(1), o.ancestor(2)
    return (
        isinstance(arg, cst.Arg)
        and isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ("add_api_route", "add_api_websocket_route")
    )


def _instance_name(ctx: PyContext, site: CallSite, name: str) -> str | None:
    """The variable of the one object of a plain class whose __init__ builds the model on ``self``."""
    if not held_on_object(name):
        return None
    callers = Callers(ctx)
    _, klass = method_and_class(site.function)
    return None if callers.framework_owned(klass) else callers.instance(klass).name


def _loaded_value(value: cst.BaseExpression, kind: ModelKind) -> cst.BaseExpression:
    """A transformers model's load under its placement calls (``.from_pretrained(...).to("cuda").eval()``):
    the engine places and runs its model itself."""
    while kind is ModelKind.HF_MODEL and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in MODEL_HOUSEKEEPING and isinstance(value.func.value, cst.Call):
        value = value.func.value
    return value


def _calls_generate(o: Occurrence) -> bool:
    attribute, call = o.ancestor(1), o.ancestor(2)
    return isinstance(attribute, cst.Attribute) and attribute.attr.value == "generate" and isinstance(call, cst.Call) and call.func is attribute


def _other_typed_parameter(read: AttributeRead, klass: cst.ClassDef) -> bool:
    """``request.model`` where ``request`` is a parameter of the reading function annotated with a type that is
    neither ``klass`` nor one of its bases: another object's attribute of the same name, not the model."""
    owner, function = read.node.value, read.function
    if not isinstance(owner, cst.Name) or function is None:
        return False
    param = next((p for p in named_params(function.node) if p.name.value == owner.value), None)
    if param is None or param.annotation is None or owner.value in rebound_names(function.node):
        return False
    annotation = dotted_name(param.annotation.annotation)
    own = {klass.name.value, *((dotted_name(base.value) or "").rsplit(".", 1)[-1] for base in klass.bases)}
    return annotation is not None and annotation.rsplit(".", 1)[-1] not in own


def _thread_on_generate(ctx: PyContext, o: Occurrence) -> cst.Call | None:
    """The ``Thread(target=model.generate, ...)`` that ``o`` is the model of, if it is."""
    attribute, arg, thread = o.ancestor(1), o.ancestor(2), o.ancestor(3)
    if isinstance(attribute, cst.Attribute) and attribute.attr.value == "generate" and isinstance(arg, cst.Arg) \
            and isinstance(thread, cst.Call) and thread_target(ctx.semantics, thread) is attribute:
        return thread
    return None


def _without_housekeeping(uses: list[Occurrence], module: cst.Module) -> tuple[list[Occurrence], list[cst.SimpleStatementLine]]:
    """The uses other than ``model.eval()``-like lines and prints of the model's device, and those lines (each once)."""
    lines = [(o, housekeeping_line(o) or device_print_line(o, module)) for o in uses]
    removed = {id(line): line for _, line in lines if line is not None}
    return [o for o, line in lines if line is None], list(removed.values())


def _default_params_call(o: Occurrence, kind: ModelKind) -> cst.Call | None:
    """``llm.get_default_sampling_params()`` in a function (the engine exists by the time it runs)."""
    attribute, call = o.ancestor(1), o.ancestor(2)
    if kind is ModelKind.LLM and o.function is not None and isinstance(attribute, cst.Attribute) \
            and attribute.attr.value == "get_default_sampling_params" and isinstance(call, cst.Call) \
            and call.func is attribute and not call.args:
        return call
    return None
