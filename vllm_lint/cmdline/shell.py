"""A small POSIX shell tokenizer that keeps positions, and static word expansion.

It splits a script into simple commands (at newlines, ``;``, ``&&``, ``||``,
``|``, ``&`` and parentheses), each a list of words with their exact offsets,
and expands a word only when its value is static: literals, ``${VAR:-default}``
and variables assigned earlier in the same script. Anything else (command
substitution, unknown variables) is unknown (None), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_lint.values import Value
from vllm_lint.lazy_re import lazy_compile

_NAME = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = lazy_compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "case", "esac", "!", "{", "}", "function"})


class ShellSyntaxError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message, self.offset = message, offset


@dataclass(slots=True)
class Word:
    """One shell word: its source text and span, and its value when static."""

    raw: str
    start: int
    end: int
    parts: list = field(default_factory=list)  # ("lit", text) | ("var", name, op, default_parts) | ("unknown",)
    quoted: bool = False
    value: str | None = None
    origin: str | None = None
    offsets: list[int] | None = None  # source offset of each character of the value (YAML scalars)
    # Exactly one argument whatever its value (an exec-form list element); a shell
    # word with an unknown expansion may split into any number of arguments.
    single: bool = False
    # The conditions under which the word is there at all (a Helm ``{{ if }}`` block, ``${VAR:+...}``):
    # each one a hashable key, all of them needed; empty when the word is always there.
    condition: frozenset = frozenset()
    guard: str | None = None  # ``${NAME:+...}``: the variable whose being set makes the word appear
    # A word whose value is not all known but that a shell may run as a script (a templated ``sh -c``
    # argument): the text with an unknown stand-in for each unknown part, each character's offset in the
    # file, and the spans of the stand-ins.
    script: tuple[str, list[int], tuple[tuple[int, int], ...]] | None = None
    array: list["Word"] | None = None  # ``name=(a b c)``: the elements
    # Why the value is not known, where the front-end knows better than the text says ("*args", a template
    # expression); otherwise ``opaque_reason`` reads it off the text.
    why: str | None = None
    # where the parts of ``script`` came from (a values.yaml entry a template wrote): (start, end, origin)
    # in the script's text, given to the words a shell splits it into
    script_origins: tuple[tuple[int, int, str], ...] = ()
    # Variables a test around the word says are not empty where it is written (``if [ -n "$X" ]; then``,
    # ``[ -n "$X" ] && ...``): an empty value known for one of them is not the value there
    nonempty: frozenset[str] = frozenset()

    @property
    def literal(self) -> bool:
        return all(part[0] == "lit" for part in self.parts)

    @property
    def literal_prefix(self) -> str:
        """The literal text before the first expansion (``--max-model-len=`` of ``--max-model-len=$LEN``)."""
        prefix = []
        for part in self.parts:
            if part[0] != "lit":
                break
            prefix.append(part[1])
        return "".join(prefix)


def _read_dollar(text: str, i: int, parts: list) -> int:
    """Parse an expansion at ``text[i] == '$'``; append a part; return the next index."""
    n = len(text)
    if i + 1 >= n:
        parts.append(("lit", "$"))
        return i + 1
    c = text[i + 1]
    if c == "(":
        end = _substitution_end(text, i + 1)
        if end is None:
            raise ShellSyntaxError("unterminated command substitution `$(`", i)
        parts.append(("unknown",))
        return end
    if c == "{":
        close = _brace_end(text, i + 2)
        if close == -1:
            raise ShellSyntaxError("unterminated parameter expansion `${`", i)
        body = text[i + 2 : close]
        match = _NAME.match(body)
        if match is None:
            parts.append(("unknown",))
            return close + 1
        name, rest = match.group(0), body[match.end() :]
        if not rest:
            parts.append(("var", name, None, None))
        else:
            for op in (":-", "-", ":=", "="):
                if rest.startswith(op):
                    default = rest[len(op) :]
                    default_parts: list = []
                    _expand_inner(default, default_parts)
                    parts.append(("var", name, op, default_parts))
                    break
            else:
                # ``${NAME:?message}`` is NAME's value (or no command at all); other operators are not followed
                parts.append(("var", name, None, None) if rest.startswith((":?", "?")) else ("unknown",))
        return close + 1
    match = _NAME.match(text, i + 1)
    if match:
        parts.append(("var", match.group(0), None, None))
        return match.end()
    if c in "@*#?$!0123456789-":
        parts.append(("unknown",))
        return i + 2
    parts.append(("lit", "$"))
    return i + 1


def _brace_end(text: str, i: int) -> int:
    """The index of the ``}`` that closes a ``${`` whose body starts at ``i`` (past nested expansions and
    quotes: ``${A:-${B:-x}}``, ``${A:-"}"}``); -1 when there is none."""
    depth, n = 1, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "$" and text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if c == "$" and text.startswith("$(", i):
            end = _substitution_end(text, i + 1)
            if end is None:
                return -1
            i = end
            continue
        if c in "'\"":
            close = text.find(c, i + 1)
            if close == -1:
                return -1
            i = close + 1
            continue
        if c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


_HEREDOC_START = lazy_compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _substitution_end(text: str, i: int) -> int | None:
    """The index after the ``)`` that closes the ``(`` at ``i``, past quotes and here-document bodies."""
    depth, j, n = 0, i, len(text)
    pending: list[str] = []
    while j < n:
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        elif c in "'\"":
            close = text.find(c, j + 1)
            if close == -1:
                return None
            j = close
        elif c == "<" and text.startswith("<<", j) and not text.startswith("<<<", j):
            match = _HEREDOC_START.match(text, j)
            if match:
                pending.append(match.group(2))
                j = match.end()
                continue
        elif c == "\n" and pending:
            for delimiter in pending:
                while j < n:
                    line_end = text.find("\n", j + 1)
                    line_end = n if line_end == -1 else line_end
                    if text[j + 1 : line_end].strip() == delimiter:
                        j = line_end
                        break
                    j = line_end
            pending = []
            continue
        j += 1
    return None


def _expand_inner(text: str, parts: list) -> None:
    """Parts of a default value (``${X:-this}``): quotes removed, expansions kept."""
    i, n = 0, len(text)
    buffer: list[str] = []
    while i < n:
        c = text[i]
        if c == "$":
            if buffer:
                parts.append(("lit", "".join(buffer)))
                buffer = []
            i = _read_dollar(text, i, parts)
            continue
        if c in "'\"":
            i += 1
            continue
        buffer.append(c)
        i += 1
    if buffer:
        parts.append(("lit", "".join(buffer)))


@dataclass(slots=True)
class Heredoc:
    """A here-document's body: its span in the text, and whether its delimiter was quoted (no expansion)."""

    start: int
    end: int
    quoted: bool
    # where it goes, as far as the grammar reads it: the file a ``>`` redirect writes (``cat > x.yaml <<EOF``),
    # and the command a pipe after it feeds (``cat <<EOF | kubectl apply -f -``)
    written_to: str | None = None
    piped_to: list[Word] | None = None
    strip_tabs: bool = False  # ``<<-``: the shell takes the leading tabs off each line


@dataclass(slots=True)
class Command:
    """One simple command of a shell text: its words, heredocs and conditions."""
    words: list[Word]
    heredoc: bool = False
    heredocs: list[Heredoc] = field(default_factory=list)
    # The conditions the command runs under: inside an if/case/loop body, after && or || (a key each).
    condition: frozenset = frozenset()


def tokenize(text: str, base: int = 0) -> list[Command]:
    """Split ``text`` into simple commands; offsets are ``base`` + index in ``text``."""
    return _Tokenizer(text, base).commands()


class _Tokenizer:
    """One pass over a script: blanks, comments, operators, redirections and here-documents are stepped
    over, words collected into the command they belong to, each command with the conditions it runs under."""

    def __init__(self, text: str, base: int) -> None:
        self.text, self.base = text, base
        self.i, self.n = 0, len(text)
        self.found: list[Command] = []
        self.words: list[Word] = []
        self.pending_heredocs: list[tuple[str, bool, bool, int]] = []  # delimiter, strip tabs, quoted, owner index
        self.skip_next = False  # the word after a redirection operator is its target
        self.blocks: list[tuple[str, int]] = []  # open if/case/while/until/for, each with where it starts
        self.after_operator: int | None = None  # where a && or || put the next command under a condition

    def commands(self) -> list[Command]:
        text = self.text
        while self.i < self.n:
            c = text[self.i]
            if c == "\\" and text.startswith("\n", self.i + 1):
                self.i += 2
            elif c == "\\" and text.startswith("\r\n", self.i + 1):
                self.i += 3
            elif c in " \t\r":
                self.i += 1
            elif c == "\n":
                self.end_command()
                self.i += 1
                self.heredoc_bodies()
            elif c == "#":
                line_end = text.find("\n", self.i)
                self.i = self.n if line_end == -1 else line_end
            elif c in ";&|()":
                self.operator()
            elif c in "<>" or (c.isdigit() and self.i + 1 < self.n and text[self.i + 1] in "<>"):
                self.redirection()
            else:
                self.word()
        self.end_command()
        return self.found

    def end_command(self) -> None:
        if self.words:
            condition = frozenset(("shell-block", start) for _, start in self.blocks)
            if self.after_operator is not None:
                condition |= {("shell-and-or", self.after_operator)}
            self.found.append(Command(self.words, condition=condition))
            self.after_operator = None
        self.words = []

    def heredoc_bodies(self) -> None:
        """The bodies of the here-documents the line just ended opened, one after the other."""
        text, n = self.text, self.n
        for delimiter, strip_tabs, quoted, owner in self.pending_heredocs:
            body_start = self.i
            body_end = n
            while self.i < n:
                line_end = text.find("\n", self.i)
                line_end = n if line_end == -1 else line_end
                line = text[self.i : line_end]
                if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delimiter:
                    body_end = self.i
                    self.i = line_end + 1
                    break
                self.i = line_end + 1
            if owner < len(self.found):
                self.found[owner].heredocs.append(Heredoc(self.base + body_start, self.base + min(body_end, n), quoted))
        self.pending_heredocs = []

    def operator(self) -> None:
        self.end_command()
        if self.text.startswith(("&&", "||"), self.i):
            self.after_operator = self.base + self.i
            self.i += 2
        else:
            self.i += 1

    def redirection(self) -> None:
        """``<``, ``2>&1``, ``>> file``, or a here-document's ``<<EOF`` (its body is read at the line's end)."""
        text, n = self.text, self.n
        j = self.i
        while j < n and text[j].isdigit():
            j += 1
        if text.startswith("<<", j) and not text.startswith("<<<", j):
            j += 2
            strip_tabs = text.startswith("-", j)
            if strip_tabs:
                j += 1
            while j < n and text[j] in " \t":
                j += 1
            word, j = _read_word(text, j, self.base)
            quoted = word.quoted or "\\" in word.raw
            self.pending_heredocs.append((word.raw.strip("'\"").replace("\\", ""), strip_tabs, quoted, len(self.found)))
            self.i = j
            return
        while j < n and text[j] in "<>&|":
            j += 1
        if j < n and text[j] == "-":
            j += 1
        # `2>&1`: the target is part of the operator
        if text[j - 1] == "&" and j < n and text[j].isdigit():
            while j < n and text[j].isdigit():
                j += 1
        else:
            self.skip_next = True
        self.i = j

    def word(self) -> None:
        word, self.i = _read_word(self.text, self.i, self.base)
        if self.skip_next:
            self.skip_next = False
            return
        if not self.words and word.raw in _KEYWORDS and not word.quoted:
            if word.raw in ("if", "case", "while", "until", "for"):
                self.blocks.append((word.raw, word.start))
            elif word.raw in ("fi", "esac", "done") and self.blocks:
                self.blocks.pop()
            return
        if _ARRAY_ASSIGNMENT.fullmatch(word.raw) and self.text.startswith("(", self.i):
            word.array, self.i = _read_array(self.text, self.i, self.base)
            word.end = self.base + self.i
            word.raw = self.text[word.start - self.base : self.i]
        self.words.extend(_alternative_words(word) or [word])


_ARRAY_ASSIGNMENT = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _read_array(text: str, i: int, base: int) -> tuple[list[Word], int]:
    """The elements of ``name=(...)`` from the ``(`` at ``i``; the index after the ``)``."""
    elements: list[Word] = []
    i += 1
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n" or (c == "\\" and text.startswith("\n", i + 1)):
            i += 2 if c == "\\" else 1
            continue
        if c == "#":
            line_end = text.find("\n", i)
            i = n if line_end == -1 else line_end
            continue
        if c == ")":
            return elements, i + 1
        word, i = _read_word(text, i, base)
        if word.raw == "":
            raise ShellSyntaxError("unexpected character in an array", base + i)
        elements.append(word)
    raise ShellSyntaxError("unterminated array `(`", base + i)


_ALTERNATIVE = lazy_compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?\+([^{}]*)\}")


