"""VLL104's unsafe fix: a model load made per request in a handler, with arguments that are the same on
every request, moved to module level right before the handler::

    @app.post("/g")
    def g(prompt: str):
        llm = LLM(model=MODEL)
        ...

becomes ``llm = LLM(model=MODEL)`` above ``def g``, the handler reading that one object. Only a load whose
every name is the module's own, bound before the handler and never again, moves: its value is then the one
each request built. Once the load is at module level, the fixer's next pass offers the server rewrite
(VLL101-VLL103) where it applies.
"""

from __future__ import annotations

import builtins

import libcst as cst

from vllm_lint.diagnostics import Applicability
from vllm_lint.python.context import NodeEdit, PyContext, PyFix
from vllm_lint.python.handlers import Handler
from vllm_lint.python.model import CallSite
from vllm_lint.python.rewrite.layout import with_blank_lines
from vllm_lint.python.rewrite.names import occurrences
from vllm_lint.python.rewrite.prompts import bound_names, local_bindings
from vllm_lint.python.rewrite.shapes import directly_in, named_params, top_level_index_of

HOIST_TITLE = "Load the model once, at module level above the handler (the same call; it now runs as the module is imported)"
_LITERALS = (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)
_BUILTINS = frozenset(dir(builtins))


def hoisted_load(ctx: PyContext, site: CallSite, handler: Handler) -> PyFix | None:
    """The fix that moves ``name = load(...)`` out of ``handler`` to module level; None when the load is not
    that shape, or its value could differ from one request to the next."""
    module = ctx.module
    function = site.function
    statement = site.statement
    if function is None or function.parent is not None or function.is_method or handler.function is not function:
        return None
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Assign)):
        return None
    assign = statement.body[0]
    if assign.value is not site.node or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    definition = function.node
    body = definition.body
    if not (directly_in(definition, statement) and isinstance(body, cst.IndentedBlock) and len(body.body) > 1):
        return None
    if not any(s is definition for s in module.body):
        return None  # a def inside an if/try at module level
    name = assign.targets[0].target.value
    if not _only_local(ctx, definition, name):
        return None
    at = top_level_index_of(module.body, definition)
    if not _same_on_every_request(module, definition, site.node, at):
        return None

    def build() -> list[NodeEdit]:
        new_body = list(module.body)
        new_body[at] = definition.with_changes(body=body.with_changes(body=[s for s in body.body if s is not statement]))
        new_body.insert(at, with_blank_lines(statement, _blank_lines_before(definition)))
        return [NodeEdit(module, module.with_changes(body=new_body))]

    return PyFix(title=HOIST_TITLE, applicability=Applicability.UNSAFE, build=build)


def _only_local(ctx: PyContext, definition: cst.FunctionDef, name: str) -> bool:
    """``name`` is bound once in the handler, by the load, and nowhere else in the module refers to it: as a
    module variable it is the handler's alone."""
    if name in {p.name.value for p in named_params(definition)} or len(local_bindings(definition).get(name, [])) != 1:
        return False
    for o in occurrences(ctx.module, [name])[name]:
        if not any(parent is definition for parent in o.parents):
            return False  # the module, or another function, has a variable of that name
        if isinstance(o.parent, cst.NameItem):
            return False  # ``global``/``nonlocal`` in a function nested in the handler
    return True


def _same_on_every_request(module: cst.Module, definition: cst.FunctionDef, load: cst.Call, at: int) -> bool:
    """Every part of the load is a literal or a module-level name bound only above the handler: it builds the
    same object at import as on each request. A call in the arguments (``os.getenv(...)``) refuses: it may
    answer otherwise later."""
    names: set[str] = set()

    def static(expr: cst.BaseExpression) -> bool:
        if isinstance(expr, _LITERALS):
            return True
        if isinstance(expr, cst.Name):
            names.add(expr.value)
            return True
        if isinstance(expr, cst.Attribute):
            return static(expr.value)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return all(isinstance(e, cst.Element) and static(e.value) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return all(isinstance(e, cst.DictElement) and static(e.key) and static(e.value) for e in expr.elements)
        if isinstance(expr, cst.UnaryOperation):
            return static(expr.expression)
        return False

    if not (static(load.func) and all(static(arg.value) for arg in load.args)):
        return False
    for name in names:
        bound_at = [i for i, s in enumerate(module.body) if name in bound_names(s) or name in _imported_names(s)]
        if not bound_at:
            if name not in _BUILTINS:
                return False
            continue
        if max(bound_at) >= at or _rebound_in_a_function(module, name):
            return False
    return True


def _imported_names(statement: cst.BaseStatement) -> set[str]:
    """The names a top-level ``import``/``from ... import`` line binds."""
    names: set[str] = set()
    if not isinstance(statement, cst.SimpleStatementLine):
        return names
    for small in statement.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                bound: cst.BaseExpression = alias.asname.name if alias.asname is not None else alias.name
                while isinstance(bound, cst.Attribute):  # ``import os.path`` binds ``os``
                    bound = bound.value
                if isinstance(bound, cst.Name):
                    names.add(bound.value)
    return names


def _rebound_in_a_function(module: cst.Module, name: str) -> bool:
    """A function that declares ``global name`` may change it between requests."""
    return any(isinstance(o.parent, cst.NameItem) for o in occurrences(module, [name])[name])


def _blank_lines_before(definition: cst.FunctionDef) -> int:
    count = 0
    for line in definition.leading_lines:
        if line.comment is not None:
            break
        count += 1
    return max(count, 1)
