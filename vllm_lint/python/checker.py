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
    """Positions of nodes, computed once and only when a finding needs one."""

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._positions = None

    def span(self, node: cst.CSTNode) -> tuple[Position, Position]:
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        code_range = self._positions[node]
        return (
            Position(code_range.start.line, code_range.start.column + 1),
            Position(code_range.end.line, code_range.end.column + 1),
        )


def _text_edits(module: cst.Module, index: TextIndex, edits: list[NodeEdit]) -> tuple[Edit, ...] | None:
    """The smallest text edits that make each node replacement."""
    original = module.code
    result = []
    for edit in edits:
        changed = module.deep_replace(edit.node, edit.replacement)
        if not isinstance(changed, cst.Module):
            return None
        new = changed.code
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
        result.append(Edit(index.position(start), index.position(end_old), new[start:end_new]))
    return tuple(result)


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
    locator = _Locator(module)
    index = TextIndex(text)
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    diagnostics = []
    for finding in findings:
        start, end = locator.span(finding.node)
        noqa = {start.line}
        if finding.statement is not None and not isinstance(finding.statement, cst.Module):
            noqa.add(locator.span(finding.statement)[0].line)
        fix = None
        if finding.fix is not None:
            edits = _text_edits(module, index, finding.fix.build())
            if edits:
                fix = Fix(finding.fix.applicability, finding.fix.title, edits)
        diagnostics.append(
            Diagnostic(
                code=finding.code,
                message=finding.message,
                path=path,
                start=start,
                end=end,
                severity=finding.severity or (rules[finding.code].severity if finding.code in rules else Severity.ERROR),
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
        value_node = finding.fix.setting.value_anchor
        return isinstance(value_node, (cst.Float, cst.Integer, cst.Name)) and not (
            isinstance(value_node, cst.Name) and value_node.value not in ("True", "False")
        )
    return True


__all__ = ["Applicability", "PythonOptions", "SyntaxProblem", "lint_python", "parse"]
