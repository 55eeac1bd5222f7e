"""Command-line words for a program's arguments written in code, not in a shell line of a file.

An argument list in a program (``["vllm", "serve", MODEL]``) has no text of its own to take offsets from:
the caller gives each argument (or command string) a range of its own in a private offset space and maps
the spans the extractor reports back to where the argument is written. An argument is exactly one word,
whatever its value. A value the caller cannot see inside a command string is a :data:`HOLE`, which stays
unknown however the string is split.
"""

from __future__ import annotations

import re

from vllm_lint.cmdline.shell import Command, ShellSyntaxError, Word

# Stands for an interpolated value inside a command string: it must stay unknown under any shell quoting,
# so it is a character no command contains, turned into an unknown part after tokenizing.
HOLE = "\ue000"


def known_argument(text: str, origin: str | None, start: int, end: int) -> Word:
    """One argument whose value, ``text``, is known (``origin``: where it comes from, as a Value says)."""
    return Word(text, start, end, [("lit", text)], True, text, origin, single=True)


def unknown_argument(prefix: str, start: int, end: int) -> Word:
    """One argument whose value is not known but for its literal head (``--max-model-len=`` of an f-string)."""
    parts = [("lit", prefix), ("unknown",)] if prefix else [("unknown",)]
    word = Word(prefix or "?", start, end, parts, True, None, single=True)
    word.why = "Python value not known"
    return word


def unknown_arguments(start: int, end: int, why: str = "*args") -> Word:
    """Any number of arguments that cannot be seen (``*args``)."""
    word = Word("*", start, end, [("unknown",)], False, None)
    word.why = why
    return word


def split_words(text: str, base: int) -> list[Word]:
    """The words of ``text.split()`` (each at ``base`` + its index), each exactly one argument."""
    words = []
    for match in re.finditer(r"\S+", text):
        value = match.group(0)
        parts = [("lit", value)] if HOLE not in value else _hole_parts(value)
        known = value if HOLE not in value else None
        words.append(Word(value, base + match.start(), base + match.end(), parts, True, known, single=True))
    return words


def command_words(text: str, base: int) -> list[Command] | None:
    """The commands of a command string run by ``/bin/sh`` (each word at ``base`` + its index); None when it
    cannot be split the way the shell would: no launch, no guess."""
    from vllm_lint.cmdline.shell_grammar import read_commands

    try:
        commands = read_commands(text, base)
    except ShellSyntaxError:
        return None
    for command in commands:
        for word in command.words:
            if HOLE in word.raw:
                word.parts = _hole_parts_of(word.parts)
                word.single = word.raw == HOLE
                word.why = "Python value not known in a shell string"
    return commands


def _hole_parts(value: str) -> list:
    head = value.split(HOLE, 1)[0]
    return [("lit", head), ("unknown",)] if head else [("unknown",)]


def _hole_parts_of(parts: list) -> list:
    """Parts with every hole made unknown (the literal text before the first hole is kept)."""
    out: list[tuple] = []
    for part in parts:
        if part[0] == "lit" and HOLE in part[1]:
            head = part[1].split(HOLE, 1)[0]
            if head:
                out.append(("lit", head))
            out.append(("unknown",))
            return out
        out.append(part)
    return out
