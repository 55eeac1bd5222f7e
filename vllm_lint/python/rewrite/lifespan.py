"""Where the engine of a FastAPI server is built: a lifespan handler, which also runs the app's event hooks.

FastAPI stops running ``@app.on_event`` hooks once the app has a lifespan handler,
so each hook is kept as a function and called from the lifespan handler instead
(start-up hooks before its ``yield``, shutdown hooks after it), in the order the
app registered them. Anything else that may hold start-up code of its own (an
existing lifespan, ``on_startup=``, ``add_event_handler``, the app's router) makes
the rewrite refuse, naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.context import PyContext
from vllm_lint.python.model import CallSite, FunctionInfo, decorator_parts, dotted_name
from vllm_lint.python.rewrite.entries import entry_variable
from vllm_lint.python.rewrite.names import Occurrence, occurrences
from vllm_lint.python.rewrite.plan import EventHook, Lifespan, Refusal
from vllm_lint.python.rewrite.shapes import is_none, snippet, top_level_index_of
from vllm_lint.python.semantics import Semantics
from vllm_lint.python.handler_table import ROUTE_VERBS

AIOHTTP_APPLICATION = "aiohttp.web.Application"
FASTAPI_VERBS = frozenset({"get", "post", "put", "patch", "delete", "options", "head", "api_route", "websocket"})
_EVENTS = ("startup", "shutdown")


def route_owner(function: cst.FunctionDef) -> str | None:
    """``app`` for ``@app.post("/x")`` (other decorators, such as rate limiters, are skipped)."""
    for decorator in function.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ROUTE_VERBS:
            return dotted_name(expr.func.value)
    return None


def handlers_app(module: cst.Module, handlers: list[cst.FunctionDef]) -> str:
    """The one app (a plain module-level name) all ``handlers`` are routes of."""
    owners = set()
    for handler in handlers:
        owner = route_owner(handler)
        if owner is None:
            raise Refusal(f"{handler.name.value}() is not registered with an @app.<verb>(...) decorator, so the app that needs the lifespan handler is unknown")
        owners.add(owner)
    if len(owners) != 1:
        raise Refusal("the handlers are registered on more than one app or router")
    app_name = owners.pop()
    if "." in app_name:
        raise Refusal(f"the routes are on {app_name}, not on an app created in this module")
    return app_name


class _AppUses:
    """What each use of the app's name is: a route decorator, an event hook decorator, or something else."""

    def __init__(self, module: cst.Module, app_name: str) -> None:
        self.module = module
        self.app_name = app_name
        self.uses = occurrences(module, [app_name])[app_name]
        top_level = {id(statement) for statement in module.body}
        self.hooks: list[EventHook] = []
        self.others: list[Occurrence] = []
        self.verbs: list[tuple[Occurrence, str]] = []
        for o in self.uses:
            attribute, call, decorator, function = o.ancestor(1), o.ancestor(2), o.ancestor(3), o.ancestor(4)
            is_decorator = (
                isinstance(attribute, cst.Attribute) and attribute.value is o.name and isinstance(call, cst.Call)
                and call.func is attribute and isinstance(decorator, cst.Decorator)
            )
            if not is_decorator:
                self.others.append(o)
                continue
            assert isinstance(attribute, cst.Attribute) and isinstance(call, cst.Call)
            verb = attribute.attr.value
            if verb != "on_event":
                self.verbs.append((o, verb))
                continue
            if not (isinstance(function, cst.FunctionDef) and id(function) in top_level):
                raise Refusal(f"`@{app_name}.on_event(...)` decorates something other than a module-level function")
            event = _event_name(call)
            if event is None:
                raise Refusal(f"`{snippet(module, call)}` registers a hook for an event other than \"startup\" or \"shutdown\"")
            if len(function.decorators) != 1:
                raise Refusal(f"the event hook {function.name.value}() has other decorators; move it into a lifespan handler by hand")
            index = next(i for i, d in enumerate(function.decorators) if d is decorator)
            self.hooks.append(EventHook(function, index, event))


def _event_name(call: cst.Call) -> str | None:
    args = [arg for arg in call.args if not arg.star]
    if len(args) != 1 or (args[0].keyword is not None and args[0].keyword.value != "event_type"):
        return None
    value = args[0].value
    if isinstance(value, cst.SimpleString):
        try:
            text = value.evaluated_value
        except Exception:  # noqa: BLE001 - an odd prefix is simply unknown
            return None
        return text if text in _EVENTS else None
    return None


