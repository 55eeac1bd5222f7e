"""Markdown: lint fenced code blocks with the surface of their language, positions mapped back.

``bash``/``sh``/``shell``/``zsh``; terminal sessions (``console``, ``shell-session``, ``terminal``,
``commandline`` and unlabelled fences: the lines after a prompt, or in an unlabelled fence without one
only lines that start a vLLM launch); ``dockerfile`` (only what it writes is checked: see
``lint_markdown``); ``yaml`` (compose or Kubernetes by content) and ``python`` (the Python surface).
Fences inside list items and block quotes are read too. An ``<!-- noqa: VLLnnn -->`` comment on the line
before the fence suppresses.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.surfaces.job import LintJob
from vllm_lint.rulebook import PARSE_ERROR_CODE

_FENCE = re.compile(r"^(?P<prefix>(?:[ ]{0,3}>[ ]?)*)(?P<indent>[ ]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
_LIST_ITEM = re.compile(r"^(?P<marker>[ ]*(?:[-*+]|\d{1,9}[.)])[ ]+)\S")
_LANGS = {
    "bash": "script", "sh": "script", "shell": "script", "zsh": "script", "ksh": "script",
    "console": "console", "shell-session": "console", "shellsession": "console", "sh-session": "console",
    "bash-session": "console", "terminal": "console", "commandline": "console", "cmd": "console", "": "console",
    "dockerfile": "dockerfile", "docker": "dockerfile", "containerfile": "dockerfile",
    "yaml": "yaml", "yml": "yaml", "python": "python", "py": "python", "python3": "python",
}
# A shell prompt in front of a command: "$ ", "% " (zsh), "user@host:~/dir$ ", "(venv) $ ", "❯ ", "# " (root)
_PROMPT = re.compile(r"^(?P<prompt>[ \t]*(?:\([\w.-]+\)[ \t]*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#%]*)?[ \t]*)?[$%#❯][ \t]+)\S")
# the first line of a block (after blanks and comments) is a command that takes a here-document
_HEREDOC_COMMAND = re.compile(r"^(?:[ \t]*(?:#.*)?\n)*[ \t]*(?:\$[ \t]+)?[A-Za-z_./-][^\n:]*<<-?[ \t]*['\"]?[A-Za-z_]\w*")
_LAUNCH_START = re.compile(r"^[ \t]*(?:sudo[ \t]+|nohup[ \t]+|exec[ \t]+|env[ \t]+\S+=\S*[ \t]+|[A-Z_][A-Z0-9_]*=\S*[ \t]+)*(?:vllm[ \t]|python3?[ \t]+-m[ \t]+vllm|docker[ \t]+run[ \t]|podman[ \t]+run[ \t])")


def fenced_blocks(text: str):
    """(language, first body line (1-based), body text, prefix) for each fenced block; ``prefix`` is what
    stands before each body line in the document (a list item's indentation, a block quote's "> ").

    CommonMark's containers as READMEs use them: a fence may be indented past 3 spaces inside a list item
    (up to the item's content column + 3), and inside block quotes."""
    lines = text.split("\n")
    i = 0
    list_content: int | None = None  # the content column of the list item being read
    while i < len(lines):
        line = lines[i]
        item = _LIST_ITEM.match(line)
        if item is not None:
            list_content = len(item.group("marker"))
        elif line.strip() and not line.startswith((" ", "\t", ">")):
            list_content = None
        match = _FENCE.match(line)
        indent = len(match.group("indent")) if match else 0
        if match is None or (indent > 3 and (list_content is None or indent > list_content + 3)):
            i += 1
            continue
        fence = match.group("fence")
        info = match.group("info").lower().strip("{}.")
        prefix = match.group("prefix") + match.group("indent")
        body = []
        j = i + 1
        while j < len(lines):
            current = lines[j]
            quote = match.group("prefix")
            inner = current[len(quote) :] if quote and current.startswith(quote.rstrip()) else current
            stripped = inner.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                break
            if quote and not current.startswith(quote.rstrip()):
                break  # the block quote ended, and the fence with it
            body.append(current[len(prefix) :] if current.startswith(prefix) else current[min(len(prefix), len(current) - len(current.lstrip(" >"))) :])
            j += 1
        yield info, i + 2, "\n".join(body) + "\n", prefix
        i = j + 1


def _console_to_shell(body: str, *, unlabelled: bool = False, script: bool = False) -> str:
    """The commands of a terminal session: the lines after a prompt and their continuations (a ``> ``
    continuation prompt taken off); without any prompt, every line (a script, or a ``terminal`` block of
    bare commands), except in an unlabelled fence, where only lines that start a vLLM launch count. Every
    other line is blank, so none moves."""
    lines = body.split("\n")

    def prompt_of(line: str):
        prompt = _PROMPT.match(line)
        # "# " reads as a root prompt in a session block only: in a script or an unlabelled fence it is a comment
        return None if prompt is None or ((unlabelled or script) and prompt.group("prompt").strip().endswith("#")) else prompt

    prompted = any(prompt_of(line) for line in lines)
    out = []
    continuing = False
    for line in lines:
        prompt = prompt_of(line)
        if continuing:
            continuation = re.match(r"^[ \t]*> ", line) if prompted else None
            out.append(" " * continuation.end() + line[continuation.end() :] if continuation else line)
        elif prompt is not None and prompted:
            out.append(" " * len(prompt.group("prompt")) + line[len(prompt.group("prompt")) :])
        elif not prompted and (not unlabelled or _LAUNCH_START.match(line)):
            out.append(line)
        elif line.lstrip().startswith("> ") and out and out[-1].strip():
            lead = len(line) - len(line.lstrip())
            out.append(line[:lead] + "  " + line.lstrip()[2:])
        else:
            out.append("")
            continuing = False
            continue
        continuing = line.rstrip().endswith("\\")
    return "\n".join(out)


def lint_markdown(display: str, text: str, job: LintJob) -> list[Diagnostic]:
    from vllm_lint.surfaces.command_lint import lint_text, shift

    diagnostics: list[Diagnostic] = []
    doc_lines = text.split("\n")
    for info, first_line, body, prefix in fenced_blocks(text):
        kind = _LANGS.get(info)
        # command lines launch vLLM by name; a Python block is screened like a Python file (VLL101 needs no vLLM)
        if kind is None or (kind != "python" and "vllm" not in body.lower()):
            continue
        if kind in ("console", "script"):
            body = _console_to_shell(body, unlabelled=info == "", script=kind == "script")
            kind = "shell"
        if kind == "yaml" and _HEREDOC_COMMAND.match(body):
            # a fence labelled yaml that holds the command feeding its YAML to kubectl (``cat <<EOF | kubectl
            # apply -f -``): shell, whose here-document is read as the manifest it is
            body, kind = _console_to_shell(body, script=True), "shell"
        if kind == "yaml":
            kind = "kubernetes" if re.search(r"^kind:\s*\S", body, re.MULTILINE) else "compose"
        # A block is a snippet of documentation, not a module of the tree it sits in: the Python rules'
        # test-file exemption (a `tests/` directory, `test_*.py`) does not apply to it. Its fixes' edits are
        # always made: mapping them into the document decides whether a fix is offered (_reindented).
        # Its facts are its own (facts=None): a block that stops early (a syntax error) must not hand back the
        # document's facts gathered so far, which would be taken again at this block's lines.
        sub_job = replace(job, data=body.encode("utf-8"), display=PurePosixPath(display).name + ".block", standalone=False,
                          fix_edits=True, facts=None)
        if kind == "python":
            from vllm_lint.surfaces.python import lint as lint_python
            from vllm_lint.surfaces.python import may_match as python_may_match

            if not python_may_match(sub_job):
                continue
            found = lint_python(sub_job)
        else:
            # A Dockerfile in documentation shows what an image contains; whoever runs the image completes
            # its launch (docker run's arguments replace CMD), so only what the block writes is checked.
            found = lint_text(kind, display, body, sub_job, written_only=kind == "dockerfile")
        # A block that cannot be read is no mistake of the document's: documentation elides (a YAML block that
        # starts with "...", a Python one cut mid-statement), and an unlabelled fence was read as shell on a
        # guess (a YAML string that runs over lines). What the block holds is simply not known.
        found = [d for d in found if d.code != PARSE_ERROR_CODE]
        fence_line = first_line - 1
        extra = (fence_line - 1,) if fence_line > 1 else ()
        if sub_job.facts:
            _take_facts(job, sub_job.facts, first_line - 1, len(prefix), extra)
        for diagnostic in found:
            moved = shift(diagnostic, first_line - 1, display, extra)
            if prefix:
                moved = _reindented(moved.moved(0, len(prefix)), prefix, doc_lines)
            diagnostics.append(moved)
    return diagnostics


def _take_facts(job: LintJob, block, lines: int, columns: int, extra_noqa: tuple[int, ...]) -> None:
    """A block's facts for the project rules, at the document's lines and columns (and suppressed, as its
    findings are, by a noqa comment before the fence)."""
    from vllm_lint.project.facts import FileFacts

    job.facts = job.facts or FileFacts()
    job.facts.servers += [replace(server, line=server.line + lines) for server in block.servers]
    job.facts.requests += [
        replace(r, start=r.start.moved(lines, columns), end=r.end.moved(lines, columns),
                noqa_lines=tuple(sorted({*(n + lines for n in r.noqa_lines), *extra_noqa})))
        for r in block.requests
    ]


def _reindented(diagnostic, pad: str, doc_lines: list[str]):
    """A fix in an indented block (a fence inside a list item) must indent the lines it inserts as the
    block's own lines are. Where that cannot be done exactly (an edit on a blank line, which carries no
    indentation in the document), the finding is reported without its fix."""
    from dataclasses import replace

    from vllm_lint.diagnostics import Edit, Fix

    fix = diagnostic.fix
    if fix is None:
        return diagnostic
    for edit in fix.edits:
        for line in (edit.start.line, edit.end.line):
            if not (1 <= line <= len(doc_lines)) or not doc_lines[line - 1].startswith(pad):
                return replace(diagnostic, fix=None)
    edits = tuple(Edit(e.start, e.end, e.content.replace("\n", "\n" + pad)) for e in fix.edits)
    return replace(diagnostic, fix=Fix(fix.applicability, fix.message, edits))
