"""Lint one Python file: parse once, build the model once, run every enabled rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from vllm_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, Severity
from vllm_lint.launch.record import LaunchFinding, SetValue
from vllm_lint.launch.settings import LaunchSettings
from vllm_lint.project.facts import FileFacts
from vllm_lint.python.command_lines import CommandLine
from vllm_lint.python.context import NodeEdit, PyContext, PyFinding, PyFix
from vllm_lint.python.launches import python_launches, render_fix
from vllm_lint.python.libcst_private import generated_code
from vllm_lint.python.model import build_model
from vllm_lint.python.parsing import SyntaxProblem, parse
from vllm_lint.python.positions import ModuleLayout
from vllm_lint.python.project import Project
from vllm_lint.python.project_facts import launch_anchor, python_facts
from vllm_lint.python.semantics import Semantics
from vllm_lint.launch.seen import LAUNCH_SEEN, seen_message
from vllm_lint.registry import check_launch, launch_codes, python_checkers
from vllm_lint.text import TextIndex, line_starts


@dataclass(frozen=True, slots=True)
class PythonOptions:
    """What one Python file is linted with."""
    enabled: frozenset[str]
    launch_settings: LaunchSettings
    api_version: str | None = None
    # The project the file belongs to, for what other modules' functions do (None: the file alone).
    project: Project | None = None
    fix_edits: bool = True  # engine.runner.RunOptions.fix_edits


class _Locator:
    """Positions and parents of nodes, computed once and only when a finding needs them. ``spanned``: the nodes
    whose positions are all that is asked for, as far as is known: their positions come from generating the
    module only up to the last of them (and any other question from generating it all)."""

    def __init__(self, module: cst.Module, text: str, spanned: Sequence[cst.CSTNode] = ()) -> None:
        self._module, self._text = module, text
        self._spanned = spanned
        self._layout: ModuleLayout | None = None
        self._partial: ModuleLayout | None = None
        self._shifts: dict[int, int] | None = None

    @property
    def layout(self) -> ModuleLayout:
        """The whole module's layout."""
        if self._layout is None:
            self._layout = ModuleLayout(self._module)
        return self._layout

    def _layout_holding(self, node: cst.CSTNode) -> ModuleLayout:
        if self._layout is None and self._spanned:
            if self._partial is None:
                self._partial = ModuleLayout(self._module, until=self._spanned)
                if self._partial.complete:
                    self._layout = self._partial
            if self._partial.holds(node):
                return self._partial
        return self.layout

    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        if self._shifts is None:
            self._shifts = _dropped_form_feeds(self._text, self.printed) if "\f" in self._text else {}
        (start_line, start_column), (end_line, end_column) = self._layout_holding(node).span(node)
        return (
            Position(start_line, start_column + 1 + self._shifts.get(start_line, 0)),
            Position(end_line, end_column + 1 + self._shifts.get(end_line, 0)),
        )

    @property
    def printed(self) -> str:
        """The module as LibCST prints it (the file, unless it holds what LibCST does not keep)."""
        return self.layout.code

    def path_to(self, node: cst.CSTNode) -> list[tuple[cst.CSTNode, str | None]] | None:
        """(ancestor, field holding the next one) from the module down to ``node`` (field None)."""
        return self.layout.path_to(node)

    def statement_offset(self, text: str, statement: cst.CSTNode, code: str) -> int | None:
        """Where a top-level statement's generated code (leading comment lines included) starts in ``text``."""
        line = self.span(statement)[0].line
        offsets = line_starts(text)
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

    The innermost statement that holds the node is rebuilt (its ancestors up to it are copied) and
    regenerated at its own indentation: a one-line fix in a long function regenerates that line. Failing
    that, the top-level statement; the whole module only when neither can be placed in the text, or
    the edit replaces the module itself. When the module prints back as the file it never fails (returns
    None) but for a module replaced by something else: _reported_fix relies on that.
    """
    path = locator.path_to(edit.node)
    if path and len(path) > 1 and path[0][1] == "body":
        if locator.printed == text:
            new = _replaced_statement(module, text, path, edit.replacement, locator.layout)
            if new is not None:
                return new
        statement = path[1][0]
        new_code = module.code_for_node(_rebuild(path[1:], edit.replacement))
        old_code = module.code_for_node(statement)
        start = locator.statement_offset(text, statement, old_code)
        if start is not None:
            return text[:start] + new_code + text[start + len(old_code) :]
    if locator.printed != text:
        return None  # regenerating the module would lose what LibCST does not keep (form feeds, a last \r)
    changed = module.deep_replace(edit.node, edit.replacement)
    return changed.code if isinstance(changed, cst.Module) else None


def _replaced_statement(module: cst.Module, text: str, path: list[tuple[cst.CSTNode, str | None]],
                        replacement: cst.CSTNode, layout: ModuleLayout) -> str | None:
    """The text with the innermost statement on ``path`` regenerated with the replacement; None when that
    statement, generated on its own at the indentation of the blocks above it, is not what the file holds
    at its place (its code then depends on more than indentation)."""
    # A statement in a block's body: generated the same wherever it is but for the indentation (an elif,
    # held in an If's orelse, prints as "if" on its own).
    depth = max(i for i in range(1, len(path)) if path[i - 1][1] == "body" and isinstance(path[i - 1][0], (cst.Module, cst.IndentedBlock)))
    statement = path[depth][0]
    start, end = layout.whole_range(statement)
    if end > len(text):
        return None  # the file's last statement, without its newline
    # What LibCST indents by: each block, and a match statement's cases.
    indents = [node.indent if node.indent is not None else module.default_indent
               for node, _ in path[:depth] if isinstance(node, (cst.IndentedBlock, cst.Match))]
    if generated_code(module, statement, indents) != text[start:end]:
        return None
    return text[:start] + generated_code(module, _rebuild(path[depth:], replacement), indents) + text[end:]


def _rebuild(path: list[tuple[cst.CSTNode, str | None]], replacement: cst.CSTNode) -> cst.CSTNode:
    """Copy each ancestor on ``path`` (root first) with the child below it replaced."""
    new_child: cst.CSTNode = replacement
    for (parent, field), (old_child, _) in zip(reversed(path[:-1]), reversed(path[1:])):
        if field is None:
            raise ValueError("only the last node of a path has no field holding a child")
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


def lint_python(path: str, text: str, module: cst.Module, options: PythonOptions, facts: FileFacts | None = None) -> list[Diagnostic]:
    """The module's findings; with ``facts``, also what it tells the project rules (filled in)."""
    model = build_model(module)
    semantics = Semantics(model, path, options.project)
    ctx = PyContext(path, module, model, semantics, options.launch_settings, options.enabled, options.api_version, options.fix_edits)
    findings: list[PyFinding] = []
    for checker in python_checkers(options.enabled):
        findings.extend(checker(ctx))
    explain = LAUNCH_SEEN in options.enabled
    launches = list(python_launches(ctx)) if options.enabled & launch_codes() or facts is not None or explain else []
    reported: set[tuple[str, int]] = set()
    for launch, call, statement in launches:
        for launch_finding in check_launch(launch, options.launch_settings, options.enabled):
            finding = _from_launch(ctx, call, statement, launch_finding)
            # Two launches can share what a finding points at (one dict spread into both): say it once.
            if (finding.code, id(finding.node)) not in reported:
                reported.add((finding.code, id(finding.node)))
                findings.append(finding)
    locator = _Locator(module, text, _spanned(findings, launches if facts is not None else [], explain))
    if facts is not None:
        found = python_facts(ctx, launches, locator.span)
        facts.servers, facts.requests = found.servers, found.requests
    seen = _launches_seen(path, launches, locator, options.launch_settings) if explain else []
    if not findings:
        return seen
    index = TextIndex(text)
    from vllm_lint.rulebook import severity_of

    diagnostics = []
    for finding in findings:
        start, end = locator.span(finding.node)
        noqa = {start.line}
        if finding.statement is not None and not isinstance(finding.statement, cst.Module):
            noqa.add(locator.span(finding.statement)[0].line)
        fix = _reported_fix(finding.fix, module, text, index, locator, options.fix_edits) if finding.fix is not None else None
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
    return diagnostics + seen


