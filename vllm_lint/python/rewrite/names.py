"""Where names occur in a module, and names that are still free.

A rewrite may only move or rename an object when it knows every place that
refers to it; these helpers list those places with the nodes around each one,
so the analysis can decide from the parents what each use does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from vllm_lint.python.walk import walk  # read-only visits without rebuilding the tree


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One ``Name`` node that refers to a variable (not an attribute name or keyword), or for an attribute
    of an object (``self.pipe``) the Attribute node."""

    name: cst.Name
    parents: tuple[cst.CSTNode, ...]  # outermost first; the last one is the direct parent
    function: cst.FunctionDef | None  # the innermost enclosing def

    @property
    def parent(self) -> cst.CSTNode:
        return self.parents[-1]

    def ancestor(self, levels: int) -> cst.CSTNode | None:
        """The parent ``levels`` steps up (1 = the direct parent)."""
        return self.parents[-levels] if len(self.parents) >= levels else None


def _is_reference(node: cst.Name, parent: cst.CSTNode | None) -> bool:
    """False for names that do not refer to a variable: ``x.attr``'s attr, ``f(kw=...)``'s kw."""
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is node:
        return False
    return not (isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node)


class _Collector(cst.CSTVisitor):
    def __init__(self, wanted: frozenset[str]) -> None:
        super().__init__()
        self.wanted = wanted
        self.found: dict[str, list[Occurrence]] = {name: [] for name in wanted}
        self._stack: list[cst.CSTNode] = []
        self._functions: list[cst.FunctionDef] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.ImportFrom):
            return self._visit_import_from(node)
        if isinstance(node, cst.Name) and node.value in self.wanted:
            parent = self._stack[-1] if self._stack else None
            if _is_reference(node, parent):
                function = self._functions[-1] if self._functions else None
                self.found[node.value].append(Occurrence(node, tuple(self._stack), function))
        self._stack.append(node)
        if isinstance(node, cst.FunctionDef):
            self._functions.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.ImportFrom):
            return  # its names were visited by _visit_import_from, with nothing left on the stack
        self._stack.pop()
        if isinstance(original_node, cst.FunctionDef):
            self._functions.pop()

    def _visit_import_from(self, node: cst.ImportFrom) -> bool:
        """The names ``from x import a, b as c`` binds, but not ``x``: the module it imports from (a local
        ``model.py``) is no reference to a variable of that name."""
        if isinstance(node.names, cst.ImportStar):
            return False
        self._stack.append(node)
        for alias in node.names:
            self._stack.append(alias)
            self.on_visit(alias.name)
            self.on_leave(alias.name)
            if alias.asname is not None:
                self._stack.append(alias.asname)
                self.on_visit(alias.asname.name)
                self.on_leave(alias.asname.name)
                self._stack.pop()
            self._stack.pop()
        self._stack.pop()
        return False


def occurrences(tree: cst.CSTNode, names: Iterable[str]) -> dict[str, list[Occurrence]]:
    """Every variable reference to each of ``names`` in ``tree`` (a module, or a function in it), in source
    order (imports included); parents are listed from ``tree`` down."""
    collector = _Collector(frozenset(names))
    walk(tree, collector)
    return collector.found


def attribute_occurrences(tree: cst.CSTNode, owner: str, attribute: str) -> list[Occurrence]:
    """Every ``owner.attribute`` in ``tree`` (``self.pipe``), as occurrences whose ``name`` is that Attribute."""
    found = []
    for o in occurrences(tree, [owner])[owner]:
        parent = o.parent
        if isinstance(parent, cst.Attribute) and parent.value is o.name and parent.attr.value == attribute:
            found.append(Occurrence(parent, o.parents[:-1], o.function))  # type: ignore[arg-type]
    return found


class _AllNames(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


# The module names_in was last asked about, and its answer: the fixes of one file (the server rewrite, the
# imports other fixes add) each ask it of the same module, which LibCST never changes in place.
_last_module: tuple[cst.Module, frozenset[str]] | None = None


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier written anywhere under ``node`` (attribute names and keywords included)."""
    global _last_module
    last = _last_module
    if last is not None and last[0] is node:
        return set(last[1])
    collector = _AllNames()
    walk(node, collector)
    if isinstance(node, cst.Module):
        _last_module = (node, frozenset(collector.names))
    return collector.names


class FreshNames:
    """Hands out identifiers that appear nowhere in the module (nor earlier from this object)."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = set(taken)

    def take(self, preferred: str) -> str:
        candidate, number = preferred, 2
        while candidate in self._taken:
            candidate = f"{preferred}_{number}"
            number += 1
        self._taken.add(candidate)
        return candidate
