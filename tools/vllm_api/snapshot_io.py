"""Writing one version's snapshot as JSON: one entry per line for the outer levels, compact inside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JsonValue = Any  # what json.dumps accepts; spelled out for readers


def compact(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def render(value: JsonValue, depth: int = 0) -> str:
    """JSON with one entry per line for the outer levels, compact inside.

    Compact enough to stay small, line-oriented enough that a refresh for a
    new vLLM release shows up as a readable diff.  Lists of objects (the serve
    flags) get a line per object one level deeper than other containers.
    """
    expand = depth < 2 or (
        depth < 3 and isinstance(value, list) and value and all(isinstance(item, dict) for item in value)
    )
    if not expand or not isinstance(value, (dict, list)) or not value:
        return compact(value)
    indent = " " * (depth + 1)
    if isinstance(value, dict):
        lines = [f"{indent}{compact(key)}:{render(value[key], depth + 1)}" for key in sorted(value)]
        return "{\n" + ",\n".join(lines) + "\n" + " " * depth + "}"
    lines = [f"{indent}{render(item, depth + 1)}" for item in value]
    return "[\n" + ",\n".join(lines) + "\n" + " " * depth + "]"


def write_snapshot(snapshot: dict[str, JsonValue], out: Path) -> int:
    """Write the file atomically enough for a generated artefact; return its size."""
    text = render(snapshot) + "\n"
    json.loads(text)  # the hand-rolled layout must still be JSON
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_suffix(out.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(out)
    return len(text.encode("utf-8"))


