"""A big module cut down to what a rule could read: its top-level functions that nothing else reaches blanked.

Parsing costs in proportion to a module's size (LibCST: about 5 s a megabyte, and some hundreds of megabytes of
nodes), but a rule reads only code that uses something: a module-level name (an import, an assignment), another
function that does. A generated module of 50,000 arithmetic helpers and one request handler holds one function
that matters. So for a big module (``FOCUS_BYTES`` and over), before anything parses it:

- the text is cut into its top-level statements, by the lines that start at column 0 outside a string;
- a ``def`` with no decorator is *kept* when it mentions a name that kept code mentions (or kept code mentions
  its name), when it imports, or when it declares ``global``/``nonlocal``; everything else (classes, decorated
  functions, imports, assignments, ``if`` blocks) is kept;
- what is not kept becomes a bytes literal over the same lines (a statement that does nothing): every kept line
  keeps its number and its columns, so findings point where they would, and a fix whose edits stay within kept
  lines applies to the file as it is.

A dropped function mentions no name any kept code mentions, imports nothing and rebinds no module name: nothing
kept can call it or read what it binds, and it holds nothing a rule could resolve (every vLLM, transformers or
framework name is imported). When the cut misreads the layout (a bracket continued at column 0 inside a
function), the focused text does not parse and the caller parses the whole module instead. What is given up: a
syntax error inside a dropped function is not reported (finding it would need the whole parse this avoids).
"""

from __future__ import annotations

import builtins
import keyword
import re
from bisect import bisect_right
from dataclasses import dataclass

from vllm_lint.lazy_re import lazy_compile

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# Below this, a module is parsed whole: cutting it would save little, and every file people write is smaller.
FOCUS_BYTES = 256 * 1024