def plan_lifespan(
    ctx: PyContext,
    sites: dict[int, CallSite],
    handlers: list[cst.FunctionDef],
    model_name: str,
    moved_model: cst.SimpleStatementLine | None,
    built_in: cst.FunctionDef | None,
) -> Lifespan:
    """The lifespan handler that builds the engine: moved there (``moved_model``) or built by a start-up hook."""
    module = ctx.module
    app_name = handlers_app(module, handlers)
    body = list(module.body)
    uses = _AppUses(module, app_name)
    for o in uses.others:
        attribute = o.parent.attr.value if isinstance(o.parent, cst.Attribute) and o.parent.value is o.name else None
        if attribute == "add_event_handler":
            raise Refusal(
                f"`{snippet(module, o.parent)}` registers an event hook, which FastAPI stops running once a lifespan "
                "handler is given; register it with @app.on_event(...) or call it from a lifespan handler"
            )
        if attribute == "router":
            raise Refusal(f"`{snippet(module, o.parent)}` is used directly and may hold start-up hooks of its own")
    hooks = tuple(uses.hooks)
    _check_hooks(module, hooks, model_name, built_in)
    model_index = body.index(moved_model) if moved_model is not None and moved_model in body else None
    bindings = ctx.model.bindings.get((None, app_name), [])
    if not bindings:
        if uses.others:
            raise Refusal(f"`{app_name}` is used here but not created by FastAPI(...) in this module")
        for _, verb in uses.verbs:
            if verb not in FASTAPI_VERBS:
                raise Refusal(f"`@{app_name}.{verb}(...)` is not a FastAPI route decorator")
        first_use = min(_top_level_index(body, o) for o in uses.uses)
        anchor = body[min(first_use, model_index) if model_index is not None else first_use]
        return Lifespan(app_name, None, anchor, moved_model, hooks)
    if len(bindings) != 1:
        raise Refusal(f"`{app_name}` is assigned more than once")
    app_call = bindings[0].call
    callee = ctx.semantics.callee(app_call)
    if callee == "fastapi.APIRouter":
        raise Refusal(f"the routes are on an APIRouter (`{app_name}`); the app that would run the engine's lifespan is not in this module")
    if callee != "fastapi.FastAPI":
        raise Refusal(f"`{app_name}` is not created by FastAPI(...) in this module")
    app_site = sites[id(app_call)]
    if app_site.function is not None or not any(s is app_site.statement for s in body):
        raise Refusal(f"`{app_name} = FastAPI(...)` is not a plain module-level statement")
    if any(arg.star for arg in app_call.args):
        raise Refusal("FastAPI(...) gets **kwargs that may already hold a lifespan handler")
    keywords = {arg.keyword.value for arg in app_call.args if arg.keyword is not None}
    for taken in ("lifespan", "on_startup", "on_shutdown"):
        if taken in keywords:
            raise Refusal(f"the app already has {taken}=...; add the engine to it by hand")
    app_index = top_level_index_of(body, app_site.statement)
    anchor = body[min(model_index, app_index) if model_index is not None else app_index]
    return Lifespan(app_name, app_call, anchor, moved_model, hooks)


@dataclass(frozen=True, slots=True)
class _HookedApp:
    """How an app of an event-loop framework other than FastAPI runs an async generator as its lifespan."""

    factory: str  # the call that creates the app
    shown: str  # how messages write that call
    registration: str | None  # the statement after the app's that registers the generator; None: ``lifespan=``
    # ``app.<attribute>`` uses that refuse: hooks that run where the engine is not (yet, or any longer) there
    refused: dict[str, str]
    # hooks (``@app.<attribute>``) that run before the engine is built: refused where they use the model
    before: str | None = None


