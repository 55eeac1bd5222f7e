"""justfiles (``just``): each recipe's lines read as the shell they run, with the file's variables.

A recipe is a header at the line's start (``serve model="m" port="8000":``) and the indented lines after it;
``{{ NAME }}`` is read as ``${NAME}`` with NAME's value where the file assigns a string literal to it
(``NAME := "value"``) or the recipe's parameter has one as its default, any other interpolation as a value not
known here; the line prefixes ``@`` and ``-`` are just's. A recipe whose first line is a shebang runs that
interpreter: it is read only when that is a shell.
"""

from __future__ import annotations


from vllm_lint.surfaces.embedded import LineView
from vllm_lint.lazy_re import lazy_compile

NAMES = frozenset({"justfile", "Justfile", ".justfile", "JUSTFILE"})
_ASSIGNMENT = lazy_compile(
    r"""^(?:export[ \t]+)?(?P<name>[A-Za-z_][\w-]*)[ \t]*:=[ \t]*(?P<value>"[^"\\]*"|'[^']*'|.*)$"""
)
_HEADER = lazy_compile(r"^@?(?P<name>[A-Za-z_][\w-]*)(?P<params>[^:]*):(?!=)")
_PARAMETER = lazy_compile(r"""(?P<name>[A-Za-z_][\w-]*)=(?P<value>"[^"]*"|'[^']*')""")
_INTERPOLATION = lazy_compile(r"\{\{(?!\{)(?P<expression>.*?)\}\}")
_SHELLS = ("sh", "bash", "zsh", "dash")


def claims(name: str, head: bytes) -> bool:
    return name in NAMES or name.endswith(".just")


def clue(data: bytes) -> bool:
    """What the file's bytes hold when it can run anything (vLLM named is checked apart)."""
    return b":" in data


def justfile_view(text: str):
    from vllm_lint.cmdline.shell import Environment
    from vllm_lint.surfaces.embedded import View
    from vllm_lint.values import Value

    lines = text.split("\n")
    view = View.empty(text)
    env = Environment()
    known: dict[str, str] = {}
    for line in lines:
        assignment = _ASSIGNMENT.match(line)
        if assignment is not None and assignment.group("value")[:1] in "\"'":
            known[assignment.group("name")] = assignment.group("value")[1:-1]
    index = 0
    while index < len(lines):
        header = _HEADER.match(lines[index])
        index += 1
        if header is None or lines[index - 1].startswith(("set ", "alias ", "import ", "mod ")):
            continue
        parameters = {m.group("name"): m.group("value")[1:-1] for m in _PARAMETER.finditer(header.group("params"))}
        body = []
        while index < len(lines) and (lines[index][:1] in (" ", "\t") or not lines[index].strip()):
            if lines[index].strip():
                body.append(index)
            index += 1
        shebang = lines[body[0]].strip() if body else ""
        if (
            shebang.startswith("#!")
            and shebang.rsplit("/", 1)[-1].split()[-1:] != []
            and shebang.rsplit("/", 1)[-1].split()[-1] not in _SHELLS
        ):
            continue  # a script in another language (``#!/usr/bin/env python3``)
        values = {**known, **parameters}
        for number in body:
            view.put(number, _recipe_line(lines[number], values, env, Value))
    return view, env


def _recipe_line(line: str, values: dict[str, str], env, value_type) -> LineView:
    out = LineView(line)
    body = line.rstrip("\r")
    start = len(body) - len(body.lstrip(" \t"))
    while start < len(body) and body[start] in "@-":
        start += 1
    out.blank(0, start)
    at = start
    for match in _INTERPOLATION.finditer(body, start):
        out.copy(at, match.start())
        name = match.group("expression").strip()
        if name in values and name.isidentifier():
            env.vars[name] = value_type(values[name], "the justfile")
            out.write("${" + name + "}", match.start(), match.end())
        else:
            out.write("${_}", match.start(), match.end())
        at = match.end()
    out.copy(at, len(body))
    return out
