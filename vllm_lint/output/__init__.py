"""Output formats. Each module renders a list of diagnostics for one audience."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from vllm_lint.diagnostics import Diagnostic

Renderer = Callable[[list[Diagnostic], TextIO, "RenderContext"], None]


class RenderContext:
    """What renderers may need besides the diagnostics."""

    def __init__(self, color: bool, sources: dict[str, str] | None = None, show_fixes: bool = False, unsafe_fixes: bool = False) -> None:
        self.color = color
        self.sources = sources or {}
        self.show_fixes = show_fixes
        self.unsafe_fixes = unsafe_fixes

    def source_line(self, path: str, line: int) -> str | None:
        text = self.sources.get(path)
        if text is None:
            try:
                with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                    text = handle.read()
            except OSError:
                return None
            self.sources[path] = text
        lines = text.split("\n")
        if 1 <= line <= len(lines):
            return lines[line - 1].rstrip("\r")
        return None


FORMATS = ("full", "concise", "json")


def renderer(name: str) -> Renderer:
    if name == "full":
        from vllm_lint.output.text import render_full

        return render_full
    if name == "concise":
        from vllm_lint.output.text import render_concise

        return render_concise
    if name == "json":
        from vllm_lint.output.json_format import render_json

        return render_json
    raise ValueError(name)
