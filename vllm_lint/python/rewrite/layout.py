"""Adding and removing module-level statements without disturbing the lines around them.

A removed statement's comment lines are not the rewrite's to delete: they move
to the statement that follows (or the module's footer). Blank lines before a
new block follow PEP 8 so the result reads like code a person wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vllm_lint.lazy_re import lazy_compile

BLANK = cst.EmptyLine()
# What a module or an indented block holds: each kind has the leading lines a blank-line edit changes.
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def comment_lines(lines: Sequence[cst.EmptyLine]) -> list[cst.EmptyLine]:
    return [line for line in lines if line.comment is not None]


# What a comment on the model's call says about the call the rewrite replaces ("# Blocks all requests!"):
# untrue of the engine request in its place.
_SAYS_IT_BLOCKS = lazy_compile(
    r"(?i)\b(?:block(?:s|ed|ing)?|synchronous(?:ly)?|sync|event[ -]loop|anti-?pattern|one (?:request )?at a time|"
    r"seriali[sz]e[sd]?|bottleneck)\b"
)


def without_blocking_remarks(statement: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """``statement`` without the comments, on its line or right above it, that say the call blocks."""
    trailing = statement.trailing_whitespace
    if trailing.comment is not None and _SAYS_IT_BLOCKS.search(trailing.comment.value):
        statement = statement.with_changes(trailing_whitespace=cst.TrailingWhitespace(newline=trailing.newline))
    leading = list(statement.leading_lines)
    while leading and leading[-1].comment is not None and _SAYS_IT_BLOCKS.search(leading[-1].comment.value):
        leading.pop()
    return statement.with_changes(leading_lines=leading)


def with_blank_lines(statement: Statement, count: int) -> Statement:
    """``statement`` with exactly ``count`` blank lines before its first line (its comments kept)."""
    lines = list(statement.leading_lines)
    while lines and lines[0].comment is None:
        lines.pop(0)
    return statement.with_changes(leading_lines=[BLANK] * count + lines)


def without_statements(module: cst.Module, doomed: Sequence[cst.CSTNode]) -> cst.Module:
    """``module`` without the top-level statements in ``doomed``; their leading lines move down."""
    doomed_ids = {id(node) for node in doomed}
    body: list[cst.BaseStatement] = []
    carried: list[cst.EmptyLine] = []
    for statement in module.body:
        if id(statement) in doomed_ids:
            carried.extend(statement.leading_lines)
            continue
        if carried:
            statement = statement.with_changes(leading_lines=[*carried, *statement.leading_lines])
            carried = []
        body.append(statement)
    footer = list(module.footer)
    if carried:
        footer = comment_lines(carried) + footer
    return module.with_changes(body=body, footer=footer)


def without_small_statement(module: cst.Module, line: cst.SimpleStatementLine, small: cst.BaseSmallStatement) -> cst.Module:
    """Remove one statement from a line; the whole line when it was the only one."""
    if len(line.body) == 1:
        return without_statements(module, [line])
    kept = [s for s in line.body if s is not small]
    kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
    return replace_statement(module, line, line.with_changes(body=kept))


def replace_statement(module: cst.Module, old: cst.BaseStatement, new: cst.BaseStatement) -> cst.Module:
    return module.with_changes(body=[new if statement is old else statement for statement in module.body])


def insert_statements(module: cst.Module, index: int, new: Sequence[cst.BaseStatement]) -> cst.Module:
    body: list[cst.BaseStatement] = list(module.body)
    body[index:index] = new
    return module.with_changes(body=body)


def insert_before_first_block(module: cst.Module, statements: Sequence[Statement], imported: str | None = None) -> cst.Module:
    """``module`` with ``statements`` at its top level after the leading imports: before its first definition or
    block (which may use them), and after the line that imports ``imported`` (which they use as they run)."""
    body = list(module.body)
    at = next((i for i, statement in enumerate(body) if not isinstance(statement, cst.SimpleStatementLine)), len(body))
    if imported is not None:
        at = max(at, next(i for i, statement in enumerate(body) if _imports_module(statement, imported)) + 1)
    new = [with_blank_lines(statement, 2) for statement in statements]
    if at < len(body):
        body[at] = with_blank_lines(body[at], 2)
    return module.with_changes(body=[*body[:at], *new, *body[at:]])


def _imports_module(statement: cst.BaseStatement, name: str) -> bool:
    """``import name`` (or an ``import x as name``) on this top-level line."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                if isinstance(bound, cst.Name) and bound.value == name:
                    return True
    return False
