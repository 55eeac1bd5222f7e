"""Human formats: ``full`` (with the source line and a caret) and ``concise``."""

from __future__ import annotations

from vllm_lint.diagnostics import Applicability, Diagnostic, Position, Severity
from vllm_lint.output import RenderContext

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

_SEVERITY_COLOR = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def _paint(text: str, code: str, ctx: RenderContext) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if ctx.color else text


def _fix_marker(diagnostic: Diagnostic, ctx: RenderContext) -> str:
    if diagnostic.fix is None:
        return ""
    if diagnostic.fix.applicability is Applicability.SAFE or ctx.unsafe_fixes:
        return "[*] "
    return ""


def _shown(diagnostic: Diagnostic) -> tuple[str, Position, Position]:
    """The location people read: ``cell N:`` and the span within the cell for a notebook (ruff's form)."""
    cell = diagnostic.cell
    if cell is None:
        return "", diagnostic.start, diagnostic.end
    return f"cell {cell.cell}:", cell.start, cell.end


def _header(diagnostic: Diagnostic, ctx: RenderContext) -> str:
    prefix, start, _ = _shown(diagnostic)
    location = f"{diagnostic.path}:{prefix}{start.line}:{start.column}:"
    code = _paint(diagnostic.code, "1;" + _SEVERITY_COLOR[diagnostic.severity], ctx)
    severity = _paint(diagnostic.severity.value, _SEVERITY_COLOR[diagnostic.severity], ctx)
    return f"{_paint(location, '1', ctx)} {code} {_fix_marker(diagnostic, ctx)}[{severity}] {diagnostic.message}"


def render_concise(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    for diagnostic in diagnostics:
        out.write(_header(diagnostic, ctx) + "\n")


def render_full(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    for diagnostic in diagnostics:
        out.write(_header(diagnostic, ctx) + "\n")
        _, start, end = _shown(diagnostic)
        if diagnostic.cell is None:
            line = ctx.source_line(diagnostic.path, start.line)
        else:
            line = ctx.cell_line(diagnostic.path, diagnostic.cell.cell, start.line)
        if line is not None:
            number = str(start.line)
            gutter = " " * len(number)
            width = 1
            if end.line == start.line:
                width = max(1, end.column - start.column)
            else:
                width = max(1, len(line) - start.column + 1)
            caret = " " * (start.column - 1) + "^" * width
            out.write(f"{gutter} |\n{number} | {line}\n{gutter} | {_paint(caret, _SEVERITY_COLOR[diagnostic.severity], ctx)}\n")
        if diagnostic.fix is not None:
            note = "safe" if diagnostic.fix.applicability is Applicability.SAFE else "unsafe"
            out.write(f"  = help: {diagnostic.fix.message} ({note} fix)\n")
        out.write("\n")