def _spanned(findings: list[PyFinding], launches: list, explain: bool) -> list[cst.CSTNode]:
    """The nodes whose positions the findings and the project facts of the launches ask for, where nothing else
    is asked (a fix reads the module's whole layout, and so does a run that explains what it read); none where
    the module's whole layout will be generated anyway."""
    if explain or any(finding.fix is not None for finding in findings):
        return []
    spanned = [node for finding in findings for node in (finding.node, finding.statement)
               if isinstance(node, cst.CSTNode) and not isinstance(node, cst.Module)]
    spanned += [launch_anchor(launch, statement) for launch, _, statement in launches]
    return spanned


def _reported_fix(fix: PyFix, module: cst.Module, text: str, index: TextIndex, locator: _Locator, with_edits: bool) -> Fix | None:
    """The fix as the run reports it: with its text edits, or, for a run that reads none, without them where
    that does not change whether it is offered; None when it is not offered (it has no edit that can be made)."""
    if fix.build is None:
        return Fix(fix.applicability, fix.title, ())  # a fix that left its edits out (PyContext.fix_edits)
    replacements = fix.build()
    if not with_edits and locator.printed == text and not any(
        edit.node is module and not isinstance(edit.replacement, cst.Module) for edit in replacements
    ):
        # The module prints back as the file: _replaced_text then makes every replacement, so the fix is
        # offered exactly when it has one.
        return Fix(fix.applicability, fix.title, ()) if replacements else None
    edits = _text_edits(module, text, index, replacements, locator)
    return Fix(fix.applicability, fix.title, edits) if edits else None


def _launches_seen(path: str, launches: list, locator: _Locator, settings: LaunchSettings) -> list[Diagnostic]:
    """One ``LAUNCH_SEEN`` pseudo-diagnostic per launch read (``check --explain-opaque``)."""
    seen = []
    for launch, call, statement in launches:
        message = seen_message(launch, "python", settings)
        node = next((n for n in (launch.anchor, call, statement) if isinstance(n, cst.CSTNode)), None)
        if message is None or node is None:
            continue
        start, _ = locator.span(node)
        seen.append(Diagnostic(LAUNCH_SEEN, message, path, start, start, Severity.INFO, None, ()))
    return seen


def _from_launch(ctx: PyContext, call: cst.Call | CommandLine, statement: cst.CSTNode, finding: LaunchFinding) -> PyFinding:
    fix = None
    if finding.fix is not None and _fix_applies(finding):
        fix = PyFix(
            title=finding.fix_title or "Fix",
            applicability=finding.applicability,
            build=lambda: render_fix(ctx, call, finding),
        )
    node = finding.anchor if isinstance(finding.anchor, cst.CSTNode) else call if isinstance(call, cst.Call) else statement
    return PyFinding(finding.message, node, statement, finding.severity, fix, code=finding.code)


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
