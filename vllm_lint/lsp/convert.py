"""The engine's diagnostics and edits as LSP values: ranges in the client's position encoding, the rule's
link, and related locations (the ``values.yaml`` line a Helm value came from, the file that starts the server
a request is sent to)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from lsprotocol import types

from vllm_lint.diagnostics import Diagnostic, Edit, Position, Severity

SOURCE = "vllm-lint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
# ``(values.yaml engine.gpu)``: where a Helm template's value came from (surfaces/templates.py words it so)
_HELM_VALUE = re.compile(r"\b(values[\w.-]*\.ya?ml) ([A-Za-z0-9_][\w.-]*)")
# ``(/srv/app/serve.sh:3)``: the file and line of the other side of a finding decided across files
_FILE_LINE = re.compile(r"\((?P<path>[^()\s]+?):(?P<line>\d+)\)")


class Lines:
    """A text's lines, for converting the engine's positions (1-based, in characters) to the client's units."""

    def __init__(self, text: str, to_client: Callable[[Sequence[str], types.Position], types.Position] | None = None) -> None:
        self.lines = text.splitlines(keepends=True) or [""]
        self._to_client = to_client

    def position(self, position: Position) -> types.Position:
        server = types.Position(line=max(position.line - 1, 0), character=max(position.column - 1, 0))
        if self._to_client is None or server.line >= len(self.lines):
            return server
        return self._to_client(self.lines, server)

    def range(self, start: Position, end: Position) -> types.Range:
        return types.Range(start=self.position(start), end=self.position(end))

    def text_edit(self, edit: Edit) -> types.TextEdit:
        return types.TextEdit(range=self.range(edit.start, edit.end), new_text=edit.content)


def lsp_diagnostic(diagnostic: Diagnostic, lines: Lines, path: Path, rule_url: Callable[[str], str | None]) -> types.Diagnostic:
    url = rule_url(diagnostic.code)
    related = related_locations(diagnostic, path)
    return types.Diagnostic(
        range=lines.range(diagnostic.start, diagnostic.end),
        message=diagnostic.message,
        severity=_SEVERITY[diagnostic.severity],
        code=diagnostic.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        related_information=related or None,
        data={"fix": diagnostic.fix.applicability.value if diagnostic.fix else None},
    )


def related_locations(diagnostic: Diagnostic, path: Path) -> list[types.DiagnosticRelatedInformation]:
    found = []
    for match in _HELM_VALUE.finditer(diagnostic.message):
        location = _helm_value(path, match.group(1), match.group(2))
        if location is not None:
            found.append(types.DiagnosticRelatedInformation(location=location, message=f"{match.group(2)} is set here"))
    for match in _FILE_LINE.finditer(diagnostic.message):
        other = Path(match.group("path"))
        other = other if other.is_absolute() else path.parent / other
        if other.is_file():
            line = max(int(match.group("line")) - 1, 0)
            where = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0))
            found.append(types.DiagnosticRelatedInformation(location=types.Location(uri=other.as_uri(), range=where), message="the other side"))
    return found


def _helm_value(template: Path, values_name: str, dotted: str) -> types.Location | None:
    """The line of ``dotted`` (``engine.gpu``) in the chart's values file, found as the template's reader
    finds the chart (the folder above ``templates/`` that holds Chart.yaml)."""
    from vllm_lint.surfaces.templates import chart_root

    root = chart_root(template)
    if root is None or not (root / values_name).is_file():
        return None
    import yaml

    try:
        node = yaml.compose((root / values_name).read_text(encoding="utf-8"))
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return None
    key_node = None
    for part in dotted.split("."):
        if not isinstance(node, yaml.MappingNode):
            return None
        match = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        if match is None:
            return None
        key_node, node = match
    if key_node is None or node is None:
        return None
    start = types.Position(line=key_node.start_mark.line, character=key_node.start_mark.column)
    end = types.Position(line=node.end_mark.line, character=node.end_mark.column)
    return types.Location(uri=(root / values_name).as_uri(), range=types.Range(start=start, end=end))
