"""What vllm-lint uses of LibCST's private API, checked on the installed LibCST.

Everything private goes through vllm_lint/python/libcst_private.py. Each test here exercises one piece of it
and, when a LibCST upgrade breaks it, fails with a message naming that module, so that the upgrade is
adapted there (or kept out by the pin in pyproject.toml) instead of surfacing as wrong positions or fixes.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from vllm_lint.python import libcst_private
from vllm_lint.python.libcst_private import CodegenState, generate, generated_code
from vllm_lint.python.positions import ModuleLayout

MODULE = "vllm_lint/python/libcst_private.py"
LIBCST = version("libcst")
# The hooks a node's _codegen calls on the state: positions.py overrides each one that adds text or marks a
# range, so a hook LibCST adds (or renames) would leave offsets uncounted.
HOOKS = {"add_indent_tokens", "add_token", "after_codegen", "before_codegen", "decrease_indent",
         "increase_indent", "pop_trailing_newline", "record_syntactic_position"}
FIELDS = {"default_indent", "default_newline", "indent_tokens", "provider", "tokens"}
SOURCE = '''"""Doc."""
import os


@decorator
class Server:
    def start(self, port: int = 8000) -> None:
        if port:
            try:
                os.system(f"vllm serve m --port {port}")
            except OSError:
                pass
            else:
                return
        elif self:
            with open("x") as handle, open("y"):
                pass
        match port:
            case 1 | 2:
                return
            case _:
                while True:
                    break
        for item in []:
            continue
        else:
            lambda: (yield)


x = [1, 2]; y = {**{}}
'''


def broken(what: str) -> str:
    return (f"LibCST {LIBCST} changed what {MODULE} relies on: {what}. Adapt {MODULE} (and positions.py, "
            "checker.py, which use it) to this LibCST, or keep LibCST within the range pyproject.toml pins.")


def test_the_state_is_the_dataclass_it_was():
    assert dataclasses.is_dataclass(CodegenState), broken("CodegenState is no longer a dataclass")
    fields = {f.name for f in dataclasses.fields(CodegenState)}
    assert fields == FIELDS, broken(f"CodegenState's fields are {sorted(fields)}, not {sorted(FIELDS)}")
    hooks = {name for name, value in vars(CodegenState).items() if callable(value) and not name.startswith("__")}
    assert hooks == HOOKS, broken(f"CodegenState's methods are {sorted(hooks)}, not {sorted(HOOKS)}")


def test_generate_calls_every_hook_and_gives_the_module_code():
    module = cst.parse_module(SOURCE)
    called: dict[str, int] = {}
    bounds: set[str] = set()

    @dataclasses.dataclass
    class Watching(CodegenState):
        def __getattribute__(self, name):
            if name in HOOKS:
                called[name] = called.get(name, 0) + 1
            return super().__getattribute__(name)

        @contextmanager
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            bounds.update(side for side, bound in (("start_node", start_node), ("end_node", end_node)) if bound)
            yield

    # Without a newline at its end, the module takes back the one its last statement generates.
    for tree in (module, cst.parse_module(SOURCE.rstrip("\n"))):
        state = Watching(default_indent=tree.default_indent, default_newline=tree.default_newline)
        generate(tree, state)
        assert "".join(state.tokens) == tree.code, broken("a node's _codegen no longer yields the module's code")
    missing = HOOKS - set(called)
    assert not missing, broken(f"_codegen no longer calls {sorted(missing)} on the state")
    assert bounds == {"start_node", "end_node"}, broken(
        f"record_syntactic_position was given only {sorted(bounds)} of start_node/end_node")


@pytest.mark.parametrize(("indents", "expected"), [
    ([], "if port:\n    return\n"),
    (["    "], "    if port:\n        return\n"),
    (["    ", "\t"], "    \tif port:\n    \t    return\n"),
])
def test_generated_code_starts_at_the_indentation_given(indents, expected):
    module = cst.parse_module("def f(port):\n    if port:\n        return\n")
    statement = module.body[0].body.body[0]
    assert generated_code(module, statement, indents) == expected, broken(
        "CodegenState(indent_tokens=...) no longer sets the indentation a node's code starts at")


def test_generated_code_keeps_the_module_newline():
    module = cst.parse_module("x = 1\r\nif x:\r\n    y = 2\r\n")
    assert generated_code(module, module.body[1], []) == "if x:\r\n    y = 2\r\n", broken(
        "CodegenState(default_newline=...) is no longer what a node's code ends its lines with")


@pytest.mark.parametrize("source", [SOURCE, SOURCE.replace("\n", "\r\n"), "x = 1", "", "# only a comment"])
def test_the_layout_agrees_with_position_provider(source):
    """positions.py counts offsets through the hooks; PositionProvider (public) is what it must agree with."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    layout = ModuleLayout(module)
    assert layout.code == module.code, broken("generating the module into the recording state lost code")
    differ = []
    for node, position in positions.items():
        expected = ((position.start.line, position.start.column), (position.end.line, position.end.column))
        if layout.span(node) != expected:
            differ.append(f"{type(node).__name__}: {layout.span(node)} != {expected}")
    assert not differ, broken("offsets recorded through the hooks differ from PositionProvider's: "
                              + "; ".join(differ[:5]))


def test_nothing_else_imports_libcst_internals():
    """Only libcst_private.py may reach into libcst._*: a private import elsewhere escapes these tests."""
    package = Path(libcst_private.__file__).parent.parent
    offenders = sorted(str(path.relative_to(package.parent)) for path in package.rglob("*.py")
                       if path.name != "libcst_private.py"
                       and ("libcst._" in (text := path.read_text(encoding="utf-8")) or "._codegen(" in text))
    assert offenders == []
