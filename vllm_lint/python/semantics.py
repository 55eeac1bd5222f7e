"""Light name resolution, constant folding and handler detection over a ModuleModel.

Instead of LibCST's QualifiedNameProvider (most of Fixit's run time), names are
resolved through the module's own import map and module-level aliases: enough
to tell vLLM's ``LLM`` from TensorRT-LLM's, and cheap.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, overload

import libcst as cst

from vllm_lint.file_roles import is_test_path
from vllm_lint.python import handler_table
from vllm_lint.python.handlers import Handler, HandlerFinder
from vllm_lint.python.model import (
    Binding,
    CallSite,
    FunctionInfo,
    ModuleModel,
    dotted_name,
)
from vllm_lint.values import Value

if TYPE_CHECKING:
    from vllm_lint.python.project import Project, Reached

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

APP_FACTORIES = handler_table.APP_FACTORIES
ROUTE_VERBS = handler_table.ROUTE_VERBS
# App objects that do not serve requests by themselves (a Modal app runs functions; its web endpoints are
# handlers of their own).
_NOT_SERVERS = frozenset({"modal"})
_MAX_FOLD_DEPTH = 12


@overload
def canonical(qualified: str) -> str: ...
@overload
def canonical(qualified: None) -> None: ...
def canonical(qualified: str | None) -> str | None:
    if qualified is None:
        return None
    for internal, public in VLLM_CANONICAL.items():
        if qualified == internal or qualified.startswith(internal + "."):
            return public + qualified[len(internal):]
    return qualified


class Semantics:
    """Questions rules ask about one module, answered from its model."""

    def __init__(self, model: ModuleModel, path: str, project: Project | None = None) -> None:
        self.model = model
        self.path = path
        # The project's other modules (cross-module summaries); None: this module alone.
        self.project = project

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
    def route_framework(self) -> str | None:
        """The imported framework whose apps take ``@app.<verb>(...)`` route decorators (table order first)."""
        for framework in handler_table.FRAMEWORKS:
            if framework.route_decorators and self.imports_any(framework.modules):
                return framework.name
        return None

    def app_framework(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> str | None:
        """The framework of the app or router object ``expr`` (``app``, ``app.router``) holds, when known."""
        name = dotted_name(expr)
        if name is None:
            return None
        head = name.split(".")[0]
        for call in self.bindings_of(cst.Name(head), function):
            framework = APP_FACTORIES.get(self.callee(call) or "")
            if framework is not None:
                return framework
        imported = self._imported.get(head)
        if self.project is not None and imported is not None and imported[2]:
            return self.project.app_framework(self.project.importer, *imported)
        return None

    # -- what names hold -------------------------------------------------------

    def bindings_of(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> list[cst.Call]:
        """The calls whose results a name (or ``self.x``) may hold where it is used."""
        name = dotted_name(expr)
        if name is None:
            return []
        found: list[Binding] = []
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
        """Qualified callees of the calls that produced the object ``expr`` names; through the project's
        other modules, what made a name imported from one, or the value a function of one returns."""
        if isinstance(expr, cst.Call):
            callee = self.callee(expr)
            return ({callee} if callee else set()) | self._project_producers(expr.func, function)
        made = set()
        bindings = self.bindings_of(expr, function)
        for call in bindings:
            callee = self.callee(call)
            made |= ({callee} if callee else set()) | self._project_producers(call.func, function)
        if not bindings:
            made = self._project_producers(expr, function)
        return made

    def _project_producers(self, expr: cst.BaseExpression, function: FunctionInfo | None) -> set[str]:
        # Only where the serving rules look (request handlers): elsewhere an imported name is most often a
        # class or a function, and its module's summary would be read for nothing.
        if self.project is None or self.enclosing_handler(function) is None:
            return set()
        target = self.imported_target(expr, function)
        if target is None:
            return set()
        return self.project.name_producers(self.project.importer, *target)

    # -- the project's other modules -------------------------------------------------------------------

    @cached_property
    def _imported(self) -> dict[str, tuple[str, int, str]]:
        """Local name -> (module, level, dotted name in it) for every import (``import a.b`` binds ``a``)."""
        found: dict[str, tuple[str, int, str]] = {}
        for info in self.model.imports:
            if isinstance(info.node, cst.ImportFrom):
                for name, asname, _ in info.names:
                    found[asname or name] = (info.module, info.relative, name)
            else:
                for name, asname, _ in info.names:
                    if asname:
                        found[asname] = (name, 0, "")
                    else:
                        head = name.split(".")[0]
                        found[head] = (head, 0, "")
        return found

    def imported_target(self, expr: cst.BaseExpression, function: FunctionInfo | None, depth: int = 0) -> tuple[str, int, str] | None:
        """(module, level, dotted name) that a name or call target from an import refers to: ``load`` from
        ``from .model import load``, ``model.load`` from ``import model``, ``gen.run`` where ``gen = Generator()``."""
        name = dotted_name(expr)
        if name is None or depth > 2:
            return None
        head, _, rest = name.partition(".")
        imported = self._imported.get(head)
        if imported is not None:
            module, level, inner = imported
            dotted = ".".join(p for p in (inner, rest) if p)
            return (module, level, dotted) if dotted else None
        if rest and "." not in rest:
            bindings = self.bindings_of(cst.Name(head), function)
            if len(bindings) == 1:
                made = self.imported_target(bindings[0].func, function, depth + 1)
                if made is not None:
                    return made[0], made[1], f"{made[2]}.{rest}"
        return None

    def project_effects(self, site: CallSite) -> list[Reached]:
        """What a call into another module of the project leads to there: model loads, blocking inference."""
        if self.project is None:
            return []
        target = self.imported_target(site.node.func, site.function)
        if target is None:
            return []
        return self.project.effects(self.project.importer, *target)

    @cached_property
    def _sites_by_function(self) -> dict[FunctionInfo | None, list[CallSite]]:
        found: dict[FunctionInfo | None, list[CallSite]] = {}
        for site in self.model.calls:
            found.setdefault(site.function, []).append(site)
        return found

    def sites_in(self, function: FunctionInfo) -> list[CallSite]:
        """The calls written in ``function``, its closures included."""
        return [site for scope in self.finder.with_closures(function) for site in self._sites_by_function.get(scope, [])]

    # -- values --------------------------------------------------------------

    def fold(self, expr: cst.BaseExpression, function: FunctionInfo | None = None, depth: int = 0) -> Value | None:
        """The static value of an expression evaluated in ``function`` (None: module level), or None when not known.

        Names are followed to the one value stored in them (a local, ``self.x`` set once in the class, a
        module constant), parameters to the arguments every call in the module passes, and ``cfg["k"]`` /
        ``cfg.get("k")`` into a dict literal that nothing changes in place.
        """
        if depth > _MAX_FOLD_DEPTH:
            return None
        if isinstance(expr, (cst.Integer, cst.Float)):
            return Value(expr.evaluated_value)
        if isinstance(expr, cst.SimpleString):
            try:
                return Value(expr.evaluated_value)
            except Exception:  # noqa: BLE001 - byte strings and odd prefixes are simply unknown
                return None
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            inner = self.fold(expr.expression, function, depth + 1)
            if inner is not None and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
                return Value(-inner.value, inner.origin)
            return None
        if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
            return Value({"True": True, "False": False, "None": None}[expr.value])
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript)) or (
            isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get"
        ):
            found = self.expression_of(expr, function, depth + 1)
            if found is None:
                return self._fold_call(expr, function, depth) if isinstance(expr, cst.Call) else None
            value_expr, context, origin = found
            value = self.fold(value_expr, context, depth + 1)
            if value is not None and origin and value.origin is None:
                return Value(value.value, origin)
            return value
        if isinstance(expr, cst.Call):
            return self._fold_call(expr, function, depth)
        return None

    def expression_of(self, expr: cst.BaseExpression, function: FunctionInfo | None, depth: int = 0
                      ) -> tuple[cst.BaseExpression, FunctionInfo | None, str | None] | None:
        """The one expression a name, ``self.x``, ``cfg["k"]`` or ``cfg.get("k", d)`` stands for, the function
        it is evaluated in, and where it came from when that is not where it is written."""
        if depth > _MAX_FOLD_DEPTH:
            return None
        if isinstance(expr, cst.Subscript):
            if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
                return None
            key = self.fold(expr.slice[0].slice.value, function, depth + 1)
            return self._entry(expr.value, key, None, function, depth) if key is not None else None
        if isinstance(expr, cst.Call):
            func = expr.func
            if not isinstance(func, cst.Attribute) or not expr.args or any(a.keyword or a.star for a in expr.args):
                return None
            key = self.fold(expr.args[0].value, function, depth + 1)
            default = expr.args[1].value if len(expr.args) > 1 else None
            return self._entry(func.value, key, default, function, depth) if key is not None else None
        name = dotted_name(expr)
        if name is None:
            return None
        return self._stored(name, function, depth)

    def _stored(self, name: str, function: FunctionInfo | None, depth: int
                ) -> tuple[cst.BaseExpression, FunctionInfo | None, str | None] | None:
        values = self.model.values
        if name.startswith("self."):
            if function is None or function.class_info is None or name.count(".") != 1:
                return None
            return _single(values.get((function.class_info, name), []))
        if "." in name:
            return None
        scope = function
        while scope is not None:
            if name in scope.global_names:
                break
            stored = values.get((scope, name))
            if stored is not None or name in scope.params:
                if stored is not None and name in scope.params:
                    return None  # a parameter the function rebinds
                if stored is not None:
                    return _single(stored)
                return self._argument(scope, name, depth)
            scope = scope.parent
        return _single(values.get((None, name), []))

    def _entry(self, mapping: cst.BaseExpression, key: Value, default: cst.BaseExpression | None,
               function: FunctionInfo | None, depth: int) -> tuple[cst.BaseExpression, FunctionInfo | None, str | None] | None:
        """``mapping[key]`` (or ``mapping.get(key, default)``) when the mapping is a dict literal nothing changes."""
        literal = self.mapping_items(mapping, function, depth + 1)
        if literal is None:
            return None
        items, context, name = literal
        for item_key, value, _ in items:
            if item_key == key.value:
                return value, context, f"{name}[{key.value!r}]" if name else None
        if default is not None:
            return default, function, None
        return None

    def mapping_items(self, expr: cst.BaseExpression, function: FunctionInfo | None, depth: int = 0
                      ) -> tuple[list[tuple[object, cst.BaseExpression, cst.CSTNode]], FunctionInfo | None, str | None] | None:
        """The (key, value expression, key node) items of the dict literal (or ``dict(k=v)``) a name holds, the
        function its values are evaluated in and the name; None when it is not one or something changes it in
        place."""
        context = function
        name = dotted_name(expr)
        if name is not None:
            if name in self.model.mutated:
                return None
            found = self.expression_of(expr, function, depth + 1)
            if found is None:
                return None
            expr, context, _ = found
            inner = dotted_name(expr)
            if inner is not None:
                if depth > _MAX_FOLD_DEPTH:
                    return None
                return self.mapping_items(expr, context, depth + 1)
        items: list[tuple[object, cst.BaseExpression, cst.CSTNode]] = []
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if not isinstance(element, cst.DictElement):
                    return None
                key = self.fold(element.key, context, depth + 1)
                if key is None:
                    return None
                items.append((key.value, element.value, element.key))
            return items, context, name
        if isinstance(expr, cst.Call) and dotted_name(expr.func) == "dict" and "dict" not in self.model.aliases:
            for arg in expr.args:
                if arg.keyword is None:
                    return None
                items.append((arg.keyword.value, arg.value, arg.keyword))
            return items, context, name
        return None

    def _argument(self, function: FunctionInfo, name: str, depth: int) -> tuple[cst.BaseExpression, FunctionInfo | None, str | None] | None:
        """What every call of ``function`` in this module passes for parameter ``name``: one value, or one
        object (the same dict, say) that each call names."""
        sites = self.call_sites.get(function, [])
        if not sites:
            return None
        chosen: tuple[cst.BaseExpression, FunctionInfo | None] | None = None
        agreed: object = None
        for site in sites:
            passed = _passed(function, site, name)
            if passed is None:
                return None
            value = self.fold(passed[0], passed[1], depth + 1)
            identity = ("value", value.value) if value is not None else ("node", id(self._terminal(*passed, depth)))
            if chosen is None:
                chosen, agreed = passed, identity
            elif identity != agreed:
                return None
        assert chosen is not None
        return chosen[0], chosen[1], f"passed to {function.name}() as {name}"

    def _terminal(self, expr: cst.BaseExpression, function: FunctionInfo | None, depth: int) -> cst.BaseExpression:
        """The expression a chain of names ends at (``cfg`` -> ``CONFIG`` -> its dict literal)."""
        for _ in range(_MAX_FOLD_DEPTH - depth):
            if dotted_name(expr) is None:
                break
            found = self.expression_of(expr, function, depth + 1)
            if found is None:
                break
            expr, function, _ = found
        return expr

    @cached_property
    def call_sites(self) -> dict[FunctionInfo, list[CallSite]]:
        """The calls of this module that run each of its functions (``Cls(...)`` runs ``Cls.__init__``)."""
        found: dict[FunctionInfo, list[CallSite]] = {}
        for site in self.model.calls:
            name = dotted_name(site.node.func)
            if name is None:
                continue
            callee = self.finder.resolve_call(name, site.function)
            if callee is not None:
                found.setdefault(callee, []).append(site)
        return found

    def _fold_call(self, call: cst.Call, function: FunctionInfo | None, depth: int) -> Value | None:
        callee = self.callee(call) or dotted_name(call.func)
        args = call.args
        if callee in ("float", "int", "str", "bool") and len(args) == 1 and not args[0].keyword:
            inner = self.fold(args[0].value, function, depth + 1)
            if inner is None:
                return None
            try:
                converted = {"float": float, "int": int, "str": str, "bool": bool}[callee](inner.value)
            except (TypeError, ValueError):
                return None
            return Value(converted, inner.origin)
        if callee in ("os.getenv", "os.environ.get") and len(args) >= 2:
            variable = self.fold(args[0].value, function, depth + 1)
            default = self.fold(args[1].value, function, depth + 1)
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
        sites = {id(site.node): site for site in self.model.calls if site.function is None}
        for (scope, name), bindings in self.model.bindings.items():
            if scope is not None:
                continue
            for binding in bindings:
                framework = APP_FACTORIES.get(self.callee(binding.call) or "")
                site = sites.get(id(binding.call))
                if framework and site is not None and not site.in_main_guard:
                    apps[name] = framework
        return apps

    @cached_property
    def defines_web_app(self) -> bool:
        """Whether the module runs a server: it makes an app (not under ``__main__``) or has a handler."""
        return any(f not in _NOT_SERVERS for f in self.app_objects.values()) or bool(self.handlers)

    @cached_property
    def finder(self) -> HandlerFinder:
        return HandlerFinder(self)

    @cached_property
    def handlers(self) -> dict[FunctionInfo, Handler]:
        """Every function that runs per request, registered or reached (see handlers.py)."""
        return self.finder.handlers()

    @cached_property
    def startup_hooks(self) -> frozenset[FunctionInfo]:
        return frozenset(self.finder.startup_hooks())

    def enclosing_handler(self, function: FunctionInfo | None) -> Handler | None:
        """The handler a piece of code runs in (nested closures count as their parent)."""
        while function is not None:
            handler = self.handlers.get(function)
            if handler is not None:
                return handler
            function = function.parent
        return None

    def is_startup_hook(self, function: FunctionInfo | None) -> bool:
        """Whether code in ``function`` runs once at start-up: in a lifespan handler, an ``on_event("startup")``
        hook, a serving class's ``__init__``/``setup``, a function only they call; also any ``__init__`` no
        handler reaches (its object is built when the module is)."""
        while function is not None:
            if function not in self.handlers and (function in self.startup_hooks or function.name == "__init__"):
                return True
            function = function.parent
        return False

    def caches_result(self, handler: Handler) -> bool:
        """Whether the way from the handler to its code runs once (an ``@lru_cache``'d function on it, or a
        call whose result is kept in a global)."""
        return self.finder.path_is_cached(handler.entry, handler.via)


def _single(stored: list[tuple[cst.BaseExpression | None, FunctionInfo | None]]
            ) -> tuple[cst.BaseExpression, FunctionInfo | None, str | None] | None:
    """The value of a name stored exactly once, with the function that stores it."""
    if len(stored) != 1:
        return None
    value, function = stored[0]
    return None if value is None else (value, function, None)


def _passed(function: FunctionInfo, site: CallSite, name: str) -> tuple[cst.BaseExpression, FunctionInfo | None] | None:
    """What a call passes for parameter ``name`` of ``function`` (its default when it passes nothing)."""
    call = site.node
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value, site.function
    params = function.node.params
    positional = [p for p in (*params.posonly_params, *params.params)]
    bound_first = function.is_method and not any(
        (dotted_name(d.decorator) or "") == "staticmethod" for d in function.node.decorators
    )
    index = next((i for i, p in enumerate(positional) if p.name.value == name), None)
    passed = [arg.value for arg in call.args if arg.keyword is None]
    if index is not None:
        at = index - (1 if bound_first else 0)
        if 0 <= at < len(passed):
            return passed[at], site.function
        default = positional[index].default
    else:
        default = next((p.default for p in params.kwonly_params if p.name.value == name), None)
    if default is None:
        return None
    return default, function.parent