# aiohttp 3.14 web_app.py: the Application puts its cleanup contexts first in on_startup and on_cleanup, so an
# on_cleanup hook finds the engine shut down. Quart (0.15 and later, app.py ``startup``/``shutdown``) runs its
# before_serving functions before its while_serving generators and its after_serving ones before their end.
# Starlette takes ``lifespan=`` and refuses it beside on_startup/on_shutdown. Falcon's ASGI App (3.0 and later,
# falcon/asgi/app.py ``_call_lifespan_handlers``) awaits each middleware's ``process_startup(scope, event)`` on the
# lifespan's startup event, before it reports the start-up complete, and ``process_shutdown`` in reverse order at
# shutdown; ``add_middleware`` appends to the list given to the App (3.0 and later).
_HOOKED_APPS = {
    "aiohttp": _HookedApp(
        AIOHTTP_APPLICATION, "web.Application()", "{app}.cleanup_ctx.append({lifespan})",
        {"on_cleanup": "registers clean-up hooks, which aiohttp runs after the engine's clean-up has shut it down; move them into the cleanup context by hand"},
    ),
    "quart": _HookedApp(
        "quart.Quart", "Quart(...)", "{app}.while_serving({lifespan})",
        {"before_serving": "registers a start-up function by a call, which the rewrite cannot read; register it with @app.before_serving"},
        before="before_serving",
    ),
    "starlette": _HookedApp(
        "starlette.applications.Starlette", "Starlette(...)", None,
        {"add_event_handler": "registers an event hook, which Starlette stops running once a lifespan handler is given; call it from a lifespan handler by hand",
         "router": "is used directly and may hold start-up hooks of its own"},
    ),
    "falcon": _HookedApp("falcon.asgi.App", "falcon.asgi.App()", "{app}.add_middleware({lifespan}())", {}),
}
HOOKED_FRAMEWORKS = frozenset(_HOOKED_APPS)


def plan_hooked_lifespan(ctx: PyContext, framework: str, moved_model: cst.SimpleStatementLine, model_variable: str) -> Lifespan:
    """An app of an event-loop framework other than FastAPI: the engine built in an async generator that the app
    runs up to its ``yield`` as it starts, on the server's event loop, and the rest as it stops: registered right
    after the module's one ``app = web.Application()`` (aiohttp's ``app.cleanup_ctx.append(...)``) or
    ``app = Quart(...)`` (``app.while_serving(...)``) or ``app = falcon.asgi.App()`` (a middleware whose
    ``process_startup`` and ``process_shutdown`` are the generator's two halves, ``app.add_middleware(...)``), or
    given to ``Starlette(..., lifespan=...)``."""
    hooked = _HOOKED_APPS[framework]
    module = ctx.module
    body = list(module.body)
    apps = [site for site in ctx.model.calls if ctx.semantics.callee(site.node) == hooked.factory]
    if len(apps) != 1:
        raise Refusal(f"the module creates {len(apps)} {framework} applications; the rewrite starts the engine in the one app that serves the handlers")
    app_site = apps[0]
    statement = app_site.statement
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if (
        app_site.function is not None or not any(s is statement for s in body) or not isinstance(assign, cst.Assign)
        or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) or assign.value is not app_site.node
    ):
        raise Refusal(
            f"`{snippet(module, app_site.node)}` is not bound by a plain module-level `app = {hooked.shown}`; the rewrite "
            "starts and shuts down the engine with that app"
        )
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Name)
    app_name = assign.targets[0].target.value
    if len(ctx.model.bindings.get((None, app_name), [])) != 1:
        raise Refusal(f"`{app_name}` is assigned more than once")
    for o in occurrences(module, [app_name])[app_name]:
        attribute = o.parent.attr.value if isinstance(o.parent, cst.Attribute) and o.parent.value is o.name else None
        if attribute is not None and attribute == hooked.before and isinstance(o.ancestor(2), cst.Decorator):
            hook = o.ancestor(3)
            variable = entry_variable(model_variable)
            if isinstance(hook, cst.FunctionDef) and occurrences(hook, [variable])[variable]:
                raise Refusal(
                    f"the start-up function {hook.name.value}() uses `{model_variable}`, and {framework} runs it before the "
                    "engine's start-up; move that use into the generator that builds the engine by hand"
                )
            continue
        if attribute in hooked.refused:
            raise Refusal(f"`{snippet(module, o.parent)}` {hooked.refused[attribute]}")
    call = app_site.node
    if hooked.registration is None:
        if any(arg.star for arg in call.args):
            raise Refusal(f"`{snippet(module, call)}` gets **kwargs that may already hold a lifespan handler")
        for taken in ("lifespan", "on_startup", "on_shutdown"):
            if taken in {arg.keyword.value for arg in call.args if arg.keyword is not None}:
                raise Refusal(f"the app already has {taken}=...; add the engine to it by hand")
    model_index = body.index(moved_model)
    anchor = body[min(model_index, top_level_index_of(body, statement))]
    registration = hooked.registration is not None
    return Lifespan(app_name, call, anchor, moved_model, framework=framework, app_statement=statement if registration else None)


