"""Is an expression statically one string?

A transformers pipeline and ``LLM.generate`` both accept one prompt or a list of
prompts, and the shape of what they return follows. The rewrite turns a call into
one engine request, so it must know the prompt is a single string: a literal, an
f-string, a handler parameter annotated ``str`` (or a ``str`` field of a model
class it is annotated with, inherited fields included), a local variable bound
once to one of those, a form or query field of Flask's ``request``, a Gradio
callback's parameter that its listeners fill from a text box, a gRPC request's string field (from the
project's ``.proto``), or string
operations on those. A one-item list of such a string (``[prompt]``, or a local
bound once to it and never changed) is a batch of one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.walk import walk  # read-only visits without rebuilding the tree

from vllm_lint.python.model import ClassInfo, FunctionInfo, ModuleModel, dotted_name
from vllm_lint.python.rewrite.shapes import is_index_zero

# str methods that return one str.
_STR_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "format", "replace", "removeprefix", "removesuffix", "join"}
)
# Flask's request fields that hold text (werkzeug MultiDicts of str): ``request.form["prompt"]``.
_FLASK_TEXT_FIELDS = frozenset({"form", "args", "values"})
_DEPTH = 8
# FastAPI parameter defaults whose values arrive as text (Body's is any JSON value).
_FASTAPI_TEXT_PARAMS = frozenset({"fastapi.Query", "fastapi.Form", "fastapi.Path", "fastapi.Header", "fastapi.Cookie"})
_WEBSOCKETS = frozenset({"fastapi.WebSocket", "starlette.websockets.WebSocket"})


class _Bindings(cst.CSTVisitor):
    """How each name is bound in a function body (nested functions excluded): the value of each plain
    ``name = value``, or None for any other kind of binding (loop target, ``with ... as``, ``+=``, ...)."""

    def __init__(self, root_is_function: bool) -> None:
        super().__init__()
        self.values: dict[str, list[cst.BaseExpression | None]] = {}
        self._depth = 0 if root_is_function else 1

    def _bind(self, target: cst.CSTNode, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        if self._depth > 1:
            self.values.setdefault(node.name.value, []).append(None)
        return self._depth == 1  # the function itself, not the ones nested in it

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.values.setdefault(node.name.value, []).append(None)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target, None)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, None)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target, None)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._bind(item.name, None)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._bind(item.name, None)


def rebound_names(function: cst.FunctionDef) -> set[str]:
    """Names bound anywhere in the body of ``function`` (not in functions nested in it)."""
    return set(_bindings(function))


def local_bindings(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    """How each name is bound in the body of ``function`` (not in functions nested in it): the value of each
    plain ``name = value``, None for any other binding."""
    return _bindings(function)


def bound_names(statement: cst.CSTNode) -> set[str]:
    """Names a statement binds in the scope it runs in (a def or class statement binds its name)."""
    visitor = _Bindings(root_is_function=False)
    walk(statement, visitor)
    return set(visitor.values)


def module_bindings(module: cst.Module) -> dict[str, list[cst.BaseExpression | None]]:
    """How each name is bound at the module's top level (``with`` and ``if`` blocks included), as _Bindings."""
    visitor = _Bindings(root_is_function=False)
    walk(module, visitor)
    return visitor.values


