"""Version specifiers as projects write them for vLLM, evaluated against release numbers.

Covers PEP 440 (``==0.6.3``, ``==0.6.*``, ``>=0.6,<0.9``, ``~=0.6.3``, ``!=0.7.0``, ``===0.6.3``),
Poetry (``^0.6.3``, ``~0.6.3``, a bare ``0.6.3``, ``*``) and conda's ``=0.6.3`` (any ``0.6.3.x``).
``packaging`` would do PEP 440 alone and is not a dependency of the linter; this is the part of it
that pins of vLLM use. A specifier this cannot read gives None, and the caller falls back to the
newest release known.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from vllm_lint.vllm_api.versionsets import release_key
from vllm_lint.lazy_re import lazy_compile

Key = tuple[int, ...]
Predicate = Callable[[Key], bool]

_CLAUSE = lazy_compile(r"^(===|==|!=|~=|<=|>=|<|>|\^|~|=)?\s*v?([0-9][0-9a-zA-Z.+*-]*)$")


def parse(specifier: str) -> Predicate | None:
    """A predicate over :func:`release_key` tuples (``*`` and the empty specifier accept every
    release), or None when the specifier is not one this module reads."""
    text = specifier.strip().strip("\"'")
    if text in ("", "*"):
        return lambda key: True
    clauses: list[Predicate] = []
    for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", text):
        if not part:
            continue
        clause = _clause(part)
        if clause is None:
            return None
        clauses.append(clause)
    return lambda key: all(clause(key) for clause in clauses)


def _clause(part: str) -> Predicate | None:
    match = _CLAUSE.match(part.strip())
    if match is None:
        return None
    operator, version = match.group(1) or "", match.group(2)
    if version.endswith(".*"):
        prefix = _numbers(version[:-2])
        if prefix is None or operator not in ("==", "!=", "="):
            return None
        inside = _prefix_predicate(prefix)
        return inside if operator in ("==", "=") else (lambda key: not inside(key))
    key = release_key(version)
    if key is None:
        return None
    given = _numbers(version.split("+")[0]) or ()
    if operator in ("", "=="):
        if operator == "" and not given:
            return None
        # ``==0.6`` means 0.6.0 exactly; a bare Poetry ``0.6.3`` too.
        return lambda other: other == key
    if operator == "===":
        return lambda other: other == key
    if operator == "=":  # conda: 0.6.3 matches 0.6.3 and 0.6.3.post1 ...
        return _prefix_predicate(given)
    if operator == "!=":
        return lambda other: other != key
    if operator == ">=":
        return lambda other: other >= key
    if operator == "<=":
        return lambda other: other <= key
    if operator == ">":
        return lambda other: other > key and not _same_release(other, key)
    if operator == "<":
        return lambda other: other < key and not (_is_pre(other) and _same_release(other, key))
    if operator == "~=":
        if len(given) < 2:
            return None
        upper = _prefix_predicate(given[:-1])
        return lambda other: other >= key and upper(other)
    if operator == "^":
        return _caret(key, given)
    if operator == "~":
        keep = given[:2] if len(given) >= 2 else given[:1]
        upper = _prefix_predicate(keep)
        return lambda other: other >= key and upper(other)
    return None


def _caret(key: Key, given: tuple[int, ...]) -> Predicate:
    """Poetry's ``^``: the leftmost non-zero part may not change (``^0.6.3`` is ``>=0.6.3,<0.7.0``)."""
    significant = next((index for index, part in enumerate(given) if part != 0), len(given) - 1)
    upper = _prefix_predicate(given[: significant + 1])
    return lambda other: other >= key and upper(other)


def _numbers(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    if not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def _prefix_predicate(prefix: tuple[int, ...]) -> Predicate:
    width = len(prefix)
    return lambda other: other[:width] == prefix[:width] if width <= 4 else False


def _same_release(left: Key, right: Key) -> bool:
    return left[:4] == right[:4]


def _is_pre(key: Key) -> bool:
    return key[4] < 0
