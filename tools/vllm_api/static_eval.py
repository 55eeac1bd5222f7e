"""A small abstract interpreter over a vLLM source tree: runs the code that builds vLLM's
argument parsers without importing vLLM.

vLLM builds ``vllm serve``'s parser from its config dataclasses (``get_kwargs(ModelConfig)`` turns
each field's annotation into argparse keywords), and that code changed in 14 ways between 0.8 and
0.33. Rather than copy each variant, this runs vLLM's own functions over a model of the few things
they touch: argparse parsers, dataclass fields, ``typing`` constructs, and Python's built-in
values. Whatever it cannot know (an environment variable, a platform check) is ``UNKNOWN``; an
``if`` on an unknown test runs both branches, so the flags found are a superset of what any one
machine gets, which is what a linter wants (no false "unknown flag" reports).

Module-level names are bound lazily, one at a time, so reading a function does not run the rest
of its module, let alone the ~2,600 modules it imports.
"""

from __future__ import annotations

import ast
import copy
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.vllm_api.module_scan import resolve_relative


class Unknown:
    """A value the interpreter cannot know; every operation on it gives it back."""

    _instance: Unknown | None = None

    def __new__(cls) -> Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __deepcopy__(self, memo: dict) -> Unknown:
        return self


UNKNOWN = Unknown()


class External:
    """Something from outside vLLM (``argparse.BooleanOptionalAction``, ``typing.Literal``, ``int``),
    known by its dotted name; one object per name, so ``is`` compares them as Python would."""

    _interned: dict[str, External] = {}

    def __new__(cls, dotted: str) -> External:
        found = cls._interned.get(dotted)
        if found is None:
            found = super().__new__(cls)
            found.dotted = dotted
            cls._interned[dotted] = found
        return found

    dotted: str

    @property
    def name(self) -> str:
        return self.dotted.rpartition(".")[2]

    def __repr__(self) -> str:
        return f"<{self.dotted}>"

    def __deepcopy__(self, memo: dict) -> External:
        return self

    def __reduce__(self) -> tuple:
        return External, (self.dotted,)


BUILTIN_TYPES = ("bool", "int", "float", "str", "bytes", "dict", "list", "tuple", "set", "frozenset", "object", "type")
NONE_TYPE = External("builtins.NoneType")
MISSING = External("dataclasses.MISSING")
_PY_TYPES: dict[type, External] = {
    bool: External("builtins.bool"),
    int: External("builtins.int"),
    float: External("builtins.float"),
    str: External("builtins.str"),
    type(None): NONE_TYPE,
}


@dataclass(eq=False)
class TypeForm:
    """A subscripted typing construct: ``Literal['a']``, ``list[int]``, ``X | None``, ``Annotated[...]``."""

    origin: External
    args: tuple

    def __hash__(self) -> int:
        return hash((self.origin.dotted, _hashable(self.args)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeForm) and self.origin is other.origin and _hashable(self.args) == _hashable(other.args)

    def __deepcopy__(self, memo: dict) -> TypeForm:
        return self


def _hashable(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, (dict, set)):
        return id(value)
    return value


@dataclass(eq=False)
class ModuleRef:
    name: str

    def __deepcopy__(self, memo: dict) -> ModuleRef:
        return self


@dataclass(eq=False)
class ClassRef:
    module: str
    node: ast.ClassDef
    interpreter: Interpreter = field(repr=False)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.node.name}"

    def __deepcopy__(self, memo: dict) -> ClassRef:
        return self

    def __hash__(self) -> int:
        return hash(self.qualname)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassRef) and other.qualname == self.qualname


@dataclass(eq=False)
class FunctionRef:
    module: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    closure: Scope | None
    bound: object = None  # the receiver of a bound method (self, or cls for a classmethod)
    owner: ClassRef | None = None  # the class that defines it, for super()

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")

    def __deepcopy__(self, memo: dict) -> FunctionRef:
        return self


@dataclass(eq=False)
class Instance:
    cls: ClassRef | External
    attributes: dict = field(default_factory=dict)

    def __deepcopy__(self, memo: dict) -> Instance:
        return self


@dataclass(eq=False)
class Super:
    owner: ClassRef
    receiver: object


@dataclass(eq=False)
class DataclassField:
    """What ``dataclasses.fields()`` yields."""

    name: str
    type: object
    default: object
    default_factory: object

    def __deepcopy__(self, memo: dict) -> DataclassField:
        return self


@dataclass(eq=False)
class FieldInfo:
    """A pydantic ``Field(...)`` default."""

    default: object
    default_factory: object

    def __deepcopy__(self, memo: dict) -> FieldInfo:
        return self


# ---------------------------------------------------------------------------
# argparse, as far as vLLM uses it
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Action:
    """One ``add_argument`` call: what it was given, evaluated."""

    names: tuple[str, ...]
    keywords: dict

    def __deepcopy__(self, memo: dict) -> Action:
        return self


@dataclass(eq=False)
class Parser:
    keywords: dict
    actions: list[Action] = field(default_factory=list)
    subparsers: dict[str, Parser] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.keywords.get("add_help", True) is not False:
            self.actions.append(Action(("-h", "--help"), {"action": "help"}))

    def add(self, action: Action) -> None:
        taken = {name for known in self.actions for name in known.names}
        if not any(name in taken for name in action.names):  # argparse would refuse the second one
            self.actions.append(action)

    def __deepcopy__(self, memo: dict) -> Parser:
        return self


@dataclass(eq=False)
class Group:
    parser: Parser

    def __deepcopy__(self, memo: dict) -> Group:
        return self


@dataclass(eq=False)
class Subparsers:
    parser: Parser

    def __deepcopy__(self, memo: dict) -> Subparsers:
        return self


class ParseArgs(Exception):
    """``parser.parse_args()`` was reached: the parser is complete."""

    def __init__(self, parser: Parser) -> None:
        super().__init__()
        self.parser = parser


# ---------------------------------------------------------------------------
# Control flow
# ---------------------------------------------------------------------------


class _Return(Exception):
    def __init__(self, value: object) -> None:
        super().__init__()
        self.value = value


class _Raise(Exception):
    """A ``raise`` statement ran (or an operation failed): the path stops."""


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Scope:
    def __init__(self, module: str, parent: Scope | None = None, function: FunctionRef | None = None) -> None:
        self.module = module
        self.parent = parent
        self.function = function
        self.names: dict[str, object] = {}
        self.early_returns: list[object] = []  # values returned on one side of an unknown test

    def lookup(self, name: str) -> tuple[bool, object]:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return True, scope.names[name]
            scope = scope.parent
        return False, None

    def enclosing_function(self) -> FunctionRef | None:
        scope: Scope | None = self
        while scope is not None:
            if scope.function is not None:
                return scope.function
            scope = scope.parent
        return None


_BINARY: dict[type, Callable] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_COMPARE: dict[type, Callable] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_PLAIN = (str, int, float, bool, type(None), bytes)
MAX_DEPTH = 60
MAX_STEPS = 2_000_000


