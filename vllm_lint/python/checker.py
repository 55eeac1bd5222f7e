"""Lint one Python file: parse once, build the model once, run every enabled rule."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from vllm_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from vllm_lint.launch.record import LaunchFinding, SetValue
from vllm_lint.launch.rules import LAUNCH_RULES, LaunchSettings, check_launch
from vllm_lint.python import rules as _register_rules  # noqa: F401 - registers the checkers
from vllm_lint.python.context import RULES, NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.launches import python_launches, render_fix
from vllm_lint.python.model import build_model
from vllm_lint.python.semantics import Semantics
from vllm_lint.text import TextIndex


@dataclass(frozen=True, slots=True)
class PythonOptions:
    enabled: frozenset[str]
    launch_settings: LaunchSettings
    api_version: str | None = None


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


class _Locator:
    """Positions and parents of nodes, computed once and only when a finding needs them."""

    def __init__(self, module: cst.Module, text: str) -> None:
        self._module, self._text = module, text
        self._positions = None
        self._printed: str | None = None
        self._shifts: dict[int, int] | None = None
        self._parents: dict[int, tuple[cst.CSTNode, str]] | None = None

    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        if self._shifts is None:
            self._shifts = _dropped_form_feeds(self._text, self.printed) if "\f" in self._text else {}
        code_range = self._positions[node]
        start, end = code_range.start, code_range.end
        return (
            Position(start.line, start.column + 1 + self._shifts.get(start.line, 0)),
            Position(end.line, end.column + 1 + self._shifts.get(end.line, 0)),
        )

    @property
    def printed(self) -> str:
        """The module as LibCST prints it (the file, unless it holds what LibCST does not keep); made once."""
        if self._printed is None:
            self._printed = self._module.code
        return self._printed

    def path_to(self, node: cst.CSTNode) -> list[tuple[cst.CSTNode, str | None]] | None:
        """(ancestor, field holding the next one) from the module down to ``node`` (field None)."""
        if self._parents is None:
            from vllm_lint.python.walk import parents

            self._parents = parents(self._module)
        path: list[tuple[cst.CSTNode, str | None]] = [(node, None)]
        while path[0][0] is not self._module:
            up = self._parents.get(id(path[0][0]))
            if up is None:
                return None
            path.insert(0, up)
        return path

    def statement_offset(self, text: str, statement: cst.CSTNode, code: str) -> int | None:
        """Where a top-level statement's generated code (leading comment lines included) starts in ``text``."""
        line = self.span(statement)[0].line
        offsets = _line_offsets(text)
        # The code starts with the statement's own leading lines, at or before its first token's line.
        for start_line in range(line, max(0, line - 200), -1):
            offset = offsets[start_line - 1] if start_line - 1 < len(offsets) else None
            if offset is None:
                continue
            while text.startswith("\f", offset) and not code.startswith("\f"):
                offset += 1  # a form feed LibCST dropped (see _dropped_form_feeds): keep it, edit after it
            if text.startswith(code, offset):
                return offset
        return None


def _dropped_form_feeds(text: str, printed_module: str) -> dict[int, int]:
    """Column shifts, by line, for the form feeds LibCST drops from the start of a top-level statement's line
    (its positions count the code it would print, which lacks them): a finding there must still point at
    the column an editor shows."""
    shifts = {}
    for number, (source, printed) in enumerate(zip(text.split("\n"), printed_module.split("\n")), start=1):
        if source != printed and source.lstrip(" \t\f") == printed.lstrip(" \t\f"):
            shifts[number] = len(source) - len(printed)
    return shifts


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    position = text.find("\n")
    while position != -1:
        offsets.append(position + 1)
        position = text.find("\n", position + 1)
    return offsets


def _text_edits(module: cst.Module, text: str, index: TextIndex, edits: list[NodeEdit], locator: _Locator) -> tuple[Edit, ...] | None:
    """The smallest text edits that make each node replacement."""
    result = []
    for edit in edits:
        new = _replaced_text(module, text, edit, locator)
        if new is None:
            return None
        result.append(_smallest_edit(text, new, index))
    return tuple(result)


def _replaced_text(module: cst.Module, text: str, edit: NodeEdit, locator: _Locator) -> str | None:
    """The file's text after one node replacement.

    Only the top-level statement that holds the node is rebuilt and regenerated (its ancestors are
    copied, nothing else is touched); the whole module is regenerated only when the statement
    cannot be found in the text, or the edit replaces the module itself.
    """
    path = locator.path_to(edit.node)
    if path:
        top, rebuilt = path[0][0], _rebuild(path, edit.replacement)
        if isinstance(top, cst.Module) and isinstance(rebuilt, cst.Module):
            index = next(i for i, statement in enumerate(top.body) if statement is path[1][0]) if len(path) > 1 else None
            if index is not None:
                old_code = module.code_for_node(module.body[index])
                start = locator.statement_offset(text, module.body[index], old_code)
                if start is not None:
                    return text[:start] + module.code_for_node(rebuilt.body[index]) + text[start + len(old_code) :]
    if locator.printed != text:
        return None  # regenerating the module would lose what LibCST does not keep (form feeds, a last \r)
    changed = module.deep_replace(edit.node, edit.replacement)
    return changed.code if isinstance(changed, cst.Module) else None


