"""JSON (and JSONC: comments, trailing commas) read with the position of every value, and edited in place.

Assistants keep their settings in JSON files that people also edit: ``.claude/settings.json``,
``.cursor/mcp.json``, VS Code's ``.vscode/mcp.json`` (JSONC). An edit here changes only the bytes of
the value it sets (or the member it adds): the rest of the file, its key order, indentation, comments
and line endings stay as they were. ``json.dumps`` of a re-parsed dict would lose all of that.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class JSONCError(ValueError):
    """The text is not JSON (comments and trailing commas allowed); the message gives line and column."""


@dataclass
class Node:
    """One value: its Python form and where it is (``start`` up to, not including, ``end``)."""

    value: object
    start: int
    end: int
    # Objects: key -> (offset of the key's opening quote, value node), in file order.
    members: dict[str, tuple[int, Node]] = field(default_factory=dict)
    items: list[Node] = field(default_factory=list)  # arrays
    kind: str = "scalar"  # "object", "array" or "scalar"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.has_comments = False

    def fail(self, message: str, at: int | None = None) -> JSONCError:
        at = self.pos if at is None else at
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return JSONCError(f"line {line}, column {column}: {message}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
                self.has_comments = True
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.pos = end + 2
                self.has_comments = True
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of text")
        char = self.text[self.pos]
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            start = self.pos
            return Node(self.string(), start, self.pos)
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                start = self.pos
                self.pos += len(word)
                return Node(literal, start, self.pos)
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail(f"unexpected {char!r}")
        self.pos = match.end()
        return Node(json.loads(match.group(0)), match.start(), match.end())

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        text = self.text
        while True:
            end = text.find('"', self.pos)
            if end < 0:
                raise self.fail("unterminated string", start)
            backslashes = 0
            while text[end - 1 - backslashes] == "\\":
                backslashes += 1
            self.pos = end + 1
            if backslashes % 2 == 0:
                break
        try:
            return json.loads(text[start : self.pos])
        except json.JSONDecodeError:
            raise self.fail("invalid string", start) from None

    def object(self) -> Node:
        node = Node({}, self.pos, -1, kind="object")
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                break
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected a key in double quotes")
            key_at = self.pos
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            child = self.value()
            if key in node.members:
                raise self.fail(f"key {key!r} appears twice", key_at)
            node.members[key] = (key_at, child)
            node.value[key] = child.value  # type: ignore[index]
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            self.skip()
            if not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")
            break
        self.pos += 1
        node.end = self.pos
        return node

    def array(self) -> Node:
        node = Node([], self.pos, -1, kind="array")
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                break
            child = self.value()
            node.items.append(child)
            node.value.append(child.value)  # type: ignore[attr-defined]
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")
            break
        self.pos += 1
        node.end = self.pos
        return node


@dataclass
class Document:
    text: str
    root: Node
    has_comments: bool


def parse(text: str) -> Document:
    parser = _Parser(text)
    root = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise parser.fail("text after the end of the JSON value")
    return Document(text, root, parser.has_comments)


# -- edits ---------------------------------------------------------------------------------------


def _newline(text: str) -> str:
    index = text.find("\n")
    return "\r\n" if index > 0 and text[index - 1] == "\r" else "\n"


def _line_indent(text: str, offset: int) -> str:
    """The whitespace that opens the line ``offset`` is on."""
    line_start = text.rfind("\n", 0, offset) + 1
    end = line_start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[line_start:end]


def indent_unit(text: str) -> str:
    """The file's indentation step: the smallest indentation of any line (two spaces when flat)."""
    widths = [m.group(1) for m in re.finditer(r"\n([ \t]+)\S", text)]
    if not widths:
        return "  "
    if any(w.startswith("\t") for w in widths):
        return "\t"
    return " " * min(len(w) for w in widths)


def render(value: object, indent: str, unit: str, newline: str, flat: bool = False) -> str:
    """``value`` as JSON whose first line continues the current one and whose other lines start at ``indent``."""
    if flat:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    text = json.dumps(value, ensure_ascii=False, indent=len(unit) if unit != "\t" else 1)
    if unit == "\t":
        text = re.sub(r"(?m)^( +)", lambda m: "\t" * len(m.group(1)), text)
    lines = text.split("\n")
    return newline.join([lines[0], *(indent + line for line in lines[1:])])


def _is_flat(text: str, node: Node) -> bool:
    return "\n" not in text[node.start : node.end]


