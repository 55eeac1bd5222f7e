"""Several constructions of the model that build one model at run time: the branches of one ``if``/``else``
chain, or a ``try`` and its ``except`` fallbacks, each assigning the same variable.

``try: llm = LLM(..., enable_lora=True)`` / ``except Exception: llm = LLM(..., enable_lora=False)`` builds the
first, or, when that raises, the second: one model either way, and one engine when each construction becomes the
engine's (a failing engine raises as the LLM did, so the fallback still runs). Each branch must build it, so
that the variable holds an engine on every path past the block (the lifespan's shutdown reads it).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vllm_lint.python.model import CallSite
from vllm_lint.python.rewrite.names import Occurrence
from vllm_lint.python.rewrite.shapes import directly_in
from vllm_lint.python.walk import walk


def exclusive_block(module: cst.Module, sites: Sequence[CallSite]) -> cst.Try | cst.If | None:
    """The ``try`` or ``if`` whose every branch is exactly one of ``sites``' statements (each a statement of
    its branch's own block), when there is one; None otherwise."""
    statements = [site.statement for site in sites]
    functions = {id(site.function) for site in sites}
    if len({id(s) for s in statements}) != len(statements) or len(functions) != 1:
        return None
    function = sites[0].function
    holders = _Holders(statements[0])
    walk(function.node if function is not None else module, holders)
    blocks: list[cst.Try | cst.If] = [*_try_blocks(holders.found, statements), *_if_blocks(holders.found, statements)]
    return blocks[0] if blocks else None


def same_variable(sites: Sequence[CallSite], target: str) -> bool:
    """Every construction is ``target = <the call>`` (one plain name, nothing else on the line)."""
    for site in sites:
        statement = site.statement
        if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
            return False
        assign = statement.body[0]
        if not (isinstance(assign, cst.Assign) and assign.value is site.node and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == target):
            return False
    return True


def is_binding_of(o: Occurrence, statements: Sequence[cst.CSTNode]) -> bool:
    """``o`` is the target of one of the constructions' assignments."""
    return isinstance(o.parent, cst.AssignTarget) and any(o.ancestor(3) is s for s in statements)


def _try_blocks(holders: list[cst.CSTNode], statements: list[cst.CSTNode]) -> list[cst.Try]:
    """A ``try`` whose body builds the model and whose every ``except`` builds it again (its fallback)."""
    found = []
    for node in holders:
        if not isinstance(node, cst.Try) or node.orelse is not None or node.finalbody is not None:
            continue
        branches: list[cst.CSTNode] = [node, *node.handlers]
        if len(branches) == len(statements) and all(_one_each(branches, statements)):
            found.append(node)
    return found


def _if_blocks(holders: list[cst.CSTNode], statements: list[cst.CSTNode]) -> list[cst.If]:
    """An ``if``/``elif``/``else`` chain whose every branch (an ``else`` included) builds the model."""
    found = []
    for node in holders:
        if not isinstance(node, cst.If):
            continue
        branches: list[cst.CSTNode] = []
        branch: cst.If | cst.Else | None = node
        while isinstance(branch, cst.If):
            branches.append(branch)
            branch = branch.orelse
        if branch is None:
            continue  # no else: a path that builds nothing
        branches.append(branch)
        if len(branches) == len(statements) and all(_one_each(branches, statements)):
            found.append(node)
    return found


def _one_each(branches: list[cst.CSTNode], statements: list[cst.CSTNode]) -> list[bool]:
    return [sum(directly_in(branch, s) for s in statements) == 1 for branch in branches]


class _Holders(cst.CSTVisitor):
    """The ``try`` and ``if`` statements above ``statement``, innermost first."""

    def __init__(self, statement: cst.CSTNode) -> None:
        super().__init__()
        self.statement = statement
        self.found: list[cst.CSTNode] = []
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.statement:
            self.found = [n for n in reversed(self._stack) if isinstance(n, (cst.Try, cst.If))]
            return False
        self._stack.append(node)
        return not self.found

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._stack and self._stack[-1] is original_node:
            self._stack.pop()
