"""Light name resolution, constant folding and handler detection over a ModuleModel.

Instead of LibCST's QualifiedNameProvider (most of Fixit's run time), names are
resolved through the module's own import map and module-level aliases: enough
to tell vLLM's ``LLM`` from TensorRT-LLM's, and cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePath

import libcst as cst

from vllm_lint.file_roles import is_test_path
from vllm_lint.python.model import (
    WEB_FRAMEWORK_MODULES,
    CallSite,
    ClassInfo,
    FunctionInfo,
    ModuleModel,
    dotted_name,
)
from vllm_lint.values import Value

# The public homes of the vLLM classes the rules talk about, and the internal
# paths they are defined at (``from vllm.entrypoints.llm import LLM`` is the same class).
VLLM_CANONICAL = {
    "vllm.entrypoints.llm.LLM": "vllm.LLM",
    "vllm.engine.arg_utils.EngineArgs": "vllm.EngineArgs",
    "vllm.engine.arg_utils.AsyncEngineArgs": "vllm.AsyncEngineArgs",
    "vllm.engine.async_llm_engine.AsyncLLMEngine": "vllm.AsyncLLMEngine",
    "vllm.v1.engine.async_llm.AsyncLLM": "vllm.AsyncLLMEngine",
    "vllm.engine.llm_engine.LLMEngine": "vllm.LLMEngine",
    "vllm.v1.engine.llm_engine.LLMEngine": "vllm.LLMEngine",
    "vllm.sampling_params.SamplingParams": "vllm.SamplingParams",
}

APP_FACTORIES = {
    "fastapi.FastAPI": "fastapi",
    "fastapi.APIRouter": "fastapi",
    "starlette.applications.Starlette": "starlette",
    "starlette.routing.Router": "starlette",
    "flask.Flask": "flask",
    "flask.Blueprint": "flask",
    "quart.Quart": "quart",
    "quart.Blueprint": "quart",
    "sanic.Sanic": "sanic",
    "sanic.Blueprint": "sanic",
    "aiohttp.web.Application": "aiohttp",
    "aiohttp.web.RouteTableDef": "aiohttp",
    "litestar.Litestar": "litestar",
}

ROUTE_VERBS = frozenset(
    {"get", "post", "put", "patch", "delete", "options", "head", "api_route", "websocket", "route", "view"}
)


def canonical(qualified: str | None) -> str | None:
    if qualified is None:
        return None
    for internal, public in VLLM_CANONICAL.items():
        if qualified == internal or qualified.startswith(internal + "."):
            return public + qualified[len(internal):]
    return qualified


@dataclass(frozen=True, slots=True)
class Handler:
    function: FunctionInfo
    framework: str | None  # "fastapi", "flask", ... when known
    direct: bool  # registered as a handler itself (not only reached from one)
    runs_on_event_loop: bool  # the request handler it is reached from is ``async def``


class Semantics:
    """Questions rules ask about one module, answered from its model."""

    def __init__(self, model: ModuleModel, path: str) -> None:
        self.model = model
        self.path = path

    # -- names ---------------------------------------------------------------

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name an expression refers to, through imports and aliases."""
        name = dotted_name(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.model.aliases.get(head)
        if target is None:
            return None
        return canonical(f"{target}.{rest}" if rest else target)

    def callee(self, call: cst.Call) -> str | None:
        return self.qualify(call.func)

    @cached_property
    def imported_modules(self) -> frozenset[str]:
        found = set()
        for info in self.model.imports:
            if info.relative:
                continue
            found.add(info.module)
        return frozenset(found)

    def imports_any(self, prefixes: tuple[str, ...]) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.imported_modules for p in prefixes)

    @cached_property
    def web_framework(self) -> str | None:
        for module in sorted(self.imported_modules):
            for prefix in WEB_FRAMEWORK_MODULES:
                if module == prefix or module.startswith(prefix + "."):
                    return prefix.split(".")[0] if prefix != "ray.serve" else "ray"
        return None

    # -- what names hold -------------------------------------------------------

    def bindings_of(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> list[CallSite | cst.Call]:
        """The calls whose results a name (or ``self.x``) may hold where it is used."""
        name = dotted_name(expr)
        if name is None:
            return []
        found = []
        if name.startswith("self.") and function is not None and function.class_info is not None:
            found += self.model.bindings.get((function.class_info, name), [])
        else:
            scope = function
            while scope is not None:
                if name in scope.global_names:
                    break
                found += self.model.bindings.get((scope, name), [])
                if found:
                    return [b.call for b in found]
                scope = scope.parent
            found += self.model.bindings.get((None, name), [])
        return [b.call for b in found]

    def produced_by(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> set[str]:
        """Qualified callees of the calls that produced the object ``expr`` names."""
        if isinstance(expr, cst.Call):
            callee = self.callee(expr)
            return {callee} if callee else set()
        return {callee for call in self.bindings_of(expr, function) if (callee := self.callee(call))}

    # -- values --------------------------------------------------------------

    def fold(self, expr: cst.BaseExpression, depth: int = 0) -> Value | None:
        """The static value of an expression, or None when it is not known."""
        if depth > 8:
            return None
        if isinstance(expr, (cst.Integer, cst.Float)):
            return Value(expr.evaluated_value)
        if isinstance(expr, cst.SimpleString):
            try:
                return Value(expr.evaluated_value)
            except Exception:  # noqa: BLE001 - byte strings and odd prefixes are simply unknown
                return None
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            inner = self.fold(expr.expression, depth + 1)
            if inner is not None and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
                return Value(-inner.value, inner.origin)
            return None
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return Value({"True": True, "False": False, "None": None}[expr.value])
            constant = self.model.constants.get(expr.value)
            if constant is not None:
                return self.fold(constant, depth + 1)
            return None
        if isinstance(expr, cst.Call):
            return self._fold_call(expr, depth)
        return None

    def _fold_call(self, call: cst.Call, depth: int) -> Value | None:
        callee = self.callee(call) or dotted_name(call.func)
        args = call.args
        if callee in ("float", "int", "str", "bool") and len(args) == 1 and not args[0].keyword:
            inner = self.fold(args[0].value, depth + 1)
            if inner is None:
                return None
            try:
                converted = {"float": float, "int": int, "str": str, "bool": bool}[callee](inner.value)
            except (TypeError, ValueError):
                return None
            return Value(converted, inner.origin)
        if callee in ("os.getenv", "os.environ.get") and len(args) >= 2:
            variable = self.fold(args[0].value, depth + 1)
            default = self.fold(args[1].value, depth + 1)
            if default is None:
                return None
            shown = variable.value if variable else "?"
            return Value(default.value, f"the default of {callee}({shown!r})")
        return None

    # -- handlers ------------------------------------------------------------

    @cached_property
    def is_test_file(self) -> bool:
        return is_test_path(self.path)

    @cached_property
    def app_objects(self) -> dict[str, str]:
        """Module-level names bound to a web app or router, with their framework."""
        apps: dict[str, str] = {}
        for (scope, name), bindings in self.model.bindings.items():
            if scope is not None:
                continue
            for binding in bindings:
                framework = APP_FACTORIES.get(self.callee(binding.call) or "")
                if framework:
                    apps[name] = framework
        return apps

    @cached_property
    def defines_web_app(self) -> bool:
        return bool(self.app_objects) or bool(self.handlers)

    @cached_property
    def handlers(self) -> dict[FunctionInfo, Handler]:
        if self.is_test_file:
            return {}
        direct: dict[FunctionInfo, Handler] = {}
        for function in self.model.functions:
            if function.in_main_guard:
                continue
            framework = self._route_decorator(function)
            if framework is not False:
                direct[function] = Handler(function, framework, True, function.is_async)
        for function, framework in self._registered_handlers():
            direct.setdefault(function, Handler(function, framework, True, function.is_async))
        for klass in self.model.classes:
            for function, framework in self._class_handlers(klass):
                direct.setdefault(function, Handler(function, framework, True, function.is_async))
        if PurePath(self.path).name == "views.py" and self.web_framework == "django":
            for function in self.model.module_functions.values():
                if function.params[:1] == ("request",):
                    direct.setdefault(function, Handler(function, "django", True, function.is_async))
        return self._close_over_calls(direct)

    def _route_decorator(self, function: FunctionInfo) -> str | None | bool:
        """The framework of a route decorator on ``function``; False when there is none."""
        for decorator in function.node.decorators:
            expr = decorator.decorator
            if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
                continue
            verb = expr.func.attr.value
            if verb not in ROUTE_VERBS:
                continue
            owner = dotted_name(expr.func.value)
            if owner in self.app_objects:
                return self.app_objects[owner]
            if self.web_framework is not None:
                return self.web_framework
            first = expr.args[0].value if expr.args and not expr.args[0].keyword else None
            if isinstance(first, cst.SimpleString):
                try:
                    path = first.evaluated_value
                except Exception:  # noqa: BLE001
                    continue
                if isinstance(path, str) and path.startswith("/"):
                    return None
        return False

    def _registered_handlers(self) -> list[tuple[FunctionInfo, str | None]]:
        found = []
        for site in self.model.calls:
            call = site.node
            name = dotted_name(call.func) or ""
            method = name.rsplit(".", 1)[-1]
            target: cst.BaseExpression | None = None
            if method in ("add_api_route", "add_route", "add_url_rule", "add_get", "add_post"):
                for arg in call.args:
                    if arg.keyword and arg.keyword.value in ("endpoint", "view_func", "handler"):
                        target = arg.value
                positional = [a.value for a in call.args if not a.keyword]
                if target is None and positional:
                    target = positional[-1] if method != "add_url_rule" or len(positional) >= 3 else None
            elif self.callee(call) in ("starlette.routing.Route", "starlette.routing.WebSocketRoute") or (
                name.startswith("web.") and method in ROUTE_VERBS and self.web_framework == "aiohttp"
            ):
                positional = [a.value for a in call.args if not a.keyword]
                target = positional[1] if len(positional) > 1 else None
                for arg in call.args:
                    if arg.keyword and arg.keyword.value in ("endpoint", "handler"):
                        target = arg.value
            if isinstance(target, cst.Name) and target.value in self.model.module_functions:
                found.append((self.model.module_functions[target.value], self.web_framework))
        return found

    def _class_handlers(self, klass: ClassInfo) -> list[tuple[FunctionInfo, str | None]]:
        base_names = [dotted_name(b) or "" for b in klass.bases]
        qualified = [self.qualify(b) or name for b, name in zip(klass.bases, base_names)]
        methods = list(klass.methods.values())
        if any(name.endswith("Servicer") for name in base_names):
            return [(m, "grpc") for m in methods if not m.name.startswith("_")]
        if any(q.split(".")[-1] in ("View", "APIView", "ViewSet", "ModelViewSet", "GenericAPIView") for q in qualified):
            verbs = ROUTE_VERBS | {"list", "create", "retrieve", "update", "partial_update", "destroy"}
            return [(m, "django") for m in methods if m.name in verbs]
        for decorator in klass.node.decorators:
            expr = decorator.decorator
            expr = expr.func if isinstance(expr, cst.Call) else expr
            if (dotted_name(expr) or "").endswith("serve.deployment") or self.qualify(expr) == "ray.serve.deployment":
                handlers = []
                for method in methods:
                    if method.name == "__call__" or self._route_decorator(method) is not False:
                        handlers.append((method, "ray"))
                return handlers
        return []

    def _close_over_calls(self, direct: dict[FunctionInfo, Handler]) -> dict[FunctionInfo, Handler]:
        """Functions of this module reached from a handler count as inside it."""
        result = dict(direct)
        frontier = list(direct.values())
        while frontier:
            handler = frontier.pop()
            for name in handler.function.called_names:
                callee = None
                if name in self.model.module_functions:
                    callee = self.model.module_functions[name]
                elif name.startswith("self.") and handler.function.class_info is not None:
                    callee = handler.function.class_info.methods.get(name[5:])
                if callee is not None and callee not in result and not callee.in_main_guard:
                    reached = Handler(callee, handler.framework, False, handler.runs_on_event_loop)
                    result[callee] = reached
                    frontier.append(reached)
        return result

    def enclosing_handler(self, function: FunctionInfo | None) -> Handler | None:
        """The handler a piece of code runs in (nested closures count as their parent)."""
        while function is not None:
            handler = self.handlers.get(function)
            if handler is not None:
                return handler
            function = function.parent
        return None

    def is_startup_hook(self, function: FunctionInfo | None) -> bool:
        """Lifespan handlers and ``on_event("startup")`` hooks load models once, not per request."""
        while function is not None:
            for decorator in function.node.decorators:
                expr = decorator.decorator
                name = dotted_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
                if name.endswith((".on_event", "asynccontextmanager", ".before_serving", ".before_first_request", ".listener")):
                    return True
            if function.name in ("lifespan", "startup", "on_startup", "__init__"):
                return True
            function = function.parent
        return False
