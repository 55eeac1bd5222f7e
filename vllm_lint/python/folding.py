"""Constant folding over one module: the static value of an expression, followed through the names, ``self.x``
attributes, dict literals and parameters that hold it."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from vllm_lint.python.functions import FunctionIndex
from vllm_lint.python.model import CallSite, FunctionInfo, dotted_name
from vllm_lint.python.names import Names
from vllm_lint.values import Value

_MAX_FOLD_DEPTH = 12


class Folding(Names):
    """The module's names, its functions, and the values its expressions hold."""

    @cached_property
    def functions(self) -> FunctionIndex:
        return FunctionIndex(self)

    @cached_property
    def _sites_by_function(self) -> dict[FunctionInfo | None, list[CallSite]]:
        found: dict[FunctionInfo | None, list[CallSite]] = {}
        for site in self.model.calls:
            found.setdefault(site.function, []).append(site)
        return found

    def sites_in(self, function: FunctionInfo) -> list[CallSite]:
        """The calls written in ``function``, its closures included."""
        return [site for scope in self.functions.with_closures(function) for site in self._sites_by_function.get(scope, [])]

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
            callee = self.functions.resolve_call(name, site.function)
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