class Interpreter:
    """Runs functions of the vLLM source tree under ``root`` (the folder holding ``vllm/``)."""

    def __init__(self, root: Path, package: str = "vllm") -> None:
        self.root = root
        self.package = package
        self._trees: dict[str, ast.Module | None] = {}
        self._indexes: dict[str, dict[str, ast.stmt]] = {}
        self._globals: dict[tuple[str, str], object] = {}
        self._binding: set[tuple[str, str]] = set()
        self.depth = 0
        self.steps = 0
        # os.getenv(name, default) gives the default: what vLLM does where no variable is set. Off while
        # reading parsers, where a flag added under one setting must count too.
        self.environment_unset = False

    # --- modules ---------------------------------------------------------

    def module_path(self, module: str) -> Path | None:
        parts = module.split(".")
        if parts[0] != self.package:
            return None
        base = self.root.joinpath(*parts)
        if (base / "__init__.py").is_file():
            return base / "__init__.py"
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py")
        return None

    def is_module(self, module: str) -> bool:
        parts = module.split(".")
        if parts[0] != self.package:
            return False
        base = self.root.joinpath(*parts)
        return base.is_dir() or base.with_suffix(".py").is_file()

    def is_package(self, module: str) -> bool:
        return self.root.joinpath(*module.split(".")).is_dir()

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            path = self.module_path(module)
            tree = None
            if path is not None:
                try:
                    tree = ast.parse(path.read_bytes(), filename=str(path))
                except (SyntaxError, ValueError):
                    tree = None
            self._trees[module] = tree
        return self._trees[module]

    def binding(self, module: str, name: str) -> ast.stmt | None:
        """The module-level statement of ``module`` that binds ``name``."""
        index = self._indexes.get(module)
        if index is None:
            tree = self.tree(module)
            index = self._indexes[module] = binding_index(tree.body) if tree is not None else {}
        return index.get(name)

    def global_value(self, module: str, name: str) -> object:
        """A module-level name of ``module``, bound on first use (UNKNOWN when not found)."""
        key = (module, name)
        if key in self._globals:
            return self._globals[key]
        if key in self._binding:
            return UNKNOWN  # a cycle: the name depends on itself
        self._binding.add(key)
        try:
            value = self._bind_global(module, name)
        finally:
            self._binding.discard(key)
        self._globals[key] = value
        return value

    def _bind_global(self, module: str, name: str) -> object:
        tree = self.tree(module)
        statement = self.binding(module, name)
        if statement is not None:
            return self._bound_by(statement, module, name)
        if self.is_module(f"{module}.{name}"):
            return ModuleRef(f"{module}.{name}")
        if tree is not None:
            for source in _star_sources(tree, module, self.is_package(module)):
                if self.is_module(source):
                    value = self.global_value(source, name)
                    if value is not UNKNOWN:
                        return value
            getattr_function = self.global_value(module, "__getattr__") if name != "__getattr__" else UNKNOWN
            if isinstance(getattr_function, FunctionRef):
                return self.call(getattr_function, [name], {})
        return UNKNOWN

    def _bound_by(self, statement: ast.stmt, module: str, name: str) -> object:
        scope = Scope(module)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._decorated(FunctionRef(module, statement, None), statement.decorator_list, scope)
        if isinstance(statement, ast.ClassDef):
            return ClassRef(module, statement, self)
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname == name:
                    return self.import_module(alias.name)
                if alias.asname is None and alias.name.split(".")[0] == name:
                    return self.import_module(name)
            return UNKNOWN
        if isinstance(statement, ast.ImportFrom):
            source = resolve_relative(module, self.is_package(module), statement.level, statement.module)
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    return self.import_from(source, alias.name)
            return UNKNOWN
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    return self.safe_eval(statement.value, scope)
            return UNKNOWN  # a tuple target, an attribute
        if isinstance(statement, ast.AnnAssign) and statement.value is not None:
            return self.safe_eval(statement.value, scope)
        return UNKNOWN

    def import_module(self, dotted: str) -> object:
        if dotted.split(".")[0] == self.package:
            return ModuleRef(dotted) if self.is_module(dotted) else UNKNOWN
        return External(dotted)

    def import_from(self, source: str, name: str) -> object:
        if source.split(".")[0] != self.package:
            return External(f"{source}.{name}")
        if self.is_module(f"{source}.{name}"):
            # a package attribute of that name wins over the submodule only once it is bound
            if self.binding(source, name) is None:
                return ModuleRef(f"{source}.{name}")
        return self.global_value(source, name)

    # --- statements ------------------------------------------------------

    def run_block(self, body: list[ast.stmt], scope: Scope) -> None:
        for statement in body:
            self.run(statement, scope)

    def run(self, statement: ast.stmt, scope: Scope) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Raise()
        handler = getattr(self, f"_run_{type(statement).__name__}", None)
        if handler is not None:
            handler(statement, scope)

    def _run_Expr(self, statement: ast.Expr, scope: Scope) -> None:
        self.eval(statement.value, scope)

    def _run_Return(self, statement: ast.Return, scope: Scope) -> None:
        raise _Return(self.eval(statement.value, scope) if statement.value is not None else None)

    def _run_Raise(self, statement: ast.Raise, scope: Scope) -> None:
        raise _Raise()

    def _run_Break(self, statement: ast.Break, scope: Scope) -> None:
        raise _Break()

    def _run_Continue(self, statement: ast.Continue, scope: Scope) -> None:
        raise _Continue()

    def _run_Assign(self, statement: ast.Assign, scope: Scope) -> None:
        value = self.eval(statement.value, scope)
        for target in statement.targets:
            self.assign(target, value, scope)

    def _run_AnnAssign(self, statement: ast.AnnAssign, scope: Scope) -> None:
        if statement.value is not None:
            self.assign(statement.target, self.eval(statement.value, scope), scope)

    def _run_AugAssign(self, statement: ast.AugAssign, scope: Scope) -> None:
        current = self.eval(statement.target, scope)
        value = self.eval(statement.value, scope)
        if isinstance(current, list) and isinstance(statement.op, ast.Add) and isinstance(value, (list, tuple)):
            current.extend(value)  # in place, as list += does
            return
        self.assign(statement.target, self.binary(statement.op, current, value), scope)

    def _run_Delete(self, statement: ast.Delete, scope: Scope) -> None:
        for target in statement.targets:
            if isinstance(target, ast.Subscript):
                container = self.eval(target.value, scope)
                key = self.eval(target.slice, scope)
                if isinstance(container, (dict, list)) and not isinstance(key, Unknown):
                    try:
                        del container[key]
                    except (KeyError, IndexError, TypeError):
                        raise _Raise() from None

    def _run_If(self, statement: ast.If, scope: Scope) -> None:
        test = self.truth(self.eval(statement.test, scope))
        if test is True:
            self.run_block(statement.body, scope)
        elif test is False:
            self.run_block(statement.orelse, scope)
        else:
            self._both(statement.body, statement.orelse, scope)

    def _both(self, first: list[ast.stmt], second: list[ast.stmt], scope: Scope) -> None:
        """Both branches of an unknown test, one after the other; a branch that raises is dropped,
        and a ``return`` ends the function only when both branches return."""
        returned: list[_Return] = []
        for branch in (first, second):
            try:
                self.run_block(branch, scope)
            except _Return as done:
                returned.append(done)
            except _Raise:
                continue
        if len(returned) == 2:
            raise returned[0] if _same(returned[0].value, returned[1].value) else _Return(UNKNOWN)
        frame = _frame_of(scope)
        if returned and frame is not None:
            frame.early_returns.append(returned[0].value)

    def _run_For(self, statement: ast.For, scope: Scope) -> None:
        items = self.iterate(self.eval(statement.iter, scope))
        if items is None:
            return
        try:
            for item in items:
                self.assign(statement.target, item, scope)
                try:
                    self.run_block(statement.body, scope)
                except _Continue:
                    continue
        except _Break:
            return
        self.run_block(statement.orelse, scope)

    _run_AsyncFor = _run_For

    def _run_While(self, statement: ast.While, scope: Scope) -> None:
        return  # no parser-building code loops on a condition

    def _run_With(self, statement: ast.With, scope: Scope) -> None:
        for item in statement.items:
            value = self.eval(item.context_expr, scope)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, UNKNOWN if not isinstance(value, Unknown) else value, scope)
        self.run_block(statement.body, scope)

    _run_AsyncWith = _run_With

    def _run_Try(self, statement: ast.Try, scope: Scope) -> None:
        try:
            self.run_block(statement.body, scope)
        except _Raise:
            for handler in statement.handlers:
                try:
                    self.run_block(handler.body, scope)
                except _Raise:
                    pass
                break
        else:
            self.run_block(statement.orelse, scope)
        finally:
            self.run_block(statement.finalbody, scope)

    _run_TryStar = _run_Try

    def _run_FunctionDef(self, statement: ast.FunctionDef, scope: Scope) -> None:
        function = FunctionRef(scope.module, statement, scope)
        scope.names[statement.name] = self._decorated(function, statement.decorator_list, scope)

    _run_AsyncFunctionDef = _run_FunctionDef

    def _run_ClassDef(self, statement: ast.ClassDef, scope: Scope) -> None:
        scope.names[statement.name] = ClassRef(scope.module, statement, self)

    def _run_Import(self, statement: ast.Import, scope: Scope) -> None:
        for alias in statement.names:
            if alias.asname:
                scope.names[alias.asname] = self.import_module(alias.name)
            else:
                top = alias.name.split(".")[0]
                scope.names[top] = self.import_module(top)

    def _run_ImportFrom(self, statement: ast.ImportFrom, scope: Scope) -> None:
        source = resolve_relative(scope.module, self.is_package(scope.module), statement.level, statement.module)
        for alias in statement.names:
            if alias.name != "*":
                scope.names[alias.asname or alias.name] = self.import_from(source, alias.name)

    def _run_Match(self, statement: ast.Match, scope: Scope) -> None:
        return

    def assign(self, target: ast.expr, value: object, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.names[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.iterate(value)
            if items is None or len(items) != len(target.elts) or any(isinstance(e, ast.Starred) for e in target.elts):
                items = [UNKNOWN] * len(target.elts)
            for element, item in zip(target.elts, items):
                self.assign(element.value if isinstance(element, ast.Starred) else element, item, scope)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, scope)
            key = self.eval(target.slice, scope)
            if isinstance(container, dict) and not isinstance(key, Unknown):
                container[_key(key)] = value
            elif isinstance(container, list) and isinstance(key, int):
                try:
                    container[key] = value
                except IndexError:
                    raise _Raise() from None
        elif isinstance(target, ast.Attribute):
            receiver = self.eval(target.value, scope)
            if isinstance(receiver, Instance):
                receiver.attributes[target.attr] = value

    # --- expressions -----------------------------------------------------

    def safe_eval(self, node: ast.expr, scope: Scope) -> object:
        try:
            return self.eval(node, scope)
        except (_Raise, _Return, _Break, _Continue, RecursionError):
            return UNKNOWN

    def eval(self, node: ast.expr, scope: Scope) -> object:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Raise()
        handler = getattr(self, f"_eval_{type(node).__name__}", None)
        if handler is None:
            return UNKNOWN
        return handler(node, scope)

    def _eval_Constant(self, node: ast.Constant, scope: Scope) -> object:
        return node.value

    def _eval_Name(self, node: ast.Name, scope: Scope) -> object:
        found, value = scope.lookup(node.id)
        if found:
            return value
        if self.binding(scope.module, node.id) is not None:
            return self.global_value(scope.module, node.id)
        if node.id == "__name__":
            return scope.module
        if node.id == "__package__":
            return scope.module if self.is_package(scope.module) else scope.module.rpartition(".")[0]
        return _builtin(node.id) or self.global_value(scope.module, node.id)

    def _eval_List(self, node: ast.List, scope: Scope) -> object:
        return self._elements(node.elts, scope)

    def _eval_Tuple(self, node: ast.Tuple, scope: Scope) -> object:
        items = self._elements(node.elts, scope)
        return tuple(items) if isinstance(items, list) else items

    def _eval_Set(self, node: ast.Set, scope: Scope) -> object:
        items = self._elements(node.elts, scope)
        return _as_set(items) if isinstance(items, list) else items

    def _elements(self, elements: list[ast.expr], scope: Scope) -> list | Unknown:
        items: list = []
        for element in elements:
            if isinstance(element, ast.Starred):
                spread = self.iterate(self.eval(element.value, scope))
                if spread is None:
                    return UNKNOWN
                items.extend(spread)
            else:
                items.append(self.eval(element, scope))
        return items

    def _eval_Dict(self, node: ast.Dict, scope: Scope) -> object:
        result: dict = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                spread = self.eval(value, scope)
                if not isinstance(spread, dict):
                    return UNKNOWN
                result.update(spread)
                continue
            evaluated = self.eval(key, scope)
            if isinstance(evaluated, Unknown):
                continue
            result[_key(evaluated)] = self.eval(value, scope)
        return result

    def _eval_JoinedStr(self, node: ast.JoinedStr, scope: Scope) -> object:
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                inner = self.eval(value.value, scope)
                if not isinstance(inner, _PLAIN) or value.format_spec is not None:
                    return UNKNOWN
                parts.append(repr(inner) if value.conversion == ord("r") else str(inner))
        return "".join(parts)

    def _eval_BinOp(self, node: ast.BinOp, scope: Scope) -> object:
        return self.binary(node.op, self.eval(node.left, scope), self.eval(node.right, scope))

    def binary(self, op: ast.operator, left: object, right: object) -> object:
        if isinstance(op, ast.BitOr) and (_is_type_like(left) or _is_type_like(right)):
            return TypeForm(External("types.UnionType"), _union_args(left, right))
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            return UNKNOWN
        if isinstance(op, ast.BitOr):
            if isinstance(left, dict) and isinstance(right, dict):
                return {**left, **right}
            if isinstance(left, (set, frozenset)) and isinstance(right, (set, frozenset)):
                return left | right
            if isinstance(left, (int, bool)) and isinstance(right, (int, bool)):
                return left | right
            return UNKNOWN
        function = _BINARY.get(type(op))
        if function is None or not _plain_data(left) or not _plain_data(right):
            return UNKNOWN
        try:
            return function(left, right)
        except Exception:  # noqa: BLE001 - a failing operation in vLLM's code: that path raises
            raise _Raise() from None

    def _eval_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> object:
        value = self.eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            truth = self.truth(value)
            return UNKNOWN if truth is None else not truth
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        return UNKNOWN

    def _eval_BoolOp(self, node: ast.BoolOp, scope: Scope) -> object:
        is_and = isinstance(node.op, ast.And)
        result: object = UNKNOWN
        for value_node in node.values:
            result = self.eval(value_node, scope)
            truth = self.truth(result)
            if truth is None:
                return UNKNOWN
            if truth is not is_and:
                return result
        return result

    def _eval_Compare(self, node: ast.Compare, scope: Scope) -> object:
        left = self.eval(node.left, scope)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, scope)
            result = self.compare(op, left, right)
            if result is not True:
                return result
            left = right
        return True

    def compare(self, op: ast.cmpop, left: object, right: object) -> object:
        if isinstance(op, (ast.Is, ast.IsNot)):
            if isinstance(left, Unknown) or isinstance(right, Unknown):
                return UNKNOWN
            same = left is right or (isinstance(left, (TypeForm, ClassRef)) and left == right)
            return same if isinstance(op, ast.Is) else not same
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            return UNKNOWN
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(right, (list, tuple)) and any(isinstance(item, Unknown) for item in right):
                if left not in right:
                    return UNKNOWN
            if isinstance(right, (list, tuple, set, frozenset, dict, str)):
                try:
                    found = _key(left) in right if isinstance(right, (set, frozenset, dict)) else left in right
                except TypeError:
                    return UNKNOWN
                return found if isinstance(op, ast.In) else not found
            return UNKNOWN
        if isinstance(op, (ast.Eq, ast.NotEq)) and not (_plain_data(left) and _plain_data(right)):
            if _comparable(left) and _comparable(right):
                same = left == right
                return same if isinstance(op, ast.Eq) else not same
            return UNKNOWN
        function = _COMPARE.get(type(op))
        try:
            return function(left, right) if function is not None else UNKNOWN
        except TypeError:
            return UNKNOWN

    def _eval_IfExp(self, node: ast.IfExp, scope: Scope) -> object:
        truth = self.truth(self.eval(node.test, scope))
        if truth is None:
            return UNKNOWN
        return self.eval(node.body if truth else node.orelse, scope)

    def _eval_Attribute(self, node: ast.Attribute, scope: Scope) -> object:
        return self.attribute(self.eval(node.value, scope), node.attr)

    def attribute(self, value: object, name: str) -> object:
        if isinstance(value, Unknown):
            return UNKNOWN
        if isinstance(value, ModuleRef):
            return self.import_from(value.name, name)
        if isinstance(value, External):
            return External(f"{value.dotted}.{name}")
        if isinstance(value, ClassRef):
            return self.class_attribute(value, name, bind_to=value)
        if isinstance(value, Instance):
            if name in value.attributes:
                return value.attributes[name]
            if isinstance(value.cls, ClassRef):
                return self.class_attribute(value.cls, name, bind_to=value, instance=True)
            return UNKNOWN
        if isinstance(value, Super):
            for klass in self.mro(value.owner)[1:]:
                if isinstance(klass, ClassRef) and _class_binding(klass.node, name) is not None:
                    return self.class_attribute(klass, name, bind_to=value.receiver, instance=isinstance(value.receiver, Instance))
            return UNKNOWN
        if isinstance(value, (DataclassField, FieldInfo)):
            return getattr(value, name, UNKNOWN)
        if isinstance(value, FunctionRef):
            if name == "__name__":
                return value.name
            if name == "__doc__":
                return ast.get_docstring(value.node) if not isinstance(value.node, ast.Lambda) else None
            return UNKNOWN
        if isinstance(value, TypeForm):
            if name == "__args__":
                return value.args
            if name == "__origin__":
                return value.origin
            if name == "__module__":
                return "typing"
            return UNKNOWN
        if isinstance(value, (Parser, Group, Subparsers)):
            return _ParserMethod(value, name)
        if isinstance(value, (str, list, dict, tuple, set, frozenset, int, float)) and not isinstance(value, bool):
            return _PlainMethod(value, name)
        return UNKNOWN

    def class_attribute(self, klass: ClassRef, name: str, bind_to: object, instance: bool = False) -> object:
        if name == "__name__":
            return klass.name
        if name == "__module__":
            return klass.module
        if name == "__mro__":
            return tuple(self.mro(klass))
        for owner in self.mro(klass):
            if not isinstance(owner, ClassRef):
                continue
            statement = _class_binding(owner.node, name)
            if statement is None:
                continue
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = {_decorator_name(d) for d in statement.decorator_list}
                function = FunctionRef(owner.module, statement, None, owner=owner)
                if "staticmethod" in decorators:
                    return function
                if "classmethod" in decorators:
                    receiver = bind_to.cls if isinstance(bind_to, Instance) else bind_to
                    return FunctionRef(owner.module, statement, None, bound=receiver, owner=owner)
                if "property" in decorators or "cached_property" in decorators:
                    return self.call(FunctionRef(owner.module, statement, None, bound=bind_to, owner=owner), [], {}) if instance else UNKNOWN
                if instance:
                    return FunctionRef(owner.module, statement, None, bound=bind_to, owner=owner)
                return function
            if isinstance(statement, ast.ClassDef):
                return ClassRef(owner.module, statement, self)
            value_node = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
            if value_node is None:
                return UNKNOWN  # a field without a default
            value = self.safe_eval(value_node, Scope(owner.module))
            if _is_field_call(value_node):
                return self.dataclass_default(value)
            return value
        return UNKNOWN

    def dataclass_default(self, value: object) -> object:
        """What a class attribute holds after @dataclass processed ``field(default=...)``."""
        if isinstance(value, DataclassField):
            return value.default if value.default is not MISSING else UNKNOWN
        return value

    def _eval_Subscript(self, node: ast.Subscript, scope: Scope) -> object:
        value = self.eval(node.value, scope)
        index = self.eval(node.slice, scope)
        if isinstance(value, External) or isinstance(value, ClassRef):
            return self.subscript_type(value, index)
        if isinstance(value, Unknown) or isinstance(index, Unknown):
            return UNKNOWN
        if isinstance(value, (list, tuple, str)) and isinstance(index, (int, slice)):
            try:
                return value[index]
            except IndexError:
                raise _Raise() from None
        if isinstance(value, dict):
            try:
                return value[_key(index)]
            except (KeyError, TypeError):
                raise _Raise() from None
        return UNKNOWN

    def _eval_Slice(self, node: ast.Slice, scope: Scope) -> object:
        parts = [self.eval(part, scope) if part is not None else None for part in (node.lower, node.upper, node.step)]
        if any(isinstance(part, Unknown) for part in parts):
            return UNKNOWN
        return slice(*parts)

    def subscript_type(self, origin: External | ClassRef, index: object) -> object:
        """``Literal["a"]``, ``list[int]``, ``Optional[X]``, ``Annotated[X, ...]``."""
        args = index if isinstance(index, tuple) else (index,)
        if not isinstance(origin, External):
            return origin  # a generic vLLM class (``Foo[int]``): the class
        name = origin.name
        if name == "Optional":
            return TypeForm(External("typing.Union"), (*_flatten_union(args[0]), NONE_TYPE))
        if name == "Union":
            return TypeForm(External("typing.Union"), tuple(item for arg in args for item in _flatten_union(arg)))
        if name == "Literal":  # Literal["a", Literal["b"]] is Literal["a", "b"]
            flat = tuple(item for arg in args for item in (arg.args if _is_literal(arg) else (arg,)))
            return TypeForm(External("typing.Literal"), flat)
        typing_names = {"Annotated": "typing.Annotated", "ClassVar": "typing.ClassVar"}
        if name in typing_names:
            return TypeForm(External(typing_names[name]), args)
        builtin = {"List": "list", "Dict": "dict", "Tuple": "tuple", "Set": "set", "FrozenSet": "frozenset", "Type": "type"}
        if name in builtin:
            return TypeForm(External(f"builtins.{builtin[name]}"), args)
        if origin.dotted.startswith("builtins.") or origin.dotted.startswith("collections.abc."):
            return TypeForm(origin, args)
        return TypeForm(origin, args)

    def _eval_Call(self, node: ast.Call, scope: Scope) -> object:
        function = self.eval(node.func, scope)
        args: list = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                spread = self.iterate(self.eval(argument.value, scope))
                if spread is None:
                    return UNKNOWN if not isinstance(function, _ParserMethod) else self._unknown_call(function)
                args.extend(spread)
            else:
                args.append(self.eval(argument, scope))
        keywords: dict = {}
        for keyword in node.keywords:
            value = self.eval(keyword.value, scope)
            if keyword.arg is None:
                if not isinstance(value, dict):
                    return self._unknown_call(function)
                keywords.update(value)
            else:
                keywords[keyword.arg] = value
        if isinstance(function, External) and function.name == "super" and not args:
            owner = scope.enclosing_function()
            if owner is not None and owner.owner is not None:
                return Super(owner.owner, owner.bound)
            return UNKNOWN
        return self.call(function, args, keywords)

    def _unknown_call(self, function: object) -> object:
        return UNKNOWN

    def _eval_Lambda(self, node: ast.Lambda, scope: Scope) -> object:
        return FunctionRef(scope.module, node, scope)

    def _eval_ListComp(self, node: ast.ListComp, scope: Scope) -> object:
        items = self._comprehension(node.generators, scope, lambda inner: self.eval(node.elt, inner))
        return items

    _eval_GeneratorExp = _eval_ListComp

    def _eval_SetComp(self, node: ast.SetComp, scope: Scope) -> object:
        items = self._comprehension(node.generators, scope, lambda inner: self.eval(node.elt, inner))
        return _as_set(items) if isinstance(items, list) else items

    def _eval_DictComp(self, node: ast.DictComp, scope: Scope) -> object:
        pairs = self._comprehension(
            node.generators, scope, lambda inner: (self.eval(node.key, inner), self.eval(node.value, inner))
        )
        if not isinstance(pairs, list) or any(isinstance(key, Unknown) for key, _ in pairs):
            return UNKNOWN
        return {_key(key): value for key, value in pairs}

    def _comprehension(self, generators: list[ast.comprehension], scope: Scope, element: Callable) -> list | Unknown:
        inner = Scope(scope.module, scope)
        results: list = []

        def walk(index: int) -> bool:
            if index == len(generators):
                results.append(element(inner))
                return True
            generator = generators[index]
            items = self.iterate(self.eval(generator.iter, inner))
            if items is None:
                return False
            for item in items:
                self.assign(generator.target, item, inner)
                keep = True
                for condition in generator.ifs:
                    truth = self.truth(self.eval(condition, inner))
                    if truth is None:
                        return False
                    keep = keep and truth
                if keep and not walk(index + 1):
                    return False
            return True

        return results if walk(0) else UNKNOWN

    def _eval_NamedExpr(self, node: ast.NamedExpr, scope: Scope) -> object:
        value = self.eval(node.value, scope)
        self.assign(node.target, value, scope)
        return value

    def _eval_Starred(self, node: ast.Starred, scope: Scope) -> object:
        return UNKNOWN

    def _eval_Await(self, node: ast.Await, scope: Scope) -> object:
        return UNKNOWN

    # --- truth and iteration --------------------------------------------

    def truth(self, value: object) -> bool | None:
        if isinstance(value, Unknown):
            return None
        if isinstance(value, (list, tuple, dict, set, frozenset)):
            return bool(value)
        if isinstance(value, _PLAIN):
            return bool(value)
        if isinstance(value, (External, ClassRef, FunctionRef, ModuleRef, TypeForm, Parser, Group)):
            return True
        return None

    def iterate(self, value: object) -> list | None:
        if isinstance(value, (list, tuple)):
            return list(value)
        if isinstance(value, dict):
            return list(value)
        if isinstance(value, (set, frozenset)):
            return sorted(value, key=repr)
        if isinstance(value, str):
            return list(value)
        return None

    # --- calls -----------------------------------------------------------

    def call(self, function: object, args: list, keywords: dict) -> object:
        if isinstance(function, FunctionRef):
            return self.call_function(function, args, keywords)
        if isinstance(function, ClassRef):
            return self.instantiate(function, args, keywords)
        if isinstance(function, External):
            return self.call_external(function, args, keywords)
        if isinstance(function, _ParserMethod):
            return function.call(self, args, keywords)
        if isinstance(function, _PlainMethod):
            return function.call(self, args, keywords)
        return UNKNOWN

    def call_function(self, function: FunctionRef, args: list, keywords: dict) -> object:
        if self.depth > MAX_DEPTH:
            return UNKNOWN
        scope = Scope(function.module, function.closure, function)
        if function.bound is not None:
            args = [function.bound, *args]
        if not self._bind_parameters(function.node.args, args, keywords, scope):
            return UNKNOWN
        self.depth += 1
        try:
            if isinstance(function.node, ast.Lambda):
                return self.eval(function.node.body, scope)
            if isinstance(function.node, ast.AsyncFunctionDef) or _is_generator(function.node):
                return UNKNOWN
            result: object = None
            try:
                self.run_block(function.node.body, scope)
            except _Return as done:
                result = done.value
            # A return on one side of an unknown test: the result is known only if every path agrees.
            return result if all(_same(result, early) for early in scope.early_returns) else UNKNOWN
        except (_Raise, _Break, _Continue, RecursionError):
            return UNKNOWN
        finally:
            self.depth -= 1

    def _bind_parameters(self, spec: ast.arguments, args: list, keywords: dict, scope: Scope) -> bool:
        positional = [*spec.posonlyargs, *spec.args]
        defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        definition_scope = Scope(scope.module, scope.parent)
        for index, parameter in enumerate(positional):
            if index < len(args):
                scope.names[parameter.arg] = args[index]
            elif parameter.arg in keywords:
                scope.names[parameter.arg] = keywords.pop(parameter.arg)
            elif defaults[index] is not None:
                scope.names[parameter.arg] = self.safe_eval(defaults[index], definition_scope)
            else:
                scope.names[parameter.arg] = UNKNOWN
        if spec.vararg is not None:
            scope.names[spec.vararg.arg] = tuple(args[len(positional) :])
        for parameter, default in zip(spec.kwonlyargs, spec.kw_defaults):
            if parameter.arg in keywords:
                scope.names[parameter.arg] = keywords.pop(parameter.arg)
            else:
                scope.names[parameter.arg] = self.safe_eval(default, definition_scope) if default is not None else UNKNOWN
        if spec.kwarg is not None:
            scope.names[spec.kwarg.arg] = dict(keywords)
        return True

    def _decorated(self, function: FunctionRef, decorators: list[ast.expr], scope: Scope) -> object:
        # Decorators (lru_cache, deprecated, wraps, ...) are taken to keep the function as it is.
        return function

    def instantiate(self, klass: ClassRef, args: list, keywords: dict) -> object:
        if self.is_parser_class(klass):
            return Parser(dict(keywords))
        return Instance(klass, {})

    def is_parser_class(self, klass: ClassRef) -> bool:
        return any(isinstance(base, External) and base.name == "ArgumentParser" for base in self.mro(klass))

    def mro(self, klass: ClassRef) -> list:
        """The class and its bases, depth first (enough for vLLM's single-inheritance config classes)."""
        order: list = [klass]
        seen = {id(klass)}
        for base_node in klass.node.bases:
            base = self.safe_eval(base_node, Scope(klass.module))
            if isinstance(base, TypeForm):
                base = base.origin
            if isinstance(base, ClassRef):
                for item in self.mro(base):
                    if id(item) not in seen and not (isinstance(item, ClassRef) and any(
                        isinstance(o, ClassRef) and o.qualname == item.qualname for o in order
                    )):
                        seen.add(id(item))
                        order.append(item)
            elif isinstance(base, External) and id(base) not in seen:
                seen.add(id(base))
                order.append(base)
        return order

    def call_external(self, function: External, args: list, keywords: dict) -> object:
        handler = _EXTERNAL_CALLS.get(function.dotted) or _EXTERNAL_CALLS.get(function.name if function.dotted.startswith(("typing.", "typing_extensions.", "builtins.")) else "")
        if handler is not None:
            try:
                return handler(self, args, keywords)
            except _Raise:
                raise
            except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                return UNKNOWN
        if function.name == "ArgumentParser" or function.name.endswith("ArgumentParser"):
            return Parser(dict(keywords))
        if function.dotted.startswith("builtins.") and function.name in BUILTIN_TYPES:
            return UNKNOWN
        return UNKNOWN

    # --- dataclasses -----------------------------------------------------

    def is_dataclass(self, value: object) -> bool:
        if not isinstance(value, ClassRef):
            return False
        for klass in self.mro(value):
            if isinstance(klass, ClassRef) and any(
                _decorator_name(d) in ("dataclass", "config", "pydantic_dataclass") for d in klass.node.decorator_list
            ):
                return True
        return False

    def fields(self, klass: ClassRef) -> list[DataclassField]:
        """``dataclasses.fields(klass)``: annotated class attributes, bases first, in order."""
        collected: dict[str, DataclassField] = {}
        for owner in reversed([k for k in self.mro(klass) if isinstance(k, ClassRef)]):
            scope = Scope(owner.module)
            for statement in owner.node.body:
                if not isinstance(statement, ast.AnnAssign) or not isinstance(statement.target, ast.Name):
                    continue
                annotation = self.annotation(statement.annotation, scope)
                if _is_class_var(annotation) or _is_kw_only_marker(annotation) or _is_init_var(annotation):
                    continue
                default: object = MISSING
                factory: object = MISSING
                if statement.value is not None:
                    value = self.safe_eval(statement.value, scope)
                    if isinstance(value, DataclassField):
                        default, factory = value.default, value.default_factory
                    else:
                        default = value
                name = statement.target.id  # a field redefined by a subclass keeps its place
                collected[name] = DataclassField(name, annotation, default, factory)
        return list(collected.values())

    def annotation(self, node: ast.expr, scope: Scope) -> object:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return UNKNOWN
        return self.safe_eval(node, scope)


