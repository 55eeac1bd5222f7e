"""Fixes for vLLM command lines in Python: edit the argument list or the command string in place.

The launch rules state what to change; here it becomes a LibCST replacement of the list literal (its
slots keep their commas and line breaks) or of the string literal (the shell surface's own text edits,
applied to the string's body). Only literals whose source is their value are edited.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from vllm_lint.cmdline.serve_args import Span
from vllm_lint.launch.record import (
    AddSetting,
    LaunchFinding,
    RemoveSetting,
    Rename,
    RewriteEntrypoint,
    Setting,
    SetValue,
)
from vllm_lint.python.argv import Piece, simple_body
from vllm_lint.python.command_lines import CommandLine
from vllm_lint.python.context import NodeEdit
from vllm_lint.lazy_re import lazy_compile

_NUMBER = lazy_compile(r"^[0-9.]+$")


def _string(text: str, quote: str) -> cst.SimpleString:
    return cst.SimpleString(f"{quote}{text}{quote}")


def render_command_fix(line: CommandLine, finding: LaunchFinding) -> list[NodeEdit]:
    intent = finding.fix
    first = line.launch_piece
    if first.text is not None:
        return _render_in_string(line, first, finding)
    if isinstance(intent, Rename):
        return _edit_element(line, line.originals.get(id(intent.setting)), _renamer(intent))
    if isinstance(intent, SetValue):
        return _set_value(line, intent)
    if isinstance(intent, AddSetting):
        return _add_setting(line, intent)
    if isinstance(intent, RewriteEntrypoint):
        return _rewrite_entrypoint(line, intent)
    if isinstance(intent, RemoveSetting):
        return _remove_setting(line, intent)
    return []


def _remove_setting(line: CommandLine, intent: RemoveSetting) -> list[NodeEdit]:
    """Drop the list elements a setting is written in (a flag, and its value when that is its own element)."""
    setting = line.originals.get(id(intent.setting))
    if setting is None or not isinstance(setting.anchor, Span):
        return []
    first, last = line.piece_at(setting.anchor.start), line.piece_at(setting.anchor.end - 1)
    container = first.container
    if container is None or last.container is not container or first.start != setting.anchor.start or last.end != setting.anchor.end:
        return []  # part of an element, or across what the list holds: not a removal of whole elements
    kept = [e for index, e in enumerate(container.elements) if not first.index <= index <= last.index]
    return [NodeEdit(container, _rebuild(container, kept))] if kept else []


def _renamer(intent: Rename):
    def rename(body: str, setting: Setting, piece: Piece) -> str | None:
        if not body.startswith(setting.spelled):
            return None
        return intent.new_key + body[len(setting.spelled) :]

    return rename


def _edit_element(line: CommandLine, setting: Setting | None, change) -> list[NodeEdit]:
    if setting is None or not isinstance(setting.anchor, Span):
        return []
    piece = line.piece_at(setting.anchor.start)
    simple = simple_body(piece.node)
    if simple is None:
        return []
    head, body, quote = simple
    new = change(body, setting, piece)
    if new is None or quote in new or "\\" in new:
        return []
    return [NodeEdit(piece.node, cst.SimpleString(f"{head}{new}{quote}"))]


def _set_value(line: CommandLine, intent: SetValue) -> list[NodeEdit]:
    setting = line.originals.get(id(intent.setting))
    if setting is None:
        return []
    if isinstance(intent.value, bool):
        # only `--no-flag` -> `--flag` is a change we can write
        def enable(body: str, s: Setting, piece: Piece) -> str | None:
            return "--" + body[5:] if intent.value and body.startswith("--no-") and "=" not in body else None

        return _edit_element(line, setting, enable)
    if not isinstance(setting.value_anchor, Span) or setting.value is None or setting.value.origin is not None:
        return []  # a constant or default shared elsewhere: leave it to the user
    value_span = setting.value_anchor

    def set_number(body: str, s: Setting, piece: Piece) -> str | None:
        start, end = value_span.start - piece.start, value_span.end - piece.start
        if not _NUMBER.match(body[start:end]):
            return None
        return body[:start] + f"{intent.value:.2f}" + body[end:]

    piece = line.piece_at(value_span.start)
    return _edit_element(line, replace(setting, anchor=Span(piece.start, piece.end)), set_number)


def _quote_of(container: cst.List | cst.Tuple) -> str:
    for element in container.elements:
        if isinstance(element.value, cst.SimpleString):
            return element.value.quote
    return '"'


def _rebuild(container: cst.List | cst.Tuple, items: list[cst.BaseElement]) -> cst.List | cst.Tuple:
    """``container`` holding ``items``, each slot keeping the comma (and line break) written there."""
    old = list(container.elements)
    commas = [e.comma for e in old]
    middle = next((c for c in reversed(commas[:-1]) if isinstance(c, cst.Comma)), cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    out = []
    for index, item in enumerate(items):
        if index == len(items) - 1:
            comma = commas[-1] if commas else cst.MaybeSentinel.DEFAULT
        elif index < len(old) - 1:
            comma = commas[index]
        else:
            comma = middle
        if index != len(items) - 1 and not isinstance(comma, cst.Comma):
            comma = middle
        out.append(item.with_changes(comma=comma))
    return container.with_changes(elements=out)


def _add_setting(line: CommandLine, intent: AddSetting) -> list[NodeEdit]:
    from vllm_lint.cmdline.fix_edits import option_for

    option = option_for(line.table, intent.key)
    words = line.found.words
    head = line.found.head
    anchor = words[-1].start if words else (head.end - 1 if head else None)
    if option is None or anchor is None:
        return []
    # the list the command starts in, where it has one: a list it grows by later (`cmd.extend([...])` under
    # an `if`) may not be added in every run
    starting = line.piece_at(head.start).container if head is not None else None
    container = starting if starting is not None else line.piece_at(anchor).container
    if container is None:
        return []
    value = f"{intent.value:.2f}" if isinstance(intent.value, float) else str(intent.value)
    quote = _quote_of(container)
    items = [*container.elements, cst.Element(_string(option, quote)), cst.Element(_string(value, quote))]
    return [NodeEdit(container, _rebuild(container, items))]


def _rewrite_entrypoint(line: CommandLine, intent: RewriteEntrypoint) -> list[NodeEdit]:
    found = line.found
    if found.head is None:
        return []
    first, last = line.piece_at(found.head.start), line.piece_at(found.head.end - 1)
    container = last.container
    if container is None or first.container is not container:
        return []
    quote = _quote_of(container)
    elements = list(container.elements)
    model = line.originals.get(id(intent.model)) if intent.model is not None else None
    moved: cst.BaseElement | None = None
    drop: set[int] = set()
    if model is not None and isinstance(model.anchor, Span) and isinstance(model.value_anchor, Span):
        flag, value = line.piece_at(model.anchor.start), line.piece_at(model.value_anchor.start)
        if flag.container is not container or value.container is not container:
            return []
        drop = {flag.index, value.index}
        if flag is value:  # `--model=X`: the value becomes its own argument
            if model.value is None:
                return []
            moved = cst.Element(_string(str(model.value.value), quote))
        else:
            moved = elements[value.index]
    if found.launch.entrypoint == "api_server":
        # `python -m vllm.entrypoints.cli.main serve` is what the `vllm serve` script runs, and keeps the
        # interpreter (sys.executable, a venv's python) the list names
        head: list[cst.BaseElement] = [cst.Element(_string("vllm.entrypoints.cli.main", quote)), cst.Element(_string("serve", quote))]
    elif moved is not None:
        head = [elements[last.index]]
    else:
        return []
    items: list[cst.BaseElement] = []
    for index, element in enumerate(elements):
        if index in drop:
            continue
        if index == last.index:
            items += head + ([moved] if moved is not None else [])
            continue
        items.append(element)
    return [NodeEdit(container, _rebuild(container, items))]


def _render_in_string(line: CommandLine, piece: Piece, finding: LaunchFinding) -> list[NodeEdit]:
    """A fix inside one command string: the shell surface's text edits, applied to the string's body."""
    from vllm_lint.cmdline.fix_edits import render_edits
    from vllm_lint.text import TextIndex

    simple = simple_body(piece.node) if piece.body_exact else None
    if simple is None or piece.text is None:
        return []
    head, body, quote = simple
    intent = finding.fix
    if isinstance(intent, (SetValue, Rename, RemoveSetting)):
        original = line.originals.get(id(intent.setting))
        if original is None:
            return []
        intent = replace(intent, setting=original)
    elif isinstance(intent, RewriteEntrypoint) and intent.model is not None:
        intent = replace(intent, model=line.originals.get(id(intent.model)))
    # padding puts the body at its offsets in the private space, so the spans apply unchanged
    padded = " " * piece.start + body
    index = TextIndex(padded)
    edits = render_edits(padded, index, line.found, replace(finding, fix=intent), line.api)
    if not edits:
        return []
    text = padded
    for edit in sorted(edits, key=lambda e: index.offset(e.start), reverse=True):
        text = text[: index.offset(edit.start)] + edit.content + text[index.offset(edit.end) :]
    new = text[piece.start :]
    if quote in new or "\\" in new or ("\n" in new and len(quote) == 1):
        return []
    return [NodeEdit(piece.node, cst.SimpleString(f"{head}{new}{quote}"))]
