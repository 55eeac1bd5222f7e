"""Markdown: lint fenced code blocks with the surface of their language, positions mapped back.

``bash``/``sh``/``shell``/``console`` (``$ `` prompts), ``dockerfile``, ``yaml``
(compose or Kubernetes by content) and ``python`` (the Python surface). An
``<!-- noqa: VLLnnn -->`` comment on the line before the fence suppresses.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.surfaces import LintJob

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
_LANGS = {
    "bash": "shell", "sh": "shell", "shell": "shell", "zsh": "shell", "console": "console",
    "shell-session": "console", "shellsession": "console", "dockerfile": "dockerfile", "docker": "dockerfile",
    "yaml": "yaml", "yml": "yaml", "python": "python", "py": "python", "python3": "python",
}


def fenced_blocks(text: str):
    """(language, first body line (1-based), body text) for each fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence = match.group("fence")
        info = match.group("info").lower().strip("{}.")
        indent = len(match.group("indent"))
        body = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                break
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            j += 1
        yield info, i + 2, "\n".join(body) + "\n", indent
        i = j + 1


def _console_to_shell(body: str) -> str:
    out = []
    continuing = False
    for line in body.split("\n"):
        stripped = line.lstrip()
        lead = len(line) - len(stripped)
        if stripped.startswith(("$ ", "# ")) and not continuing:
            out.append(line[:lead] + "  " + stripped[2:])
            continuing = stripped.rstrip().endswith("\\")
        elif continuing:
            out.append(line)
            continuing = line.rstrip().endswith("\\")
        elif stripped.startswith("> ") and out and out[-1].strip():
            out.append(line[:lead] + "  " + stripped[2:])
        else:
            out.append("")
    return "\n".join(out)


def lint_markdown(display: str, text: str, job: LintJob) -> list[Diagnostic]:
    from vllm_lint.surfaces.command_lint import lint_text, shift

    diagnostics: list[Diagnostic] = []
    doc_lines = text.split("\n")
    for info, first_line, body, indent in fenced_blocks(text):
        kind = _LANGS.get(info)
        # command lines launch vLLM by name; a Python block is screened like a Python file (VLL101 needs no vLLM)
        if kind is None or (kind != "python" and "vllm" not in body.lower()):
            continue
        if kind == "console":
            body, kind = _console_to_shell(body), "shell"
        if kind == "yaml":
            kind = "kubernetes" if re.search(r"^kind:\s*\S", body, re.MULTILINE) else "compose"
        # A block is a snippet of documentation, not a module of the tree it sits in: the Python rules'
        # test-file exemption (a `tests/` directory, `test_*.py`) does not apply to it.
        sub_job = replace(job, data=body.encode("utf-8"), display=PurePosixPath(display).name + ".block")
        if kind == "python":
            from vllm_lint.surfaces.python import lint as lint_python
            from vllm_lint.surfaces.python import may_match as python_may_match

            if not python_may_match(sub_job):
                continue
            found = lint_python(sub_job)
        else:
            found = lint_text(kind, display, body, sub_job)
        fence_line = first_line - 1
        extra = (fence_line - 1,) if fence_line > 1 else ()
        for diagnostic in found:
            moved = shift(diagnostic, first_line - 1, display, extra)
            if indent:
                moved = _reindented(moved.moved(0, indent), indent, doc_lines)
            diagnostics.append(moved)
    return diagnostics


def _reindented(diagnostic, indent: int, doc_lines: list[str]):
    """A fix in an indented block (a fence inside a list item) must indent the lines it inserts as the
    block's own lines are. Where that cannot be done exactly (an edit on a blank line, which carries no
    indentation in the document), the finding is reported without its fix."""
    from dataclasses import replace

    from vllm_lint.diagnostics import Edit, Fix

    fix = diagnostic.fix
    if fix is None:
        return diagnostic
    pad = " " * indent
    for edit in fix.edits:
        for line in (edit.start.line, edit.end.line):
            if not (1 <= line <= len(doc_lines)) or not doc_lines[line - 1].startswith(pad):
                return replace(diagnostic, fix=None)
    edits = tuple(Edit(e.start, e.end, e.content.replace("\n", "\n" + pad)) for e in fix.edits)
    return replace(diagnostic, fix=Fix(fix.applicability, fix.message, edits))
