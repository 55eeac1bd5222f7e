"""Code actions and hovers for one linted document: each finding's fix (safe, or titled as unsafe), "fix all
safe fixes" for the file, and "disable for this line" for every finding (the comment its kind of file takes:
``engine/noqa_comments``); on hover, the rule's What / Why / Use instead."""

from __future__ import annotations

from dataclasses import dataclass, replace

from lsprotocol import types

from vllm_lint.diagnostics import Applicability, Diagnostic, Edit
from vllm_lint.engine.noqa_comments import noqa_edit
from vllm_lint.lsp.convert import SOURCE, Lines
from vllm_lint.lsp.linter import Linted, Linter
from vllm_lint.lsp.notebooks import Cell, apply_fix, changed_cells
from vllm_lint.text import TextIndex

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"


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


class Document:
    """Where a lint's edits go: one text document, or a notebook's cells (the lint is of the notebook's JSON)."""

    def __init__(self, linted: Linted, uri: str, versions: dict[str, int | None],
                 lines_of, cells: list[Cell] | None = None) -> None:
        self.linted, self.uri, self.versions, self.lines_of, self.cells = linted, uri, versions, lines_of, cells

    def findings(self, uri: str) -> list[tuple[Diagnostic, Diagnostic]]:
        """(the finding as linted, the finding where ``uri``'s text has it) for the findings in ``uri``."""
        if self.cells is None:
            return [(d, d) for d in self.linted.diagnostics]
        found = []
        for diagnostic in self.linted.diagnostics:
            where = diagnostic.cell
            if where is not None and 1 <= where.cell <= len(self.cells) and self.cells[where.cell - 1].uri == uri:
                found.append((diagnostic, replace(diagnostic, start=where.start, end=where.end, cell=None)))
        return found

    def text_of(self, uri: str) -> str:
        return self.linted.text if self.cells is None else next(cell.text for cell in self.cells if cell.uri == uri)

    def edits_for(self, fixed: str) -> dict[str, list[types.TextEdit]]:
        """The text edits that turn the linted text into ``fixed``, by document."""
        if self.cells is None:
            return {self.uri: [self.lines_of(self.uri, self.linted.text).text_edit(_replacement(self.linted.text, fixed))]}
        return {uri: [self.lines_of(uri, self.text_of(uri)).text_edit(_replacement(self.text_of(uri), new))]
                for uri, new in changed_cells(self.cells, fixed).items()}

    def fix_edits(self, diagnostic: Diagnostic) -> dict[str, list[types.TextEdit]]:
        assert diagnostic.fix is not None  # offered for the diagnostics with a fix only
        if self.cells is None:
            lines = self.lines_of(self.uri, self.linted.text)
            return {self.uri: [lines.text_edit(edit) for edit in diagnostic.fix.edits]}
        # A notebook's fix is in its JSON's coordinates: the cells' new texts come from the fixed JSON.
        return self.edits_for(apply_fix(self.linted.text, diagnostic.fix.edits))


def code_actions(linter: Linter, document: Document, uri: str, wanted: types.Range, only: list[str] | None,
                 client: Client) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    linted = document.linted
    fixable = {id(d) for d in linter.fixable(linted)}
    lines = document.lines_of(uri, document.text_of(uri))
    here = [(d, shown) for d, shown in document.findings(uri) if _overlaps(lines.range(shown.start, shown.end), wanted)]
    if _wants(only, types.CodeActionKind.QuickFix):
        for diagnostic, shown in here:
            if id(diagnostic) in fixable:
                edits = document.fix_edits(diagnostic)
                if edits:
                    actions.append(_fix_action(diagnostic, _ref(shown, lines), edits, document.versions, client))
        # a notebook's cells are Python; the notebook's JSON opened as text takes the comment inside its strings
        kind = linted.surface.name if document.cells is None else "python"
        for diagnostic, shown in here:
            edit = noqa_edit(shown, document.text_of(uri), kind)
            if edit is not None:
                actions.append(types.CodeAction(
                    title=f"Disable {diagnostic.code} for this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[_ref(shown, lines)],
                    edit=_workspace_edit({uri: [lines.text_edit(edit)]}, document.versions, client),
                ))
    if _wants(only, FIX_ALL_KIND) and any(d.fix is not None and d.fix.applicability is Applicability.SAFE for d in linted.own if id(d) in fixable):
        fixed = linter.fix_all(linted)
        edits = document.edits_for(fixed) if fixed is not None else {}
        if edits:
            actions.append(types.CodeAction(
                title="vllm-lint: fix all safe fixes",
                kind=FIX_ALL_KIND,
                edit=_workspace_edit(edits, document.versions, client),
            ))
    return actions


def _wants(only: list[str] | None, kind: str) -> bool:
    return not only or any(kind == asked or kind.startswith(asked + ".") for asked in only)


def _overlaps(found: types.Range, wanted: types.Range) -> bool:
    start, end = (found.start.line, found.start.character), (found.end.line, found.end.character)
    return not (end < (wanted.start.line, wanted.start.character) or start > (wanted.end.line, wanted.end.character))


def _fix_action(diagnostic: Diagnostic, reference: types.Diagnostic, edits: dict[str, list[types.TextEdit]],
                versions: dict[str, int | None], client: Client) -> types.CodeAction:
    fix = diagnostic.fix
    assert fix is not None  # offered for the diagnostics with a fix only
    unsafe = fix.applicability is Applicability.UNSAFE
    title = f"{'Unsafe fix' if unsafe else 'Fix'} {diagnostic.code}: {fix.message}"
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
        diagnostics=[reference],
        is_preferred=not unsafe,
        edit=_workspace_edit(edits, versions, client, annotation),
    )


def _ref(diagnostic: Diagnostic, lines: Lines) -> types.Diagnostic:
    return types.Diagnostic(range=lines.range(diagnostic.start, diagnostic.end), message=diagnostic.message,
                            code=diagnostic.code, source=SOURCE)


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


def _workspace_edit(edits: dict[str, list[types.TextEdit]], versions: dict[str, int | None], client: Client,
                    annotation: types.ChangeAnnotation | None = None) -> types.WorkspaceEdit:
    if not client.document_changes:
        return types.WorkspaceEdit(changes=edits)
    annotations = None
    if annotation is not None and client.change_annotations:
        annotations = {"vllm-lint-unsafe": annotation}
        edits = {uri: [types.AnnotatedTextEdit(range=e.range, new_text=e.new_text,  # type: ignore[misc]
                                               annotation_id="vllm-lint-unsafe")
                       for e in items] for uri, items in edits.items()}
    documents = [
        types.TextDocumentEdit(text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=versions.get(uri)),
                               edits=items)
        for uri, items in edits.items()
    ]
    return types.WorkspaceEdit(document_changes=documents, change_annotations=annotations)


def hover(document: Document, uri: str, at: types.Position) -> types.Hover | None:
    from vllm_lint.rulebook import load_rules

    rules = load_rules()
    lines = document.lines_of(uri, document.text_of(uri))
    shown = document.linted.diagnostics if document.cells is None else [d for _, d in document.findings(uri)]
    parts = []
    first: types.Range | None = None
    for diagnostic in shown:
        found = lines.range(diagnostic.start, diagnostic.end)
        if not _contains(found, at, diagnostic.start == diagnostic.end):
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
