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


# Each format's renderer, imported only when that format is asked for.
_RENDERERS = {
    "full": ("vllm_lint.output.text", "render_full"),
    "concise": ("vllm_lint.output.text", "render_concise"),
    "json": ("vllm_lint.output.json_format", "render_json"),
    "sarif": ("vllm_lint.output.sarif", "render_sarif"),
    "github": ("vllm_lint.output.github", "render_github"),
    "junit": ("vllm_lint.output.junit", "render_junit"),
}
FORMATS = tuple(_RENDERERS)


def renderer(name: str) -> Renderer:
    import importlib

    if name not in _RENDERERS:
        raise ValueError(f"unknown output format {name!r}")
    module, function = _RENDERERS[name]
    return getattr(importlib.import_module(module), function)
