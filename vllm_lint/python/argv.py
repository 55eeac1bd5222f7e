"""Python expressions as command-line arguments: the argv a ``subprocess``/``os.exec*`` call is given, or the
command string it runs, read from the module as far as it is static, and the environment it passes.

Each argument becomes one command-line word (its value folded with the module's constants, unknown
otherwise) with a range of its own in a private offset space (:mod:`vllm_lint.cmdline.argv`); a
:class:`Piece` records which node is written at each range, so that a span found in the words maps back to
the code.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.cmdline.argv import (
    HOLE,
    command_words,
    known_argument,
    split_words,
    unknown_argument,
    unknown_arguments,
)
from vllm_lint.cmdline.shell import Command, Word
from vllm_lint.python.context import PyContext
from vllm_lint.python.model import FunctionInfo, dotted_name
from vllm_lint.values import Value

# Calls whose result stands for a program name.
_PROGRAMS = {"sys.executable": "python"}
_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault", "popitem", "__setitem__", "__iadd__"})


@dataclass(frozen=True, slots=True)
class Piece:
    """One argument (or one command string) and its range in the private offset space."""

    start: int
    end: int
    node: cst.BaseExpression
    statement: cst.CSTNode
    text: str | None = None  # a command string: offsets inside it are ``start + index``
    body_exact: bool = False  # the string's source body is its value, character for character
    container: cst.List | cst.Tuple | None = None  # the list literal an argument is an element of
    index: int = -1  # its position in ``container.elements``


def simple_body(node: cst.BaseExpression) -> tuple[str, str, str] | None:
    """(prefix+quote, body, quote) of a plain string literal whose body is its value."""
    if not isinstance(node, cst.SimpleString):
        return None
    raw = node.value
    prefix = raw[: len(raw) - len(raw.lstrip("rRuUbBfF"))]
    if "b" in prefix.lower():
        return None
    quote = node.quote
    body = raw[len(prefix) + len(quote) : len(raw) - len(quote)]
    try:
        value = node.evaluated_value
    except Exception:  # noqa: BLE001 - odd literals are simply not editable
        return None
    if value != body:
        return None
    return raw[: len(prefix) + len(quote)], body, quote


class _Scope(cst.CSTVisitor):
    """Assignments to one name in one scope (nested functions and classes excluded), and whether it is mutated."""

    def __init__(self, name: str, root: cst.CSTNode) -> None:
        super().__init__()
        self.name, self.root = name, root
        self.values: list[tuple[cst.BaseExpression, cst.CSTNode]] = []
        self.mutated = False
        # The list's growth, in order: (what is added, its statement), or (None, statement) for a change
        # that cannot be followed (an insert, an item assignment, an append in a loop).
        self.growth: list[tuple[cst.BaseExpression | None, cst.CSTNode]] = []
        self._statements: list[cst.CSTNode] = []
        self._loops = 0

    def _grows(self, added: cst.BaseExpression | None, node: cst.CSTNode) -> None:
        self.mutated = True
        statement = self._statements[-1] if self._statements else node
        self.growth.append((added if not self._loops else None, statement))

    def leave_For(self, node: cst.For) -> None:
        self._loops -= 1

    def visit_While(self, node: cst.While) -> None:
        self._loops += 1

    def leave_While(self, node: cst.While) -> None:
        self._loops -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.root

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements.append(node)

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements.pop()

    def _is_name(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self._is_name(target.target):
                self.values.append((node.value, self._statements[-1] if self._statements else node))
            elif isinstance(target.target, cst.Subscript) and self._is_name(target.target.value):
                self._grows(None, node)
            elif isinstance(target.target, (cst.Tuple, cst.List)) and any(
                self._is_name(e.value) for e in target.target.elements
            ):
                self._grows(None, node)  # unpacked into: value not followed

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._is_name(node.target) and node.value is not None:
            self.values.append((node.value, self._statements[-1] if self._statements else node))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_name(node.target):
            self._grows(node.value if isinstance(node.operator, cst.AddAssign) else None, node)
        elif isinstance(node.target, cst.Subscript) and self._is_name(node.target.value):
            self._grows(None, node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and self._is_name(func.value) and func.attr.value in _MUTATORS:
            method, args = func.attr.value, [a for a in node.args if a.keyword is None and not a.star]
            if method == "append" and len(args) == 1 and len(node.args) == 1:
                self._grows(cst.List([cst.Element(args[0].value)]), node)
            elif method == "extend" and len(args) == 1 and len(node.args) == 1:
                self._grows(args[0].value, node)
            else:
                self._grows(None, node)

    def visit_For(self, node: cst.For) -> None:
        if self._is_name(node.target):
            self._grows(None, node)
        self._loops += 1


def _scan(name: str, root: cst.CSTNode) -> _Scope:
    from vllm_lint.python.walk import walk

    scope = _Scope(name, root)
    walk(root, scope)  # root.visit(scope) without rebuilding the tree: this runs once per name and scope
    return scope


# expressions that build a command string in place (a name bound to one is followed to it)
_STRING_EXPRESSIONS = (cst.FormattedString, cst.ConcatenatedString, cst.BinaryOperation, cst.SimpleString)


class ArgumentReader:
    """Turns Python expressions into positioned command-line words."""

    def __init__(self, ctx: PyContext, module_names: dict[str, tuple | None]) -> None:
        self.ctx = ctx
        self.module_names = module_names  # module-level names already resolved (shared by the module's calls)
        self.pieces: list[Piece] = []
        self.cursor = 0

    # -- values ----------------------------------------------------------------------------------
    def text_value(self, expr: cst.BaseExpression) -> Value | None:
        qualified = self.ctx.semantics.qualify(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if qualified in _PROGRAMS:
            return Value(_PROGRAMS[qualified])
        if isinstance(expr, cst.Call) and self.ctx.semantics.callee(expr) == "shutil.which" and expr.args:
            return self.text_value(expr.args[0].value)
        folded = self.ctx.semantics.fold(expr)
        if folded is None or isinstance(folded.value, bool) or not isinstance(folded.value, (str, int, float)):
            return None
        return Value(str(folded.value), folded.origin)

    def _command_text(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        """A command string's text, each interpolated value replaced by a hole."""
        if depth > 8:
            return None
        if isinstance(expr, cst.FormattedString):
            if "\\" in expr.prefix.lower() or any(
                isinstance(part, cst.FormattedStringText) and "\\" in part.value for part in expr.parts
            ):
                return None  # escapes: not worth decoding
            out = []
            for part in expr.parts:
                if isinstance(part, cst.FormattedStringText):
                    out.append(part.value.replace("{{", "{").replace("}}", "}"))
                elif isinstance(part, cst.FormattedStringExpression):
                    known = self.text_value(part.expression) if part.format_spec is None and part.conversion is None else None
                    out.append(str(known.value) if known is not None else HOLE)
            return "".join(out)
        if isinstance(expr, cst.ConcatenatedString):
            left, right = self._command_text(expr.left, depth + 1), self._command_text(expr.right, depth + 1)
            return None if left is None or right is None else left + right
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            left, right = self._command_text(expr.left, depth + 1), self._command_text(expr.right, depth + 1)
            return None if left is None or right is None else left + right
        known = self.text_value(expr)
        if known is not None:
            return str(known.value)
        if isinstance(expr, cst.Name):
            return None
        return HOLE if depth else None

    # -- words -----------------------------------------------------------------------------------
    def _piece(self, length: int, **fields) -> tuple[int, int]:
        start = self.cursor
        end = start + max(length, 1)
        self.pieces.append(Piece(start, end, **fields))
        self.cursor = end + 1
        return start, end

    def element(self, expr: cst.BaseExpression, statement, container, index: int) -> Word:
        known = self.text_value(expr)
        if known is not None:
            text = str(known.value)
            start, end = self._piece(len(text), node=expr, statement=statement, container=container, index=index)
            return known_argument(text, known.origin, start, end)
        # an f-string keeps its literal head: f"--max-model-len={n}" is that flag with an unknown value
        prefix = ""
        if isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
            prefix = expr.parts[0].value
        start, end = self._piece(len(prefix), node=expr, statement=statement, container=container, index=index)
        return unknown_argument(prefix, start, end)

    def splat(self, expr: cst.BaseExpression, statement) -> Word:
        """``*args``: any number of arguments we cannot see."""
        start, end = self._piece(1, node=expr, statement=statement)
        return unknown_arguments(start, end)

    def sequence(self, expr: cst.BaseExpression, statement, function: FunctionInfo | None, depth: int = 0) -> list[Word] | None:
        """The words of an argument list expression, or None when it is not one we can read."""
        if depth > 6:
            return None
        if isinstance(expr, (cst.List, cst.Tuple)):
            words: list[Word] = []
            for index, element in enumerate(expr.elements):
                if isinstance(element, cst.StarredElement):
                    inner = self.sequence(element.value, statement, function, depth + 1)
                    words += inner if inner is not None else [self.splat(element.value, statement)]
                else:
                    words.append(self.element(element.value, statement, expr, index))
            return words
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            left = self.sequence(expr.left, statement, function, depth + 1)
            if left is None:
                return None
            right = self.sequence(expr.right, statement, function, depth + 1)
            return left + (right if right is not None else [self.splat(expr.right, statement)])
        if isinstance(expr, cst.Name):
            resolved = self.resolve(expr.value, function)
            if resolved is None:
                return None
            value, where, growth = resolved
            bound = self.sequence(value, where, function, depth + 1)
            if bound is None:
                return None
            if growth is True:
                bound.append(self.splat(expr, statement))  # changed elsewhere (another function): more may follow
                return bound
            for added, added_at in growth or ():
                # cmd += [...], cmd.append(x), cmd.extend([...]), under an if too: the words it adds; a change
                # that cannot be followed adds "any arguments" there, and only there
                more = self.sequence(added, added_at, function, depth + 1) if added is not None else None
                bound += more if more is not None else [self.splat(added if added is not None else expr, added_at)]
            return bound
        if isinstance(expr, cst.Call):
            split = self._split_call(expr, statement)
            return split if split is not None else self._returned(expr, depth)
        return None

    def _returned(self, call: cst.Call, depth: int) -> list[Word] | None:
        """``server_command(port)``: the list a module-level function returns, when it has one return."""
        name = dotted_name(call.func)
        function = self.ctx.model.module_functions.get(name or "")
        if function is None:
            return None
        returns = [(r.value, r) for r in function.returns if r.value is not None]
        if len(returns) != 1:
            return None
        value, statement = returns[0]
        return self.sequence(value, statement, function, depth + 1)

    def resolve(self, name: str, function: FunctionInfo | None):
        """The single list a name is bound to: (value, its statement, its growth in this function's scope,
        or whether anything changes it elsewhere for a module-level name)."""
        if function is not None:
            if name in function.params:
                return None
            local = _scan(name, function.node)
            if local.values:
                if len(local.values) != 1:
                    return None
                value, statement = local.values[0]
                return value, statement, local.growth
            if function.parent is not None:
                return None  # a closure variable: not followed
        if name not in self.module_names:
            self.module_names[name] = self._resolve_module_name(name)
        return self.module_names[name]

    def _resolve_module_name(self, name: str):
        module_scope = _scan(name, self.ctx.module)
        if len(module_scope.values) != 1:
            return None
        value, statement = module_scope.values[0]
        # mutated in any function (a same-named local counts too: staying silent is the safe side)
        mutated = module_scope.mutated or any(
            _scan(name, f.node).mutated for f in self.ctx.model.functions if name in f.global_names or name not in f.params
        )
        return value, statement, mutated

    def joined(self, expr: cst.BaseExpression, statement, function: FunctionInfo | None) -> list[Word] | None:
        """``" ".join(cmd)`` run by a shell: the words of ``cmd`` (its elements are the shell's words)."""
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "join"):
            return None
        separator = expr.func.value
        if not (isinstance(separator, cst.SimpleString) and separator.evaluated_value in (" ", "\t")):
            return None
        if len(expr.args) != 1 or expr.args[0].keyword is not None or expr.args[0].star:
            return None
        return self.sequence(expr.args[0].value, statement, function)

    def _split_call(self, call: cst.Call, statement) -> list[Word] | None:
        """``shlex.split("vllm serve ...")`` and ``"vllm serve ...".split()``."""
        callee = self.ctx.semantics.callee(call)
        if callee == "shlex.split" and call.args and not call.args[0].keyword:
            commands = self.command_string(call.args[0].value, statement)
            return [w for c in commands for w in c.words] if commands is not None else None
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "split" and not call.args:
            text = self._command_text(func.value)
            if text is None:
                return None
            base, _ = self._string_piece(func.value, statement, text)
            return split_words(text, base)
        return None

    def _string_piece(self, expr: cst.BaseExpression, statement, text: str) -> tuple[int, int]:
        simple = simple_body(expr)
        return self._piece(len(text), node=expr, statement=statement, text=text, body_exact=simple is not None)

    def command_string(self, expr: cst.BaseExpression, statement, function: FunctionInfo | None = None) -> list[Command] | None:
        """The commands of a command string that names vllm; None when it cannot be read or split. With
        ``function``, a name bound once to a string (an f-string built a line above) is read as that string."""
        if isinstance(expr, cst.Name) and self.text_value(expr) is None:
            resolved = self.resolve(expr.value, function)
            if resolved is not None and not resolved[2] and isinstance(resolved[0], _STRING_EXPRESSIONS):
                expr, statement = resolved[0], resolved[1]
        text = self._command_text(expr)
        if text is None or "vllm" not in text:
            return None
        base, _ = self._string_piece(expr, statement, text)
        return command_words(text, base)


