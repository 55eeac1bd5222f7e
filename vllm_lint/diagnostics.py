"""The data every front-end produces and every output format consumes.

Value types are frozen dataclasses: a rule yields them, the runner filters and
fixes, the output modules print them. Nothing here knows about LibCST or files.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, Enum):
    """Ruff's fix applicability: a safe fix keeps behaviour, an unsafe one does not."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """1-based line, 1-based column counted in characters (as ruff reports them)."""

    line: int
    column: int

    def moved(self, lines: int, columns: int) -> Position:
        return Position(self.line + lines, self.column + columns)


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text from ``start`` up to (not including) ``end`` with ``content``."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A finding's fix: how safe it is, what it says it does, and its text edits."""
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class CellLocation:
    """Where a finding in a notebook is, as people see the notebook: the cell (1-based, counting every cell,
    Markdown ones too, as ruff does) and the span within that cell's source."""

    cell: int
    start: Position
    end: Position


@dataclass(frozen=True, slots=True)
class RelatedLocation:
    """Another place that decides a finding: the line of a chart's values.yaml a templated value comes from
    (SARIF ``relatedLocations``). ``path`` is shown as the finding's own path is (the same folder base)."""

    path: str
    start: Position
    end: Position
    message: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: its rule, message, file, span, severity and fix."""
    code: str
    message: str
    path: str
    start: Position
    end: Position
    severity: Severity
    fix: Fix | None = None
    # Lines on which a noqa comment suppresses this finding: the reported
    # line and the first line of the statement (or command) that contains it.
    noqa_lines: tuple[int, ...] = field(default=(), compare=False)
    # A notebook's finding: ``start``/``end`` are where the cell's text sits in the file (the JSON; what
    # suppression comments, sorting and code scanning use), ``cell`` where it is in the cell (what people read).
    cell: CellLocation | None = None
    related: tuple[RelatedLocation, ...] = field(default=(), compare=False)

    def moved(self, lines: int, columns: int = 0) -> Diagnostic:
        """The same finding in a text embedded at an offset (a Markdown code block, say)."""
        fix = self.fix
        if fix is not None:
            edits = tuple(Edit(e.start.moved(lines, columns), e.end.moved(lines, columns), e.content) for e in fix.edits)
            fix = Fix(fix.applicability, fix.message, edits)
        return replace(
            self,
            start=self.start.moved(lines, columns),
            end=self.end.moved(lines, columns),
            fix=fix,
            noqa_lines=tuple(n + lines for n in self.noqa_lines),
        )

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.start.line, self.start.column, self.code)
