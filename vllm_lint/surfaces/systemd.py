"""systemd units: the commands ``ExecStart=`` and its kin run, read as shell with the unit's ``Environment=``.

systemd splits a command line much as a shell does (quotes, backslash continuations, ``$VAR`` and ``${VAR}``
from ``Environment=``); the prefixes before the program (``-``, ``@``, ``+``, ``!``, ``:``) are its own and are
read as blanks. A comment line inside a continued line is skipped, as systemd skips it.
"""

from __future__ import annotations


from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.lazy_re import lazy_compile

_ENTRY = lazy_compile(r"^(?P<key>[A-Za-z][A-Za-z0-9]*)[ \t]*=[ \t]*")
_EXEC_PREFIX = lazy_compile(r"[-@:+!]*")
_SECTION = lazy_compile(r"^\[(?P<name>[^\]]+)\]")
UNIT_SUFFIXES = (".service",)
# a unit shipped for copying (``vllm.service.example``), not a template
_COPIED_UNIT = (".service.example", ".service.sample", ".service.in")


def claims(name: str, head: bytes) -> bool:
    return suffix_of(name) in UNIT_SUFFIXES or name.endswith(_COPIED_UNIT)


def clue(data: bytes) -> bool:
    """What the file's bytes hold when it can run anything (vLLM named is checked apart)."""
    return b"Exec" in data


def unit_view(text: str, first: int = 0, last: int | None = None, indent: int = 0):
    """The shell view of a unit's commands and its environment, read from the file's lines ``first`` to
    ``last`` (a unit embedded in another file), each with ``indent`` columns before the unit's text."""
    from vllm_lint.cmdline.shell import Environment
    from vllm_lint.surfaces.embedded import LineView, View
    from vllm_lint.values import Value

    lines = text.split("\n")
    view = View.empty(text)
    env = Environment()
    section = ""
    index = first
    end = len(lines) if last is None else last
    while index < end:
        line = lines[index][indent:].rstrip("\r")
        heading = _SECTION.match(line)
        if heading is not None:
            section = heading.group("name").strip()
            index += 1
            continue
        entry = _ENTRY.match(line)
        if entry is None or section != "Service":
            index += 1
            continue
        key = entry.group("key")
        taken = [index]
        last = index  # the last line of the value that is not a comment
        while _continues(lines[last]) and taken[-1] + 1 < end:
            taken.append(taken[-1] + 1)
            if not _is_comment(lines[taken[-1]][indent:]):
                last = taken[-1]
        if key.startswith("Exec"):
            prefix = _EXEC_PREFIX.match(line, entry.end())
            start = prefix.end() if prefix is not None else entry.end()
            head = LineView(lines[index]).blank(0, start + indent).copy(start + indent, len(lines[index]))
            view.put(index, head)
            for following in taken[1:]:
                raw = lines[following]
                if _is_comment(raw[indent:]):
                    view.put(following, LineView(raw).write("\\", 0, 0), 0)  # skipped by systemd, the line goes on
                elif indent:
                    view.put(following, LineView(raw).blank(0, indent).copy(indent, len(raw)))
                else:
                    view.keep(following, raw.rstrip("\r"))
        elif key == "Environment":
            value = " ".join(lines[i][indent:].rstrip("\r").rstrip("\\") for i in taken)[entry.end() :]
            for name, assigned in _assignments(value):
                env.vars[name] = Value(assigned, "Environment=") if assigned is not None else None
        elif key == "EnvironmentFile":
            env.vars.setdefault("VLLM_API_KEY", None)  # the file may set any variable
        index = taken[-1] + 1
    return view, env


def _continues(line: str) -> bool:
    return line.rstrip("\r").endswith("\\")


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith(("#", ";"))


def _assignments(value: str) -> list[tuple[str, str | None]]:
    """``Environment=``'s ``NAME=value`` words (quoted as systemd quotes them)."""
    import shlex

    try:
        words = shlex.split(value)
    except ValueError:
        return [(word.split("=", 1)[0], None) for word in value.split() if "=" in word]
    return [
        (word.split("=", 1)[0], word.split("=", 1)[1])
        for word in words
        if "=" in word and word.split("=", 1)[0].isidentifier()
    ]
