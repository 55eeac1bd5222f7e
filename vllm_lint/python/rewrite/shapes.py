"""Small tests of a node's shape that the parts of the server rewrite's analysis share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from vllm_lint.python.walk import walk  # read-only visits without rebuilding the tree


def snippet(module: cst.Module, node: cst.CSTNode) -> str:
    """A node's code on one line, cut at 60 characters, for a refusal's message."""
    code = " ".join(module.code_for_node(node).split())
    return code if len(code) <= 60 else code[:57] + "..."


def keyword_args(call: cst.Call) -> dict[str, cst.Arg]:
    return {arg.keyword.value: arg for arg in call.args if arg.keyword is not None}


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def named_params(function: cst.FunctionDef) -> list[cst.Param]:
    """The parameters that take an argument by name or position (not *args or **kwargs)."""
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def literal_flag(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def compares_with_none(comparison: cst.Comparison) -> bool:
    return len(comparison.comparisons) == 1 and isinstance(comparison.comparisons[0].operator, (cst.Is, cst.IsNot)) and (
        is_none(comparison.left) or is_none(comparison.comparisons[0].comparator)
    )


def is_index_zero(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    index = subscript.slice[0].slice
    return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"


def is_plain_read(expr: cst.BaseExpression) -> bool:
    """A variable, an attribute of one or an item at a literal index: reading it twice gives the same value."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return is_plain_read(expr.value)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        index = expr.slice[0].slice.value
        return isinstance(index, (cst.Integer, cst.SimpleString)) and is_plain_read(expr.value)
    if isinstance(expr, cst.List) and len(expr.elements) == 1:
        return is_plain_read(expr.elements[0].value)
    return False


def directly_in(parent: cst.CSTNode, statement: cst.CSTNode | None) -> bool:
    """Whether ``statement`` is one of the statements of ``parent``'s own block (a def or an if)."""
    body = getattr(parent, "body", None)
    return isinstance(body, cst.IndentedBlock) and any(s is statement for s in body.body)


def top_level_index_of(body: Sequence[cst.BaseStatement], statement: cst.CSTNode) -> int:
    """The index of the top-level statement that is or contains ``statement``."""
    for index, top in enumerate(body):
        if top is statement:
            return index
    found = _Contains(statement)
    for index, top in enumerate(body):
        walk(top, found)
        if found.found:
            return index
    raise ValueError("statement not in the module")


def contains(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether ``node`` is ``tree`` or inside it."""
    found = _Contains(node)
    walk(tree, found)
    return found.found


class _Contains(cst.CSTVisitor):
    def __init__(self, target: cst.CSTNode) -> None:
        super().__init__()
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.target:
            self.found = True
        return not self.found


def only_call(statement: cst.CSTNode) -> cst.Call | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Expr):
        value = statement.body[0].value
        return value if isinstance(value, cst.Call) else None
    return None


class _Evaluations(cst.CSTVisitor):
    """Calls, awaits and yields in a statement, not descending into one skipped node."""

    def __init__(self, skip: cst.CSTNode) -> None:
        super().__init__()
        self.skip = skip
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.skip:
            return False
        if isinstance(node, (cst.Call, cst.Await, cst.Yield)):
            self.found.append(node)
        return True


def evaluations(statement: cst.CSTNode, skip: cst.CSTNode) -> list[cst.CSTNode]:
    visitor = _Evaluations(skip)
    walk(statement, visitor)
    return visitor.found


class _Yields(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found = False
        self._depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._depth += 1
        return self._depth == 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


def yields(function: cst.FunctionDef) -> bool:
    visitor = _Yields()
    walk(function, visitor)
    return visitor.found


class _Returns(_Yields):
    def __init__(self) -> None:
        super().__init__()
        self.values: list[cst.BaseExpression | None] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.values.append(node.value)


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression | None] | None:
    """What each ``return`` of ``function`` (not of functions nested in it) returns; None when it may also end
    without one (its last statement is not a ``return``) or is a generator."""
    body = function.body.body
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
        return None
    visitor = _Returns()
    walk(function, visitor)
    return None if visitor.found else visitor.values


class Assignments(cst.CSTVisitor):
    """The ``target = value`` lines of a tree whose one target ``matches`` (a line of that one assignment alone),
    and whether a matching target is assigned any other way (with other targets or statements on its line,
    unpacked, augmented, annotated, deleted)."""

    def __init__(self, matches: Callable[[cst.BaseExpression], bool]) -> None:
        super().__init__()
        self.matches = matches
        self.lines: list[tuple[cst.SimpleStatementLine, cst.BaseExpression]] = []
        self.other = False
        self._line: cst.SimpleStatementLine | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self.matches(target.target):
                if len(node.targets) == 1 and self._line is not None and len(self._line.body) == 1:
                    self.lines.append((self._line, node.value))
                else:
                    self.other = True
            elif isinstance(target.target, (cst.Tuple, cst.List)) and any(self.matches(e.value) for e in target.target.elements):
                self.other = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.other = self.other or self.matches(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.other = self.other or self.matches(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self.other = self.other or self.matches(node.target)
