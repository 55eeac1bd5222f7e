"""What a vLLM source tree's modules define, read with :mod:`ast` (never imported).

Both the import-based snapshot (``introspect.py``) and the static reader of released wheels
(``static_read.py``) list modules and their names this way: importing ~2,600 modules would be slow
and break on optional dependencies, and the old releases cannot be imported here at all.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.machinery
from collections.abc import Iterable, Iterator
from pathlib import Path

# Names every module object has (packages also have __path__), whatever its
# source says.  Written once in the snapshot instead of in each of ~2,600 name
# lists, which keeps the file small.
IMPLICIT_MODULE_NAMES = (
    "__builtins__",
    "__cached__",
    "__doc__",
    "__file__",
    "__loader__",
    "__name__",
    "__package__",
    "__path__",
    "__spec__",
)

# Module-level name -> the strings that collection holds (None: cannot be listed).
Containers = dict[str, list[str] | None]
# `try: ... except* E:` is its own node type from Python 3.11 on.
_TRY_NODES: tuple[type[ast.stmt], ...] = (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))



def extension_module_name(filename: str) -> str | None:
    """``_C.abi3.so`` -> ``_C``; None when the file is not an extension module."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return None


def has_python_below(directory: Path) -> bool:
    return any(directory.rglob("*.py"))


def iter_module_files(package_dir: Path, package: str) -> Iterator[tuple[str, Path | None, bool]]:
    """Yield ``(module name, source file or None, is package)`` for a package tree.

    A directory without ``__init__.py`` is a namespace package only when it
    holds Python code somewhere below; plain data folders are not modules.
    """
    init = package_dir / "__init__.py"
    yield package, (init if init.is_file() else None), True
    for child in sorted(package_dir.iterdir()):
        if child.name == "__pycache__":
            continue
        if child.is_dir():
            if child.name.isidentifier() and ((child / "__init__.py").is_file() or has_python_below(child)):
                yield from iter_module_files(child, f"{package}.{child.name}")
        elif child.suffix == ".py" and child.name != "__init__.py":
            if child.stem.isidentifier():
                yield f"{package}.{child.stem}", child, False
        else:
            stem = extension_module_name(child.name)
            if stem is not None and stem.isidentifier():
                yield f"{package}.{stem}", None, False


@dataclasses.dataclass
class ModuleNames:
    """What the ast of one module tells about the names it defines."""

    names: set[str] = dataclasses.field(default_factory=set)
    open: bool = False
    all_names: list[str] | None = None  # __all__, when it is a literal
    star_imports: list[str] = dataclasses.field(default_factory=list)  # absolute module names


def target_names(target: ast.expr) -> Iterator[str]:
    """Names bound by an assignment target (``a``, ``a, (b, *c)``)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from target_names(element)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def string_items(node: ast.expr | None, containers: Containers | None = None) -> list[str] | None:
    """The strings a collection expression holds (dict: its keys); None if unknown.

    Understands literals, ``*spread``, ``sorted(X)`` / ``list(X)``, ``X + Y``
    and names of module-level collections already read (``containers``).
    """
    known = containers or {}
    if isinstance(node, ast.Constant):
        return None
    if isinstance(node, ast.Name):
        items = known.get(node.id)
        return list(items) if items is not None else None
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return joined(element_items(element, known) for element in node.elts)
    if isinstance(node, ast.Dict):
        return joined(
            string_items(value, known) if key is None else element_items(key, known)
            for key, value in zip(node.keys, node.values)
        )
    if is_collection_call(node):
        return collection_call_items(node, known)  # type: ignore[arg-type]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.BitOr)):
        return joined([string_items(node.left, known), string_items(node.right, known)])
    return None


def is_collection_call(node: ast.expr | None) -> bool:
    """``sorted(X)``, ``list(X)``, ``dict(a=...)``: a call that keeps X's strings."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("sorted", "list", "tuple", "set", "frozenset", "dict")
        and len(node.args) <= 1
    )


