"""Where each cell's source sits in a notebook's JSON text, and a cell's new source written back in place.

``json`` gives values, not positions. A fix must change one cell's ``source`` and leave every other byte of
the file as it was (outputs, metadata, indentation, key order, the final newline), so the file's text is
walked once more to find, for each cell, the span of its ``source`` value and of each string in it. Only
text that ``json.loads`` has already accepted is walked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NON_ASCII_ESCAPE = re.compile(r"\\u(?!00[0-7])[0-9a-fA-F]{4}")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class SourceSpan:
    """A cell's ``source``: the value's span in the file's text, and the span of each string in it."""

    start: int
    end: int
    strings: tuple[tuple[int, int], ...]  # with their quotes
    is_list: bool


def _end_of(pattern: re.Pattern[str], text: str, i: int) -> int:
    """Where ``pattern``'s match at ``i`` ends (it matches: the text is JSON that ``json.loads`` accepted)."""
    match = pattern.match(text, i)
    if match is None:
        raise ValueError(f"not the JSON json.loads accepted, at offset {i}")
    return match.end()


def _skip_ws(text: str, i: int) -> int:
    return _end_of(_WHITESPACE, text, i)


def _skip_value(text: str, i: int) -> int:
    """The offset after the JSON value that starts at ``i`` (after blanks): ``json``'s own scanner, in C, reads
    it (a cell's outputs can be megabytes of strings, which a walk token by token in Python takes seconds over)."""
    return _DECODER.raw_decode(text, _skip_ws(text, i))[1]


def _members(text: str, i: int, visit) -> int:
    """Call ``visit(key, start)`` for each member of the object at ``i`` (it returns where the value ends);
    the offset after the object."""
    i = _skip_ws(text, i + 1)
    while text[i] != "}":
        key_end = _end_of(_STRING, text, i)
        key = json.loads(text[i:key_end])
        i = _skip_ws(text, _skip_ws(text, key_end) + 1)  # past ":"
        i = _skip_ws(text, visit(key, i))
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return i + 1


def _elements(text: str, i: int, visit) -> int:
    """Call ``visit(start)`` for each element of the array at ``i`` (it returns where the element ends);
    the offset after the array."""
    i = _skip_ws(text, i + 1)
    while text[i] != "]":
        i = _skip_ws(text, visit(i))
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return i + 1


def source_spans(text: str) -> list[SourceSpan | None]:
    """For each cell of the notebook ``text`` (valid JSON, an object with a ``cells`` array), its source span."""
    spans: list[SourceSpan | None] = []

    def cell_member(key: str, start: int) -> int:
        end = _skip_value(text, start)
        if key == "source" and text[start] in '["':
            spans[-1] = _source_span(text, start, end)
        return end

    def cell(start: int) -> int:
        spans.append(None)
        return _members(text, start, cell_member) if text[start] == "{" else _skip_value(text, start)

    def top_member(key: str, start: int) -> int:
        if key == "cells" and text[start] == "[":
            return _elements(text, start, cell)
        return _skip_value(text, start)

    _members(text, _skip_ws(text, 0), top_member)
    return spans


def _source_span(text: str, start: int, end: int) -> SourceSpan:
    if text[start] == '"':
        return SourceSpan(start, end, ((start, end),), False)
    strings: list[tuple[int, int]] = []

    def element(at: int) -> int:
        stop = _skip_value(text, at)
        strings.append((at, stop))
        return stop

    _elements(text, start, element)
    return SourceSpan(start, end, tuple(strings), True)


def char_offsets(text: str, start: int, end: int) -> list[int]:
    """The offset in ``text`` of each character of the JSON string token ``text[start:end]``, once decoded."""
    offsets = []
    i = start + 1
    stop = end - 1
    while i < stop:
        offsets.append(i)
        if text[i] != "\\":
            i += 1
        elif text[i + 1] != "u":
            i += 2
        else:
            code = int(text[i + 2 : i + 6], 16)
            # a surrogate pair is one character of the decoded text
            i += 12 if 0xD800 <= code < 0xDC00 and text.startswith("\\u", i + 6) else 6
    return offsets


def render_source(text: str, span: SourceSpan, source: str) -> str:
    """``source`` written as the JSON value at ``span`` is: a list of lines or one string, with the list's
    own line breaks and indentation, and non-ASCII characters escaped only if the file escapes them."""
    ascii_only = text.isascii() and _NON_ASCII_ESCAPE.search(text) is not None

    def dump(value: str) -> str:
        return json.dumps(value, ensure_ascii=ascii_only)

    if not span.is_list:
        return dump(source)
    lines = source.split("\n")
    pieces = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    if not span.strings:
        return "[" + ", ".join(dump(piece) for piece in pieces) + "]"
    first_start = span.strings[0][0]
    last_end = span.strings[-1][1]
    opening = text[span.start + 1 : first_start]  # "\n    " in nbformat's layout
    closing = text[last_end : span.end - 1]  # "\n   "
    if len(span.strings) > 1:
        separator = text[span.strings[0][1] : span.strings[1][0]]
    else:
        separator = "," + (opening if opening.strip() == "" else " ")
    return "[" + opening + separator.join(dump(piece) for piece in pieces) + closing + "]"
