"""The one-pass layout gives every node the range LibCST's PositionProvider gives it, and its real parent."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from fixture_files import syntax_sample
from vllm_lint.python.positions import ModuleLayout

CORPUS = syntax_sample()

# Line endings and ends of file that PositionProvider counts in its own way.
ODD_TEXTS = {
    "no newline at the end": "import os\nx = f(1,\n      2)",
    "crlf": "import os\r\nx = f(1,\r\n      2)\r\n",
    "crlf, none at the end": "def f():\r\n    return g(1)",
    "cr only": "x = 1\ry = f(2)\r",
    "mixed": "x = 1\r\ny = f(2)\nz = 3\r",
    "empty": "",
    "comments only": "# a\n\n# b\n",
    "match mapping without rest": "match x:\n    case {}:\n        pass\n    case {'a': 1, **rest}:\n        pass\n",
    "semicolons and decorators": "@d\n@e(1)\nclass A: x = 1; y = 2\n\nif a:\n    pass\nelse:  # c\n    b = [\n        1,\n    ]\n",
}


def _check(text: str) -> None:
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    layout = ModuleLayout(module)
    assert layout.code == module.code
    for node, expected in positions.items():
        start, end = layout.span(node)
        assert (start, end) == ((expected.start.line, expected.start.column), (expected.end.line, expected.end.column)), node
    for node, parent in parents.items():
        if node not in positions:
            continue  # never printed (a match mapping's whitespace before an absent **rest): no place, no path
        path = layout.path_to(node)
        assert path is not None and path[-1] == (node, None)
        holder, field = path[-2]
        value = getattr(parent, field)
        assert holder is parent and (value is node or any(item is node for item in _items(value)))


def _items(value):
    return value if isinstance(value, (list, tuple)) else ()


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_ranges_and_parents_match_libcst_on_real_files(path: Path):
    _check(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ODD_TEXTS)
def test_ranges_match_libcst_at_odd_line_endings(name: str):
    _check(ODD_TEXTS[name])


def test_a_node_from_another_module_has_no_path():
    layout = ModuleLayout(cst.parse_module("x = 1\n"))
    assert layout.path_to(cst.parse_expression("y")) is None


def test_whole_range_of_a_top_level_statement_is_its_code_in_the_file():
    text = "import os\n\n# about f\ndef f():\n    return 1\n\nx = f()\n"
    module = cst.parse_module(text)
    layout = ModuleLayout(module)
    for statement in module.body:
        start, end = layout.whole_range(statement)
        assert text[start:end] == module.code_for_node(statement)


def _partial_layouts_agree(text: str) -> int:
    """Partial layouts up to a few nodes (one early, one in the middle, the last) hold those nodes and give every
    node they hold the range the whole layout gives; the number of partial layouts that stopped early."""
    module = cst.parse_module(text)
    whole = ModuleLayout(module)
    nodes = [node for node in _nodes(module) if whole.holds(node)]
    stopped = 0
    for until in ([nodes[len(nodes) // 7]], [nodes[len(nodes) // 2], nodes[len(nodes) // 3]], [nodes[-1]]) if nodes else ():
        partial = ModuleLayout(module, until=until)
        assert all(partial.holds(node) for node in until)
        held = [node for node in nodes if partial.holds(node)]
        assert held and all(partial.span(node) == whole.span(node) for node in held)
        stopped += not partial.complete
    return stopped


def _nodes(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    module.visit(Collect())
    return found


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_a_layout_up_to_some_nodes_places_what_it_holds_as_the_whole_layout_does(path: Path):
    _partial_layouts_agree(path.read_text(encoding="utf-8"))


def test_partial_layouts_at_odd_line_endings_and_that_they_stop_early():
    stopped = sum(_partial_layouts_agree(text) for text in ODD_TEXTS.values())
    assert stopped >= len(ODD_TEXTS)  # most stop before the module's end: the early and the middle nodes
