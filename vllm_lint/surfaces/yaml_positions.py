"""Where each character of a YAML scalar's value was written in the file.

A command written in YAML is read from the scalar's value, but a finding points at the source. For a
scalar written as it reads (plain or quoted on one line, a literal block) every character of the value has
its own source character and an edit of the value is an edit of the file: ``exact_offsets``. YAML also
folds lines (a plain or quoted scalar over several lines, a folded ``>`` block), unescapes ``\\"`` and
``\\u00e9`` and turns ``''`` into ``'``; ``value_offsets`` places those values too, each character at the
source character it came from (a fold's space at the line break, an escape at its backslash), which is
right for positions but not for edits. Both check the result against the value pyyaml read, and give None
when they differ: a position is then the scalar's, never a guess.
"""

from __future__ import annotations

_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
    "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def exact_offsets(source: str, node) -> list[int] | None:
    """Offsets of each character of the value (plus its end) when the value is written as it reads, so
    edits can be made through them; None otherwise."""
    start, end = node.start_mark.index, node.end_mark.index
    value, style = node.value, node.style
    if style in (None, "", "'", '"'):
        raw = source[start:end]
        if style in (None, "") and raw == value:
            return list(range(start, end + 1))
        if style in ("'", '"') and raw[1:-1] == value and "\\" not in raw and "''" not in raw:
            return list(range(start + 1, end))
        return None
    if style == "|":
        return _block_offsets(source, node)
    if style == ">":
        offsets = _block_offsets(source, node)
        # a folded block whose lines all fold to spaces keeps one source character per value character
        return offsets if offsets is not None and "\n" not in value.rstrip("\n") else None
    return None


def value_offsets(source: str, node) -> list[int] | None:
    """Offsets of each character of the value (plus its end), folded and unescaped scalars included; for
    positions only."""
    exact = exact_offsets(source, node)
    if exact is not None:
        return exact
    if node.style in ("|", ">"):
        return _block_offsets(source, node)
    if node.style in (None, "", "'", '"'):
        return _flow_offsets(source, node)
    return None


def _block_offsets(source: str, node) -> list[int] | None:
    start, end = node.start_mark.index, node.end_mark.index
    line_end = source.find("\n", start)
    if line_end == -1 or line_end >= end:
        return None
    literal = node.style == "|"
    pos, indent = line_end + 1, None
    chars: list[str] = []
    offsets: list[int] = []
    previous: str | None = None  # the last content line, after the indentation
    breaks: list[int] = [line_end]  # the line breaks since it: the one ending it, then each empty line's
    while pos < end:
        src_end = source.find("\n", pos)
        src_end = len(source) if src_end == -1 else src_end
        src_line = source[pos:src_end].removesuffix("\r")
        # a blank line is a line break; in a literal block, spaces past the indentation are its text (a
        # template's action lines, set aside as spaces, leave such lines)
        if not src_line.strip() and not (literal and indent is not None and len(src_line) > indent):
            breaks.append(src_end)
            pos = src_end + 1
            continue
        if indent is None:
            indent = len(src_line) - len(src_line.lstrip(" "))
        text = src_line[indent:]
        if previous is not None:
            folds = not literal and not previous.startswith((" ", "\t")) and not text.startswith((" ", "\t"))
            joins = [(" ", breaks[0])] if folds and len(breaks) == 1 else [("\n", b) for b in (breaks[1:] if folds else breaks)]
        else:
            joins = [("\n", b) for b in breaks[1:]]  # empty lines before the first line of text
        for char, at in joins:
            chars.append(char)
            offsets.append(at)
        chars.extend(text)
        offsets.extend(range(pos + indent, pos + indent + len(text)))
        previous, breaks = text, [src_end]
        pos = src_end + 1
    stripped = node.value.rstrip("\n")
    if "".join(chars).rstrip("\n") != stripped:
        return None
    offsets = offsets[: len(stripped)]
    last = offsets[-1] + 1 if offsets else start
    offsets.extend([last] * (len(node.value) + 1 - len(offsets)))
    return offsets


def _flow_offsets(source: str, node) -> list[int] | None:
    """A plain or quoted scalar: lines folded (a break between two lines of text is a space, each empty line
    a newline, the whitespace around a break dropped), escapes and ``''`` read."""
    start, end = node.start_mark.index, node.end_mark.index
    style = node.style or ""
    quoted = style in ("'", '"')
    i, stop = (start + 1, end - 1) if quoted else (start, end)
    chars: list[str] = []
    offsets: list[int] = []
    kept: list[bool] = []  # written by an escape: not the whitespace a fold drops
    while i < stop:
        char = source[i]
        if char in "\r\n":
            while chars and chars[-1] in " \t" and not kept[-1]:
                chars.pop(), offsets.pop(), kept.pop()
            breaks, i = _line_breaks(source, i, stop)
            folded = [(" ", breaks[0])] if len(breaks) == 1 else [("\n", b) for b in breaks[1:]]
            for text, at in folded:
                chars.append(text)
                offsets.append(at)
                kept.append(False)
            continue
        if style == '"' and char == "\\":
            following = source[i + 1] if i + 1 < stop else ""
            if following in "\r\n" and following:
                _, i = _line_breaks(source, i + 1, stop)  # an escaped line break joins the lines as they are
                continue
            if following in _ESCAPES:
                chars.append(_ESCAPES[following])
                offsets.append(i)
                kept.append(True)
                i += 2
                continue
            digits = _HEX_ESCAPES.get(following)
            if digits is None:
                return None
            try:
                chars.append(chr(int(source[i + 2 : i + 2 + digits], 16)))
            except ValueError:
                return None
            offsets.append(i)
            kept.append(True)
            i += 2 + digits
            continue
        if style == "'" and char == "'" and source.startswith("''", i):
            chars.append("'")
            offsets.append(i)
            kept.append(True)
            i += 2
            continue
        chars.append(char)
        offsets.append(i)
        kept.append(False)
        i += 1
    if "".join(chars) != node.value:
        return None
    return offsets + [stop]


def _line_breaks(source: str, i: int, stop: int) -> tuple[list[int], int]:
    """The line break at ``i`` and the empty lines after it: their offsets, and where the next line's
    text starts (its leading whitespace skipped)."""
    breaks = []
    while i < stop and source[i] in "\r\n":
        breaks.append(i)
        i += 2 if source.startswith("\r\n", i) else 1
        while i < stop and source[i] in " \t":
            i += 1
    return breaks, i
