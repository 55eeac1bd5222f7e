"""vLLM command lines started from Python: ``subprocess``/``os.exec*`` argument lists and shell strings.

``subprocess.Popen(["vllm", "serve", MODEL, "--gpu-memory-utilization", "0.99"])`` is the same launch
as that line in a shell script. Each argument becomes a command-line word (its value folded with the
module's constants, unknown otherwise) and the command-line extractor builds the launch record, so
wrappers (``docker run``, ``env``), flag emulation and the launch rules are shared with the shell
surface. The extractor works on offsets; here every argument (or command string) gets a range in a
private offset space, and the spans it reports are mapped back to the CST node written there.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import libcst as cst

from vllm_lint.cmdline.serve_args import FlagTable, Span, flag_table
from vllm_lint.cmdline.launches import Extractor, Found
from vllm_lint.cmdline.shell import (
    Command,
    Environment,
    ShellSyntaxError,
    Word,
    tokenize,
)
from vllm_lint.launch.record import (
    Launch,
    Setting,
)
from vllm_lint.python.context import PyContext
from vllm_lint.python.model import CallSite, FunctionInfo, dotted_name
from vllm_lint.values import Value

# callee -> (position, keyword) of the argument list
_ARGV_CALLS: dict[str, tuple[int, str]] = {
    "subprocess.run": (0, "args"),
    "subprocess.Popen": (0, "args"),
    "subprocess.call": (0, "args"),
    "subprocess.check_call": (0, "args"),
    "subprocess.check_output": (0, "args"),
    "os.execv": (1, "argv"),
    "os.execve": (1, "argv"),
    "os.execvp": (1, "args"),
    "os.execvpe": (1, "args"),
    "os.posix_spawn": (1, "argv"),
    "os.posix_spawnp": (1, "argv"),
}
# callee -> position of the first argument, when each argument is its own parameter
_VARARG_CALLS: dict[str, int] = {"asyncio.create_subprocess_exec": 0, "os.execl": 1, "os.execlp": 1}
# callee -> position of a command string run by /bin/sh
_SHELL_CALLS: dict[str, int] = {
    "os.system": 0,
    "os.popen": 0,
    "subprocess.getoutput": 0,
    "subprocess.getstatusoutput": 0,
    "asyncio.create_subprocess_shell": 0,
}
# callee -> position of an env mapping given positionally
_ENV_POSITION: dict[str, int] = {"os.execve": 2, "os.execvpe": 2, "os.posix_spawn": 2, "os.posix_spawnp": 2}
# Calls whose result stands for a program name.
_PROGRAMS = {"sys.executable": "python"}
_MUTATORS = frozenset({"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault", "popitem", "__setitem__", "__iadd__"})
# Stands for an interpolated Python value inside a command string: it must stay unknown under any shell
# quoting, so it is a character no command contains, turned into an unknown part after tokenizing.
_HOLE = "\ue000"
_PARENT_SETS_KEY = re.compile(
    r"""environ\s*\[\s*["']VLLM_API_KEY["']\s*\]\s*=(?!=)|(?:setdefault|putenv)\s*\(\s*["']VLLM_API_KEY["']"""
    r"""|\.update\([^)]*\bVLLM_API_KEY\s*=|load_dotenv"""
)


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
        self._statements: list[cst.CSTNode] = []

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
                self.mutated = True
            elif isinstance(target.target, (cst.Tuple, cst.List)) and any(
                self._is_name(e.value) for e in target.target.elements
            ):
                self.mutated = True  # unpacked into: value not followed

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self._is_name(node.target) and node.value is not None:
            self.values.append((node.value, self._statements[-1] if self._statements else node))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_name(node.target) or (isinstance(node.target, cst.Subscript) and self._is_name(node.target.value)):
            self.mutated = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and self._is_name(func.value) and func.attr.value in _MUTATORS:
            self.mutated = True

    def visit_For(self, node: cst.For) -> None:
        if self._is_name(node.target):
            self.mutated = True


def _scan(name: str, root: cst.CSTNode) -> _Scope:
    from vllm_lint.python.walk import walk

    scope = _Scope(name, root)
    walk(root, scope)  # root.visit(scope) without rebuilding the tree: this runs once per name and scope
    return scope


class _Arguments:
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
                else:
                    known = self.text_value(part.expression) if part.format_spec is None and part.conversion is None else None
                    out.append(known.value if known is not None else _HOLE)
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
        return _HOLE if depth else None

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
            word = Word(text, start, end, [("lit", text)], True, text, known.origin, single=True)
            return word
        # an f-string keeps its literal head: f"--max-model-len={n}" is that flag with an unknown value
        prefix = ""
        if isinstance(expr, cst.FormattedString) and expr.parts and isinstance(expr.parts[0], cst.FormattedStringText):
            prefix = expr.parts[0].value
        raw = prefix or "?"
        start, end = self._piece(len(raw), node=expr, statement=statement, container=container, index=index)
        parts = [("lit", prefix), ("unknown",)] if prefix else [("unknown",)]
        return Word(raw, start, end, parts, True, None, single=True)

    def splat(self, expr: cst.BaseExpression, statement) -> Word:
        """``*args``: any number of arguments we cannot see."""
        start, end = self._piece(1, node=expr, statement=statement)
        return Word("*", start, end, [("unknown",)], False, None)

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
            resolved = self._resolve(expr.value, function)
            if resolved is None:
                return None
            value, where, mutated = resolved
            words = self.sequence(value, where, function, depth + 1)
            if words is not None and mutated:
                words.append(self.splat(expr, statement))  # appended to elsewhere: more flags may follow
            return words
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
        returns = [r for r in function.returns if r.value is not None]
        if len(returns) != 1:
            return None
        return self.sequence(returns[0].value, returns[0], function, depth + 1)

    def _resolve(self, name: str, function: FunctionInfo | None):
        """The single list a name is bound to: (value, its statement, mutated anywhere)."""
        if function is not None:
            if name in function.params:
                return None
            local = _scan(name, function.node)
            if local.values:
                if len(local.values) != 1:
                    return None
                value, statement = local.values[0]
                return value, statement, local.mutated
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

    def _split_call(self, call: cst.Call, statement) -> list[Word] | None:
        """``shlex.split("vllm serve ...")`` and ``"vllm serve ...".split()``."""
        callee = self.ctx.semantics.callee(call)
        if callee == "shlex.split" and call.args and not call.args[0].keyword:
            commands = self.command_string(call.args[0].value, statement, Environment())
            return [w for c in commands for w in c.words] if commands is not None else None
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "split" and not call.args:
            text = self._command_text(func.value)
            if text is None:
                return None
            base, _ = self._string_piece(func.value, statement, text)
            words = []
            for match in re.finditer(r"\S+", text):
                value = match.group(0)
                parts = [("lit", value)] if _HOLE not in value else _hole_parts(value)
                known = value if _HOLE not in value else None
                words.append(Word(value, base + match.start(), base + match.end(), parts, True, known, single=True))
            return words
        return None

    def _string_piece(self, expr: cst.BaseExpression, statement, text: str) -> tuple[int, int]:
        simple = simple_body(expr)
        return self._piece(len(text), node=expr, statement=statement, text=text, body_exact=simple is not None)

    def command_string(self, expr: cst.BaseExpression, statement, env: Environment) -> list[Command] | None:
        text = self._command_text(expr)
        if text is None or "vllm" not in text:
            return None
        base, _ = self._string_piece(expr, statement, text)
        try:
            commands = tokenize(text, base)
        except ShellSyntaxError:
            return None  # a string we cannot split the way the shell would: no launch, no guess
        for command in commands:
            for word in command.words:
                if _HOLE in word.raw:
                    word.parts = _hole_parts_of(word.parts)
                    word.single = word.raw == _HOLE
        return commands


def _hole_parts(value: str) -> list:
    head = value.split(_HOLE, 1)[0]
    return [("lit", head), ("unknown",)] if head else [("unknown",)]


def _hole_parts_of(parts: list) -> list:
    """Parts with every hole made unknown (the literal text before the first hole is kept)."""
    out = []
    for part in parts:
        if part[0] == "lit" and _HOLE in part[1]:
            head = part[1].split(_HOLE, 1)[0]
            if head:
                out.append(("lit", head))
            out.append(("unknown",))
            return out
        out.append(part)
    return out


# -- environment ---------------------------------------------------------------------------------


def _environment(
    ctx: PyContext, expr: cst.BaseExpression | None, args: _Arguments, function: FunctionInfo | None, depth: int = 0
) -> dict[str, Value | None]:
    """Variables the child process is known to get; ``VLLM_API_KEY: None`` when it may get one we cannot see."""
    env: dict[str, Value | None] = {}
    if expr is None:
        return env
    if isinstance(expr, cst.Name) and depth < 4 and not _is_os_environ(ctx, expr):
        resolved = args._resolve(expr.value, function)
        if resolved is not None:
            env = _environment(ctx, resolved[0], args, function, depth + 1)
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
            if isinstance(element, cst.StarredDictElement):
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


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _positional(call: cst.Call, index: int) -> cst.BaseExpression | None:
    positional = [a for a in call.args if a.keyword is None]
    if index < len(positional) and not positional[index].star:
        return positional[index].value
    return None


# -- launches --------------------------------------------------------------------------------------


@dataclass(slots=True)
class CommandLine:
    """A launch found in a Python command line: what fixes need to edit it."""

    found: Found
    pieces: list[Piece]
    originals: dict[int, Setting]  # id(setting with node anchors) -> the same setting with spans
    api: object

    @property
    def table(self) -> FlagTable:
        return flag_table(self.api)

    def piece_at(self, offset: int) -> Piece:
        starts = [p.start for p in self.pieces]
        return self.pieces[max(bisect.bisect_right(starts, offset) - 1, 0)]


def command_launches(ctx: PyContext) -> Iterator[tuple[Launch, CommandLine, cst.CSTNode]]:
    """Launch records for the vLLM command lines this module starts."""
    api_key_in_module: bool | None = None
    seen: set[int] = set()
    module_names: dict[str, tuple | None] = {}
    for site in ctx.model.calls:
        callee = ctx.semantics.callee(site.node)
        if callee is None or not (callee in _ARGV_CALLS or callee in _VARARG_CALLS or callee in _SHELL_CALLS):
            continue
        args = _Arguments(ctx, module_names)
        extractor = _extract(ctx, site, callee, args)
        if extractor is None or not extractor.found:
            continue
        if api_key_in_module is None:
            # os.environ["VLLM_API_KEY"] = ... (or a .env loaded) anywhere in the module: children may inherit a key
            api_key_in_module = bool(_PARENT_SETS_KEY.search(ctx.module.code))
        for found in extractor.found:
            if api_key_in_module:
                found.launch.env.setdefault("VLLM_API_KEY", None)
            mapped = _mapped(found, args.pieces, ctx.api)
            # a command built in one place and started from several is one launch
            if id(mapped[0].anchor) in seen:
                continue
            seen.add(id(mapped[0].anchor))
            yield mapped


def _extract(ctx: PyContext, site: CallSite, callee: str, args: _Arguments) -> Extractor | None:
    call = site.node
    env_expr = _keyword(call, "env")
    if env_expr is None and callee in _ENV_POSITION:
        env_expr = _positional(call, _ENV_POSITION[callee])
    env = Environment(_environment(ctx, env_expr, args, site.function))
    extractor = Extractor(ctx.api, "")
    if callee in _VARARG_CALLS:
        words: list[Word] | None = []
        for arg in [a for a in call.args if a.keyword is None][_VARARG_CALLS[callee] :]:
            if arg.star == "*":
                inner = args.sequence(arg.value, site.statement, site.function)
                words += inner if inner is not None else [args.splat(arg.value, site.statement)]
            elif arg.star:
                break
            else:
                words.append(args.element(arg.value, site.statement, None, -1))
        extractor.command(words, env, None, fixable=False)
        return extractor
    if callee in _SHELL_CALLS:
        command = _positional(call, _SHELL_CALLS[callee]) or _keyword(call, "cmd") or _keyword(call, "command")
    else:
        position, name = _ARGV_CALLS[callee]
        command = _positional(call, position) or _keyword(call, name)
        shell = _keyword(call, "shell")
        folded = ctx.semantics.fold(shell) if shell is not None else None
        if command is not None and folded is not None and folded.value is True and callee.startswith("subprocess."):
            callee = "shell"  # subprocess.run("...", shell=True): a shell string
    if command is None:
        return None
    if callee in _SHELL_CALLS or callee == "shell":
        commands = args.command_string(command, site.statement, env)
        if commands is None:
            return None
        extractor.run_commands(commands, env, None, fixable=False)
        return extractor
    words = args.sequence(command, site.statement, site.function)
    if not words:
        return None
    extractor.command(words, env, None, fixable=False)
    return extractor


def _mapped(found: Found, pieces: list[Piece], api) -> tuple[Launch, CommandLine, cst.CSTNode]:
    """The launch with every span replaced by the node written there; the spans kept for fixes."""
    line = CommandLine(found, pieces, {}, api)

    def node(span: Span | None, last: bool = False):
        if not isinstance(span, Span):
            return span
        return line.piece_at(span.end - 1 if last else span.start).node

    settings = []
    for setting in found.launch.settings:
        mapped = replace(setting, anchor=node(setting.anchor), value_anchor=node(setting.value_anchor))
        line.originals[id(mapped)] = setting
        settings.append(mapped)
    launch = found.launch
    mapped_launch = replace(
        launch,
        settings=settings,
        anchor=node(launch.anchor),
        # the word that names the entrypoint: the module of `python -m ...api_server`, `serve`
        entrypoint_anchor=node(launch.entrypoint_anchor, last=True),
        gpu_count_anchor=node(launch.gpu_count_anchor),
    )
    statement = line.piece_at(launch.anchor.start).statement if isinstance(launch.anchor, Span) else None
    return mapped_launch, line, statement