def environment(
    ctx: PyContext, expr: cst.BaseExpression | None, args: ArgumentReader, function: FunctionInfo | None, depth: int = 0
) -> dict[str, Value | None]:
    """Variables the child process is known to get; ``VLLM_API_KEY: None`` when it may get one we cannot see."""
    env: dict[str, Value | None] = {}
    if expr is None:
        return env
    if isinstance(expr, cst.Name) and depth < 4 and not _is_os_environ(ctx, expr):
        resolved = args.resolve(expr.value, function)
        if resolved is not None:
            env = environment(ctx, resolved[0], args, function, depth + 1)
            if resolved[2]:
                env.setdefault("VLLM_API_KEY", None)  # changed after it was built
            return env
    if isinstance(expr, cst.Call) and ctx.semantics.callee(expr) in ("dict", None) and dotted_name(expr.func) == "dict":
        for arg in expr.args:
            if arg.keyword is not None:
                env[arg.keyword.value] = args.text_value(arg.value)
            elif not _is_os_environ(ctx, arg.value):
                env["VLLM_API_KEY"] = None
        return env
    if isinstance(expr, cst.Dict):
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):  # **spread
                if not _is_os_environ(ctx, element.value):
                    env.setdefault("VLLM_API_KEY", None)  # spread from a mapping we cannot see
                continue
            key = args.text_value(element.key)
            if key is None:
                env.setdefault("VLLM_API_KEY", None)
                continue
            env[str(key.value)] = args.text_value(element.value)
        return env
    if _is_os_environ(ctx, expr):
        return env
    env["VLLM_API_KEY"] = None  # a mapping built elsewhere (os.environ.copy() + edits): contents unknown
    return env


def _is_os_environ(ctx: PyContext, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "copy":
        expr = expr.func.value
    return ctx.semantics.qualify(expr) == "os.environ" if isinstance(expr, (cst.Name, cst.Attribute)) else False

