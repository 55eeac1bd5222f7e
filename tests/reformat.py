"""Re-format source without changing what it means, and map positions through the edit.

Python (read with ``tokenize``): a bracketed list or call split one item per line, or joined on one line; a
string in the other quotes; a comment at the end of a line; a blank line between statements. Shell: a
command's words split over lines with continuation backslashes. Each site is edited or not as ``choose``
says, so a property test can draw which.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

Choose = Callable[[str], bool]  # asked once per site, with the kind of edit


@dataclass(frozen=True)
class Edit:
    start: int  # offset in the original text
    end: int
    text: str


class Reformatted:
    """The new text and a map from the original's (line, column) to the new one's (1-based lines, 0-based columns)."""

    def __init__(self, original: str, edits: list[Edit]) -> None:
        self.original = original
        self.edits = sorted(edits, key=lambda edit: edit.start)
        pieces, last = [], 0
        for edit in self.edits:
            pieces += [original[last:edit.start], edit.text]
            last = edit.end
        pieces.append(original[last:])
        self.text = "".join(pieces)
        self._old_starts = _line_starts(original)
        self._new_starts = _line_starts(self.text)

    def position(self, line: int, column: int) -> tuple[int, int]:
        offset = self._old_starts[line - 1] + column
        shift = 0
        for edit in self.edits:
            if edit.start > offset or (edit.start == offset and edit.end > edit.start):
                break  # an edit that replaces text starting here keeps this position at its start
            if edit.end > offset:
                if len(edit.text) != edit.end - edit.start:
                    offset = edit.start  # inside replaced blanks: where the replacement starts
                break  # inside a string whose quotes were swapped: the same place in it
            shift += len(edit.text) - (edit.end - edit.start)
        new = offset + shift
        index = bisect.bisect_right(self._new_starts, new) - 1
        return index + 1, new - self._new_starts[index]


def _line_starts(text: str) -> list[int]:
    return [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]


_SIMPLE_STRING = re.compile(r"""^([rRbBuUfF]{0,2})(["'])([^"'\\\n]*)\2$""")


def python(text: str, choose: Choose) -> Reformatted:
    """Python edits at the sites ``choose`` accepts: "split" after a comma in brackets, "join" a line break in
    brackets, "quotes", "comment" before a line's end, "blank" line after a statement."""
    starts = _line_starts(text)

    def offset(position: tuple[int, int]) -> int:
        return starts[position[0] - 1] + position[1]

    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits: list[Edit] = []
    depth = 0
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        previous = tokens[index - 1] if index else None
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif token.type == tokenize.OP and token.string == "," and depth > 0 and following is not None:
            if following.start[0] == token.end[0] and following.type not in (tokenize.NL, tokenize.COMMENT) and choose("split"):
                edits.append(Edit(offset(token.end), offset(token.end), "\n    "))
        elif token.type == tokenize.NL and depth > 0 and previous is not None and previous.type != tokenize.COMMENT:
            if following is not None and following.type not in (tokenize.NL, tokenize.COMMENT) and choose("join"):
                edits.append(Edit(offset(token.start), offset(following.start), " "))
                continue  # a comment here would swallow the joined line
        elif token.type == tokenize.STRING:
            match = _SIMPLE_STRING.match(token.string)
            if match and choose("quotes"):
                swapped = "'" if match.group(2) == '"' else '"'
                edits.append(Edit(offset(token.start), offset(token.end), f"{match.group(1)}{swapped}{match.group(3)}{swapped}"))
        if token.type in (tokenize.NEWLINE, tokenize.NL) and token.string and previous is not None:
            if previous.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE) and choose("comment"):
                edits.append(Edit(offset(token.start), offset(token.start), "  # reformatted"))
        if token.type == tokenize.NEWLINE and token.string and choose("blank"):
            edits.append(Edit(offset(token.end), offset(token.end), "\n"))
    return Reformatted(text, _without_overlaps(edits))


def _without_overlaps(edits: list[Edit]) -> list[Edit]:
    kept: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if kept and edit.start < kept[-1].end:
            continue
        kept.append(edit)
    return kept


_SHELL_WORD_GAP = re.compile(r"(?<=\S) (?=-{1,2}\w|\w)")
_HERE_DOCUMENT = re.compile(r"""(?<!<)<<(?!<)-?\s*["']?(\w+)["']?""")


def shell(text: str, choose: Choose) -> Reformatted:
    """A space between two words of a line that mentions vLLM becomes `` \\`` and a line break ("split"); lines
    with quotes, comments, continuations or here-documents, and the bodies of here-documents (text, not shell
    words), are left alone."""
    edits, start = [], 0
    delimiter = None  # inside a here-document's body: the word that ends it
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if delimiter is not None:
            if body.strip() == delimiter:
                delimiter = None
        elif "<<" in body:
            opened = _HERE_DOCUMENT.search(body)
            delimiter = opened.group(1) if opened else None
        elif "vllm" in body and not re.search(r"""["'#\\`$<]""", body) and not body.lstrip().startswith(("EOF", "END")):
            for gap in _SHELL_WORD_GAP.finditer(body):
                if choose("split"):
                    edits.append(Edit(start + gap.start(), start + gap.end(), " \\\n    "))
        start += len(line)
    return Reformatted(text, edits)
