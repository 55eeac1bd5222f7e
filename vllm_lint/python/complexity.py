"""Refuse, before LibCST sees it, a file its parser would take seconds (or a crash) on.

LibCST's parser is superlinear in how deep an expression goes: a flat sum is a left-leaning tree as deep
as it has terms, so a 4,000-term sum takes it about 6 s, and 20,000 terms run into the per-file time
limit (and overflow its stack outside the worker). Nested calls and brackets are worse per level (500
nested calls: about 5 s). Generated files (coefficient tables written as one expression, minified code)
have such shapes; people's code never does.

The check is in two steps, so that ordinary files pay next to nothing:

1. A trigger on the bytes, at C speed: bracket nesting found by removing innermost ``()``/``[]``/``{}``
   pairs a bounded number of times, and regular expressions for long runs of operators, attribute
   reads and trailers (``f(1)(2)``, ``a[1][2]``). Each is a necessary condition of a costly shape (with a
   wide margin), not a verdict.
2. Only when the trigger fires: the standard library's parser (C; it gives up on its own, with a
   RecursionError, on the deepest inputs), and a walk of its tree that estimates LibCST's time as the
   squared weighted depth of each statement, the weights measured per kind of nesting.

The per-file time limit (engine/workers.py) stays as the last resort for shapes neither step knows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Estimated LibCST seconds above which a file is refused (the estimate is for a typical laptop core;
# files LibCST handles in a few seconds, such as a 2,000-term sum, are still linted).
_REFUSE_SECONDS = 4.0
# LibCST nodes deep: past this the module model's traversal (walk.py, recursive) would exceed Python's
# recursion limit anyway, after LibCST spent its time on the parse.
_MAX_DEPTH = 900

# -- step 1: the trigger --------------------------------------------------------------------------

_BRACKETS = b"()[]{}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
_OPERATORS = b"+-*/%|&^@~"
_NOT_OPERATORS = bytes(b for b in range(256) if b not in _OPERATORS + b"\n")
# Nesting this deep (or more) is worth a closer look: 2 s of LibCST needs over 300 nested calls.
_NESTING_PASSES = 40
# Operators on consecutive lines that each hold one (a chain over many lines, black-style), or on one.
_OPERATOR_RUN = re.compile(rb"[+\-*/%|&^@~](?:\n?[+\-*/%|&^@~]){249,}")
# On the code without its words and blanks: ``a.b.c`` is ``..``, ``f(1)(2)`` is ``()()``, ``a[1][2]`` is ``[][]``.
_WORDS_AND_BLANKS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ \t"
_ATTRIBUTE_RUN = re.compile(rb"\.{200,}")
_TRAILER_RUN = re.compile(rb"[)\]](?:[.(\[][)\]]){100,}")
# Nesting by keywords (``lambda: lambda: ...``, ``not not ...``, ``a if b else c if ...``) on one long line.
_LONG_LINE = re.compile(rb"\n[^\n]{400,}")
_KEYWORD_LINKS = (b"lambda", b"not ", b"else")
_KEYWORD_RUN = 100


def _deeply_nested(code: bytes) -> bool:
    brackets = code.translate(None, _NOT_BRACKETS)
    for _ in range(_NESTING_PASSES):
        inner = brackets.replace(b"()", b"").replace(b"[]", b"").replace(b"{}", b"")
        if inner == brackets:
            return False  # balanced (or stray brackets in strings): no deeper level left
        brackets = inner
    return bool(brackets)


def _trigger(code: bytes) -> int | None:
    """The offset of a costly-looking shape (0 when only the nesting says so); None: nothing costly."""
    operators = code.translate(None, _NOT_OPERATORS)
    match = _OPERATOR_RUN.search(operators)
    if match:
        return _offset_of_line(code, operators.count(b"\n", 0, match.start()))
    punctuation = code.translate(None, _WORDS_AND_BLANKS)
    for pattern in (_ATTRIBUTE_RUN, _TRAILER_RUN):
        match = pattern.search(punctuation)
        if match:
            return _offset_of_line(code, punctuation.count(b"\n", 0, match.start()))
    for offset, line in _long_lines(code):
        if any(line.count(word) >= _KEYWORD_RUN for word in _KEYWORD_LINKS):
            return offset
    return 0 if _deeply_nested(code) else None


def _long_lines(code: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for lines of 400 bytes or more (searched from each newline: one pass)."""
    first = code.find(b"\n")
    first = len(code) if first == -1 else first
    if first >= 400:
        yield 0, code[:first]
    for match in _LONG_LINE.finditer(code):
        yield match.start() + 1, match.group(0)[1:]


def _offset_of_line(code: bytes, newlines: int) -> int:
    offset = 0
    for _ in range(newlines):
        offset = code.index(b"\n", offset) + 1
    return offset


# -- step 2: the estimate ---------------------------------------------------------------------------

