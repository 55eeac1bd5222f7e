"""The functions of one module a call or a name runs, and what calls what within the module."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vllm_lint.python.handler_table import MAX_CALL_DEPTH
from vllm_lint.python.model import ClassInfo, FunctionInfo, dotted_name
from vllm_lint.python.names import Names


class FunctionIndex:
    """The module's functions and classes by name, and the calls between them."""

    def __init__(self, names: Names) -> None:
        self.names = names
        self.model = names.model
        self.classes = {klass.name: klass for klass in self.model.classes if klass.function is None}
        self._nested: dict[FunctionInfo, list[FunctionInfo]] = {}
        for function in self.model.functions:
            if function.parent is not None:
                self._nested.setdefault(function.parent, []).append(function)
        self._callees: dict[FunctionInfo, list[FunctionInfo]] = {}

    def reached_from(self, start: FunctionInfo) -> Iterator[tuple[FunctionInfo, tuple[FunctionInfo, ...]]]:
        """Functions of this module that ``start`` calls, transitively, each with the path to it (shortest first)."""
        seen = {start}
        frontier: list[tuple[FunctionInfo, tuple[FunctionInfo, ...]]] = [(start, ())]
        for _ in range(MAX_CALL_DEPTH):
            following = []
            for function, path in frontier:
                for callee in self.callees(function):
                    if callee in seen or callee.in_main_guard:
                        continue
                    seen.add(callee)
                    reached = path + (callee,)
                    yield callee, reached
                    following.append((callee, reached))
            frontier = following
            if not frontier:
                return

    def callees(self, function: FunctionInfo) -> list[FunctionInfo]:
        """Functions of this module that ``function`` (or a closure inside it) calls directly."""
        found = self._callees.get(function)
        if found is None:
            found = self._callees[function] = [
                callee
                for scope in self.with_closures(function)
                for name in sorted(scope.called_names)
                if (callee := self.resolve_call(name, scope)) is not None
            ]
        return found

    def with_closures(self, function: FunctionInfo) -> Iterator[FunctionInfo]:
        """``function`` and the functions defined inside it, at any depth."""
        stack = [function]
        while stack:
            scope = stack.pop()
            yield scope
            stack.extend(self._nested.get(scope, ()))

    def resolve_call(self, name: str, scope: FunctionInfo | None) -> FunctionInfo | None:
        """The function of this module a call of dotted ``name`` made in ``scope`` runs (``__init__`` for a class)."""
        return self._resolve(name, scope, called=True)

    def resolve_function(self, expr: cst.BaseExpression, scope: FunctionInfo | None) -> FunctionInfo | None:
        """The function of this module an expression names: ``fn``, ``self.m``, ``View.m``, ``partial(fn, ...)``."""
        if isinstance(expr, cst.Call) and self.names.callee(expr) == "functools.partial" and expr.args:
            return self.resolve_function(expr.args[0].value, scope)
        name = dotted_name(expr)
        return self._resolve(name, scope, called=False) if name is not None else None

    def _resolve(self, name: str, scope: FunctionInfo | None, called: bool) -> FunctionInfo | None:
        """A function nested in ``scope``, a module function, or a method (``self.m``, ``Class.m``). A call
        (``called``) also runs a class's ``__init__`` (``Class()``) and a method of the object a name holds."""
        head, _, rest = name.partition(".")
        if not rest:
            for candidate in self._nested.get(scope, ()) if scope is not None else ():
                if candidate.name == name:
                    return candidate
            if name in self.model.module_functions:
                return self.model.module_functions[name]
            klass = self.classes.get(name) if called else None
            return self.method_of(klass, "__init__") if klass is not None else None
        if "." in rest:
            return None
        if head in ("self", "cls") and scope is not None and scope.class_info is not None:
            return self.method_of(scope.class_info, rest)
        if head in self.classes or not called:
            return self.method_of(self.classes.get(head), rest)
        return self.method_of(self.instance_class(cst.Name(head), scope), rest)

    def instance_class(self, expr: cst.BaseExpression, scope: FunctionInfo | None) -> ClassInfo | None:
        """The class of this module whose instance a name (or ``self.x``) holds, when every binding agrees."""
        classes = {dotted_name(call.func) for call in self.names.bindings_of(expr, scope)}
        if len(classes) == 1:
            return self.classes.get(classes.pop() or "")
        return None

    def method_of(self, klass: ClassInfo | None, name: str, depth: int = 0) -> FunctionInfo | None:
        """A method of ``klass`` or of a base class defined in this module."""
        if klass is None or depth > 8:
            return None
        if name in klass.methods:
            return klass.methods[name]
        for base in klass.bases:
            found = self.method_of(self.classes.get(dotted_name(base) or ""), name, depth + 1)
            if found is not None:
                return found
        return None
