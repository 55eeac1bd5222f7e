"""Which functions of a module handle requests, and which run once at start-up.

A *handler* is code that runs once per request a server receives: a function its framework registers
(a route decorator, a registration call, a method of a class-based view or of a serving class, a
Gradio callback), or a function of the same module that such a function calls, transitively up to
``handler_table.MAX_CALL_DEPTH`` calls. The shapes, per framework, are the tables of ``handler_table.py`` (and the
page generated from them, docs/handlers.md). *Start-up hooks* run once, before requests: lifespan
handlers, ``on_event("startup")``, a serving class's ``__init__``/``setup``, and what they call.

Never a handler: code under ``if __name__ == "__main__":`` (functions defined there, and registrations
made there: a Gradio demo built there is one a person runs), and anything in a test file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Literal

import libcst as cst

from vllm_lint.file_roles import is_test_path
from vllm_lint.python import handler_table as table
from vllm_lint.python.model import CallSite, ClassInfo, FunctionInfo, decorator_parts, dotted_name

if TYPE_CHECKING:
    from vllm_lint.python.folding import Folding

# Decorators that make a function compute its result once: a model "loaded" through it is loaded once.
CACHING_DECORATORS = frozenset({
    "functools.lru_cache", "functools.cache", "functools.cached_property", "streamlit.cache_resource",
    "async_lru.alru_cache", "cachetools.cached",
})


@dataclass(frozen=True, slots=True)
class Handler:
    """Code that runs once per request, and how the request gets there.

    ``function`` is the function (or method) this is about; ``entry`` the one the framework calls for
    the request (``function`` itself when ``direct``); ``via`` the functions called on the way from
    ``entry`` to ``function`` (``function`` last; empty when direct). ``framework`` names the row of
    handler_table.FRAMEWORKS that serves it ("fastapi", "flask", "ray", "gradio", ...), None when only a
    route decorator's shape said so. ``runs_on_event_loop``: a blocking call here stalls the server's event
    loop, so every other request waits; otherwise it holds one worker thread or process. ``runs_in_threads``:
    the framework runs it in its worker threads, several requests at once (handler_table's ``sync_in_threads``).
    """

    function: FunctionInfo
    framework: str | None
    runs_on_event_loop: bool
    entry: FunctionInfo
    via: tuple[FunctionInfo, ...] = ()
    runs_in_threads: bool = False

    @property
    def direct(self) -> bool:
        """Registered with the framework itself, not only reached from a function that is."""
        return not self.via

    @property
    def class_info(self) -> ClassInfo | None:
        """The class whose method this is (a class-based view, a deployment, a servicer), if any."""
        return self.function.class_info if self.function.is_method else None

    @property
    def shown(self) -> str:
        """``handle`` or ``handle -> summarize -> run``, for messages."""
        return " -> ".join(_shown_name(f) for f in (self.entry, *self.via))


def _shown_name(function: FunctionInfo) -> str:
    if function.is_method and function.class_info is not None:
        return f"{function.class_info.name}.{function.name}"
    return function.name


@dataclass(frozen=True, slots=True)
class _Direct:
    """A function a framework registers as a handler."""
    function: FunctionInfo
    framework: str | None
    runs_on_event_loop: bool
    runs_in_threads: bool = False


class HandlerFinder:
    """Finds the handlers and start-up hooks of one module (``semantics.Semantics`` asks it once)."""

    def __init__(self, semantics: Folding) -> None:
        self.semantics = semantics
        self.model = semantics.model
        self.functions = semantics.functions

    # -- the results -----------------------------------------------------------------------------------

    def handlers(self) -> dict[FunctionInfo, Handler]:
        if is_test_path(self.semantics.path):
            return {}
        direct: dict[FunctionInfo, _Direct] = {}
        for found in self._direct_handlers():
            if not found.function.in_main_guard:
                direct.setdefault(found.function, found)
        result: dict[FunctionInfo, Handler] = {}
        for found in direct.values():
            result[found.function] = Handler(
                found.function, found.framework, found.runs_on_event_loop, found.function, runs_in_threads=found.runs_in_threads
            )
        for found in direct.values():
            entry = result[found.function]
            for function, via in self.functions.reached_from(found.function):
                if function not in result:
                    result[function] = Handler(
                        function, entry.framework, entry.runs_on_event_loop, entry.function, via, entry.runs_in_threads
                    )
        return result

    def startup_hooks(self) -> set[FunctionInfo]:
        """Functions that run once at start-up, and the functions of the module they call."""
        hooks = set(self._explicit_startup_hooks())
        for hook in list(hooks):
            hooks.update(function for function, _ in self.functions.reached_from(hook))
        return hooks

    # -- handlers the framework registers ------------------------------------------------------------------

    def _direct_handlers(self) -> Iterator[_Direct]:
        for function in self.model.functions:
            found = self._by_decorator(function)
            if found is not None:
                yield found
        yield from self._by_call()
        for klass in self.model.classes:
            if not klass.in_main_guard:
                yield from self._by_class(klass)
        if PurePath(self.semantics.path).name == "views.py" and self.semantics.imports_any(("django", "rest_framework")):
            for function in self.model.module_functions.values():
                if function.params[:1] == ("request",):
                    yield self._made(function, "django")

    def _made(
        self, function: FunctionInfo, framework: str | None, sync_on_loop: bool | None = None, sync_in_threads: bool | None = None
    ) -> _Direct:
        row = table.BY_NAME.get(framework or "")
        if sync_on_loop is None:
            sync_on_loop = row.sync_on_loop if row is not None else False
        if sync_in_threads is None:
            sync_in_threads = row.sync_in_threads if row is not None else False
        async_on_loop = row.async_on_loop if row is not None else True
        on_loop = (function.is_async and async_on_loop) or (not function.is_async and sync_on_loop)
        return _Direct(function, framework, on_loop, not function.is_async and not on_loop and sync_in_threads)

    def _by_decorator(self, function: FunctionInfo) -> _Direct | None:
        for decorator in function.node.decorators:
            target, call = decorator_parts(decorator)
            qualified = self.semantics.qualify(target)
            framework = table.FUNCTION_DECORATORS.get(qualified or "")
            if framework is not None:
                if framework == "ray" and function.is_method:
                    continue  # @serve.deployment on a class is read with the class
                if framework == "litestar":
                    return self._made(function, framework, sync_on_loop=not _keyword_is_true(call, "sync_to_thread"))
                return self._made(function, framework)
            if call is not None and isinstance(call.func, cst.Attribute):
                verb = call.func.attr.value
                if verb in table.ROUTE_VERBS:
                    routed = self._route_framework(call, function.parent)
                    if routed is not False:
                        return self._made(function, routed)
                elif verb in table.GRADIO_LISTENERS and self._gradio_registration(function.parent, function.in_main_guard):
                    return self._made(function, "gradio")
        return None

    def _route_framework(self, call: cst.Call, scope: FunctionInfo | None) -> str | None | Literal[False]:
        """The framework of a route decorator or registration ``owner.<verb>(...)``; False when it is none."""
        owner = call.func.value if isinstance(call.func, cst.Attribute) else None
        if owner is None:
            return False
        framework = self.semantics.app_framework(owner, scope)
        if framework is not None:
            return framework if table.BY_NAME[framework].route_decorators else False
        routed = self.semantics.route_framework
        if routed is not None:
            return routed
        first = call.args[0].value if call.args and not call.args[0].keyword else None
        if isinstance(first, cst.SimpleString):
            try:
                path = first.evaluated_value
            except Exception:  # noqa: BLE001 - a byte string or an odd prefix: not a path
                return False
            if isinstance(path, str) and path.startswith("/"):
                return None
        return False

    def _by_call(self) -> Iterator[_Direct]:
        for site in self.model.calls:
            if site.in_main_guard:
                continue
            yield from self._registered_by(site)

    def _registered_by(self, site: CallSite) -> Iterator[_Direct]:
        call, scope = site.node, site.function
        func = call.func
        # app.post("/chat")(chat)
        if isinstance(func, cst.Call) and isinstance(func.func, cst.Attribute) and func.func.attr.value in table.ROUTE_VERBS:
            framework = self._route_framework(func, scope)
            target = call.args[0].value if len(call.args) == 1 and not call.args[0].keyword else None
            function = self.functions.resolve_function(target, scope) if target is not None else None
            if framework is not False and function is not None:
                yield self._made(function, framework)
            return
        qualified = self.semantics.callee(call)
        if qualified in table.ROUTE_CONSTRUCTORS:
            framework, keywords = table.ROUTE_CONSTRUCTORS[qualified]
            for function in self._handler_arguments(call, keywords, scope, skip_first=True):
                yield self._made(function, framework)
            return
        if qualified in table.CALLBACK_CONSTRUCTORS:
            if self._gradio_registration(scope, site.in_main_guard):
                for function in self._handler_arguments(call, ("fn",), scope, first_only=True):
                    yield self._made(function, "gradio")
            return
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method in table.REGISTRATION_METHODS:
            framework = self.semantics.app_framework(func.value, scope) or self.semantics.route_framework
            for function in self._handler_arguments(call, table.REGISTRATION_METHODS[method], scope):
                yield self._made(function, framework)
        elif method in table.GRADIO_LISTENERS and self._gradio_registration(scope, site.in_main_guard):
            for function in self._handler_arguments(call, ("fn",), scope, first_only=True):
                yield self._made(function, "gradio")

    def _handler_arguments(self, call: cst.Call, keywords: tuple[str, ...], scope: FunctionInfo | None,
                           skip_first: bool = False, first_only: bool = False) -> list[FunctionInfo]:
        """The functions of this module a registration call passes as its handler."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in keywords:
                function = self.functions.resolve_function(arg.value, scope)
                return [function] if function is not None else []
        positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
        if skip_first:
            positional = positional[1:]
        if first_only:
            positional = positional[:1]
        found = [f for f in (self.functions.resolve_function(value, scope) for value in positional) if f is not None]
        return found[:1]

    def _gradio_registration(self, scope: FunctionInfo | None, in_main_guard: bool) -> bool:
        """A Gradio callback registered where a server would run it: not under ``__main__``, and in a function
        only when the module calls that function outside ``__main__`` (``demo = build_demo()``)."""
        if in_main_guard or not self.semantics.imports_any(("gradio",)):
            return False
        while scope is not None and scope.parent is not None:
            scope = scope.parent
        if scope is None:
            return True
        return any(
            site.function is None and not site.in_main_guard and dotted_name(site.node.func) == scope.name
            for site in self.model.calls
        )

    # -- handlers that are methods ------------------------------------------------------------------------

    def _by_class(self, klass: ClassInfo) -> Iterator[_Direct]:
        shape = self._class_shape(klass)
        if shape is not None:
            for method in self._all_methods(klass):
                if shape.public_methods and not method.name.startswith("_"):
                    yield self._made(method, shape.framework)
                elif method.name in shape.methods or (shape.per_request and method.name == "__init__"):
                    yield self._made(method, shape.framework)
                elif shape.framework == "rest_framework" and self._method_decorated(method, "rest_framework"):
                    yield self._made(method, shape.framework)
            return
        framework = self._class_decorator_framework(klass)
        if framework is None:
            if self.semantics.imports_any(("falcon",)):
                for method in klass.methods.values():
                    if table.is_falcon_responder(method.name):
                        yield self._made(method, "falcon")
            return
        for method in klass.methods.values():
            if framework == "ray":
                routed = any(
                    isinstance(d.decorator, cst.Call) and isinstance(d.decorator.func, cst.Attribute)
                    and d.decorator.func.attr.value in table.ROUTE_VERBS
                    for d in method.node.decorators
                )
                if method.name == table.RAY_CALL_METHOD or routed:
                    # A route of a @serve.ingress FastAPI app: FastAPI runs a `def` one in its thread pool (Ray Serve's
                    # asyncio guide); a deployment's own sync method runs on the replica's loop unless
                    # RAY_SERVE_RUN_SYNC_IN_THREADPOOL=1, which the code does not say.
                    yield self._made(method, "ray", sync_in_threads=routed)
            elif self._method_decorated(method, framework):
                yield self._made(method, framework)

    def _all_methods(self, klass: ClassInfo) -> list[FunctionInfo]:
        """The methods of ``klass`` and of its bases defined in this module (the subclass's win)."""
        found: dict[str, FunctionInfo] = {}
        stack, seen = [klass], set()
        while stack:
            current = stack.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            for name, method in current.methods.items():
                found.setdefault(name, method)
            stack.extend(self.functions.classes[b] for b in (dotted_name(base) or "" for base in current.bases) if b in self.functions.classes)
        return list(found.values())

    def _class_shape(self, klass: ClassInfo, depth: int = 0) -> table.ClassShape | None:
        for base in klass.bases:
            name = dotted_name(base) or ""
            qualified = self.semantics.qualify(base)
            if qualified in table.CLASS_BASES:
                return table.CLASS_BASES[qualified]
            if name.endswith("Servicer") and (qualified is None or "_pb2_grpc." in qualified or qualified.startswith("grpc")):
                return table.GRPC_SERVICER
            if name in self.functions.classes and depth < 8 and self.functions.classes[name] is not klass:
                shape = self._class_shape(self.functions.classes[name], depth + 1)
                if shape is not None:
                    return shape
        return None

    def _class_decorator_framework(self, klass: ClassInfo) -> str | None:
        for decorator in klass.node.decorators:
            target, _ = decorator_parts(decorator)
            framework = table.CLASS_DECORATORS.get(self.semantics.qualify(target) or "")
            if framework is not None:
                return framework
            if isinstance(target, cst.Attribute) and target.attr.value == table.MODAL_CLASS_DECORATOR:
                if self.semantics.app_framework(target.value, klass.function) == "modal":
                    return "modal"
        return None

    def _method_decorated(self, method: FunctionInfo, framework: str) -> bool:
        for decorator in method.node.decorators:
            target, _ = decorator_parts(decorator)
            if table.METHOD_DECORATORS.get(self.semantics.qualify(target) or "") == framework:
                return True
        return False

    # -- start-up hooks ---------------------------------------------------------------------------------------

    def _explicit_startup_hooks(self) -> Iterator[FunctionInfo]:
        for function in self.model.functions:
            if function.in_main_guard:
                continue
            if function.parent is None and not function.is_method and function.name in table.STARTUP_FUNCTION_NAMES:
                yield function
            for decorator in function.node.decorators:
                if self._startup_decorator(decorator):
                    yield function
                    break
        for klass in self.model.classes:
            shape = self._class_shape(klass)
            serving = (shape is not None and not shape.per_request) or self._class_decorator_framework(klass) is not None
            if serving:
                for name in table.STARTUP_METHODS:
                    method = klass.methods.get(name)
                    if method is not None:
                        yield method
        for site in self.model.calls:
            if site.in_main_guard:
                continue
            yield from self._startup_registered_by(site)

    def _startup_decorator(self, decorator: cst.Decorator) -> bool:
        target, call = decorator_parts(decorator)
        if self.semantics.qualify(target) in table.STARTUP_DECORATORS:
            return True
        name = (dotted_name(target) or "").rsplit(".", 1)[-1]
        if name not in table.STARTUP_DECORATOR_NAMES:
            return False
        if name in ("on_event", "listener") and call is not None and call.args:
            event = self.semantics.fold(call.args[0].value)
            return event is not None and isinstance(event.value, str) and "start" in event.value
        return True

    def _startup_registered_by(self, site: CallSite) -> Iterator[FunctionInfo]:
        call, scope = site.node, site.function
        if self.semantics.callee(call) in table.APP_FACTORIES:
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value in table.STARTUP_KEYWORDS:
                    values = [e.value for e in arg.value.elements] if isinstance(arg.value, (cst.List, cst.Tuple)) else [arg.value]
                    for value in values:
                        function = self.functions.resolve_function(value, scope)
                        if function is not None:
                            yield function
            return
        func = call.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method == "add_event_handler" and len(call.args) >= 2:
            event = self.semantics.fold(call.args[0].value)
            if event is not None and event.value == "startup":
                function = self.functions.resolve_function(call.args[1].value, scope)
                if function is not None:
                    yield function
        elif method in ("append", "insert") and isinstance(func.value, cst.Attribute) and func.value.attr.value in table.STARTUP_LISTS:
            for arg in call.args:
                function = self.functions.resolve_function(arg.value, scope)
                if function is not None:
                    yield function

    # -- caching -----------------------------------------------------------------------------------------------

    def caches_result(self, function: FunctionInfo) -> bool:
        """Whether ``function`` is decorated to compute its result once (``@lru_cache``, ``@st.cache_resource``)."""
        for decorator in function.node.decorators:
            target, _ = decorator_parts(decorator)
            if self.semantics.qualify(target) in CACHING_DECORATORS:
                return True
        return False

    def path_is_cached(self, start: FunctionInfo, path: tuple[FunctionInfo, ...]) -> bool:
        """Whether the way from ``start`` down ``path`` runs once, not per call: a function on it is an
        ``@lru_cache``'d one, or every call of the next function from the one before keeps its result
        (``global _model; _model = Model()``)."""
        chain = (start, *path)
        if any(self.caches_result(f) for f in chain):
            return True
        for caller, callee in zip(chain, chain[1:]):
            sites = [s for s in self.semantics.sites_in(caller)
                     if self.functions.resolve_call(dotted_name(s.node.func) or "", s.function) is callee]
            if sites and all(caches_load(s) for s in sites):
                return True
        return False


def caches_load(site: CallSite) -> bool:
    """``global_model = load(...)`` / ``self.model = load(...)``: a lazy one-time load, not one per call. Not in
    ``__init__``: that runs once per object, so per request when a handler (or its framework) builds one."""
    function = site.function
    for target in site.assigned_to:
        if target.startswith("self.") and (function is None or function.name != "__init__"):
            return True
        if function is not None and target in function.global_names:
            return True
    return False


def _keyword_is_true(call: cst.Call | None, name: str) -> bool:
    if call is None:
        return False
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False