# ---------------------------------------------------------------------------
# Methods of the argparse model and of plain values
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class _ParserMethod:
    receiver: Parser | Group | Subparsers
    name: str

    def call(self, interpreter: Interpreter, args: list, keywords: dict) -> object:
        receiver = self.receiver
        parser = receiver.parser if isinstance(receiver, (Group, Subparsers)) else receiver
        if isinstance(receiver, Subparsers):
            if self.name == "add_parser" and args and isinstance(args[0], str):
                child = Parser(dict(keywords))
                parser.subparsers[args[0]] = child
                return child
            return UNKNOWN
        if self.name == "add_argument":
            names = tuple(args)
            if not names or not all(isinstance(name, str) for name in names):
                return UNKNOWN
            action = Action(names, dict(keywords))
            parser.add(action)
            return action
        if self.name in ("add_argument_group", "add_mutually_exclusive_group"):
            return Group(parser)
        if self.name == "add_subparsers":
            return Subparsers(parser)
        if self.name in ("parse_args", "parse_known_args"):
            raise ParseArgs(parser)
        if self.name == "set_defaults":
            return None
        return UNKNOWN


@dataclass(eq=False)
class _PlainMethod:
    receiver: object
    name: str

    _SAFE = {
        str: {"replace", "strip", "lstrip", "rstrip", "split", "rsplit", "lower", "upper", "startswith", "endswith",
              "join", "format", "partition", "rpartition", "removeprefix", "removesuffix", "title", "capitalize"},
        list: {"append", "extend", "insert", "remove", "pop", "index", "count", "copy", "sort"},
        dict: {"get", "keys", "values", "items", "update", "pop", "setdefault", "copy"},
        tuple: {"index", "count"},
        set: {"add", "update", "discard", "remove", "union", "copy", "difference", "intersection"},
        frozenset: {"union", "copy", "difference", "intersection"},
    }

    def call(self, interpreter: Interpreter, args: list, keywords: dict) -> object:
        kind = type(self.receiver)
        if self.name not in self._SAFE.get(kind, set()):
            return UNKNOWN
        if kind is str and (any(isinstance(a, Unknown) for a in args) or not all(
            isinstance(a, (str, int, list, tuple)) for a in args
        )):
            return UNKNOWN
        if kind is str and self.name == "join" and args and any(not isinstance(i, str) for i in interpreter.iterate(args[0]) or [1]):
            return UNKNOWN
        if kind is dict and self.name in ("get", "pop", "setdefault") and args and isinstance(args[0], Unknown):
            return UNKNOWN
        if kind is dict and self.name == "update" and args and not isinstance(args[0], dict):
            return UNKNOWN
        try:
            result = getattr(self.receiver, self.name)(*[_key(a) if kind in (set, frozenset) else a for a in args], **keywords)
        except (KeyError, ValueError, IndexError, TypeError):
            raise _Raise() from None
        if isinstance(result, (type({}.keys()), type({}.values()), type({}.items()))):
            return list(result)
        return result


