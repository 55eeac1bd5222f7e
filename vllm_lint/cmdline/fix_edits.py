"""Fixes on command lines: a launch finding's fix intent turned into text edits of the words it was read from.

Shared by every surface whose launches are command lines (shell, Dockerfile, YAML, Markdown) and by Python
argument lists and command strings, which keep their words' positions in the file.
"""

from __future__ import annotations

import re

from vllm_lint.cmdline.launches import Found
from vllm_lint.cmdline.serve_args import Span, flag_table
from vllm_lint.diagnostics import Edit
from vllm_lint.launch.record import AddSetting, LaunchFinding, RemoveSetting, Rename, RewriteEntrypoint, SetValue
from vllm_lint.text import TextIndex


_NUMBER = re.compile(r"^(['\"]?)([0-9.]+)(['\"]?)$")


def _edit(index: TextIndex, start: int, end: int, content: str) -> Edit:
    return Edit(index.position(start), index.position(end), content)


def render_edits(text: str, index: TextIndex, found: Found, finding: LaunchFinding, api) -> list[Edit] | None:
    intent = finding.fix
    launch = found.launch
    table = flag_table(launch.api or api, "api_server" if launch.kind == "api_server" else "serve")
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
                removal = _removal(index, found, model)
                if removal is None:
                    return None
                edits.append(removal)
            else:
                value = text[model.value_anchor.start : model.value_anchor.end]
                edits.append(_edit(index, model.anchor.start, model.anchor.end, value))
        return edits or None
    if isinstance(intent, RemoveSetting):
        removal = _removal(index, found, intent.setting)
        return [removal] if removal is not None else None
    return None


def _removal(index: TextIndex, found: Found, setting) -> Edit | None:
    """Delete a setting (``--flag value``) with the blank, or the line continuation, before it."""
    if not isinstance(setting.anchor, Span):
        return None
    previous = [w.end for w in found.words if w.end <= setting.anchor.start]
    if previous:
        cut = max(previous)
    elif found.head is not None:
        cut = found.head.end
    else:
        return None
    return _edit(index, cut, setting.anchor.end, "")


def option_for(table, key: str) -> str | None:
    for option, flag in table.exact.items():
        if flag.dest == key and option.startswith("--") and not option.startswith("--no-"):
            return option
    return None
