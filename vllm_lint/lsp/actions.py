"""Code actions and hovers for one linted document: each finding's fix (safe, or titled as unsafe), "fix all
safe fixes" for the file, and ``# noqa`` for the line; on hover, the rule's What / Why / Use instead."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from vllm_lint.diagnostics import Applicability, Diagnostic, Edit, Position
from vllm_lint.engine.suppressions import MARKDOWN_NOQA, NOQA
from vllm_lint.lsp.convert import SOURCE, Lines
from vllm_lint.lsp.linter import Linted, Linter
from vllm_lint.text import TextIndex

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"
# Where a comment at the end of a line is no comment (a Dockerfile's exec-form CMD, a JSON notebook).
_NO_LINE_COMMENT = frozenset({"dockerfile", "notebook"})


@dataclass(frozen=True)
class Client:
    """What the client can take: versioned document changes with annotations (a preview before applying)."""

    document_changes: bool = False
    change_annotations: bool = False

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities | None) -> Client:
        edit = capabilities.workspace.workspace_edit if capabilities and capabilities.workspace else None
        if edit is None:
            return cls()
        return cls(bool(edit.document_changes), edit.change_annotation_support is not None)


def code_actions(linter: Linter, linted: Linted, uri: str, version: int | None, lines: Lines,
                 wanted: types.Range, only: list[str] | None, client: Client) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    fixable = {id(d) for d in linter.fixable(linted)}
    here = [d for d in linted.own if _overlaps(lines.range(d.start, d.end), wanted)]
    if _wants(only, types.CodeActionKind.QuickFix):
        for diagnostic in here:
            if id(diagnostic) in fixable:
                actions.append(_fix_action(diagnostic, uri, version, lines, client))
        for diagnostic in here:
            noqa = _noqa_action(diagnostic, linted, uri, version, lines, client)
            if noqa is not None:
                actions.append(noqa)
    if _wants(only, FIX_ALL_KIND) and any(d.fix.applicability is Applicability.SAFE for d in linted.own if id(d) in fixable):
        fixed = linter.fix_all(linted)
        if fixed is not None:
            edit = _replacement(linted.text, fixed)
            actions.append(types.CodeAction(
                title="vllm-lint: fix all safe fixes",
                kind=FIX_ALL_KIND,
                edit=_workspace_edit(uri, version, [lines.text_edit(edit)], client),
            ))
    return actions


def _wants(only: list[str] | None, kind: str) -> bool:
    return not only or any(kind == asked or kind.startswith(asked + ".") for asked in only)


def _overlaps(found: types.Range, wanted: types.Range) -> bool:
    start, end = (found.start.line, found.start.character), (found.end.line, found.end.character)
    return not (end < (wanted.start.line, wanted.start.character) or start > (wanted.end.line, wanted.end.character))


def _fix_action(diagnostic: Diagnostic, uri: str, version: int | None, lines: Lines, client: Client) -> types.CodeAction:
    fix = diagnostic.fix
    unsafe = fix.applicability is Applicability.UNSAFE
    title = f"{'Unsafe fix' if unsafe else 'Fix'} {diagnostic.code}: {fix.message}"
    edits = [lines.text_edit(edit) for edit in fix.edits]
    # An unsafe fix changes behaviour (the server rewrite replaces the whole handler): the client shows the
    # change and asks before applying it, where it can.
    annotation = None
    if unsafe:
        annotation = types.ChangeAnnotation(
            label=f"{diagnostic.code}: {fix.message}",
            needs_confirmation=True,
            description="an unsafe fix: it changes behaviour; review the change before applying it",
        )
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[_ref(diagnostic, lines)],
        is_preferred=not unsafe,
        edit=_workspace_edit(uri, version, edits, client, annotation),
    )


def _ref(diagnostic: Diagnostic, lines: Lines) -> types.Diagnostic:
    return types.Diagnostic(range=lines.range(diagnostic.start, diagnostic.end), message=diagnostic.message,
                            code=diagnostic.code, source=SOURCE)


def _noqa_action(diagnostic: Diagnostic, linted: Linted, uri: str, version: int | None, lines: Lines,
                 client: Client) -> types.CodeAction | None:
    if diagnostic.code == "VLL000" or linted.surface.name in _NO_LINE_COMMENT:
        return None
    index = TextIndex(linted.text)
    number = diagnostic.start.line
    line = index.line_text(number)
    if line.rstrip().endswith("\\"):
        return None  # a continued shell line: a comment after the backslash would end the command
    markdown = linted.surface.name == "markdown"
    start = index.offset(Position(number, 1))
    existing = (MARKDOWN_NOQA if markdown else NOQA).search(line)
    if existing is not None:
        if existing.group("codes") is None:
            return None  # a bare noqa already silences every code on the line
        at = index.position(start + existing.end("codes"))
        edit = Edit(at, at, f", {diagnostic.code}")
    else:
        # After the line's text, in place of any trailing blanks.
        comment = f"  <!-- noqa: {diagnostic.code} -->" if markdown else f"  # noqa: {diagnostic.code}"
        edit = Edit(index.position(start + len(line.rstrip())), index.position(start + len(line)), comment)
    return _noqa(diagnostic, edit, uri, version, lines, client)


def _noqa(diagnostic: Diagnostic, edit: Edit, uri: str, version: int | None, lines: Lines, client: Client) -> types.CodeAction:
    return types.CodeAction(
        title=f"Disable {diagnostic.code} for this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[_ref(diagnostic, lines)],
        edit=_workspace_edit(uri, version, [lines.text_edit(edit)], client),
    )


def _replacement(old: str, new: str) -> Edit:
    """One edit that turns ``old`` into ``new``: the differing middle, so the editor keeps the cursor and the
    untouched text where they were."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    index = TextIndex(old)
    return Edit(index.position(prefix), index.position(len(old) - suffix), new[prefix:len(new) - suffix])


