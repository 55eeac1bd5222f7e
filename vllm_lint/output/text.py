"""Human formats: ``full`` (with the source line and a caret) and ``concise``."""

from __future__ import annotations

from typing import TextIO

from vllm_lint.diagnostics import Applicability, Diagnostic, Severity
from vllm_lint.output import RenderContext

_SEVERITY_COLOR = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def _paint(text: str, code: str, ctx: RenderContext) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if ctx.color else text


def _fix_marker(diagnostic: Diagnostic, ctx: RenderContext) -> str:
    if diagnostic.fix is None:
        return ""
    if diagnostic.fix.applicability is Applicability.SAFE or ctx.unsafe_fixes:
        return "[*] "
    return ""


def _header(diagnostic: Diagnostic, ctx: RenderContext) -> str:
    location = f"{diagnostic.path}:{diagnostic.start.line}:{diagnostic.start.column}:"
    code = _paint(diagnostic.code, "1;" + _SEVERITY_COLOR[diagnostic.severity], ctx)
    severity = _paint(diagnostic.severity.value, _SEVERITY_COLOR[diagnostic.severity], ctx)
    return f"{_paint(location, '1', ctx)} {code} {_fix_marker(diagnostic, ctx)}[{severity}] {diagnostic.message}"


def render_concise(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    for diagnostic in diagnostics:
        out.write(_header(diagnostic, ctx) + "\n")


def render_full(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    for diagnostic in diagnostics:
        out.write(_header(diagnostic, ctx) + "\n")
        line = ctx.source_line(diagnostic.path, diagnostic.start.line)
        if line is not None:
            number = str(diagnostic.start.line)
            gutter = " " * len(number)
            width = 1
            if diagnostic.end.line == diagnostic.start.line:
                width = max(1, diagnostic.end.column - diagnostic.start.column)
            else:
                width = max(1, len(line) - diagnostic.start.column + 1)
            caret = " " * (diagnostic.start.column - 1) + "^" * width
            out.write(f"{gutter} |\n{number} | {line}\n{gutter} | {_paint(caret, _SEVERITY_COLOR[diagnostic.severity], ctx)}\n")
        if diagnostic.fix is not None:
            note = "safe" if diagnostic.fix.applicability is Applicability.SAFE else "unsafe"
            out.write(f"  = help: {diagnostic.fix.message} ({note} fix)\n")
        out.write("\n")
