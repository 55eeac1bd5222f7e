"""Is an expression statically one string?

A transformers pipeline and ``LLM.generate`` both accept one prompt or a list of
prompts, and the shape of what they return follows. The rewrite turns a call into
one engine request, so it must know the prompt is a single string: a literal, an
f-string, a handler parameter annotated ``str`` (or a ``str`` field of a model
class it is annotated with), or string operations on those.
"""

from __future__ import annotations

import libcst as cst

from vllm_lint.python.walk import walk  # read-only visits without rebuilding the tree

from vllm_lint.python.model import ClassInfo, FunctionInfo, ModuleModel

# str methods that return one str.
_STR_METHODS = frozenset({"strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "format", "replace", "removeprefix", "removesuffix"})


class _Assigned(cst.CSTVisitor):
    """Names (re)bound in a function body, nested functions excluded."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        return self._depth == 1  # the function itself, not the ones nested in it

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def _targets(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(element.value)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names.update(item.name.value for item in node.names)


def rebound_names(function: cst.FunctionDef) -> set[str]:
    visitor = _Assigned()
    walk(function, visitor)
    return visitor.names


def _is_str_annotation(annotation: cst.BaseExpression | None) -> bool:
    if isinstance(annotation, cst.Name):
        return annotation.value == "str"
    # Annotated[str, ...] (FastAPI's Query/Body metadata)
    if isinstance(annotation, cst.Subscript) and isinstance(annotation.value, cst.Name) and annotation.value.value == "Annotated":
        first = annotation.slice[0].slice if annotation.slice else None
        return isinstance(first, cst.Index) and _is_str_annotation(first.value)
    return False


class StringTyping:
    """Answers "is this one string?" for expressions inside one function."""

    def __init__(self, model: ModuleModel, function: FunctionInfo) -> None:
        self.model = model
        self.function = function
        self._rebound = rebound_names(function.node)
        self._params = {
            param.name.value: param.annotation.annotation if param.annotation else None
            for param in (*function.node.params.posonly_params, *function.node.params.params, *function.node.params.kwonly_params)
        }

    def _param_annotation(self, name: str) -> cst.BaseExpression | None:
        if name in self._rebound:
            return None  # reassigned in the body: its type is whatever was assigned last
        return self._params.get(name)

    def is_one_string(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.SimpleString):
            return "b" not in expr.prefix.lower()
        if isinstance(expr, cst.FormattedString):
            return True
        if isinstance(expr, cst.ConcatenatedString):
            return self.is_one_string(expr.left) and self.is_one_string(expr.right)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            # str + x is a str or a TypeError, never a list of prompts.
            return self.is_one_string(expr.left) or self.is_one_string(expr.right)
        if isinstance(expr, cst.Name):
            return _is_str_annotation(self._param_annotation(expr.value))
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            annotation = self._param_annotation(expr.value.value)
            if isinstance(annotation, cst.Name):
                klass = self._module_class(annotation.value)
                return klass is not None and _is_str_annotation(_field_annotation(klass, expr.attr.value))
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Name) and func.value == "str" and "str" not in self.model.module_functions:
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in _STR_METHODS:
                return self.is_one_string(func.value)
        return False

    def _module_class(self, name: str) -> ClassInfo | None:
        matches = [klass for klass in self.model.classes if klass.name == name]
        return matches[0] if len(matches) == 1 else None


def _field_annotation(klass: ClassInfo, field: str) -> cst.BaseExpression | None:
    for statement in klass.node.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == field:
                    return small.annotation.annotation
    return None
