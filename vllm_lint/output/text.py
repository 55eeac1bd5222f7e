"""Human formats: ``full`` (the whole message, the source line and a caret) and ``concise`` (one line a finding,
its message's headline)."""

from __future__ import annotations

from vllm_lint.diagnostics import Applicability, Diagnostic, Position, Severity
from vllm_lint.output import RenderContext

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

_SEVERITY_COLOR = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}
CONCISE_LIMIT = 120  # characters of a message in the concise format; the full format and JSON keep all of it


def headline(message: str, limit: int = CONCISE_LIMIT) -> str:
    """As much of a message as fits ``limit``, ending where one of its clauses ends (": " or "; " outside
    parentheses): what is wrong comes first, what follows from it after; a message with no such end in reach
    is cut at a word, with an ellipsis."""
    if len(message) <= limit:
        return message
    depth, end = 0, 0
    for index, char in enumerate(message[:limit + 1]):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and message.startswith((": ", "; "), index):
            end = index
    if end:
        return message[:end]
    cut = message.rfind(" ", 0, limit)
    return message[: cut if cut > 0 else limit - 1].rstrip(" ,;:") + "\u2026"


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


def _header(diagnostic: Diagnostic, ctx: RenderContext, concise: bool = False) -> str:
    prefix, start, _ = _shown(diagnostic)
    location = f"{diagnostic.path}:{prefix}{start.line}:{start.column}:"
    code = _paint(diagnostic.code, "1;" + _SEVERITY_COLOR[diagnostic.severity], ctx)
    severity = _paint(diagnostic.severity.value, _SEVERITY_COLOR[diagnostic.severity], ctx)
    message = headline(diagnostic.message) if concise else diagnostic.message
    return f"{_paint(location, '1', ctx)} {code} {_fix_marker(diagnostic, ctx)}[{severity}] {message}"


def render_concise(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    for diagnostic in diagnostics:
        out.write(_header(diagnostic, ctx, concise=True) + "\n")


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