def _alternative_words(word: Word) -> list[Word] | None:
    """``${NAME:+--flag value}`` unquoted: the words of the alternative, there only when NAME is set."""
    match = _ALTERNATIVE.fullmatch(word.raw)
    if match is None:
        return None
    name, body = match.group(1), match.group(2)
    try:
        inner = [w for command in tokenize(body, word.start + match.start(2)) for w in command.words]
    except ShellSyntaxError:
        return None
    for inner_word in inner:
        inner_word.condition = inner_word.condition | {("${NAME:+...}", name)}
        inner_word.guard = name
    return inner


def _read_word(text: str, i: int, base: int) -> tuple[Word, int]:
    start = i
    n = len(text)
    parts: list = []
    buffer: list[str] = []
    quoted = False

    def flush() -> None:
        if buffer:
            parts.append(("lit", "".join(buffer)))
            buffer.clear()

    while i < n:
        c = text[i]
        if c in " \t\r\n;&|()<>":
            break
        if c == "\\":
            if text.startswith("\n", i + 1):
                break  # a line continuation ends the word
            if i + 1 < n:
                buffer.append(text[i + 1])
            i += 2
            continue
        if c == "'":
            close = text.find("'", i + 1)
            if close == -1:
                raise ShellSyntaxError("unterminated single quote", base + i)
            buffer.append(text[i + 1 : close])
            quoted = True
            i = close + 1
            continue
        if c == "$" and text.startswith("$'", i):
            close = text.find("'", i + 2)
            if close == -1:
                raise ShellSyntaxError("unterminated $'...' quote", base + i)
            flush()
            parts.append(("unknown",))
            quoted = True
            i = close + 1
            continue
        if c == '"':
            quoted = True
            j = i + 1
            while True:
                if j >= n:
                    raise ShellSyntaxError("unterminated double quote", base + i)
                d = text[j]
                if d == '"':
                    j += 1
                    break
                if d == "\\" and j + 1 < n:
                    if text[j + 1] == "\n":
                        j += 2
                        continue
                    if text[j + 1] in '"\\$`':
                        buffer.append(text[j + 1])
                    else:
                        buffer.append(text[j : j + 2])
                    j += 2
                    continue
                if d == "$":
                    flush()
                    j = _read_dollar_checked(text, j, parts, base)
                    continue
                if d == "`":
                    flush()
                    parts.append(("unknown",))
                    j = _skip_backquote(text, j, base)
                    continue
                buffer.append(d)
                j += 1
            i = j
            continue
        if c == "$":
            flush()
            i = _read_dollar_checked(text, i, parts, base)
            continue
        if c == "`":
            flush()
            parts.append(("unknown",))
            i = _skip_backquote(text, i, base)
            continue
        buffer.append(c)
        i += 1
    flush()
    return Word(text[start:i], base + start, base + i, parts, quoted), i


