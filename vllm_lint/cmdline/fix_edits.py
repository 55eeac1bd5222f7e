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
            flag = setting.anchor
            if not isinstance(flag, Span):
                return None
            flag_text = text[flag.start : flag.end]
            if intent.value and flag_text.startswith("--no-") and "=" not in flag_text:
                return [_edit(index, flag.start, flag.start + 5, "--")]
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
        # after the last word every rendering of the launch has: a word written under a condition (an `if`
        # branch's `args+=(...)`, a Helm `{{ if }}`) would take the new flag into its branch
        words = [w for w in found.words if w.condition <= found.head_condition]
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
        flag = setting.anchor
        if not isinstance(flag, Span) or text[flag.start : flag.start + len(setting.spelled)] != setting.spelled:
            return None
        return [_edit(index, flag.start, flag.start + len(setting.spelled), intent.new_key)]
    if isinstance(intent, RemoveSetting):
        return _removal(text, index, found, intent.setting)
    if isinstance(intent, RewriteEntrypoint):
        model = intent.model
        edits = []
        if found.head is not None and found.launch.entrypoint == "api_server":
            replacement = f"{_vllm_beside(text, found.head.start)} serve"
            if model is not None and isinstance(model.value_anchor, Span):
                replacement += " " + text[model.value_anchor.start : model.value_anchor.end]
            edits.append(_edit(index, found.head.start, found.head.end, replacement))
        elif model is None or not isinstance(model.value_anchor, Span):
            return None
        if model is not None and isinstance(model.value_anchor, Span):
            flag = model.anchor
            if not isinstance(flag, Span):
                return None
            if found.launch.entrypoint == "api_server":
                # delete `--model X` with the blank (and continuation) before it
                previous = [w.end for w in found.words if w.end <= flag.start]
                cut = max(previous) if previous else found.head.end if found.head is not None else flag.start
                edits.append(_edit(index, cut, flag.end, ""))
            else:
                value = text[model.value_anchor.start : model.value_anchor.end]
                edits.append(_edit(index, flag.start, flag.end, value))
        return edits or None
    return None


_INTERPRETER = re.compile(r"""(["']?)(\S*/bin/)python[0-9.]*(["']?)(?=\s)""")


def _vllm_beside(text: str, start: int) -> str:
    """The ``vllm`` program to run instead of the interpreter written at ``start``: the one in the same
    environment (``"$VENV/bin/vllm"`` for ``"$VENV/bin/python"``, where pip put it), or plain ``vllm``
    for a system interpreter (``/usr/bin/python3``) or one found on PATH."""
    match = _INTERPRETER.match(text, start)
    if match is None or match.group(1) != match.group(3) or match.group(2) in ("/usr/bin/", "/bin/"):
        return "vllm"
    return f"{match.group(1)}{match.group(2)}vllm{match.group(3)}"


def _removal(text: str, index: TextIndex, found: Found, setting) -> list[Edit] | None:
    """Delete a setting's words with the blank (and line continuation) before them, so the lines around it
    keep their layout; after the entrypoint or a first argument, the blank that follows goes instead."""
    span = setting.anchor
    if not isinstance(span, Span) or not text.startswith(setting.spelled, span.start):
        return None
    before = [w.end for w in found.words if w.end <= span.start]
    if before:
        return [_edit(index, max(before), span.end, "")]
    if found.head is not None:
        return [_edit(index, found.head.end, span.end, "")]
    after = [w.start for w in found.words if w.start >= span.end]
    return [_edit(index, span.start, min(after), "")] if after else None


def option_for(table, key: str) -> str | None:
    for option, flag in table.exact.items():
        if flag.dest == key and option.startswith("--") and not option.startswith("--no-"):
            return option
    return None
