"""The fast read-only walker visits what ``CSTNode.visit`` visits, in the same order."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from fixture_files import syntax_sample
from vllm_lint.python.walk import walk

CORPUS = syntax_sample()


class Recorder(cst.CSTVisitor):
    """Records every visit and leave of a non-whitespace node, and skips what a visitor may skip."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)  # exercise "False skips the children"

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", id(original_node)))


class DispatchRecorder(cst.CSTVisitor):
    """The walker calls visit_<Class>/leave_<Class> methods, as the model uses them."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, int]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(("call", id(node)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.events.append(("def", id(node)))
        return node.name.value != "skipped"

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.events.append(("end", id(original_node)))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.events.append(("attr", id(node)))


TRIVIA = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comment)


class NoTrivia(Recorder):
    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, TRIVIA):
            return False
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if not isinstance(original_node, TRIVIA):
            super().on_leave(original_node)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_walk_matches_libcst_visit(path: Path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    expected, actual = NoTrivia(), NoTrivia()
    module.visit(expected)
    walk(module, actual)
    assert actual.events == expected.events
    expected_dispatch, actual_dispatch = DispatchRecorder(), DispatchRecorder()
    module.visit(expected_dispatch)
    walk(module, actual_dispatch)
    assert actual_dispatch.events == expected_dispatch.events


def test_walk_covers_decorators_before_bodies_and_skips():
    module = cst.parse_module("@a.b(c())\ndef f(x=g()):\n    h()\n\ndef skipped():\n    never()\n")
    recorder = DispatchRecorder()
    walk(module, recorder)
    calls = [node for kind, node in recorder.events if kind == "call"]
    names = {id(n): n for n in _calls(module)}
    assert [cst.Module([]).code_for_node(names[i].func) for i in calls] == ["a.b", "c", "g", "h"]


def _calls(module: cst.Module) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    module.visit(Collect())
    return found


_LEARNED_ONCE = """
import sys
import libcst as cst
from vllm_lint.python import walk as walker

class Order(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.names = []
    def visit_Name(self, node):
        self.names.append(node.value)

if sys.argv[1] == "warm":  # a later process: everything it walks was learned by the first one
    walker._learn = lambda node, present: sys.exit(f"learned {type(node).__name__} again")
module = cst.parse_module(open(sys.argv[2], encoding="utf-8").read())
walked, visited = Order(), Order()
walker.walk(module, walked)
module.visit(visited)
assert walked.names == visited.names
print(len(walked.names))
"""


def test_what_the_walk_learns_is_learned_once_per_install(tmp_path: Path):
    """A parser process reads the visiting orders an earlier one learned (the user's cache): same order, no
    learning."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("VLLM_LINT_NO_USER_CACHE", None)
    sample = str(max(CORPUS, key=lambda path: path.stat().st_size))  # the same file wherever the checkout is
    runs = [subprocess.run([sys.executable, "-c", _LEARNED_ONCE, when, sample], capture_output=True, text=True, env=env)
            for when in ("cold", "warm")]
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr
    assert runs[0].stdout == runs[1].stdout and int(runs[0].stdout) > 100
    assert list((tmp_path / "vllm-lint" / "marshal").glob("walk-orders-libcst-*.marshal"))
