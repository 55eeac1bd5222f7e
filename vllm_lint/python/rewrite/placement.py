"""Where the engine is built: a FastAPI lifespan handler (see ``lifespan``), in place (the app's own lifespan,
a class's ``__init__``), or, for a sync framework, the bridge's thread started where the model was loaded."""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.model import CallSite, ClassInfo, FunctionInfo, decorator_parts, dotted_name
from vllm_lint.python.rewrite.callers import Callers
from vllm_lint.python.rewrite.calls import SYNC_FRAMEWORKS
from vllm_lint.python.rewrite.entries import held_on_object, is_entry
from vllm_lint.python.rewrite.facts import ModuleFacts, method_and_class
from vllm_lint.python.rewrite.lifespan import HOOKED_FRAMEWORKS, handlers_app, plan_chainlit_lifespan, plan_hooked_lifespan, plan_lifespan
from vllm_lint.python.rewrite.names import names_in, occurrences
from vllm_lint.python.rewrite.gradio_inputs import GradioInputs
from vllm_lint.python.rewrite.plan import Bridge, BuiltInPlace, CallMode, HandlerCall, Lifespan, ModelKind, Refusal
from vllm_lint.python.rewrite.prompts import bound_names
from vllm_lint.python.rewrite.imports import imported_as
from vllm_lint.python.rewrite.served import LITSERVE_API, MODAL_CLASS, modal_cls_decorator, served_class_kind
from vllm_lint.python.rewrite.shapes import directly_in, keyword_args, literal_flag, only_call, positional_args, snippet, top_level_index_of

_SERVE_CALLS = frozenset({"uvicorn.run"})
# LitAPI options an async predict cannot keep: LitServe refuses async batching, and a streaming predict is
# a generator the rewrite produces only from a streamer's loop (then stream=True and an OpenAI spec are kept:
# LitServe streams an async generator's items, see ``lit_stream``); enable_async itself, if given, is the
# user's own choice.
_LITSERVE_NOT_ASYNC = frozenset({"max_batch_size", "batch_timeout", "stream", "enable_async", "loop", "spec"})
_OPENAI_SPECS = frozenset({"litserve.OpenAISpec", "litserve.specs.OpenAISpec", "litserve.specs.openai.OpenAISpec"})
_LITSERVERS = frozenset({"litserve.LitServer", "litserve.server.LitServer"})


