"""VLL001: a noqa comment naming a vllm-lint code that suppresses nothing, as ruff's RUF100.

Only this linter's codes (``VLL``) are judged: the same comment serves ruff, flake8 and others, whose codes
vllm-lint cannot know, and a bare ``# noqa`` may be theirs too. A code is judged only where its rule ran on the
file (selected, out of preview, not per-file-ignored, not decided across files): a comment written for a rule
another configuration runs (the editor's, CI's with ``--preview``) is not dead because this run left it out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from vllm_lint.diagnostics import Diagnostic, Edit, Position
from vllm_lint.engine.suppressions import FileNoqa, NoqaFinding, noqa_directive, suppressing_lines
from vllm_lint.registry import noqa_rule

NAMESPACE = "VLL"
_CODE = re.compile(r"[A-Za-z]+[0-9]+")
_HASH = re.compile(r"#\s*")
# The rest of a notebook's source line after a comment: up to the "\n" and the quote that end its JSON string.
_JSON_STRING_END = re.compile(r'(?P<rest>(?:[^"\\]|\\.)*?)(?:\\n)?"\s*,?\s*$')


@noqa_rule("VLL001")
def unused_noqa(file: FileNoqa) -> Iterator[NoqaFinding]:
    lines = file.text.split("\n")
    used = _used_codes(file.findings, lines)
    comments: set[tuple[int, int]] | None = None
    for number in _lines_with_noqa(file.text):
        line = lines[number - 1]
        directive = noqa_directive(line)
        if directive is None or directive.group("codes") is None:
            continue  # a bare noqa: other linters read it too
        verdicts = _verdicts(directive, used[number], file)
        if not any(verdict for _, _, _, verdict in verdicts):
            continue
        if file.surface == "python":
            comments = _python_comments(file.text) if comments is None else comments
            if not any(row == number and column <= directive.start() for row, column in comments):
                continue  # the directive sits inside a string: not a comment
        yield NoqaFinding(
            _message(verdicts),
            Position(number, directive.start() + 1),
            Position(number, directive.end() + 1),
            _fix(line, number, len(lines), directive, verdicts, file.surface),
        )


def _lines_with_noqa(text: str) -> list[int]:
    """The numbers of the lines that hold "noqa" in any case, in order: found in the text lowered whole (lowering
    maps no character to a line break or to these letters but their own), not line by line in Python."""
    lowered = text.lower()
    numbers: list[int] = []
    line, counted, start = 1, 0, lowered.find("noqa")
    while start != -1:
        line += lowered.count("\n", counted, start)
        numbers.append(line)
        counted = lowered.find("\n", start)
        if counted == -1:
            break
        line += 1
        counted += 1
        start = lowered.find("noqa", counted)
    return numbers


def _used_codes(findings: tuple[Diagnostic, ...], lines: list[str]) -> dict[int, set[str]]:
    """The codes each line's noqa comment switches off a finding of (suppressions.py decides it the same way)."""
    used: dict[int, set[str]] = defaultdict(set)
    for finding in findings:
        for number in suppressing_lines(finding, lines):
            used[number].add(finding.code)
    return used


def _verdicts(directive: re.Match[str], used: set[str], file: FileNoqa) -> list[tuple[str, int, int, str]]:
    """Each code the comment names, with its span on the line and why it is dead ("" when it is not)."""
    offset = directive.start("codes")
    seen: set[str] = set()
    verdicts = []
    for match in _CODE.finditer(directive.group("codes")):
        code = match.group().upper()
        verdict = ""
        if code.startswith(NAMESPACE):
            if code in seen:
                verdict = "duplicated"
            elif code in used:
                verdict = ""
            elif code not in file.known:
                verdict = "unknown"
            elif code in file.judged:
                verdict = "unused"
        seen.add(code)
        verdicts.append((match.group(), offset + match.start(), offset + match.end(), verdict))
    return verdicts


def _message(verdicts: list[tuple[str, int, int, str]]) -> str:
    parts = []
    for reason in ("unknown", "unused", "duplicated"):
        codes = [f"`{code}`" for code, _, _, verdict in verdicts if verdict == reason]
        if codes:
            parts.append(f"{reason}: {', '.join(codes)}")
    return f"noqa comment that suppresses nothing ({'; '.join(parts)})"


def _fix(
    line: str,
    number: int,
    count: int,
    directive: re.Match[str],
    verdicts: list[tuple[str, int, int, str]],
    surface: str,
) -> tuple[Edit, ...] | None:
    kept = [(code, start, end) for code, start, end, verdict in verdicts if not verdict]
    if kept:
        # The codes kept, each after the separator that came before it: the rest of the line stays as it was.
        text = kept[0][0]
        spans = [(start, end) for _, start, end, _ in verdicts]
        for code, start, _ in kept[1:]:
            previous_end = max(end for _, end in spans if end <= start)
            text += line[previous_end:start] + code
        return (
            Edit(Position(number, directive.start("codes") + 1), Position(number, directive.end("codes") + 1), text),
        )
    return _delete_comment(line, number, count, directive, surface)


def _delete_comment(
    line: str, number: int, count: int, directive: re.Match[str], surface: str
) -> tuple[Edit, ...] | None:
    """The edit that takes the comment out, as ruff's: the line when the comment is all of it, the comment and
    the spaces before it at the end of a line; before another comment only the directive; before its reason
    (``# noqa: VLL101 - why``) the directive's words, the ``#`` kept."""
    start, end = directive.start(), directive.end()
    content_start, content_end = 0, len(line.rstrip("\r"))
    if surface == "notebook":  # the comment sits inside a JSON string: only that string's text is the line's
        tail = _JSON_STRING_END.match(line, end)
        if tail is None:
            return None
        content_start, content_end = line.find('"') + 1, tail.end("rest")
    before, after = line[content_start:start], line[end:content_end]
    leading = len(before) - len(before.rstrip())
    trailing = len(after) - len(after.lstrip())

    def cut(first: int, last: int) -> tuple[Edit, ...]:
        return (Edit(Position(number, first + 1), Position(number, last + 1), ""),)

    if not before.strip() and not after.strip():
        if surface != "notebook":
            if number < count:
                return (Edit(Position(number, 1), Position(number + 1, 1), ""),)
            return cut(0, content_end)
        return cut(start - leading, content_end)
    if not after.strip():
        return cut(start - leading, content_end)
    if after.lstrip().startswith("#") or directive.group().startswith("<!--"):
        return cut(start, end + trailing)
    hashes = _HASH.match(line, start)
    return cut(hashes.end() if hashes else start, end + trailing)


def _python_comments(text: str) -> set[tuple[int, int]]:
    """Where each comment of a Python file starts (line, 0-based column); none when it does not tokenize."""
    import io
    import tokenize

    try:
        return {
            token.start
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type == tokenize.COMMENT
        }
    except (tokenize.TokenError, SyntaxError):
        return set()