def _skip_backquote(text: str, i: int, base: int) -> int:
    """The index after the backquote that closes the one at ``i`` (its value is never known)."""
    close = text.find("`", i + 1)
    if close == -1:
        raise ShellSyntaxError("unterminated backquote", base + i)
    return close + 1


def _read_dollar_checked(text: str, i: int, parts: list, base: int) -> int:
    try:
        return _read_dollar(text, i, parts)
    except ShellSyntaxError as exc:
        raise ShellSyntaxError(exc.message, base + exc.offset) from None


_POSITIONAL = lazy_compile(r"\$(?:[0-9@*#]|\{[0-9@*#])")


class Environment:
    """Variables known at a point of a script: name -> Value (None: set, value unknown)."""

    def __init__(self, initial: dict[str, Value | None] | None = None) -> None:
        self.vars: dict[str, Value | None] = dict(initial or {})
        self.arrays: dict[str, list[Word] | None] = {}  # name=(...): the elements (None: not known)
        # cmd=$(cat <<EOF ... EOF): the here-document a variable holds, for an ``eval $cmd`` later
        self.scripts: dict[str, Heredoc] = {}
        # the script's arguments, ``"$@"`` (a wrapper script run with an image's CMD); None: not known
        self.positional: list[Word] | None = None
        # why a variable set here has no value known ("set from positional arguments ($1...)"), for
        # ``check --explain-opaque``
        self.unknown_why: dict[str, str] = {}

    def copy(self) -> Environment:
        other = Environment(self.vars)
        other.arrays, other.scripts, other.positional = dict(self.arrays), dict(self.scripts), self.positional
        other.unknown_why = dict(self.unknown_why)
        return other

    def why_unknown(self, parts: list, text: str) -> str | None:
        """Why the value ``parts`` (written ``text``) stands for is not known, when this script says."""
        for part in parts:
            if part[0] == "unknown":
                if "$(" in text or "`" in text:
                    return "set from a command's output"
                return "set from positional arguments ($1...)" if _POSITIONAL.search(text) else None
            if part[0] == "lit":
                continue
            name = part[1]
            if name.isdigit() or name in ("@", "*"):
                return "set from positional arguments ($1...)"
            if name in self.vars and self.vars[name] is None:
                return self.unknown_why.get(name)
            if name not in self.vars and part[2] is None:
                return f"set from ${name}, which the script does not set"
        return None

    def expand_parts(self, parts: list) -> tuple[str | None, str | None]:
        out: list[str] = []
        origins: list[str] = []
        for part in parts:
            kind = part[0]
            if kind == "lit":
                out.append(part[1])
            elif kind == "unknown":
                return None, None
            else:
                _, name, op, default = part
                if name in self.vars:
                    known = self.vars[name]
                    if known is None:
                        return None, None
                    text = str(known.value)
                    if op in (":-", ":=") and text == "":
                        expanded, _ = self.expand_parts(default)
                        if expanded is None:
                            return None, None
                        text = expanded
                    out.append(text)
                    origins.append(known.origin or f"${name}")
                elif op is not None:
                    expanded, _ = self.expand_parts(default)
                    if expanded is None:
                        return None, None
                    out.append(expanded)
                    origins.append(f"default of ${{{name}{op}{expanded}}}")
                else:
                    return None, None
        return "".join(out), (", ".join(origins) if origins else None)

    def expand(self, word: Word) -> Word:
        value, origin = self.expand_parts(word.parts)
        if value is not None and word.nonempty:
            tested = self._tested_empty(word)
            if tested is not None:
                value, origin = None, None
                word.why = f"unresolved variable ${tested} (tested non-empty where it is used, empty by default)"
        # a literal keeps the origin its front-end found (a Python constant, an os.getenv default)
        word.value, word.origin = value, origin if origin is not None or not word.literal else word.origin
        if value is None and word.why is None:
            word.why = self._unknown_variable(word.parts)
        return word

    def _tested_empty(self, word: Word) -> str | None:
        """A variable of ``word`` that a test says is not empty there, though this script holds it empty."""
        for part in word.parts:
            if part[0] in ("lit", "unknown") or part[1] not in word.nonempty:
                continue
            known = self.vars.get(part[1])
            if known is not None and str(known.value) == "":
                return part[1]
        return None

    def _unknown_variable(self, parts: list) -> str | None:
        """``unresolved variable $X (set from the script's arguments)``: the first variable of ``parts`` that
        this script set to a value not known, and why it is not known."""
        for part in parts:
            if part[0] not in ("lit", "unknown") and part[1] in self.unknown_why:
                return f"unresolved variable ${part[1]} ({self.unknown_why[part[1]]})"
        return None

    def assign(self, word: Word) -> bool:
        """Record ``NAME=value``; return whether the word was an assignment."""
        match = _ASSIGN.match(word.raw)
        if match is None:
            return False
        name = match.group(1)
        if word.array is not None:
            before = self.arrays.get(name, []) if word.raw[match.end() - 2] == "+" else []
            self.arrays[name] = None if before is None else [*before, *word.array]
            self.vars[name] = None
            return True
        self.arrays.pop(name, None)
        self.scripts.pop(name, None)
        value_text = word.raw[match.end() :]
        sub = Word(value_text, word.start + match.end(), word.end)
        try:
            parsed, _ = _read_word(value_text, 0, 0) if value_text else (Word("", 0, 0, [("lit", "")]), 0)
            sub.parts = parsed.parts
        except ShellSyntaxError:
            sub.parts = [("unknown",)]
        text, origin = self.expand_parts(sub.parts or [("lit", "")])
        self.vars[name] = Value(text, origin or f"{name}={value_text}") if text is not None else None
        why = self.why_unknown(sub.parts or [], value_text) if text is None else None
        if why is not None:
            self.unknown_why[name] = why
        else:
            self.unknown_why.pop(name, None)
        return True


def is_assignment(word: Word) -> bool:
    return _ASSIGN.match(word.raw) is not None