# ---------------------------------------------------------------------------
# Functions from outside vLLM that the parser-building code calls
# ---------------------------------------------------------------------------


def _external(*names: str) -> Callable:
    def register(function: Callable) -> Callable:
        for name in names:
            _EXTERNAL_CALLS[name] = function
        return function

    return register


_EXTERNAL_CALLS: dict[str, Callable] = {}


@_external("get_args", "typing.get_args", "typing_extensions.get_args")
def _get_args(interpreter: Interpreter, args: list, keywords: dict) -> object:
    value = args[0]
    if isinstance(value, TypeForm):
        if value.origin.name == "Annotated":
            return value.args
        return tuple(value.args)
    if isinstance(value, Unknown):
        return UNKNOWN
    return ()


@_external("get_origin", "typing.get_origin", "typing_extensions.get_origin")
def _get_origin(interpreter: Interpreter, args: list, keywords: dict) -> object:
    value = args[0]
    if isinstance(value, TypeForm):
        return value.origin
    if isinstance(value, Unknown):
        return UNKNOWN
    return None


@_external("dataclasses.fields", "fields")
def _fields(interpreter: Interpreter, args: list, keywords: dict) -> object:
    target = args[0]
    if isinstance(target, Instance):
        target = target.cls
    if isinstance(target, ClassRef):
        return interpreter.fields(target)
    return UNKNOWN


