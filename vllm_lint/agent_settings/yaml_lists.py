"""One item added to a top-level list of a YAML file (Aider's ``.aider.conf.yml`` ``read:``), in place.

Only the line forms Aider's own sample configuration uses are edited: no key yet, ``key: value``,
``key: [a, b]`` and a block list under ``key:``. The result is parsed again and must equal the old
document with the item added; anything else is reported, never rewritten.
"""

from __future__ import annotations

import json
import re

import yaml


class YAMLEditError(ValueError):
    pass


def _items(value: object) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _scalar(item: str) -> str:
    return item if re.fullmatch(r"[\w./-]+", item) else json.dumps(item)


def add_item(text: str, key: str, item: str) -> str:
    try:
        old = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise YAMLEditError(f"not valid YAML: {exc}") from None
    if old is None:
        old = {}
    if not isinstance(old, dict):
        raise YAMLEditError("the file's top level is not a mapping")
    if item in _items(old.get(key)):
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    new = _edited(text, key, _scalar(item), newline)
    expected = dict(old)
    expected[key] = [*_items(old.get(key)), item]
    try:
        parsed = yaml.safe_load(new)
    except yaml.YAMLError:
        parsed = None
    if parsed != expected:
        raise YAMLEditError(f"`{key}:` is written in a form vllm-lint does not edit; add {item} to it by hand")
    return new


def _edited(text: str, key: str, item: str, newline: str) -> str:
    lines = text.splitlines(keepends=True)
    pattern = re.compile(rf"^{re.escape(key)}[ \t]*:(?P<rest>.*?)(?P<end>\r?\n)?$")
    for index, line in enumerate(lines):
        match = pattern.match(line)
        if match is None:
            continue
        rest = match.group("rest")
        value, comment = (rest.split(" #", 1) + [""])[:2] if " #" in rest else (rest, "")
        value = value.strip()
        end = match.group("end") or ""
        tail = f"  #{comment}" if comment else ""
        if value.startswith("[") and value.endswith("]"):
            inner = value[1:-1].strip()
            joined = f"[{inner}, {item}]" if inner else f"[{item}]"
            lines[index] = f"{key}: {joined}{tail}{end}"
        elif value:
            lines[index] = f"{key}: [{value}, {item}]{tail}{end}"
        else:
            last = index
            indent = "  "
            for follow in range(index + 1, len(lines)):
                stripped = lines[follow].lstrip(" ")
                if stripped.startswith("- "):
                    last = follow
                    indent = lines[follow][: len(lines[follow]) - len(stripped)]
                elif lines[follow].strip() and not stripped.startswith("#"):
                    break
            if not lines[last].endswith("\n"):
                lines[last] += newline
            lines.insert(last + 1, f"{indent}- {item}{newline}")
        return "".join(lines)
    separator = "" if not text or text.endswith("\n") else newline
    return text + separator + f"{key}:{newline}  - {item}{newline}"
