"""``github``: GitHub Actions workflow commands, one annotation per finding.

``::error file=F,line=L,col=C,endLine=EL,endColumn=EC,title=CODE::message`` (``warning`` and
``notice`` for the other severities) shows each finding on the pull request's diff
without an upload step.
"""

from __future__ import annotations

from typing import TextIO

from vllm_lint.diagnostics import Diagnostic, Severity
from vllm_lint.output import RenderContext

COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a command's message: a newline would end the command, a bare % would start an escape."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: ``,`` separates properties and ``:`` ends them, as GitHub's toolkit escapes them."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(diagnostic: Diagnostic) -> str:
    properties = {
        "file": diagnostic.path,
        "line": diagnostic.start.line,
        "col": diagnostic.start.column,
        "endLine": diagnostic.end.line,
        "endColumn": diagnostic.end.column,
        "title": diagnostic.code,
    }
    joined = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{COMMAND[diagnostic.severity]} {joined}::{escape_data(diagnostic.message)}"


def render_github(diagnostics: list[Diagnostic], out: TextIO, ctx: RenderContext) -> None:
    for diagnostic in diagnostics:
        out.write(annotation(diagnostic) + "\n")