class EnginePlacement(ModuleFacts):
    """Chooses where the engine is built, from where the model was built and the handlers that use it."""

    def placement(
        self, kind: ModelKind, site: CallSite, name: str, calls: list[HandlerCall], through_helpers: tuple[FunctionInfo, ...] = (),
        block: cst.CSTNode | None = None,
    ) -> Lifespan | BuiltInPlace | Bridge:
        """``through_helpers``: the handlers that reach the model through helpers made async; ``block``: the
        if/try whose branches build the model (alternatives), when it is built in several places."""
        what = kind.what
        function = site.function
        statement = site.statement
        assert isinstance(statement, cst.SimpleStatementLine)
        entries = [*map(self.handler_node_of, calls), *(f.node for f in through_helpers)]
        handlers = list({id(node): node for node in entries}.values())
        held = held_on_object(name)
        if held:
            _, owner = method_and_class(function)
            if any(self.function_holding(c).class_info is not owner and not self._through_instance(c, owner) for c in calls):
                raise Refusal(f"`{name}` is used by handlers outside {owner.name}")
        elif any(self.handler_holding(c).framework == "grpc" and c.mode is CallMode.AWAITED for c in calls):
            raise Refusal(
                f"the {what} is built at module level, outside the grpc.aio servicer that uses it; build it in the "
                "servicer's __init__ (the rewrite builds the engine there, once, as the server starts)"
            )
        elif served := next(filter(None, (served_class_kind(self.semantics, self.function_holding(c)) for c in calls)), None):
            raise Refusal(f"the {what} is built at module level, outside the {served} that uses it; build it in the class's __init__ (one per replica)")
        if any(c.mode is CallMode.BRIDGED for c in calls):
            return self.bridge_placement(site, name, calls, what)
        if held:
            method, owner = method_and_class(function)
            if served_class_kind(self.semantics, method) == MODAL_CLASS:
                return self.modal_placement(owner.node)
            if served_class_kind(self.semantics, method) == LITSERVE_API:
                streamed = any(c.mode is CallMode.LIT_STREAMED for c in calls)
                instantiations = self.litserve_instantiations(owner, streamed)
                servers, checks = self.check_litservers(streamed)
                return BuiltInPlace(enable_async_calls=instantiations, one_device_servers=servers, worker_checks=checks)
            if any(self.handler_holding(c).framework == "falcon" for c in calls):
                raise Refusal(
                    f"the {what} is built in {owner.name}.__init__(), which runs where its object is made, as the module is "
                    "imported, before Falcon's event loop; build it by a module-level statement of its own (the rewrite then "
                    "starts the engine in a middleware's process_startup)"
                )
            callers = Callers(self.ctx)
            if callers.framework_owned(owner):
                return BuiltInPlace()
            # A plain class: its __init__ builds the engine wherever its one object is built, which moves
            # into the lifespan handler as a module-level model would.
            instance = callers.instance(owner)
            return self.start_up_placement(instance.site, instance.name, handlers, f"{owner.name} object")
        if any(self.handler_holding(c).framework in (*HOOKED_FRAMEWORKS, "chainlit") for c in calls):
            return self.hooked_placement(site, name, calls, what, block)
        return self.start_up_placement(site, name, handlers, what, block)

    def hooked_placement(self, site: CallSite, name: str, calls: list[HandlerCall], what: str, block: cst.CSTNode | None) -> Lifespan:
        """An app of an event-loop framework other than FastAPI whose start-up and shut-down run the engine's
        (aiohttp's cleanup context, Quart's while_serving, Starlette's lifespan), for a model built by a module-level
        statement of its own."""
        frameworks = {self.handler_holding(c).framework for c in calls}
        if len(frameworks) != 1:
            raise Refusal("the module serves the model from handlers of more than one framework")
        framework = frameworks.pop()
        assert framework is not None  # one of HOOKED_FRAMEWORKS: the caller's test
        statement = site.statement
        if site.function is not None or site.in_main_guard or block is not None or not any(s is statement for s in self.module.body):
            raise Refusal(
                f"the {what} is built {'in ' + site.function.name + '()' if site.function is not None else 'inside a block'}; "
                f"for {framework} the rewrite builds the engine from a model built by a module-level statement of its own "
                "(moved into the app's start-up hook): build it there"
            )
        assert isinstance(statement, cst.SimpleStatementLine)
        if framework == "chainlit":
            return plan_chainlit_lifespan(self.ctx, statement)
        return plan_hooked_lifespan(self.ctx, framework, statement, name)

    def _through_instance(self, call: HandlerCall, owner: ClassInfo) -> bool:
        """``generator.llm.generate(...)`` outside the class, ``generator`` the one object of a plain class: the
        object is built at start-up, its engine with it."""
        engine = call.call.func.value if isinstance(call.call.func, cst.Attribute) else None
        callers = Callers(self.ctx)
        return isinstance(engine, cst.Attribute) and isinstance(engine.value, cst.Name) and not callers.framework_owned(owner) \
            and engine.value.value == callers.instance(owner).name

    def start_up_placement(
        self, site: CallSite, name: str, handlers: list[cst.FunctionDef], what: str, block: cst.CSTNode | None = None
    ) -> Lifespan | BuiltInPlace:
        """Where the statement ``name = ...`` at ``site`` (or the ``block`` of its alternatives) runs once the app
        has a lifespan handler."""
        function = site.function
        statement = site.statement
        assert isinstance(statement, cst.SimpleStatementLine)
        if function is None and block is not None:
            raise Refusal(
                f"the {what} is built by the branches of an `if`/`try` at module level; move that block into a FastAPI "
                "lifespan handler (`@asynccontextmanager async def lifespan(app)`: `global` the variable, the block, "
                "then `yield`), and the rewrite builds the engine there"
            )
        if function is None:
            if site.in_main_guard:
                self.check_main_guard_load(statement, handlers, what)
            elif not any(s is statement for s in self.module.body):
                raise Refusal(
                    f"the {what} is built inside an `if`/`try` block at module level; build it in a statement of the "
                    "module's own (its arguments may still be chosen in the block), and the rewrite applies"
                )
            return plan_lifespan(self.ctx, self.sites, handlers, name, statement, None)
        handler = self.semantics.enclosing_handler(function)
        if handler is not None:
            raise Refusal(f"the {what} is built per request inside {handler.function.name}() (VLL104); build it once at start-up first")
        # A module-level dict's entry (``MODELS["llm"] = ...``) needs no ``global``: the dict is bound once, at module level.
        if function.parent is not None or function.is_method or not (is_entry(name) or name in function.global_names):
            raise Refusal(f"the {what} is built inside {function.name}(), not at module level or in a startup hook")
        if not directly_in(function.node, block or statement):
            raise Refusal(f"the {what} is built inside a block of {function.name}(); build it at the top of the start-up hook")
        if _is_lifespan_function(self.semantics, function):
            return BuiltInPlace()
        if not self.semantics.is_startup_hook(function):
            raise Refusal(f"the {what} is built inside {function.name}(), not at module level or in a startup hook")
        return plan_lifespan(self.ctx, self.sites, handlers, name, None, function.node)

    def modal_placement(self, klass: cst.ClassDef) -> BuiltInPlace:
        """The engine built in the class's @modal.enter() method; the class made @modal.concurrent unless it
        already takes concurrent inputs, since Modal otherwise hands a container one input at a time."""
        concurrent = any(
            (self.semantics.qualify(decorator_parts(d)[0]) or "") == "modal.concurrent"
            for d in klass.decorators
        )
        cls_decorator = modal_cls_decorator(self.semantics, klass)
        cls_call = cls_decorator.decorator if cls_decorator is not None else None
        if isinstance(cls_call, cst.Call) and "allow_concurrent_inputs" in keyword_args(cls_call):
            concurrent = True
        if "." not in (imported_as(self.module, {"modal.concurrent"}) or ""):
            raise Refusal("the module does not `import modal`, which the @modal.concurrent and @modal.exit() the rewrite adds name")
        return BuiltInPlace(modal_class=klass, modal_concurrent=not concurrent)

    def litserve_instantiations(self, klass: ClassInfo, streamed: bool = False) -> tuple[cst.Call, ...]:
        """Every ``TextAPI()`` of the LitAPI subclass, when each can take ``enable_async=True`` as it is;
        ``streamed``: predict() becomes an async generator, which streams under stream=True or an OpenAI spec."""
        name = klass.name
        if "__init__" in klass.methods:
            raise Refusal(f"{name} defines __init__; pass enable_async=True to LitAPI.__init__ there and make predict() async by hand")
        calls = []
        for o in occurrences(self.module, [name])[name]:
            call = o.parent
            if not (isinstance(call, cst.Call) and call.func is o.name):
                raise Refusal(f"{name} is used as `{snippet(self.module, call)}`; the rewrite passes enable_async=True where it is instantiated")
            if positional_args(call) or any(arg.star for arg in call.args):
                raise Refusal(f"`{snippet(self.module, call)}` passes arguments the rewrite cannot read; it needs enable_async=True")
            given = {arg.keyword.value for arg in call.args if arg.keyword is not None}
            if streamed:
                given -= self._streaming_options(call)
            if given & _LITSERVE_NOT_ASYNC:
                raise Refusal(
                    f"`{snippet(self.module, call)}` sets {', '.join(sorted(given & _LITSERVE_NOT_ASYNC))}; "
                    "LitServe's async predict takes neither batching nor a stream of its own"
                )
            calls.append(call)
        if not calls:
            raise Refusal(f"{name} is not instantiated in this module; the rewrite passes enable_async=True where it is")
        return tuple(calls)

    def _streaming_options(self, call: cst.Call) -> set[str]:
        """``stream=True`` and ``spec=OpenAISpec()`` of a LitAPI's instantiation (or a LitServer's spec=): what
        LitServe streams an async predict's items under (an OpenAI spec streams, or not, as each request asks)."""
        keywords = keyword_args(call)
        kept = set()
        if "stream" in keywords and literal_flag(keywords["stream"].value) is True:
            kept.add("stream")
        spec = keywords["spec"].value if "spec" in keywords else None
        if isinstance(spec, cst.Call) and not spec.args and self.semantics.callee(spec) in _OPENAI_SPECS:
            kept.add("spec")
        return kept

    def check_litservers(self, streamed: bool = False) -> tuple[tuple[cst.Call, ...], tuple[tuple[cst.CSTNode, str], ...]]:
        """Each ``LitServer(...)`` runs one worker on one device, with no batching or streaming of its own; the
        ones that name no devices= (LitServe's default: every GPU), which then get devices=1; and the statements
        of those whose workers_per_device= is a setting (``args.workers``), which get a start-up check that it is 1.

        LitServe starts a worker per device and per ``workers_per_device`` without giving each its own
        CUDA_VISIBLE_DEVICES, and vLLM's engine takes GPU 0 and most of its memory: a second worker's
        engine would not fit where a second pipeline did.
        """
        sites = [site for site in self.model.calls if self.semantics.callee(site.node) in _LITSERVERS]
        servers = [site.node for site in sites]
        checks: list[tuple[cst.CSTNode, str]] = []
        if not servers:
            raise Refusal("no LitServer(...) is built in this module; the rewrite needs to see it runs one worker")
        for site, server in zip(sites, servers):
            shown = snippet(self.module, server)
            keywords = keyword_args(server)
            if any(arg.star for arg in server.args) or len(positional_args(server)) > 1:
                raise Refusal(f"`{shown}` passes arguments the rewrite cannot read")
            given = keywords.keys() - (self._streaming_options(server) if streamed else set())
            if given & _LITSERVE_NOT_ASYNC:
                raise Refusal(f"`{shown}` sets {', '.join(sorted(given & _LITSERVE_NOT_ASYNC))}; LitServe's async predict takes neither batching nor a stream of its own")
            one_device = "devices" not in keywords or _is_int(keywords["devices"].value, 1)
            one_worker = "workers_per_device" not in keywords or _is_int(keywords["workers_per_device"].value, 1)
            workers = keywords["workers_per_device"].value if "workers_per_device" in keywords else None
            setting = dotted_name(workers) if workers is not None else None
            if setting is not None and isinstance(site.statement, cst.SimpleStatementLine):
                # A setting (a command-line option): checked when the server starts, as a prompt of unknown type is.
                checks.append((site.statement, setting))
                one_worker = True
            elif workers is not None and not isinstance(workers, cst.Integer):
                raise Refusal(
                    f"`{shown}` takes workers_per_device=`{snippet(self.module, workers)}`, which may be above 1: each worker "
                    "would build an engine on GPU 0; pass workers_per_device=1 (one engine serves every request at once)"
                )
            if not (one_device and one_worker):
                raise Refusal(
                    f"`{shown}` starts several workers (devices= or workers_per_device= above 1), each of which "
                    "would build an engine on GPU 0; pass devices=1 (one engine; tensor_parallel_size spreads it over GPUs)"
                )
        return tuple(server for server in servers if "devices" not in keyword_args(server)), tuple(checks)

    def bridge_placement(self, site: CallSite, name: str, calls: list[HandlerCall], what: str) -> Bridge:
        """The engine's thread is started where the model was loaded: at import, under ``__main__`` before
        the app runs, or in the function that loaded it into a module variable."""
        frameworks = {self.handler_holding(c).framework for c in calls}
        if any(c.mode is not CallMode.BRIDGED for c in calls) or len(frameworks) != 1:
            raise Refusal("the module serves the model from handlers of more than one framework")
        function = site.function
        if function is not None and not held_on_object(name):
            handler = self.semantics.enclosing_handler(function)
            if handler is not None:
                raise Refusal(f"the {what} is built per request inside {handler.function.name}() (VLL104); build it once at start-up first")
            if function.parent is not None or function.is_method or not (is_entry(name) or name in function.global_names):
                raise Refusal(f"the {what} is built inside {function.name}(), not into a module variable")
        body = list(self.module.body)
        indexes = [top_level_index_of(body, site.statement)]
        for app in self.semantics.app_objects:
            for binding in self.model.bindings.get((None, app), []):
                app_site = self.sites[id(binding.call)]
                if app_site.function is None and any(s is app_site.statement for s in body):
                    indexes.append(top_level_index_of(body, app_site.statement))
        framework = frameworks.pop()
        if framework not in SYNC_FRAMEWORKS:
            raise Refusal(f"the handlers' framework ({framework}) has no thread bridge to the engine")
        raised: tuple[cst.Call, ...] = ()
        if framework == "gradio":
            entries = {self.handler_node_of(c).name.value for c in calls}
            inputs = GradioInputs(self.ctx)
            raised = tuple(
                call for name in sorted(entries) for call in inputs.registrations(name)
                if not any(arg.keyword is not None and arg.keyword.value == "concurrency_limit" for arg in call.args)
            )
        return Bridge(body[min(indexes)], SYNC_FRAMEWORKS[framework], raised)

    def handler_node_of(self, call: HandlerCall) -> cst.FunctionDef:
        """The request handler a call is in (a stream's function is nested in it)."""
        return self.handler_holding(call).entry.node  # the function the framework calls for the request

    def check_main_guard_load(self, statement: cst.SimpleStatementLine, handlers: list[cst.FunctionDef], what: str) -> None:
        """A load under ``if __name__ == "__main__":`` moves into the lifespan handler when that block then
        serves the app object itself (the lifespan runs inside that call) with the load's names unchanged."""
        guard = next((s for s in self.module.body if isinstance(s, cst.If) and directly_in(s, statement)), None)
        if guard is None:
            raise Refusal(f"the {what} is built in a nested block under `if __name__ == \"__main__\":`")
        app_name = handlers_app(self.module, handlers)
        block = list(guard.body.body)
        after = block[block.index(statement) + 1 :]
        served = None
        for index, later in enumerate(after):
            call = only_call(later)
            if call is not None and (self.semantics.callee(call) in _SERVE_CALLS):
                served = index
                first = positional_args(call)[:1]
                if not (first and isinstance(first[0].value, cst.Name) and first[0].value.value == app_name):
                    raise Refusal(
                        f"`{snippet(self.module, call)}` serves the app by its import string, which imports the module "
                        f"again without running this `__main__` block; pass the app object ({app_name})"
                    )
                break
        if served is None:
            raise Refusal(f"the {what} is built under `if __name__ == \"__main__\":`, but that block does not then serve `{app_name}` with uvicorn.run(...)")
        assign = statement.body[0]
        assert isinstance(assign, cst.Assign)
        used = {n for n, found in occurrences(assign.value, names_in(assign.value)).items() if found}
        changed = set().union(*(bound_names(s) for s in after[:served])) if served else set()
        if used & changed:
            name = sorted(used & changed)[0]
            raise Refusal(f"`{name}` changes between the {what}'s load and uvicorn.run(...); the lifespan handler would see the new value")


def _is_lifespan_function(semantics, function: FunctionInfo) -> bool:
    """An ``@asynccontextmanager`` function: the app's own lifespan handler."""
    for decorator in function.node.decorators:
        expr = decorator.decorator
        name = semantics.qualify(expr) or dotted_name(expr) or ""
        if name.endswith("asynccontextmanager"):
            return True
    return False


def _is_int(expr: cst.BaseExpression, value: int) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == value