def _insert_into(doc: Document, container: Node, entry: str, unit: str, newline: str) -> str:
    """The text with ``entry`` (a member ``"key": value`` or an array item, already rendered for the
    container's child indentation) added as the container's last element."""
    text = doc.text
    children = [child for _, child in container.members.values()] if container.kind == "object" else container.items
    closing = container.end - 1
    if not children:
        parent_indent = _line_indent(text, container.start)
        return text[: container.start + 1] + newline + parent_indent + unit + entry + newline + parent_indent + text[closing:]
    last = children[-1]
    if _is_flat(text, container):
        return text[: last.end] + ", " + entry + text[last.end :]
    first_start = (next(iter(container.members.values()))[0] if container.kind == "object" else children[0].start)
    child_indent = _line_indent(text, first_start)
    line_end, has_comma = _rest_of_line(text, last.end)
    if line_end is None:  # more on the same line (the closing bracket): the entry goes right after the last one
        return text[: last.end] + "," + newline + child_indent + entry + text[last.end :]
    # After the last element's own comma and comment, so that a comment stays with what it annotates.
    comma = "" if has_comma else ","
    return text[: last.end] + comma + text[last.end : line_end] + newline + child_indent + entry + text[line_end:]


def _rest_of_line(text: str, offset: int) -> tuple[int | None, bool]:
    """Where the line after ``offset`` ends when it holds only a comma and comments (else None), and whether it has the comma."""
    position, has_comma = offset, False
    while position < len(text):
        char = text[position]
        if char in " \t":
            position += 1
        elif char == "," and not has_comma:
            has_comma, position = True, position + 1
        elif text.startswith("//", position):
            end = text.find("\n", position)
            position = len(text) if end < 0 else end
        elif text.startswith("/*", position) and "\n" not in text[position : text.find("*/", position) + 2]:
            position = text.find("*/", position) + 2
        elif char in "\r\n":
            return (position, has_comma)
        else:
            return (None, has_comma)
    return (position, has_comma)


class EditError(ValueError):
    """The file's structure does not allow the edit (a value of another type where an object is needed)."""


def _child_indent(doc: Document, container: Node, unit: str) -> str:
    text = doc.text
    children = list(container.members.values())
    if container.kind == "object" and children and not _is_flat(text, container):
        return _line_indent(text, children[0][0])
    if container.kind == "array" and container.items and not _is_flat(text, container):
        return _line_indent(text, container.items[0].start)
    return _line_indent(text, container.start) + unit


def _walk(doc: Document, path: tuple[str, ...]) -> tuple[Node, int]:
    """The deepest existing object along ``path`` and how many keys of ``path`` it consumed."""
    node = doc.root
    if node.kind != "object":
        raise EditError("the file's top level is not a JSON object")
    depth = 0
    for key in path:
        if key not in node.members:
            break
        child = node.members[key][1]
        depth += 1
        if depth < len(path) and child.kind != "object":
            raise EditError(f"`{'.'.join(path[:depth])}` is not an object")
        node = child
    return node, depth


def set_value(doc: Document, path: tuple[str, ...], value: object) -> str:
    """The text with ``path`` set to ``value``; objects on the way are created, nothing else moves."""
    unit = indent_unit(doc.text)
    newline = _newline(doc.text)
    node, depth = _walk(doc, path)
    if depth == len(path):
        if node.value == value:
            return doc.text
        flat = node.kind != "scalar" and _is_flat(doc.text, node)
        rendered = render(value, _line_indent(doc.text, node.start), unit, newline, flat)
        return doc.text[: node.start] + rendered + doc.text[node.end :]
    nested: object = value
    for key in reversed(path[depth + 1 :]):
        nested = {key: nested}
    indent = _child_indent(doc, node, unit)
    flat = _is_flat(doc.text, node) and bool(node.members)
    entry = json.dumps(path[depth], ensure_ascii=False) + ": " + render(nested, indent, unit, newline, flat)
    return _insert_into(doc, node, entry, unit, newline)


def append_item(doc: Document, path: tuple[str, ...], item: object) -> str:
    """The text with ``item`` appended to the array at ``path`` (created, with the objects above it, when absent)."""
    node, depth = _walk(doc, path[:-1]) if len(path) > 1 else (doc.root, 0)
    if depth < len(path) - 1 or path[-1] not in node.members:
        return set_value(doc, path, [item])
    array = node.members[path[-1]][1]
    if array.kind != "array":
        raise EditError(f"`{'.'.join(path)}` is not a list")
    unit = indent_unit(doc.text)
    newline = _newline(doc.text)
    indent = _child_indent(doc, array, unit)
    flat = _is_flat(doc.text, array) and bool(array.items)
    return _insert_into(doc, array, render(item, indent, unit, newline, flat), unit, newline)


def replace_item(doc: Document, item_node: Node, item: object) -> str:
    unit = indent_unit(doc.text)
    rendered = render(item, _line_indent(doc.text, item_node.start), unit, _newline(doc.text), _is_flat(doc.text, item_node))
    return doc.text[: item_node.start] + rendered + doc.text[item_node.end :]


def node_at(doc: Document, path: tuple[str, ...]) -> Node | None:
    node = doc.root
    for key in path:
        if node.kind != "object" or key not in node.members:
            return None
        node = node.members[key][1]
    return node
