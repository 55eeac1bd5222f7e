"""supervisord programs: each ``[program:NAME]`` section's ``command=``, read as shell with its ``environment=``.

supervisord splits the command as a shell would (it runs it without one: pipes and ``&&`` belong inside an
explicit ``bash -c``, as people write them); an indented line after it continues the value, as in any INI file,
and ``%(ENV_NAME)s`` is filled in by supervisord from its own environment (not known here).
"""

from __future__ import annotations


from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.lazy_re import lazy_compile

_SECTION = lazy_compile(r"^\[(?P<name>[^\]]+)\]")
_ENTRY = lazy_compile(r"^(?P<key>[A-Za-z_]+)[ \t]*[=:][ \t]*")
_EXPANSION = lazy_compile(r"%\((?P<name>[A-Za-z_0-9]+)\)[sd]")
_ENVIRONMENT = lazy_compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\"[^\"]*\"|'[^']*'|[^,]*)")


def claims(name: str, head: bytes) -> bool:
    return suffix_of(name) in (".conf", ".ini")


def clue(data: bytes) -> bool:
    """What the file's bytes hold when it can run anything (vLLM named is checked apart)."""
    return b"[program:" in data


def supervisord_view(text: str):
    from vllm_lint.cmdline.shell import Environment
    from vllm_lint.surfaces.embedded import LineView, View
    from vllm_lint.values import Value

    lines = text.split("\n")
    view = View.empty(text)
    env = Environment()
    in_program = False
    index = 0
    while index < len(lines):
        line = lines[index].rstrip("\r")
        heading = _SECTION.match(line)
        if heading is not None:
            in_program = heading.group("name").startswith("program:")
            index += 1
            continue
        entry = _ENTRY.match(line)
        index += 1
        if entry is None or not in_program:
            continue
        following = index
        while following < len(lines) and lines[following][:1] in (" ", "\t") and lines[following].strip():
            following += 1
        taken = range(index - 1, following)
        if entry.group("key") == "command":
            for number in taken:
                raw = lines[number]
                piece = LineView(raw)
                start = entry.end() if number == index - 1 else 0
                piece.blank(0, start)
                _copy_expanding(piece, raw.rstrip("\r"), start)
                if number + 1 < following:
                    piece.write(" \\", len(raw.rstrip("\r")), len(raw.rstrip("\r")))  # the value goes on
                view.put(number, piece, len(raw.rstrip("\r")))
        elif entry.group("key") == "environment":
            value = " ".join([line[entry.end() :], *(lines[n].strip() for n in taken[1:])])
            for match in _ENVIRONMENT.finditer(value):
                assigned = match.group("value").strip().strip("\"'")
                env.vars[match.group("name")] = None if "%(" in assigned else Value(assigned, "environment=")
        index = following
    return view, env


def _copy_expanding(piece, line: str, start: int) -> None:
    """``line`` from ``start``, each ``%(NAME)s`` read as a value not known here."""
    at = start
    for match in _EXPANSION.finditer(line, start):
        piece.copy(at, match.start())
        piece.write("${_}", match.start(), match.end())
        at = match.end()
    piece.copy(at, len(line))