# sqrt(LibCST seconds) per level of depth, by how a node holds the child below it. Measured on chains
# and nestings of 1,000 to 4,000 levels, where the squared term dominates: 1,000 nested calls 18 s,
# 1,000 nested lists 6.6 s, 1,000 chained subscripts 5 s, 2,000 chained calls 6.6 s, 4,000 attribute
# reads 8.2 s, a 4,000-term sum 6.4 s, 2,000 nested lambdas 3.6 s, 2,000 conditional expressions 3 s,
# 2,000 ``not`` 1.1 s. Any other link costs little.
_CALL_ARGUMENT = 4.3e-3
_CALL_CHAIN = 1.3e-3
_COLLECTION_ITEM = 2.6e-3
_SUBSCRIPT_CHAIN = 2.2e-3
_OPERAND = 6.3e-4
_ATTRIBUTE = 7.2e-4
_UNARY = 5.0e-4
_LAMBDA_BODY = 9.4e-4
_CONDITIONAL = 8.6e-4
_OTHER = 1.0e-4
_COLLECTIONS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _link_weight(parent: ast.AST, field: str) -> float:
    if isinstance(parent, ast.Call):
        return _CALL_CHAIN if field == "func" else _CALL_ARGUMENT
    if isinstance(parent, ast.BinOp):
        return _OPERAND
    if isinstance(parent, ast.Attribute):
        return _ATTRIBUTE
    if isinstance(parent, ast.Subscript):
        return _SUBSCRIPT_CHAIN if field == "value" else _COLLECTION_ITEM
    if isinstance(parent, _COLLECTIONS):
        return _COLLECTION_ITEM
    if isinstance(parent, ast.UnaryOp):
        return _UNARY
    if isinstance(parent, ast.Lambda):
        return _LAMBDA_BODY
    if isinstance(parent, ast.IfExp):
        return _CONDITIONAL
    return _OTHER


def _statement_weight(statement: ast.AST) -> tuple[float, int]:
    """The heaviest root-to-leaf path through the expressions of one statement (not its body), and the
    deepest one in LibCST's nodes (a call or a collection item is two of them per level)."""
    heaviest, deepest = 0.0, 0
    stack: list[tuple[ast.AST, float, int]] = []
    for field, value in ast.iter_fields(statement):
        if field in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        for child in value if isinstance(value, list) else (value,):
            if isinstance(child, ast.AST):
                stack.append((child, _OTHER, 1))
    while stack:
        node, weight, depth = stack.pop()
        heaviest = max(heaviest, weight)
        deepest = max(deepest, depth)
        for field, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else (value,)
            link = _link_weight(node, field)
            step = 2 if link in (_CALL_ARGUMENT, _COLLECTION_ITEM) else 1
            stack.extend((child, weight + link, depth + step) for child in children if isinstance(child, ast.AST))
    return heaviest, deepest


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        statement = stack.pop()
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(statement, field, None)
            if isinstance(block, list):
                stack.extend(reversed([s for s in block if isinstance(s, (ast.stmt, ast.excepthandler, ast.match_case))]))


# -- the check ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TooComplex:
    """Why a file is refused, and the line to point at."""

    line: int
    message: str


def too_complex(text: str) -> TooComplex | None:
    """A reason to refuse ``text`` before LibCST parses it; None for every ordinary file."""
    code = text.encode("utf-8", "surrogatepass")
    where = _trigger(code)
    if where is None:
        return None
    trigger_line = code.count(b"\n", 0, where) + 1
    try:
        tree = ast.parse(text)
    except (RecursionError, MemoryError):
        return TooComplex(trigger_line, _message("so deep that Python's own parser gives up on it", "minutes or crash"))
    except SyntaxError as exc:
        if "too many nested parentheses" in str(exc.msg):
            # Python itself cannot compile the file (its limit is 200 levels); LibCST would take seconds to say less.
            return TooComplex(exc.lineno or trigger_line, f"syntax error: {exc.msg}")
        return None  # LibCST reports the syntax error (or parses syntax newer than this Python's)
    except ValueError:
        return None  # a NUL byte: the Python surface reports it
    total, worst, worst_line = 0.0, 0.0, trigger_line
    for statement in _statements(tree):
        weight, depth = _statement_weight(statement)
        line = getattr(statement, "lineno", trigger_line)
        if depth >= _MAX_DEPTH:
            return TooComplex(line, _message(f"about {depth} levels deep", "seconds or a crash", deeper_than_followed=True))
        cost = weight**2
        total += cost
        if cost > worst:
            worst, worst_line = cost, line
    if total <= _REFUSE_SECONDS:
        return None
    return TooComplex(worst_line, _message("thousands of levels deep", "seconds"))


def _message(how_deep: str, cost: str, deeper_than_followed: bool = False) -> str:
    beyond = ", deeper than vllm-lint follows" if deeper_than_followed else ""
    return (
        f"too complex to analyse: an expression nested or chained {how_deep}{beyond} (a generated file?), which "
        f"LibCST, the parser vllm-lint uses, would take {cost} on; nothing else is checked in this file (split "
        "the expression, or exclude the file)"
    )