def _rebuild(path: list[tuple[cst.CSTNode, str | None]], replacement: cst.CSTNode) -> cst.CSTNode:
    """Copy each ancestor on ``path`` (root first) with the child below it replaced."""
    new_child: cst.CSTNode = replacement
    for (parent, field), (old_child, _) in zip(reversed(path[:-1]), reversed(path[1:])):
        value = getattr(parent, field)
        if isinstance(value, (list, tuple)):
            value = type(value)(new_child if item is old_child else item for item in value)
        else:
            value = new_child
        new_child = parent.with_changes(**{field: value})
    return new_child


def _smallest_edit(original: str, new: str, index: TextIndex) -> Edit:
    start = 0
    limit = min(len(original), len(new))
    while start < limit and original[start] == new[start]:
        start += 1
    end_old, end_new = len(original), len(new)
    while end_old > start and end_new > start and original[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    if start < end_old and start < end_new:
        # A replacement reads better as whole tokens: 0.98 -> 0.90, not 8 -> 0.
        while start > 0 and _word_char(original[start - 1]):
            start -= 1
        while end_old < len(original) and end_new < len(new) and _word_char(original[end_old]):
            end_old += 1
            end_new += 1
    return Edit(index.position(start), index.position(end_old), new[start:end_new])


def _word_char(char: str) -> bool:
    return char.isalnum() or char in "_."


def lint_python(path: str, text: str, module: cst.Module, options: PythonOptions) -> list[Diagnostic]:
    model = build_model(module)
    semantics = Semantics(model, path)
    ctx = PyContext(path, module, model, semantics, options.launch_settings, options.enabled, options.api_version)
    findings: list[PyFinding] = []
    for code, rule in RULES.items():
        if code in options.enabled:
            findings.extend(rule(ctx))
    if options.enabled & LAUNCH_RULES.keys():
        for launch, call, statement in python_launches(ctx):
            for launch_finding in check_launch(launch, options.launch_settings, options.enabled):
                findings.append(_from_launch(ctx, call, statement, launch_finding))
    if not findings:
        return []
    locator = _Locator(module, text)
    index = TextIndex(text)
    from vllm_lint.rulebook import severity_of

    diagnostics = []
    for finding in findings:
        start, end = locator.span(finding.node)
        noqa = {start.line}
        if finding.statement is not None and not isinstance(finding.statement, cst.Module):
            noqa.add(locator.span(finding.statement)[0].line)
        fix = None
        if finding.fix is not None:
            edits = _text_edits(module, text, index, finding.fix.build(), locator)
            if edits:
                fix = Fix(finding.fix.applicability, finding.fix.title, edits)
        diagnostics.append(
            Diagnostic(
                code=finding.code,
                message=finding.message,
                path=path,
                start=start,
                end=end,
                severity=finding.severity or severity_of(finding.code, Severity.ERROR),
                fix=fix,
                noqa_lines=tuple(sorted(noqa)),
            )
        )
    return diagnostics


def _from_launch(ctx: PyContext, call: cst.Call, statement: cst.CSTNode, finding: LaunchFinding) -> PyFinding:
    fix = None
    if finding.fix is not None and _fix_applies(finding):
        fix = PyFix(
            title=finding.fix_title or "Fix",
            applicability=finding.applicability,
            build=lambda: render_fix(ctx, call, finding),
        )
    node = finding.anchor if isinstance(finding.anchor, cst.CSTNode) else call
    return PyFinding(finding.code, finding.message, node, statement, finding.severity, fix)


def _fix_applies(finding: LaunchFinding) -> bool:
    # Only rewrite a value written right there: a constant or an environment
    # default may be shared, and overriding it in place would hide the source.
    if isinstance(finding.fix, SetValue):
        if isinstance(finding.fix.setting.anchor, cst.SimpleString):
            return True  # a word of a command line (subprocess list): command_fixes.py edits it in place
        value_node = finding.fix.setting.value_anchor
        return isinstance(value_node, (cst.Float, cst.Integer, cst.Name)) and not (
            isinstance(value_node, cst.Name) and value_node.value not in ("True", "False")
        )
    return True


__all__ = ["Applicability", "PythonOptions", "SyntaxProblem", "lint_python", "parse"]