# Chainlit (2.4.400 and later, chainlit callbacks.py) keeps one start-up and one shutdown callback, awaited in its
# FastAPI server's lifespan on the server's event loop; a second decorated function replaces the first.
_CHAINLIT_HOOKS = frozenset({"chainlit.on_app_startup", "chainlit.on_app_shutdown"})


def plan_chainlit_lifespan(ctx: PyContext, moved_model: cst.SimpleStatementLine) -> Lifespan:
    """Chainlit: the generator's halves become an ``@cl.on_app_startup`` and an ``@cl.on_app_shutdown`` function,
    where the model's statement was."""
    for function in ctx.model.functions:
        for decorator in function.node.decorators:
            hook = ctx.semantics.qualify(decorator_parts(decorator)[0])
            if hook in _CHAINLIT_HOOKS:
                raise Refusal(
                    f"{function.name}() is the app's @{hook.replace('chainlit.', 'cl.')} callback already, and Chainlit keeps "
                    "one (a second replaces it); start and shut down the engine in it by hand"
                )
    return Lifespan("", None, moved_model, moved_model, framework="chainlit")


def lifespan_registration(framework: str, app: str, lifespan: str) -> str:
    """The statement after the app's that registers the generator (aiohttp, Quart) or the middleware whose
    start-up and shutdown run its two halves (Falcon)."""
    registration = _HOOKED_APPS[framework].registration
    assert registration is not None
    return registration.format(app=app, lifespan=lifespan) + "\n"


def lifespan_release(semantics: Semantics, o: Occurrence, builder: FunctionInfo | None) -> cst.SimpleStatementLine | None:
    """``llm = None`` after the ``yield`` of the app's own lifespan handler that builds the model (``builder``):
    the line that lets the model go at shutdown, before which the rewrite shuts the engine down."""
    statement = o.ancestor(3)
    function = builder.node if builder is not None else None
    if function is None or o.function is not function or not isinstance(o.parent, cst.AssignTarget) \
            or not isinstance(statement, cst.SimpleStatementLine) or not isinstance(function.body, cst.IndentedBlock):
        return None
    assign = o.ancestor(2)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and is_none(assign.value) and len(statement.body) == 1):
        return None
    if not any((semantics.qualify(d.decorator) or dotted_name(d.decorator) or "").endswith("asynccontextmanager") for d in function.decorators):
        return None
    body = list(function.body.body)
    yields = [i for i, line in enumerate(body) if _is_bare_yield(line)]
    index = next((i for i, line in enumerate(body) if line is statement), None)
    return statement if len(yields) == 1 and index is not None and index > yields[0] else None


def _is_bare_yield(line: cst.BaseStatement) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Expr) \
        and isinstance(line.body[0].value, cst.Yield) and line.body[0].value.value is None


def _check_hooks(module: cst.Module, hooks: tuple[EventHook, ...], model_name: str, built_in: cst.FunctionDef | None) -> None:
    if built_in is not None and not any(h.function is built_in and h.event == "startup" for h in hooks):
        raise Refusal(f"the model is built in {built_in.name.value}(), which is not an @app.on_event(\"startup\") hook of the app")
    variable = entry_variable(model_name)  # a dict's entry (``MODELS["llm"]``): any use of the dict
    for hook in hooks:
        if hook.event == "shutdown" and occurrences(hook.function, [variable])[variable]:
            raise Refusal(f"the shutdown hook {hook.function.name.value}() uses `{model_name}`; the engine is shut down by the lifespan handler")
    seen: set[int] = set()
    for hook in hooks:
        if id(hook.function) in seen:
            raise Refusal(f"{hook.function.name.value}() is registered for more than one event")
        seen.add(id(hook.function))


def _top_level_index(body: Sequence[cst.BaseStatement], o: Occurrence) -> int:
    ids = {id(p) for p in o.parents}
    return next(i for i, statement in enumerate(body) if id(statement) in ids)
