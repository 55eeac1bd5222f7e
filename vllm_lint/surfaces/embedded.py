"""Text a file holds in another language, read as that language with its positions mapped back.

A systemd unit's ``ExecStart=``, a Makefile's recipes, a here-document's body are each rebuilt as a *view*:
a text with the file's lines (a line outside the embedded text is empty) whose characters each map to a column
of the same line of the file. The view is linted as its kind (shell, Kubernetes, Dockerfile, ...); its
findings and fix edits come back column by column. Lines are kept, so line numbers and noqa comments need no
mapping, and an edit that replaces a rewritten piece (make's ``$(MODEL)`` read as ``${MODEL}``) replaces what
the file has there.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vllm_lint.diagnostics import Diagnostic, Edit, Fix, Position


class LineView:
    """One line of a view, built from pieces of the file's line: copied, rewritten or added."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.chars: list[str] = []
        self.columns: list[int] = []  # the file's column (0-based) of each character written
        self.rewritten: set[str] = set()  # what ``write`` put where the file has something else

    def copy(self, start: int, end: int) -> LineView:
        """The file's characters ``start:end`` (a trailing carriage return left out)."""
        end = min(end, len(self.line.rstrip("\r")))
        for column in range(start, end):
            self.chars.append(self.line[column])
            self.columns.append(column)
        return self

    def write(self, text: str, start: int, end: int) -> LineView:
        """``text`` in place of the file's ``start:end`` (each character placed at ``start``)."""
        if text and text != self.line[start:end]:
            self.rewritten.add(text)
        for char in text:
            self.chars.append(char)
            self.columns.append(start)
        return self

    def blank(self, start: int, end: int) -> LineView:
        """Spaces in place of the file's ``start:end`` (a prefix the language does not read)."""
        for column in range(start, end):
            self.chars.append(" ")
            self.columns.append(column)
        return self

    def text(self) -> str:
        return "".join(self.chars)

    def mapping(self, end: int) -> list[int] | None:
        """Each view column's file column and one past the last (``end``: the file's column there)."""
        if all(column == index for index, column in enumerate(self.columns)) and end == len(self.columns):
            return None
        return [*self.columns, end]


@dataclass
class View:
    """The view of a file: its lines (empty where nothing embedded is), and the column maps of the lines
    whose columns moved."""

    lines: list[str]
    columns: dict[int, list[int]] = field(default_factory=dict)  # 0-based line -> view column -> file column
    # Text the view has where the file has something else: a fix whose edits write it would write the view's
    # reading into the file (make's ``${NAME}``, supervisord's value ``${_}``), and is not offered.
    rewritten: set[str] = field(default_factory=set)

    @classmethod
    def empty(cls, text: str) -> View:
        return cls([""] * (text.count("\n") + 1))

    def put(self, index: int, line: LineView, end: int | None = None) -> None:
        """Line ``index`` (0-based) of the view: ``line``; ``end``: the file column after its last
        character (where a position past the view's end lands)."""
        self.lines[index] = line.text()
        self.rewritten |= line.rewritten
        mapping = line.mapping(end if end is not None else (line.columns[-1] + 1 if line.columns else 0))
        if mapping is not None:
            self.columns[index] = mapping
        else:
            self.columns.pop(index, None)

    def keep(self, index: int, text: str) -> None:
        """Line ``index`` of the view as the file has it."""
        self.lines[index] = text
        self.columns.pop(index, None)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def position(self, position: Position) -> Position:
        mapping = self.columns.get(position.line - 1)
        if mapping is None:
            return position
        column = position.column - 1
        if column < len(mapping):
            return Position(position.line, mapping[column] + 1)
        return Position(position.line, mapping[-1] + 1 + column - (len(mapping) - 1))

    def mapped(self, diagnostic: Diagnostic, display: str) -> Diagnostic:
        fix = diagnostic.fix
        if fix is not None and any(piece in edit.content for edit in fix.edits for piece in self.rewritten):
            fix = None
        if fix is not None:
            edits = tuple(Edit(self.position(e.start), self.position(e.end), e.content) for e in fix.edits)
            fix = Fix(fix.applicability, fix.message, edits)
        return replace(
            diagnostic, path=display, start=self.position(diagnostic.start), end=self.position(diagnostic.end), fix=fix
        )


__all__ = ["LineView", "View"]
