"""Output formats. Each module renders a list of diagnostics for one audience."""

from __future__ import annotations

from collections.abc import Callable

from vllm_lint.diagnostics import Diagnostic

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

Renderer = Callable[[list[Diagnostic], "TextIO", "RenderContext"], None]


class RenderContext:
    """What renderers may need besides the diagnostics."""

    def __init__(self, color: bool, sources: dict[str, str] | None = None, show_fixes: bool = False, unsafe_fixes: bool = False) -> None:
        self.color = color
        self.sources = sources or {}
        self.show_fixes = show_fixes
        self.unsafe_fixes = unsafe_fixes

    def _text(self, path: str) -> str | None:
        text = self.sources.get(path)
        if text is None:
            try:
                with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                    text = handle.read()
            except OSError:
                return None
            self.sources[path] = text
        return text

    def source_line(self, path: str, line: int) -> str | None:
        text = self._text(path)
        return _line(text.split("\n"), line) if text is not None else None

    def cell_line(self, path: str, cell: int, line: int) -> str | None:
        """Line ``line`` of cell ``cell`` (both 1-based) of the notebook at ``path``."""
        import json

        text = self._text(path)
        try:
            source = json.loads(text)["cells"][cell - 1]["source"] if text is not None else None
        except (ValueError, LookupError, TypeError):
            return None
        source = "".join(source) if isinstance(source, list) else source
        return _line(source.split("\n"), line) if isinstance(source, str) else None


def _line(lines: list[str], line: int) -> str | None:
    return lines[line - 1].rstrip("\r") if 1 <= line <= len(lines) else None


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
# The formats that print a fix's edits, not only that it exists (engine.runner.RunOptions.fix_edits).
EDIT_FORMATS = frozenset({"json", "sarif"})


def renderer(name: str) -> Renderer:
    import importlib

    if name not in _RENDERERS:
        raise ValueError(f"unknown output format {name!r}")
    module, function = _RENDERERS[name]
    return getattr(importlib.import_module(module), function)
