"""One module's LibCST parse, and the syntax error it stops at (below every module that parses: the checker, the
summarizer of the project's other modules, the fixer's check that a fixed file still parses)."""

from __future__ import annotations

import libcst as cst


class SyntaxProblem(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        message = str(exc.message).splitlines()[0] if exc.message else "invalid syntax"
        raise SyntaxProblem(f"syntax error: {message}", exc.editor_line, exc.editor_column) from None
    except RecursionError:
        raise SyntaxProblem("the file is nested too deeply to parse", 1, 1) from None