@_external("dataclasses.is_dataclass", "is_dataclass")
def _is_dataclass(interpreter: Interpreter, args: list, keywords: dict) -> object:
    value = args[0]
    if isinstance(value, Unknown):
        return UNKNOWN
    return interpreter.is_dataclass(value)


@_external("dataclasses.field", "field")
def _field(interpreter: Interpreter, args: list, keywords: dict) -> object:
    return DataclassField("", UNKNOWN, keywords.get("default", MISSING), keywords.get("default_factory", MISSING))


@_external("pydantic.Field", "pydantic.fields.Field")
def _pydantic_field(interpreter: Interpreter, args: list, keywords: dict) -> object:
    default = args[0] if args else keywords.get("default", MISSING)
    return FieldInfo(default, keywords.get("default_factory"))


@_external("copy.deepcopy", "copy.copy")
def _copy(interpreter: Interpreter, args: list, keywords: dict) -> object:
    return copy.deepcopy(args[0])


@_external("typing.is_typeddict", "typing_extensions.is_typeddict", "is_typeddict")
def _is_typeddict(interpreter: Interpreter, args: list, keywords: dict) -> object:
    value = args[0]
    if isinstance(value, ClassRef):
        return any(isinstance(base, External) and base.name == "TypedDict" for base in interpreter.mro(value))
    return False