def _workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit], client: Client,
                    annotation: types.ChangeAnnotation | None = None) -> types.WorkspaceEdit:
    if not client.document_changes:
        return types.WorkspaceEdit(changes={uri: edits})
    annotations = None
    if annotation is not None and client.change_annotations:
        annotations = {"vllm-lint-unsafe": annotation}
        edits = [types.AnnotatedTextEdit(range=e.range, new_text=e.new_text, annotation_id="vllm-lint-unsafe") for e in edits]
    document = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=edits)
    return types.WorkspaceEdit(document_changes=[document], change_annotations=annotations)


def hover(linted: Linted, lines: Lines, at: types.Position) -> types.Hover | None:
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    parts = []
    first: types.Range | None = None
    for diagnostic in linted.diagnostics:
        found = lines.range(diagnostic.start, diagnostic.end)
        if not _contains(found, at, diagnostic.start.line == diagnostic.end.line and diagnostic.start == diagnostic.end):
            continue
        rule = rules.get(diagnostic.code)
        if rule is None:
            continue
        first = first or found
        parts.append(rule_page(rule))
    if not parts:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)), range=first)


def rule_page(rule) -> str:
    """The rule's What / Why / Use instead, short enough for a hover, with its link."""
    parts = [f"**{rule.code}** {rule.name} ({rule.severity.value})", "", "**What it does**", rule.summary, "",
             "**Why is this bad?**", rule.why.strip(), ""]
    bad = next(iter(rule.bad_examples), None)
    if rule.use_instead:
        parts += ["**Use instead**", rule.use_instead.strip(), ""]
    elif bad is not None and bad.fixed:
        parts += ["**Use instead**", f"```{bad.fence}", bad.fixed.rstrip("\n"), "```", ""]
    if rule.fix_safety != "none":
        parts += [f"Fix: {rule.fix_safety}" + (f" ({rule.fix_title})" if rule.fix_title else ""), ""]
    parts.append(f"[{rule.code} documentation]({rule.url})")
    return "\n".join(parts)


def _contains(found: types.Range, at: types.Position, point: bool) -> bool:
    here = (at.line, at.character)
    start, end = (found.start.line, found.start.character), (found.end.line, found.end.character)
    if point:
        return at.line == found.start.line  # a finding with no extent (a whole file's): anywhere on its line
    return start <= here <= end
