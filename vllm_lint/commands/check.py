"""Lint one command-line file: extract launches, run the launch rules, render diagnostics and fixes."""

from __future__ import annotations

import re
from dataclasses import replace

from vllm_lint.commands.flags import Span, flag_table
from vllm_lint.commands.launches import Extractor, Found
from vllm_lint.commands.shell import Environment, ShellSyntaxError
from vllm_lint.diagnostics import (
    Applicability,
    Diagnostic,
    Edit,
    Fix,
    Severity,
)
from vllm_lint.launch.record import (
    AddSetting,
    LaunchFinding,
    Rename,
    RewriteEntrypoint,
    SetValue,
)
from vllm_lint.launch.rules import check_launch
from vllm_lint.surfaces import LintJob, parse_error
from vllm_lint.text import TextIndex


class CommandParseError(Exception):
    def __init__(self, message: str, offset: int | None = None, line: int | None = None, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.offset, self.line, self.column = message, offset, line, column


def extract(kind: str, text: str, api) -> Extractor:
    extractor = Extractor(api, text)
    if kind == "shell":
        try:
            extractor.script(text, Environment())
        except ShellSyntaxError as exc:
            raise CommandParseError(f"shell syntax error: {exc.message}", exc.offset) from None
    elif kind == "dockerfile":
        from vllm_lint.commands.dockerfile import extract_dockerfile

        extract_dockerfile(text, extractor)
    elif kind in ("compose", "kubernetes", "yaml"):
        from vllm_lint.commands.yamlfiles import extract_yaml

        extract_yaml(text, extractor, kind)
    else:
        raise ValueError(kind)
    return extractor


def lint_text(kind: str, display: str, text: str, job: LintJob) -> list[Diagnostic]:
    if kind == "markdown":
        from vllm_lint.commands.markdown import lint_markdown

        return lint_markdown(display, text, job)
    index = TextIndex(text)
    api = job.api()
    try:
        extractor = extract(kind, text, api)
    except CommandParseError as exc:
        if exc.line is not None:
            return [parse_error(display, exc.message, exc.line, exc.column)]
        position = index.position(exc.offset or 0)
        return [parse_error(display, exc.message, position.line, position.column)]
    diagnostics: list[Diagnostic] = []
    for found in extractor.found:
        for finding in check_launch(found.launch, job.launch_settings, job.enabled):
            diagnostics.append(_diagnostic(display, text, index, found, finding, api))
    return diagnostics


def _diagnostic(display, text, index, found: Found, finding: LaunchFinding, api) -> Diagnostic:
    from vllm_lint.rulebook import severity_of

    span = finding.anchor if isinstance(finding.anchor, Span) else found.launch.anchor
    start, end = index.position(span.start), index.position(span.end)
    severity = finding.severity or severity_of(finding.code, Severity.WARNING)
    fix = None
    if finding.fix is not None and found.fixable:
        edits = render_edits(text, index, found, finding, api)
        if edits:
            fix = Fix(finding.applicability, finding.fix_title or "Fix", tuple(edits))
    # a noqa comment on any line of the command suppresses (from its first word, wrappers included, to its last)
    last = max([span.end, found.launch.anchor.end if isinstance(found.launch.anchor, Span) else span.end]
               + [w.end for w in found.words])
    noqa = {start.line, *range(index.position(found.command_start).line, index.position(last).line + 1)}
    return Diagnostic(finding.code, finding.message, display, start, end, severity, fix, tuple(sorted(noqa)))


_NUMBER = re.compile(r"^(['\"]?)([0-9.]+)(['\"]?)$")


def _edit(index: TextIndex, start: int, end: int, content: str) -> Edit:
    return Edit(index.position(start), index.position(end), content)


def render_edits(text: str, index: TextIndex, found: Found, finding: LaunchFinding, api) -> list[Edit] | None:
    intent = finding.fix
    table = flag_table(api)
    if isinstance(intent, SetValue):
        setting = intent.setting
        if isinstance(intent.value, bool):
            flag_text = text[setting.anchor.start : setting.anchor.end]
            if intent.value and flag_text.startswith("--no-") and "=" not in flag_text:
                return [_edit(index, setting.anchor.start, setting.anchor.start + 5, "--")]
            return None
        span = setting.value_anchor
        if not isinstance(span, Span):
            return None
        written = text[span.start : span.end]
        match = _NUMBER.match(written)
        if match is None or setting.value is None or setting.value.origin is not None:
            return None  # a variable or default shared elsewhere: leave it to the user
        return [_edit(index, span.start, span.end, f"{match.group(1)}{intent.value:.2f}{match.group(3)}")]
    if isinstance(intent, AddSetting):
        option = option_for(table, intent.key)
        if option is None:
            return None
        words = found.words
        last_end = words[-1].end if words else (found.head.end if found.head else None)
        if last_end is None:
            return None
        value = f"{intent.value:.2f}" if isinstance(intent.value, float) else str(intent.value)
        addition = f"{option} {value}"
        # keep a multi-line command multi-line: one flag per continuation line, same indent
        if words and len(words) >= 2:
            line_start = text.rfind("\n", 0, words[-1].start) + 1
            line = text[line_start : words[-1].start]
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            if indent and text[:line_start].rstrip("\r\n").endswith("\\"):
                return [_edit(index, last_end, last_end, f" \\\n{indent}{addition}")]
        return [_edit(index, last_end, last_end, f" {addition}")]
    if isinstance(intent, Rename):
        setting = intent.setting
        written = text[setting.anchor.start : setting.anchor.start + len(setting.spelled)]
        if written != setting.spelled:
            return None
        return [_edit(index, setting.anchor.start, setting.anchor.start + len(setting.spelled), intent.new_key)]
    if isinstance(intent, RewriteEntrypoint):
        model = intent.model
        edits = []
        if found.head is not None and found.launch.entrypoint == "api_server":
            replacement = "vllm serve"
            if model is not None and isinstance(model.value_anchor, Span):
                replacement += " " + text[model.value_anchor.start : model.value_anchor.end]
            edits.append(_edit(index, found.head.start, found.head.end, replacement))
        elif model is None or not isinstance(model.value_anchor, Span):
            return None
        if model is not None and isinstance(model.value_anchor, Span):
            if found.launch.entrypoint == "api_server":
                # delete `--model X` with the blank (and continuation) before it
                start = model.anchor.start
                previous = [w.end for w in found.words if w.end <= start]
                cut = max(previous) if previous else found.head.end
                edits.append(_edit(index, cut, model.anchor.end, ""))
            else:
                value = text[model.value_anchor.start : model.value_anchor.end]
                edits.append(_edit(index, model.anchor.start, model.anchor.end, value))
        return edits or None
    return None


def option_for(table, key: str) -> str | None:
    for option, flag in table.exact.items():
        if flag.dest == key and option.startswith("--") and not option.startswith("--no-"):
            return option
    return None


def shift(diagnostic: Diagnostic, lines: int, display: str, extra_noqa: tuple[int, ...] = ()) -> Diagnostic:
    moved = diagnostic.moved(lines)
    return replace(moved, path=display, noqa_lines=tuple(sorted({*moved.noqa_lines, *extra_noqa})))


__all__ = ["Applicability", "CommandParseError", "extract", "lint_text", "shift"]