@_external("importlib.import_module")
def _import_module(interpreter: Interpreter, args: list, keywords: dict) -> object:
    name = args[0]
    package = args[1] if len(args) > 1 else keywords.get("package")
    if not isinstance(name, str):
        return UNKNOWN
    if name.startswith("."):
        if not isinstance(package, str):
            return UNKNOWN
        level = len(name) - len(name.lstrip("."))
        name = resolve_relative(package, True, level, name.lstrip(".") or None)
    return interpreter.import_module(name)


def _builtin(name: str) -> object:
    if name in _BUILTIN_NAMES:
        return External(f"builtins.{name}")
    if name in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[name]
    return None


_BUILTIN_NAMES = frozenset(
    {*BUILTIN_TYPES, "len", "sorted", "isinstance", "issubclass", "getattr", "hasattr", "setattr", "any", "all",
     "next", "iter", "enumerate", "zip", "min", "max", "repr", "print", "super", "reversed", "range", "callable",
     "Ellipsis", "NotImplemented", "ValueError", "TypeError", "KeyError", "AttributeError", "ImportError",
     "RuntimeError", "Exception", "NotImplementedError", "DeprecationWarning", "vars", "id", "hash", "map",
     "filter", "round", "abs", "sum", "open", "globals", "locals", "dir"}
)


