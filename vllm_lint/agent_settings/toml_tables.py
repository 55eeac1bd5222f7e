"""One ``[a.b]`` table of a TOML file (Codex's ``config.toml``) written in place.

The table vllm-lint owns runs from its header to the next table header; everything else in the
file keeps its bytes. The result is parsed again and must equal the old document with only that
table changed: a file that defines the same keys another way (dotted keys, an inline table) is
left alone with an error rather than written into something TOML reads differently.
"""

from __future__ import annotations

import json
import re

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"^[ \t]*\[(?!\[)")


class TOMLEditError(ValueError):
    pass


def _key(part: str) -> str:
    return part if _BARE.fullmatch(part) else json.dumps(part)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TOMLEditError(f"cannot write {type(value).__name__} values")


def render_table(path: tuple[str, ...], table: dict, newline: str = "\n") -> str:
    lines = [f"[{'.'.join(_key(p) for p in path)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    return newline.join(lines) + newline


def _header_pattern(path: tuple[str, ...]) -> re.Pattern[str]:
    parts = [rf"(?:{re.escape(p)}|\"{re.escape(p)}\"|'{re.escape(p)}')" for p in path]
    return re.compile(r"^[ \t]*\[[ \t]*" + r"[ \t]*\.[ \t]*".join(parts) + r"[ \t]*\][ \t]*(?:#.*)?$")


def table_span(text: str, path: tuple[str, ...]) -> tuple[int, int] | None:
    """Where the table at ``path`` is: its header line up to the last line with content before the next header."""
    lines = text.splitlines(keepends=True)
    header = _header_pattern(path)
    offset = end = 0
    start: int | None = None
    for line in lines:
        if start is None:
            if header.match(line.rstrip("\r\n")):
                start = offset
                end = offset + len(line)
        elif _HEADER.match(line):
            break
        elif line.strip() and not line.lstrip().startswith("#"):
            end = offset + len(line)
        offset += len(line)
    return None if start is None else (start, end)


def _expected(old: dict, path: tuple[str, ...], table: dict) -> dict:
    result = json.loads(json.dumps(old, default=str))
    node = result
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = table
    return result


def set_table(text: str, path: tuple[str, ...], table: dict) -> str:
    """``text`` with the table at ``path`` holding exactly ``table`` (appended at the end when absent)."""
    try:
        old = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TOMLEditError(f"not valid TOML: {exc}") from None
    newline = "\r\n" if "\r\n" in text else "\n"
    rendered = render_table(path, table, newline)
    span = table_span(text, path)
    if span is not None:
        new = text[: span[0]] + rendered + text[span[1] :]
    else:
        separator = "" if not text or text.endswith("\n") else newline
        new = text + separator + (newline if text.strip() else "") + rendered
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        parsed = None
    if parsed is None or json.loads(json.dumps(parsed, default=str)) != _expected(old, path, table):
        dotted = ".".join(path)
        raise TOMLEditError(f"`{dotted}` is defined in a form vllm-lint does not edit (dotted keys or an inline table); set it by hand")
    return new


def get(text: str, path: tuple[str, ...]) -> object:
    node: object = tomllib.loads(text)
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node
