"""The comment that disables one finding, written where its file's kind takes a comment that
``engine/suppressions`` reads: the editor's "disable for this line" and ``check --add-noqa`` share it.

Where it goes, by kind of file (docs/editors.md lists the same):
- Python, shell, compose, Kubernetes, Helm, SkyPilot: ``  # noqa: CODE`` at the end of a line of the
  finding's statement or command, the first one a comment can end (not a shell line continued by ``\\``);
  when every line of a command is continued, a ``# noqa: CODE`` line right above the command.
- Dockerfile: a ``# noqa: CODE`` line right above the instruction (Docker takes comments only as whole
  lines, and a comment after an exec-form ``CMD [...]`` would break it).
- Markdown: ``<!-- noqa: CODE -->`` on the line right above the fence.
- A notebook's JSON (the .ipynb opened as text): ``  # noqa: CODE`` at the end of the source line, inside
  its JSON string; an editor that shows the notebook's cells gets the Python form in the cell.
A line that already has ``# noqa: A`` gets ``, CODE`` added; a bare ``# noqa`` silences every code already.
"""

from __future__ import annotations

import re

from vllm_lint.diagnostics import Diagnostic, Edit, Position
from vllm_lint.engine.suppressions import MARKDOWN_NOQA, NOQA
from vllm_lint.rulebook import PARSE_ERROR_CODE
from vllm_lint.text import TextIndex

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
# A line of a notebook's source as nbformat writes it: "    \"code\\n\"," (the \n and the comma optional).
_JSON_SOURCE_LINE = re.compile(r'^\s*"(?P<body>(?:[^"\\]|\\.)*?)(?P<newline>\\n)?"\s*,?\s*$')


def noqa_edit(diagnostic: Diagnostic, text: str, surface: str) -> Edit | None:
    """The edit that disables ``diagnostic`` (a finding of ``text``, a file of kind ``surface``), or None
    where it is disabled already or nothing can disable it (VLL000: the file was not read)."""
    if diagnostic.code == PARSE_ERROR_CODE:
        return None
    index = TextIndex(text)
    lines = sorted({diagnostic.start.line, *diagnostic.noqa_lines})
    for number in lines:
        existing = (MARKDOWN_NOQA if surface == "markdown" else NOQA).search(index.line_text(number)) or NOQA.search(
            index.line_text(number)
        )
        if existing is not None:
            if existing.group("codes") is None:
                return None  # a bare noqa silences every code on the line
            at = index.position(index.offset(Position(number, 1)) + existing.end("codes"))
            return Edit(at, at, f", {diagnostic.code}")
    if surface == "dockerfile":
        return _line_above(index, lines[0], f"# noqa: {diagnostic.code}")
    if surface == "markdown":
        fence = next((n for n in range(diagnostic.start.line, 0, -1) if _FENCE.match(index.line_text(n))), None)
        return None if fence is None else _line_above(index, fence, f"<!-- noqa: {diagnostic.code} -->", indent=False)
    if surface == "notebook":
        return _in_json_string(index, diagnostic.start.line, diagnostic.code)
    comment = f"  # noqa: {diagnostic.code}"
    ordered = [diagnostic.start.line, *(n for n in lines if n != diagnostic.start.line)]
    for number in ordered:
        line = index.line_text(number)
        # nor after a line that is a template's action alone (`{{- toYaml .Values.args | nindent 8 }}`): what it
        # renders may be several lines, and the chart reader reads the comment with the last
        if not line.rstrip().endswith("\\") and not line.lstrip().startswith(("#", "{{")):
            start = index.offset(Position(number, 1))
            return Edit(index.position(start + len(line.rstrip())), index.position(start + len(line)), comment)
    if surface == "python" or index.line_text(lines[0] - 1).rstrip().endswith("\\"):
        return None  # a comment line there would not be one of the statement's lines, or would end a command
    return _line_above(index, lines[0], f"# noqa: {diagnostic.code}")


def _line_above(index: TextIndex, number: int, comment: str, indent: bool = True) -> Edit:
    """A new line holding ``comment`` before line ``number`` (indented as that line is)."""
    line = index.line_text(number)
    pad = line[: len(line) - len(line.lstrip())] if indent else ""
    at = Position(number, 1)
    newline = "\r\n" if index.text[index.offset(at) + len(line) : index.offset(at) + len(line) + 2] == "\r\n" else "\n"
    return Edit(at, at, f"{pad}{comment}{newline}")


def _in_json_string(index: TextIndex, number: int, code: str) -> Edit | None:
    line = index.line_text(number)
    match = _JSON_SOURCE_LINE.match(line)
    if match is None or match.group("body").rstrip().endswith("\\\\"):
        return None
    at = index.position(index.offset(Position(number, 1)) + match.start("body") + len(match.group("body").rstrip()))
    end = index.position(index.offset(Position(number, 1)) + match.end("body"))
    return Edit(at, end, f"  # noqa: {code}")