@_external("builtins.len", "len")
def _len(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    return len(items) if items is not None else UNKNOWN


@_external("builtins.sorted", "sorted")
def _sorted(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    if items is None or any(isinstance(i, Unknown) or not isinstance(i, _PLAIN) for i in items) or "key" in keywords:
        return UNKNOWN
    try:
        return sorted(items, reverse=bool(keywords.get("reverse", False)))
    except TypeError:
        return UNKNOWN


def _make_collection(kind: type) -> Callable:
    def make(interpreter: Interpreter, args: list, keywords: dict) -> object:
        if kind is dict:
            base: object = {}
            if args:
                base = args[0] if isinstance(args[0], dict) else None
                if base is None:
                    pairs = interpreter.iterate(args[0])
                    if pairs is None:
                        return UNKNOWN
                    try:
                        base = {_key(k): v for k, v in pairs}
                    except (TypeError, ValueError):
                        return UNKNOWN
            return {**base, **keywords}  # type: ignore[dict-item]
        if not args:
            return kind()
        items = interpreter.iterate(args[0])
        if items is None:
            return UNKNOWN
        return _as_set(items) if kind in (set, frozenset) else kind(items)

    return make


for _kind in (list, tuple, set, frozenset, dict):
    _EXTERNAL_CALLS[f"builtins.{_kind.__name__}"] = _make_collection(_kind)


@_external("builtins.isinstance", "isinstance")
def _isinstance(interpreter: Interpreter, args: list, keywords: dict) -> object:
    value, kinds = args[0], args[1]
    options = kinds if isinstance(kinds, tuple) else (kinds,)
    answers = [_is_instance(interpreter, value, kind) for kind in options]
    if any(answer is True for answer in answers):
        return True
    if any(isinstance(answer, Unknown) for answer in answers):
        return UNKNOWN
    return False


def _is_instance(interpreter: Interpreter, value: object, kind: object) -> object:
    if isinstance(value, Unknown) or not isinstance(kind, (External, ClassRef)):
        return UNKNOWN
    if isinstance(kind, External):
        name = kind.dotted
        if name == "builtins.type":
            return isinstance(value, (External, ClassRef)) and value is not NONE_TYPE or value is NONE_TYPE
        if name.endswith("FieldInfo"):
            return isinstance(value, FieldInfo)
        python_type = {"builtins.str": str, "builtins.int": int, "builtins.float": float, "builtins.bool": bool,
                       "builtins.dict": dict, "builtins.list": list, "builtins.tuple": tuple,
                       "builtins.set": set, "builtins.frozenset": frozenset}.get(name)
        if python_type is not None:
            return isinstance(value, python_type)
        if isinstance(value, Instance) and isinstance(value.cls, ClassRef):
            return any(base is kind for base in interpreter.mro(value.cls))
        return UNKNOWN
    if isinstance(value, Instance) and isinstance(value.cls, ClassRef):
        return any(isinstance(k, ClassRef) and k.qualname == kind.qualname for k in interpreter.mro(value.cls))
    if isinstance(value, (_PLAIN, list, dict, tuple, External, TypeForm)):
        return False
    return UNKNOWN


@_external("builtins.issubclass", "issubclass")
def _issubclass(interpreter: Interpreter, args: list, keywords: dict) -> object:
    value, kinds = args[0], args[1]
    options = kinds if isinstance(kinds, tuple) else (kinds,)
    if isinstance(value, External):
        return any(value is kind for kind in options)
    if isinstance(value, ClassRef):
        bases = interpreter.mro(value)
        for kind in options:
            for base in bases:
                if base is kind or (isinstance(base, ClassRef) and isinstance(kind, ClassRef) and base.qualname == kind.qualname):
                    return True
        return False
    return UNKNOWN


@_external("builtins.type", "type")
def _type(interpreter: Interpreter, args: list, keywords: dict) -> object:
    if len(args) != 1:
        return UNKNOWN
    value = args[0]
    for python_type, external in _PY_TYPES.items():
        if type(value) is python_type:
            return external
    if isinstance(value, Instance):
        return value.cls
    if isinstance(value, (list, dict, tuple, set)):
        return External(f"builtins.{type(value).__name__}")
    return UNKNOWN


@_external("builtins.getattr", "getattr")
def _getattr(interpreter: Interpreter, args: list, keywords: dict) -> object:
    if len(args) < 2 or not isinstance(args[1], str):
        return UNKNOWN
    value = interpreter.attribute(args[0], args[1])
    if isinstance(value, Unknown) and len(args) > 2:
        return UNKNOWN
    return value


@_external("builtins.hasattr", "hasattr")
def _hasattr(interpreter: Interpreter, args: list, keywords: dict) -> object:
    return UNKNOWN


@_external("builtins.any", "any")
def _any(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    if items is None:
        return UNKNOWN
    truths = [interpreter.truth(item) for item in items]
    if any(truth is True for truth in truths):
        return True
    return UNKNOWN if any(truth is None for truth in truths) else False


@_external("builtins.all", "all")
def _all(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    if items is None:
        return UNKNOWN
    truths = [interpreter.truth(item) for item in items]
    if any(truth is False for truth in truths):
        return False
    return UNKNOWN if any(truth is None for truth in truths) else True


@_external("builtins.next", "next")
def _next(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    if items is None:
        return UNKNOWN
    if items:
        return items[0]
    if len(args) > 1:
        return args[1]
    raise _Raise()


@_external("builtins.str", "str")
def _str(interpreter: Interpreter, args: list, keywords: dict) -> object:
    if not args:
        return ""
    return str(args[0]) if isinstance(args[0], _PLAIN) else UNKNOWN


def _convert(kind: type) -> Callable:
    def convert(interpreter: Interpreter, args: list, keywords: dict) -> object:
        if len(args) != 1 or keywords or not isinstance(args[0], (str, int, float, bool)):
            return UNKNOWN
        try:
            return kind(args[0])
        except ValueError:
            raise _Raise() from None

    return convert


for _number_type in (int, float, bool):
    _EXTERNAL_CALLS[f"builtins.{_number_type.__name__}"] = _convert(_number_type)


@_external("os.getenv", "os.environ.get")
def _getenv(interpreter: Interpreter, args: list, keywords: dict) -> object:
    """An environment variable: unknown, except when reading the defaults vLLM takes on a machine
    that sets none (``Interpreter.environment_unset``)."""
    if not interpreter.environment_unset:
        return UNKNOWN
    default = args[1] if len(args) > 1 else keywords.get("default")
    return default if isinstance(default, (str, type(None))) else UNKNOWN


@_external("builtins.enumerate", "enumerate")
def _enumerate(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    return list(enumerate(items)) if items is not None else UNKNOWN


@_external("builtins.zip", "zip")
def _zip(interpreter: Interpreter, args: list, keywords: dict) -> object:
    columns = [interpreter.iterate(arg) for arg in args]
    if any(column is None for column in columns):
        return UNKNOWN
    return [tuple(row) for row in zip(*columns)]  # type: ignore[arg-type]


@_external("builtins.reversed", "reversed")
def _reversed(interpreter: Interpreter, args: list, keywords: dict) -> object:
    items = interpreter.iterate(args[0])
    return list(reversed(items)) if items is not None else UNKNOWN


@_external("builtins.print", "print", "builtins.setattr", "setattr")
def _nothing(interpreter: Interpreter, args: list, keywords: dict) -> object:
    return None


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _frame_of(scope: Scope) -> Scope | None:
    """The scope of the function call that ``scope`` belongs to (comprehensions have their own)."""
    current: Scope | None = scope
    while current is not None and current.function is None:
        current = current.parent
    return current


def _same(left: object, right: object) -> bool:
    if left is right:
        return True
    return _comparable(left) and _comparable(right) and left == right


def _key(value: object) -> object:
    """A value usable as a dict key or set member (lists become tuples)."""
    if isinstance(value, list):
        return tuple(_key(item) for item in value)
    return value


def _as_set(items: list) -> set:
    return {_key(item) for item in items}


def _plain_data(value: object) -> bool:
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_plain_data(item) for item in value)
    if isinstance(value, dict):
        return all(_plain_data(item) for item in value.values())
    return False


def _comparable(value: object) -> bool:
    """Values whose ``==`` the interpreter knows: plain data, types, and collections of them."""
    if isinstance(value, (*_PLAIN, External, TypeForm, ClassRef)):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_comparable(item) for item in value)
    if isinstance(value, dict):
        return all(_comparable(key) and _comparable(item) for key, item in value.items())
    return False


def _is_type_like(value: object) -> bool:
    return value is None or isinstance(value, (External, TypeForm, ClassRef))


def _flatten_union(value: object) -> tuple:
    if value is None:
        return (NONE_TYPE,)
    if isinstance(value, TypeForm) and value.origin.name in ("Union", "UnionType"):
        return value.args
    return (value,)


def _union_args(left: object, right: object) -> tuple:
    return (*_flatten_union(left), *_flatten_union(right))


def _is_literal(value: object) -> bool:
    return isinstance(value, TypeForm) and value.origin.name == "Literal"


def _is_class_var(annotation: object) -> bool:
    return (isinstance(annotation, TypeForm) and annotation.origin.name == "ClassVar") or (
        isinstance(annotation, External) and annotation.name == "ClassVar"
    )


def _is_init_var(annotation: object) -> bool:
    origin = annotation.origin if isinstance(annotation, TypeForm) else annotation
    return isinstance(origin, External) and origin.name == "InitVar"


def _is_kw_only_marker(annotation: object) -> bool:
    return isinstance(annotation, External) and annotation.name == "KW_ONLY"


def _is_field_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _decorator_name(node.func) == "field"


def _is_generator(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, (ast.Yield, ast.YieldFrom)):
            return True
    return False


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def binding_index(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Each module-level name -> the statement that binds it: the last one at the outermost level,
    else the first one inside ``if``/``try`` blocks (a ``try: import`` before its fallback)."""
    index: dict[str, ast.stmt] = {}
    for statement in _nested_statements(body):
        for name in _bound(statement):
            index.setdefault(name, statement)
    for statement in body:
        for name in _bound(statement):
            index[name] = statement
    return index


def _nested_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements inside blocks; those only type checkers see (``if TYPE_CHECKING:``) come after
    the rest, since at run time the other branch binds the name."""
    deferred: list[list[ast.stmt]] = []
    for statement in body:
        blocks: list[list[ast.stmt]] = []
        if isinstance(statement, ast.If) and _is_type_checking(statement.test):
            deferred.append(statement.body)
            blocks = [statement.orelse]
        elif isinstance(statement, ast.If):
            blocks = [statement.body, statement.orelse]
        elif isinstance(statement, (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))):
            blocks = [statement.body, statement.orelse, statement.finalbody, *[h.body for h in statement.handlers]]
        elif isinstance(statement, (ast.With, ast.For)):
            blocks = [statement.body]
        for block in blocks:
            for inner in block:
                yield inner
            yield from _nested_statements(block)
    for block in deferred:
        yield from block
        yield from _nested_statements(block)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _bound(statement: ast.stmt) -> Iterator[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield statement.name
    elif isinstance(statement, ast.Assign):
        for target in statement.targets:
            yield from _target_names(target)
    elif isinstance(statement, ast.AnnAssign):
        if statement.value is not None:
            yield from _target_names(statement.target)
    elif isinstance(statement, ast.Import):
        for alias in statement.names:
            yield alias.asname or alias.name.split(".")[0]
    elif isinstance(statement, ast.ImportFrom):
        for alias in statement.names:
            if alias.name != "*":
                yield alias.asname or alias.name


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _target_binds(target: ast.expr, name: str) -> bool:
    return name in _target_names(target)


def _class_binding(node: ast.ClassDef, name: str) -> ast.stmt | None:
    found = None
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.name == name:
            found = statement
        elif isinstance(statement, ast.Assign) and any(_target_binds(t, name) for t in statement.targets):
            found = statement
        elif isinstance(statement, ast.AnnAssign) and _target_binds(statement.target, name):
            found = statement
    return found


def _star_sources(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            yield resolve_relative(module, is_package, statement.level, statement.module)