def collection_call_items(node: ast.Call, known: Containers) -> list[str] | None:
    from_args = string_items(node.args[0], known) if node.args else []
    if from_args is None:
        return None
    if getattr(node.func, "id", None) != "dict":
        return from_args  # sorted(X, key=...): keywords are options, not items
    if any(keyword.arg is None for keyword in node.keywords):
        return None  # dict(**other)
    return from_args + [keyword.arg for keyword in node.keywords if keyword.arg is not None]


def element_items(element: ast.expr | None, known: Containers) -> list[str] | None:
    """One element of a collection display: a string, or ``*X`` spread."""
    if isinstance(element, ast.Constant) and isinstance(element.value, str):
        return [element.value]
    if isinstance(element, ast.Starred):
        return string_items(element.value, known)
    return None


def joined(parts: Iterable[list[str] | None]) -> list[str] | None:
    """Concatenate string lists; None as soon as one part is unknown."""
    result: list[str] = []
    for part in parts:
        if part is None:
            return None
        result.extend(part)
    return result


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module a ``from ...target import`` inside ``module`` names."""
    if level == 0:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def top_level_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at module level, including inside if/try/with/for.

    Branches guarded by ``TYPE_CHECKING`` or ``try/except ImportError`` are
    included: the linter prefers a name list that is too generous (no false
    "does not exist" reports) to one that is too strict.
    """
    for statement in body:
        yield statement
        if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While)):
            yield from top_level_statements(statement.body)
            yield from top_level_statements(statement.orelse)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from top_level_statements(statement.body)
        elif isinstance(statement, _TRY_NODES):
            yield from top_level_statements(statement.body)
            for handler in statement.handlers:
                yield from top_level_statements(handler.body)
            yield from top_level_statements(statement.orelse)
            yield from top_level_statements(statement.finalbody)
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from top_level_statements(case.body)


def bound_names(statement: ast.stmt, module: str, is_package: bool, info: ModuleNames) -> Iterator[str]:
    """Names one module-level statement binds; records star imports on ``info``."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield statement.name
    elif isinstance(statement, ast.Assign):
        for target in statement.targets:
            yield from target_names(target)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        yield from target_names(statement.target)
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        for item in statement.items:
            if item.optional_vars is not None:
                yield from target_names(item.optional_vars)
    elif isinstance(statement, _TRY_NODES):
        for handler in statement.handlers:
            if handler.name:
                yield handler.name
    elif isinstance(statement, ast.Import):
        for alias in statement.names:
            # `import a.b.c` binds `a`; `import a.b as c` binds `c`.
            yield alias.asname or alias.name.split(".")[0]
    elif isinstance(statement, ast.ImportFrom):
        source = resolve_relative(module, is_package, statement.level, statement.module)
        for alias in statement.names:
            if alias.name == "*":
                info.star_imports.append(source)
            else:
                yield alias.asname or alias.name
    elif isinstance(statement, ast.Global):
        yield from statement.names


def global_declarations(tree: ast.Module) -> Iterator[str]:
    """Names functions declare ``global``: assigning them creates module attributes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            yield from node.names


def literal_containers(tree: ast.Module) -> Containers:
    """Module-level names bound to collections of strings we can list (None: cannot).

    Follows the usual ways such tables grow (``X["k"] = ...``, ``X += [...]``,
    ``X.update({...})``); a name bound in several branches keeps the union,
    which errs on the side of serving more names.
    """
    containers: Containers = {}
    for statement in top_level_statements(tree.body):
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                bind_container(containers, target, statement.value)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
            extra = string_items(statement.value, containers)
            current = containers.get(name)
            containers[name] = None if current is None or extra is None else current + extra
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            grow_container(containers, statement.value)
    return containers


def bind_container(containers: Containers, target: ast.expr, value: ast.expr) -> None:
    if isinstance(target, ast.Name):
        items = string_items(value, containers)
        if target.id in containers:  # rebound (often in if/else branches): keep the union
            previous = containers[target.id]
            items = None if previous is None or items is None else previous + items
        containers[target.id] = items
    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        key = target.slice
        current = containers.get(target.value.id)
        if current is not None and isinstance(key, ast.Constant) and isinstance(key.value, str):
            current.append(key.value)  # TABLE["name"] = ... adds a key
        else:
            containers[target.value.id] = None