def _bindings(function: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    visitor = _Bindings(root_is_function=True)
    walk(function, visitor)
    return visitor.values


def _is_str_annotation(annotation: cst.BaseExpression | None) -> bool:
    if isinstance(annotation, cst.Name):
        return annotation.value == "str"
    # Annotated[str, ...] (FastAPI's Query/Body metadata)
    if isinstance(annotation, cst.Subscript) and isinstance(annotation.value, cst.Name) and annotation.value.value == "Annotated":
        first = annotation.slice[0].slice if annotation.slice else None
        return isinstance(first, cst.Index) and _is_str_annotation(first.value)
    return False


def _is_str_list_annotation(annotation: cst.BaseExpression | None) -> bool:
    """``list[str]`` / ``List[str]``."""
    if not (isinstance(annotation, cst.Subscript) and isinstance(annotation.value, cst.Name)
            and annotation.value.value in ("list", "List") and len(annotation.slice) == 1):
        return False
    item = annotation.slice[0].slice
    return isinstance(item, cst.Index) and _is_str_annotation(item.value)


@dataclass(frozen=True, slots=True)
class OneItemBatch:
    """``[prompt]``: the list the model was given, and how the rewrite names its one prompt."""

    prompt: cst.BaseExpression  # the string inside the list
    prompt_code: str | None  # code for it when it is reached through a variable (``prompts[0]``), else None


class StringTyping:
    """Answers "is this one string?" for expressions inside one function (and the functions it is nested in)."""

    def __init__(self, model: ModuleModel, function: FunctionInfo, fastapi_route: bool = False,
                 text_params: frozenset[str] = frozenset(), text_fields: Mapping[str, frozenset[str]] | None = None,
                 other_fields: Mapping[str, frozenset[str]] | None = None) -> None:
        """``fastapi_route``: ``function`` is a FastAPI route, whose parameters FastAPI fills from the request;
        ``text_params``: parameters of ``function`` its framework fills with a str (a Gradio text box's);
        ``text_fields``: parameters of ``function`` whose named attributes are each a str (a gRPC request's
        string fields); ``other_fields``: the attributes of such parameters that are typed as something else."""
        self.model = model
        self.function = function
        self._text_fields = text_fields or {}
        self._other_fields = other_fields or {}
        self._scopes: list[tuple[dict[str, cst.BaseExpression | None], dict[str, list[cst.BaseExpression | None]], cst.FunctionDef]] = []
        scope: FunctionInfo | None = function
        while scope is not None:
            node = scope.node
            params = {}
            for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
                annotation = param.annotation.annotation if param.annotation else None
                if annotation is None and fastapi_route and scope is function and self._fastapi_text(param.default):
                    annotation = cst.Name("str")  # FastAPI passes an unannotated query/form/path value as a str
                if annotation is None and scope is function and param.name.value in text_params:
                    annotation = cst.Name("str")
                params[param.name.value] = annotation
            self._scopes.append((params, _bindings(node), node))
            scope = scope.parent

    def _fastapi_text(self, default: cst.BaseExpression | None) -> bool:
        """A parameter default under which FastAPI hands an unannotated parameter a str."""
        if default is None or isinstance(default, cst.SimpleString):
            return True
        if isinstance(default, cst.Call):
            name = dotted_name(default.func) or ""
            head, _, rest = name.partition(".")
            target = self.model.aliases.get(head)
            qualified = f"{target}.{rest}" if target and rest else target
            return qualified in _FASTAPI_TEXT_PARAMS
        return False

    def _lookup(self, name: str) -> tuple[str, cst.BaseExpression | None, cst.FunctionDef | None]:
        """("param", annotation) / ("local", its one value) / ("unknown", None) / ("global", None) for a name."""
        for params, bound, node in self._scopes:
            if name in params:
                return ("param", params[name], node) if name not in bound else ("unknown", None, node)
            if name in bound:
                values = bound[name]
                return ("local", values[0], node) if len(values) == 1 and values[0] is not None else ("unknown", None, node)
        return ("global", None, None)

    def is_one_string(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, cst.SimpleString):
            return "b" not in expr.prefix.lower()
        if isinstance(expr, cst.FormattedString):
            return True
        if isinstance(expr, cst.ConcatenatedString):
            return self.is_one_string(expr.left, depth + 1) and self.is_one_string(expr.right, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            # str + x is a str or a TypeError, never a list of prompts.
            return self.is_one_string(expr.left, depth + 1) or self.is_one_string(expr.right, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
            return self.is_one_string(expr.left, depth + 1)  # "..." % values
        if isinstance(expr, cst.Name):
            kind, value, _ = self._lookup(expr.value)
            if kind == "param":
                return _is_str_annotation(value)
            if kind == "local":
                return value is not None and self.is_one_string(value, depth + 1)
            if kind == "global":
                folded = self.model.constants.get(expr.value)
                return isinstance(folded, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) and self.is_one_string(folded, depth + 1)
            return False
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            kind, annotation, scope = self._lookup(expr.value.value)
            if kind == "param" and scope is self.function.node and expr.attr.value in self._text_fields.get(expr.value.value, ()):
                return True
            if kind == "param" and isinstance(annotation, cst.Name):
                klass = self._module_class(annotation.value)
                return klass is not None and _is_str_annotation(self._field_annotation(klass, expr.attr.value))
            return False
        if isinstance(expr, cst.Subscript):
            if self._is_flask_text_field(expr.value) and len(expr.slice) == 1:
                return True
            batch = self.one_item_batch(expr.value, depth + 1)
            return batch is not None and is_index_zero(expr)
        if isinstance(expr, cst.Await) and isinstance(expr.expression, cst.Call):
            return self._is_websocket_text(expr.expression)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Name) and func.value == "str" and "str" not in self.model.module_functions and self._lookup("str")[0] == "global":
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in _STR_METHODS:
                return self.is_one_string(func.value, depth + 1)
            if isinstance(func, cst.Attribute) and func.attr.value == "apply_chat_template":
                return self._renders_one_conversation(expr, depth + 1)
            if isinstance(func, cst.Attribute) and func.attr.value == "get" and self._is_flask_text_field(func.value):
                default = [a for a in expr.args if a.keyword is None][1:2] or [a for a in expr.args if a.keyword and a.keyword.value == "default"]
                return not default or self.is_one_string(default[0].value, depth + 1)
        return False

    def _renders_one_conversation(self, call: cst.Call, depth: int) -> bool:
        """``tokenizer.apply_chat_template(messages, tokenize=False, ...)`` with ``messages`` one conversation
        (a list of message dicts): the rendered text, one string."""
        tokenize = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "tokenize"), None)
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        conversation = positional[0] if positional else next(
            (a.value for a in call.args if a.keyword is not None and a.keyword.value == "conversation"), None)
        if not (isinstance(tokenize, cst.Name) and tokenize.value == "False") or conversation is None:
            return False
        return self._is_conversation(conversation, depth)

    def _is_conversation(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, cst.List):
            return bool(expr.elements) and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Dict) for e in expr.elements)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            # ``[system] + history + [user]``: transformers takes a list for a batch of conversations only when
            # its first item is a list itself, so a first item that is a message dict makes it one conversation
            return self._is_conversation(expr.left, depth + 1)
        if isinstance(expr, cst.Name):
            kind, value, _ = self._lookup(expr.value)
            return kind == "local" and value is not None and self._is_conversation(value, depth + 1)
        return False

    def is_string_list(self, expr: cst.BaseExpression) -> bool:
        """A parameter annotated ``list[str]``, or such a field of the model class a parameter is annotated with
        (FastAPI validates both)."""
        if isinstance(expr, cst.Name):
            kind, annotation, _ = self._lookup(expr.value)
            return kind == "param" and _is_str_list_annotation(annotation)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            kind, annotation, _ = self._lookup(expr.value.value)
            if kind == "param" and isinstance(annotation, cst.Name):
                klass = self._module_class(annotation.value)
                return klass is not None and _is_str_list_annotation(self._field_annotation(klass, expr.attr.value))
        return False

    def is_built_list(self, expr: cst.BaseExpression) -> bool:
        """A list comprehension, or a local bound once to one: a list, whose items LLM.generate takes one
        prompt each (as the engine's generate takes one), whatever their type. The one exception, a list
        whose items are all ints (one prompt's token ids), becomes requests the engine refuses, so it fails
        loudly rather than answering otherwise."""
        if isinstance(expr, cst.ListComp):
            return True
        if isinstance(expr, cst.Name):
            kind, value, _ = self._lookup(expr.value)
            return kind == "local" and isinstance(value, cst.ListComp)
        return False

    def stated_otherwise(self, expr: cst.BaseExpression) -> bool:
        """The code says ``expr`` is something other than one string: a parameter annotated with another type,
        or a local bound once to a list, tuple, dict or set, or a request field its ``.proto`` types otherwise."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            kind, _, scope = self._lookup(expr.value.value)
            return kind == "param" and scope is self.function.node and expr.attr.value in self._other_fields.get(expr.value.value, ())
        if not isinstance(expr, cst.Name):
            return False
        kind, value, _ = self._lookup(expr.value)
        if kind == "param":
            return value is not None and not _is_str_annotation(value)
        return kind == "local" and isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp))

    def one_item_batch(self, expr: cst.BaseExpression, depth: int = 0) -> OneItemBatch | None:
        """``[s]`` with ``s`` one string, or a local variable bound once to one and only ever read."""
        if depth > _DEPTH:
            return None
        if isinstance(expr, cst.List) and len(expr.elements) == 1 and isinstance(expr.elements[0], cst.Element):
            element = expr.elements[0].value
            return OneItemBatch(element, None) if self.is_one_string(element, depth + 1) else None
        if isinstance(expr, cst.Name):
            kind, value, scope = self._lookup(expr.value)
            if kind != "local" or value is None or scope is None or not _only_read(scope, expr.value):
                return None
            inner = self.one_item_batch(value, depth + 1)
            if inner is None or inner.prompt_code is not None:
                return None
            return OneItemBatch(inner.prompt, f"{expr.value}[0]")
        return None

    def _is_websocket_text(self, call: cst.Call) -> bool:
        """``websocket.receive_text()`` on a parameter annotated ``WebSocket``."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "receive_text" and isinstance(func.value, cst.Name)):
            return False
        kind, annotation, _ = self._lookup(func.value.value)
        if kind != "param" or not isinstance(annotation, cst.Name):
            return False
        return self.model.aliases.get(annotation.value) in _WEBSOCKETS

    def _is_flask_text_field(self, expr: cst.BaseExpression) -> bool:
        if not (isinstance(expr, cst.Attribute) and expr.attr.value in _FLASK_TEXT_FIELDS):
            return False
        name = dotted_name(expr.value)
        if name is None:
            return False
        head, _, rest = name.partition(".")
        target = self.model.aliases.get(head)
        if target is None or self._lookup(head)[0] != "global":
            return False
        return (f"{target}.{rest}" if rest else target) == "flask.request"

    def _module_class(self, name: str) -> ClassInfo | None:
        matches = [klass for klass in self.model.classes if klass.name == name]
        return matches[0] if len(matches) == 1 else None

    def _field_annotation(self, klass: ClassInfo, field: str, depth: int = 0) -> cst.BaseExpression | None:
        """The annotation of ``field`` in ``klass`` or, failing that, in the module's classes it derives from."""
        found = _own_field_annotation(klass, field)
        if found is not None or depth > _DEPTH:
            return found
        for base in klass.bases:
            if isinstance(base, cst.Name):
                parent = self._module_class(base.value)
                if parent is not None and parent is not klass:
                    found = self._field_annotation(parent, field, depth + 1)
                    if found is not None:
                        return found
        return None


def _own_field_annotation(klass: ClassInfo, field: str) -> cst.BaseExpression | None:
    for statement in klass.node.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == field:
                    return small.annotation.annotation
    return None


class _Mutations(cst.CSTVisitor):
    """Whether a list variable is ever changed in place: ``xs.append(...)``, ``xs[0] = ...``, ``del xs[0]``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def _is_it(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is_it(node.value):
            self.found = True  # a method of the list (append, extend, ...) or anything else it is used for

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Subscript) and self._is_it(node.target.value):
            self.found = True

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Subscript) and self._is_it(node.target.value):
            self.found = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript) and self._is_it(node.target.value):
            self.found = True


def never_changed(function: cst.FunctionDef, name: str) -> bool:
    """A list variable of ``function`` is never changed in place: no method of it called (nor any other
    attribute read), no item set or deleted."""
    return _only_read(function, name)


def _only_read(function: cst.FunctionDef, name: str) -> bool:
    visitor = _Mutations(name)
    walk(function, visitor)
    return not visitor.found


__all__ = ["OneItemBatch", "StringTyping", "bound_names", "never_changed", "rebound_names"]