# Strings and comments, as the tokenizer reads them (a backslash escapes the next character, in raw strings too).
_STRING_OR_COMMENT = lazy_compile(
    r"#[^\n]*"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)'
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:'''|\Z)"
    r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
    r"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'?",
    re.DOTALL,
)
# A line that starts at column 0 with code (not a blank, not a comment, not a closing bracket): its line break.
_NOT_TOP = frozenset(" \t\f\r\n#)]}\\")
_TOP_LINE = lazy_compile(r"\n(?=[^\s#)\]}\\])")
_DEF = lazy_compile(r"(?:async[ \t]+)?def[ \t]+\w+")
_DEF_WORDS = ("def", "async")
# Every character that cannot be part of a (dotted) name becomes a blank, so that splitting gives the words.
_WORD_TABLE = {code: " " for code in range(128) if not (chr(code).isalnum() or chr(code) in "_.")}
_FIRST_NAME = lazy_compile(r"[^\W\d]\w*")
# A run of name characters (``\w`` is ``str.isalnum()`` or "_", as _in_name reads them) not after a dot.
_NAME_PLACE = lazy_compile(r"(?<![\w.])\w+")
_WHOLE_NAME = lazy_compile(r"\w+")
# Names searched for before the places of all are read in one scan, which costs 20 to 200 searches for one
# (the benchmark's 4 MB module, where names recur 50,000 times; h2ogpt's gradio_runner.py).
_SEARCHES_BEFORE_INDEX = 64
_NESTED_SCOPE = lazy_compile(r"\b(?:def|class|lambda)\b")
# A statement that binds a name: ``name = ...``, ``name += ...``, ``name: T = ...`` at the start of a line.
_ASSIGNED = lazy_compile(r"^[ \t]+([^\W\d]\w*)[ \t]*(?::[^=\n]*)?(?:[-+*/%&|^@]|//|\*\*|>>|<<)?=(?!=)", re.MULTILINE)
_ALWAYS_KEPT = frozenset({"import", "global", "nonlocal", "__import__"})
_NOT_NAMES = (frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))) - _ALWAYS_KEPT


@dataclass(frozen=True, slots=True)
class Focus:
    """A big module with the functions no rule needs blanked."""
    text: str  # the module with its dropped functions blanked (a bytes literal over as many lines as they had)
    dropped: tuple[tuple[int, int], ...]  # the 1-based line ranges, first and last, that were blanked

    def touches_dropped(self, first_line: int, last_line: int) -> bool:
        """Whether the lines ``first_line`` to ``last_line`` meet a dropped range."""
        index = bisect_right(self.dropped, (first_line, 1 << 62)) - 1
        candidates = self.dropped[max(index, 0) : index + 2]
        return any(start <= last_line and first_line <= end for start, end in candidates)


def focused_bytes(data: bytes) -> bytes | None:
    """``focus`` of a module's bytes (UTF-8; None for any other, and when nothing drops)."""
    if len(data) < FOCUS_BYTES:
        return None
    try:
        found = focus(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    return None if found is None else found.text.encode("utf-8")


def focus(text: str) -> Focus | None:
    """``text`` with the top-level functions no rule could read blanked; None when it is small or nothing drops."""
    if len(text) < FOCUS_BYTES:
        return None
    code, string_lines = _code_and_string_lines(text)
    starts = [match.end() for match in _TOP_LINE.finditer(code)]
    if code[:1] not in _NOT_TOP:
        starts.insert(0, 0)
    if string_lines:
        starts = [start for start in starts if not _inside(start, string_lines)]
    starts.append(len(text))
    candidates: dict[int, int] = {}  # chunk index -> where its function's name ends
    for index in range(len(starts) - 1):
        start = starts[index]
        if code.startswith(_DEF_WORDS, start) and not (index and code[starts[index - 1]] == "@"):
            head = _DEF.match(code, start)
            if head is not None:
                candidates[index] = head.end()
    if not candidates:
        return None
    words = code.translate(_WORD_TABLE)
    kept = "\n".join(
        words[starts[index] : starts[index + 1]] for index in range(len(starts) - 1) if index not in candidates
    )
    reached = _reached(code, words, starts, candidates, _names(kept) | _ALWAYS_KEPT)
    spans: list[list[int]] = []  # the dropped chunks, neighbours joined
    for index in candidates:
        if index in reached:
            continue
        if spans and spans[-1][1] == starts[index]:
            spans[-1][1] = starts[index + 1]
        else:
            spans.append([starts[index], starts[index + 1]])
    if not spans:
        return None
    pieces, lines, position, line = [], [], 0, 1
    for start, end in spans:
        line += text.count("\n", position, start)
        breaks = text.count("\n", start, end)
        closed = text[end - 1] == "\n"
        pieces += [text[position:start], _placeholder(breaks + (not closed), closed)]
        lines.append((line, line + breaks - closed))
        line += breaks
        position = end
    pieces.append(text[position:])
    return Focus("".join(pieces), tuple(lines))


def _placeholder(lines: int, line_break: bool) -> str:
    """What stands for dropped functions over ``lines`` lines: one bytes literal (one token, where blank lines
    would be a node each in LibCST's tree; bytes, so that it is never read as a docstring)."""
    literal = 'b""' if lines == 1 else 'b"""' + "\n" * (lines - 1) + '"""'
    return literal + "\n" if line_break else literal


def _reached(code: str, words: str, starts: list[int], candidates: dict[int, int], names: set[str]) -> set[int]:
    """The candidate functions (chunk indexes) that kept code reaches: one that mentions a name kept code
    mentions (its own name, read by kept code, among them) joins kept code, and the names it reads from
    outside itself count from then on. A scan of the code per round, for the names new in it."""
    reached: set[int] = set()
    seen: set[str] = set()
    pending = names
    # Each name is searched for in the code, a scan each; past _SEARCHES_BEFORE_INDEX names, where each one
    # stands as a name of its own is read off one scan of the code instead (a search per name read h2ogpt's
    # 440 KB gradio_runner.py once for each of its thousands of names: 1 s). A name with a character no name
    # holds (only non-ASCII ones can be left in ``words``) is always searched for.
    places: dict[str, list[int]] | None = None
    searched = 0
    while pending:
        seen |= pending
        found: set[str] = set()
        for name in pending:
            searched += 1
            if places is None and searched > _SEARCHES_BEFORE_INDEX:
                places = name_places(code)
            whole = places is not None and _WHOLE_NAME.fullmatch(name) is not None
            for at in places.get(name, ()) if places is not None and whole else _places_of(code, name):
                index = bisect_right(starts, at) - 1
                if index in candidates and index not in reached:
                    reached.add(index)
                    chunk = words[starts[index] : starts[index + 1]]
                    found |= _free_names(code, candidates[index], starts[index + 1], _names(chunk))
        pending = found - seen
    return reached


def name_places(code: str) -> dict[str, list[int]]:
    """For each name of ``code`` (a run of name characters), where it stands as a name of its own, as _places_of
    finds them one name at a time."""
    places: dict[str, list[int]] = {}
    for match in _NAME_PLACE.finditer(code):
        places.setdefault(match.group(), []).append(match.start())
    return places


def _places_of(code: str, name: str) -> Iterator[int]:
    """Where ``name`` stands in ``code`` as a name of its own: not after a name character or a dot, nor before
    a name character."""
    at = code.find(name)
    while at >= 0:
        after = at + len(name)
        if not (at and _in_name(code[at - 1]) or after < len(code) and _in_name(code[after], dot=False)):
            yield at
        at = code.find(name, after)


def _in_name(char: str, dot: bool = True) -> bool:
    """Whether ``char`` continues a name (or, before one, makes it an attribute)."""
    return char.isalnum() or char == "_" or dot and char == "."


def _names(words: str) -> set[str]:
    """The names some code mentions (a function's own name among them), keywords and builtins left out:
    ``words`` is the code with every character that cannot be in a name or a dotted name made a blank."""
    names = set()
    for word in set(words.split()):
        name = word.partition(".")[0]
        if name and not name[0].isdigit():
            names.add(name)
    return names - _NOT_NAMES


def _free_names(code: str, after_name: int, end: int, names: set[str]) -> set[str]:
    """Of ``names`` (a function's), those it may read from outside itself: not its parameters, nor what its own
    statements assign when it holds no nested scope (a name assigned there is local throughout the function)."""
    local = _parameters(code, after_name)
    body = code[after_name:end]
    if _NESTED_SCOPE.search(body) is None:
        local |= set(_ASSIGNED.findall(body))
    return names - local


def _parameters(code: str, after_name: int) -> set[str]:
    """The parameter names of the ``def`` whose name ends at ``after_name``: each first word of a part of the
    parameter list at its own bracket depth."""
    opening = code.find("(", after_name)
    if opening < 0:
        return set()
    parameters: set[str] = set()
    depth = 0
    part: list[str] = []
    for index in range(opening, min(len(code), opening + 10_000)):
        char = code[index]
        if char in "([{":
            depth += 1
            if depth == 1:
                continue
        elif char in ")]}":
            depth -= 1
        if depth == 1 and char == "," or depth == 0:
            match = _FIRST_NAME.match("".join(part).lstrip(" \t\n\\*"))
            if match:
                parameters.add(match.group())
            part = []
            if depth == 0:
                return parameters
        elif depth == 1:
            part.append(char)
    return set()  # not a parameter list this reading understands: nothing counted local


def _code_and_string_lines(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with every string and comment blanked (line breaks kept), and the offsets (start, end) of the
    strings that run over several lines, whose inner lines start inside a string."""
    spans: list[tuple[int, int]] = []

    def blank(match: re.Match[str]) -> str:
        found = match.group()
        if "\n" in found:
            spans.append(match.span())
            return re.sub(r"[^\n]", " ", found)
        return " " * len(found)

    return _STRING_OR_COMMENT.sub(blank, text), spans


def _inside(offset: int, spans: list[tuple[int, int]]) -> bool:
    index = bisect_right(spans, (offset, 1 << 62)) - 1
    return index >= 0 and spans[index][0] < offset < spans[index][1]