def grow_container(containers: Containers, call: ast.Call) -> None:
    """``X.append("a")``, ``X.extend([...])``, ``X.update({...}, b=...)`` at module level."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return
    name = func.value.id
    current = containers.get(name)
    if current is None:
        return
    added: list[str] | None
    if func.attr in ("append", "add") and len(call.args) == 1:
        added = element_items(call.args[0], containers)
    elif func.attr in ("extend", "update"):
        added = joined(string_items(arg, containers) for arg in call.args)
        if added is not None:
            added += [keyword.arg for keyword in call.keywords if keyword.arg is not None]
            if any(keyword.arg is None for keyword in call.keywords):
                added = None
    elif func.attr in ("pop", "remove", "discard", "clear", "copy", "get", "keys", "items", "values", "index", "count"):
        return  # shrinking or reading: the names listed stay a superset
    else:
        added = None
    containers[name] = None if added is None else current + added


def getattr_names(function: ast.FunctionDef, containers: Containers) -> set[str] | None:
    """Names a module-level ``__getattr__`` serves, or None when not enumerable.

    Enumerable means: unknown names end in ``raise`` (the body ends by raising,
    or an early ``if ...: raise`` guard tests the name) and every test of the
    name parameter (``==``, ``in``, ``TABLE.get(name)``, ``TABLE[name]``) is
    against strings or collections we can list, or ``globals()``.
    """
    if not function.args.args or not function.body:
        return None
    param = function.args.args[0].arg
    if not (ends_with_raise(function.body) or has_raising_guard(function.body, param)):
        return None
    served: set[str] = set()
    tested = False
    for node in ast.walk(function):
        items = tested_names(node, param, containers)
        if items is _UNKNOWN:
            return None
        if items is not None:
            tested = True
            served.update(items)  # type: ignore[arg-type]
    return served if tested else None


_UNKNOWN = object()  # tested_names: "this test's names cannot be listed"


def tested_names(node: ast.AST, param: str, containers: Containers) -> object:
    """The names one expression tests the parameter against.

    None: the node is no test of the parameter; ``_UNKNOWN``: a test whose
    names we cannot list.
    """
    if isinstance(node, ast.Compare) and is_name(node.left, param):
        names: list[str] = []
        for op, comparator in zip(node.ops, node.comparators):
            if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(comparator, ast.Constant):
                names.extend([comparator.value] if isinstance(comparator.value, str) else [])
            elif isinstance(op, (ast.In, ast.NotIn)):
                items = comparator_items(comparator, containers)
                if items is None:
                    return _UNKNOWN
                names.extend(items)
            else:
                return _UNKNOWN
        return names
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and is_name(node.args[0], param)
    ):
        items = comparator_items(node.func.value, containers)
        return _UNKNOWN if items is None else items
    if isinstance(node, ast.Subscript) and is_name(node.slice, param):
        # TABLE[name] raises KeyError for other names; a table we cannot
        # list is no test (the lookup sits behind some other check).
        return comparator_items(node.value, containers)
    return None


def is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def comparator_items(node: ast.expr, containers: Containers) -> list[str] | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "dir"):
        return []  # only names the module binds anyway
    return string_items(node, containers)


def mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(child, ast.Name) and child.id in names for child in ast.walk(node))


def has_raising_guard(body: list[ast.stmt], param: str) -> bool:
    """An ``if <test of the name, or of a value looked up with it>: raise`` early exit."""
    tainted = {param}
    for statement in body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            if mentions(statement.value, tainted):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                tainted.update(name for target in targets for name in target_names(target))
        elif (
            isinstance(statement, ast.If)
            and not statement.orelse
            and mentions(statement.test, tainted)
            and ends_with_raise(statement.body)
        ):
            return True
    return False


def ends_with_raise(body: list[ast.stmt]) -> bool:
    """True when falling off the end of ``body`` is impossible without raising."""
    statements = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.If):
        return bool(last.orelse) and ends_with_raise(last.orelse)
    return False


def scan_module(module: str, path: Path | None, is_package: bool) -> ModuleNames:
    """The names a module defines, read from its source without importing it."""
    info = ModuleNames()
    if path is None:
        # An extension module (or a namespace package): its names are unknown,
        # except the submodules added later.
        info.open = not is_package
        return info
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        info.open = True
        return info
    for statement in top_level_statements(tree.body):
        info.names.update(bound_names(statement, module, is_package, info))
    info.names.update(global_declarations(tree))
    containers = literal_containers(tree)
    if "__all__" in info.names:
        # A computed __all__ we cannot list only matters to `import *` of this
        # module (star_exports); the names it lists are bound elsewhere anyway.
        info.all_names = containers.get("__all__")
        info.names.update(info.all_names or ())
    info.open = info.open or lazy_names_unknown(tree, containers, info)
    return info


def lazy_names_unknown(tree: ast.Module, containers: dict[str, list[str] | None], info: ModuleNames) -> bool:
    """Add what a module-level ``__getattr__`` serves; True when it cannot be listed."""
    getattr_defs = [
        statement
        for statement in top_level_statements(tree.body)
        if isinstance(statement, ast.FunctionDef) and statement.name == "__getattr__"
    ]
    assigned = any(
        isinstance(statement, ast.Assign) and "__getattr__" in {n for t in statement.targets for n in target_names(t)}
        for statement in top_level_statements(tree.body)
    )
    if assigned or len(getattr_defs) > 1:
        return True
    for function in getattr_defs:
        served = getattr_names(function, containers)
        if served is None:
            return True
        info.names.update(served)
    return False


def resolve_star_imports(scans: dict[str, ModuleNames]) -> None:
    """Expand ``from vllm.x import *`` with the names of ``vllm.x``.

    A star import of a module outside vLLM, or of one whose names are open,
    leaves the importer open.  Iterates to a fixed point so chains resolve.
    """
    changed = True
    while changed:
        changed = False
        for info in scans.values():
            for source in info.star_imports:
                target = scans.get(source)
                exported = star_exports(target) if target is not None else None
                will_be_open = exported is None or target.open  # type: ignore[union-attr]
                before = (len(info.names), info.open)
                if exported is not None:
                    info.names.update(exported)
                info.open = info.open or will_be_open
                changed = changed or before != (len(info.names), info.open)


def star_exports(info: ModuleNames) -> set[str] | None:
    """What ``from m import *`` binds: ``__all__``, else the public names."""
    if info.all_names is not None:
        return set(info.all_names)
    if "__all__" in info.names:
        return None  # a computed __all__ we could not list
    return {name for name in info.names if not name.startswith("_")}


def scan_package(package_dir: Path, package: str) -> dict[str, ModuleNames]:
    """Every module under the package with the names it defines."""
    scans: dict[str, ModuleNames] = {}
    for module, path, is_package in iter_module_files(package_dir, package):
        scans[module] = scan_module(module, path, is_package)
    # A package has its submodules as attributes once they are imported.
    for module in scans:
        parent, _, child = module.rpartition(".")
        if parent in scans:
            scans[parent].names.add(child)
    resolve_star_imports(scans)
    return scans



# --------------------------------------------------------------------------
# Classes: the attributes methods assign
# --------------------------------------------------------------------------


def self_assignments(class_def: ast.ClassDef) -> set[str]:
    """``X`` for every ``self.X = ...`` (or ``setattr(self, "X", ...)``) in its methods.

    The receiver is each method's first parameter, whatever it is called;
    static methods have none.
    """
    found: set[str] = set()
    for method in class_def.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list):
            continue
        receiver = method.args.args[0].arg
        for node in ast.walk(method):
            found.update(assigned_attributes(node, receiver))
    return found


def assigned_attributes(node: ast.AST, receiver: str) -> Iterator[str]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
        args = node.args
        if (
            len(args) >= 2
            and isinstance(args[0], ast.Name)
            and args[0].id == receiver
            and isinstance(args[1], ast.Constant)
            and isinstance(args[1].value, str)
        ):
            yield args[1].value
    for target in targets:
        yield from attribute_targets(target, receiver)


def attribute_targets(target: ast.expr, receiver: str) -> Iterator[str]:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver:
        yield target.attr
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from attribute_targets(element, receiver)
    elif isinstance(target, ast.Starred):
        yield from attribute_targets(target.value, receiver)

