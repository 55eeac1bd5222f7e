"""Docker Compose's own variables: ``${VAR}`` in a compose file, filled in by compose before anything runs.

Compose takes a variable from the shell it runs in, else from the ``.env`` file of the project's folder
(the compose file's); ``$$`` is a literal ``$`` (for the container's shell). The shell's variables are not
known here, so a value is known only from ``.env`` or from the reference's default: ``${VAR}`` with VAR in
``.env`` is that value, ``${VAR:-d}`` / ``${VAR-d}`` with VAR not there is ``d`` (as for a chart's
values.yaml, a default an install can override; findings say where a value came from), and anything else
(``${VAR}`` that only the shell can set, ``${VAR:?err}``, ``${VAR:+alt}`` of a variable not in ``.env``)
is unknown. ``.env`` is read as compose reads it where that is plain (``KEY=value``, ``export KEY=value``,
quotes, comments); a value with an escape or a ``$`` of its own, and every variable of a file with a line
that is not plain, is unknown.

An ``env_file:`` of a service is read the same way for what it sets in the container (not for
interpolation); a file that cannot be read is one that may set anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LINE = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(?P<value>.*?)\s*$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
UNKNOWN_WORD = "$_"  # stands for a value not known; a shell word of unknown value, as templates write one


@dataclass
class DotEnv:
    """What an env file sets: name -> value (None: set, to a value not known); ``complete``: every line was
    read, so a name not here is not set by it."""

    values: dict[str, str | None] = field(default_factory=dict)
    complete: bool = True

    def lookup(self, name: str) -> tuple[bool | None, str | None]:
        """(whether the file sets ``name``: None when not known, its value: None when not known)."""
        if name in self.values:
            return True, self.values[name]
        return (False, None) if self.complete else (None, None)


def read_dotenv(text: str | None) -> DotEnv:
    """An env file's variables; None text (no such file) sets nothing."""
    env = DotEnv()
    if text is None:
        return env
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            env.complete = False
            continue
        name, raw = match.group("name"), match.group("value")
        if raw[:1] in ("'", '"') and raw.find(raw[0], 1) == -1:
            env.values[name], env.complete = None, False
            break  # a quoted value over several lines: what follows is not read
        env.values[name] = _value(raw)
    return env


def _value(raw: str) -> str | None:
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = raw.find(quote, 1)
        if end == -1 or (raw[end + 1 :].strip() and not raw[end + 1 :].strip().startswith("#")):
            return None
        inner = raw[1:end]
        return inner if quote == "'" or not any(c in inner for c in "\\$") else None
    value = re.split(r"\s+#", raw, maxsplit=1)[0].strip()
    return value if "$" not in value and "\\" not in value else None


@dataclass
class Interpolated:
    text: str
    # per character of ``text``: where it comes from in the file (a reference's output at its ``$``, its
    # last character at the reference's last)
    offsets: list[int]
    unknown: tuple[tuple[int, int], ...]  # spans of ``text`` whose value is not known
    sources: tuple[tuple[int, int, str], ...]  # spans of ``text`` filled in, each with where it came from

    @property
    def origin(self) -> str | None:
        return self.origin_of(0, len(self.text))

    def origin_of(self, start: int, end: int) -> str | None:
        """Where the part ``start:end`` of ``text`` came from, when something was filled in there."""
        found = [origin for a, b, origin in self.sources if a < end and start < b or a == b == start]
        return ", ".join(dict.fromkeys(found)) or None


def interpolate(text: str, offsets: list[int], variables: DotEnv) -> Interpolated:
    """``text`` (a scalar's value, ``offsets[i]`` the file offset of ``text[i]``) as compose fills it in."""
    out: list[str] = []
    placed: list[int] = []
    unknown: list[tuple[int, int]] = []
    origins: list[tuple[int, int, str]] = []
    _fill(text, 0, len(text), offsets, variables, out, placed, unknown, origins)
    return Interpolated("".join(out), placed, tuple(unknown), tuple(origins))


def _fill(text, i, stop, offsets, variables, out, placed, unknown, origins) -> None:
    while i < stop:
        if text[i] != "$" or i + 1 >= stop:
            out.append(text[i])
            placed.append(offsets[i])
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            placed.append(offsets[i])
            i += 2
            continue
        if following == "{":
            close = _closing_brace(text, i + 2, stop)
            if close is None:
                out.extend(text[i:stop])
                placed.extend(offsets[i:stop])
                return
            before = len(out)
            _reference(text, i, i + 2, close, offsets, variables, out, placed, unknown, origins)
            _ends_at(placed, before, offsets[close])
            i = close + 1
            continue
        name = _NAME.match(text, i + 1, stop)
        if name is None:
            out.append("$")
            placed.append(offsets[i])
            i += 1
            continue
        before = len(out)
        _resolved(name.group(0), None, None, i, offsets, variables, out, placed, unknown, origins, text)
        _ends_at(placed, before, offsets[name.end() - 1])
        i = name.end()


def _ends_at(placed: list[int], before: int, last: int) -> None:
    """A reference's output ends where the reference does, so the words around it keep their spans in the
    file (an edit after a word that ends in ``${KEY}`` goes after the ``}``)."""
    if len(placed) > before:
        placed[-1] = last


def _closing_brace(text: str, i: int, stop: int) -> int | None:
    depth = 1
    while i < stop:
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


_OPERATORS = (":-", ":?", ":+", "-", "?", "+")


def _reference(text, dollar, start, close, offsets, variables, out, placed, unknown, origins) -> None:
    name = _NAME.match(text, start, close)
    if name is None:
        _unknown(dollar, offsets, out, placed, unknown)
        return
    rest = name.end()
    operator = next((op for op in _OPERATORS if text.startswith(op, rest)), None) if rest < close else None
    if rest < close and operator is None:
        _unknown(dollar, offsets, out, placed, unknown)  # ${VAR/x/y} and the like: not compose's
        return
    argument = (rest + len(operator), close) if operator else None
    _resolved(name.group(0), operator, argument, dollar, offsets, variables, out, placed, unknown, origins, text)


def _resolved(name, operator, argument, dollar, offsets, variables, out, placed, unknown, origins, text) -> None:
    is_set, value = variables.lookup(name)
    if is_set is None or (is_set and value is None):
        _unknown(dollar, offsets, out, placed, unknown)
        return
    empty = not value
    if operator in (":-", "-") and (not is_set or (operator == ":-" and empty)):
        # the default, each character where it is written, the whole reference spanned (from its ``$``)
        start = len(out)
        _fill(text, argument[0], argument[1], offsets, variables, out, placed, unknown, origins)
        if len(out) > start:
            placed[start] = offsets[dollar]
        origins.append((start, len(out), f"default of ${{{name}{operator}{text[argument[0]:argument[1]]}}}"))
        return
    if operator in (":+", "+"):
        if not is_set:
            _unknown(dollar, offsets, out, placed, unknown)  # the shell may set it
        elif not (operator == ":+" and empty):
            _fill(text, argument[0], argument[1], offsets, variables, out, placed, unknown, origins)
        return
    if not is_set:
        _unknown(dollar, offsets, out, placed, unknown)  # only the shell can set it (or compose stops: ?err)
        return
    origins.append((len(out), len(out) + len(value), f".env {name}"))
    out.extend(value)
    placed.extend([offsets[dollar]] * len(value))


def _unknown(dollar, offsets, out, placed, unknown) -> None:
    unknown.append((len(out), len(out) + len(UNKNOWN_WORD)))
    out.extend(UNKNOWN_WORD)
    placed.extend([offsets[dollar]] * len(UNKNOWN_WORD))
