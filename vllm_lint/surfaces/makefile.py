"""Makefiles: each recipe line read as the shell text make hands the shell, with the file's variables.

Make's own syntax is line-based and small where launches are concerned: a rule line, the tab-led recipe lines
after it (a trailing backslash goes on, and make drops the next line's leading tab), variable assignments
(``=``, ``:=``, ``::=``, ``?=``, ``+=``; ``!=`` and ``define`` run or hold text not read here), conditional
blocks. A recipe's ``$(NAME)`` is read as ``${NAME}`` with NAME's value as make expands it (references to other
variables followed, ``$$`` as ``$``), when every piece of it is known: assigned outside ``ifeq``/``ifdef`` and
free of make functions; otherwise the word is not known. ``$@`` and the other automatic variables, and
function calls (``$(shell ...)``, ``$(if ...)``), are not known either. The recipe prefixes ``@``, ``-`` and
``+`` are make's, read as blanks.
"""

from __future__ import annotations


from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.surfaces.embedded import LineView
from vllm_lint.lazy_re import lazy_compile

_ASSIGNMENT = lazy_compile(
    r"^(?P<words>(?:(?:export|override|private)[ \t]+)*)(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*(?P<op>\?=|:::=|::=|:=|\+=|!=|=)[ \t]*(?P<value>.*)$"
)
_RULE = lazy_compile(r"^[^\t#=][^=]*?(?<!:):(?!=)")
_CONDITIONAL = lazy_compile(r"^[ \t]*(ifeq|ifneq|ifdef|ifndef)\b")
_NAME = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DEPTH = 8
NAMES = frozenset({"Makefile", "makefile", "GNUmakefile"})


def claims(name: str, head: bytes) -> bool:
    return name in NAMES or suffix_of(name) in (".mk", ".make")


def clue(data: bytes) -> bool:
    """What the file's bytes hold when it can run anything (vLLM named is checked apart)."""
    return b"\t" in data


class _Variables:
    """Make's variables as the file assigns them: the text assigned (None: not known here)."""

    def __init__(self) -> None:
        self.raw: dict[str, str | None] = {}
        self.exported: set[str] = set()

    def assign(self, name: str, op: str, value: str, conditional: bool, export: bool) -> None:
        if export:
            self.exported.add(name)
        if conditional or op == "!=":
            self.raw[name] = None
            return
        value = _without_comment(value)
        if op == "?=":
            self.raw.setdefault(name, value)
        elif op == "+=":
            before = self.raw.get(name, "")
            self.raw[name] = None if before is None else f"{before} {value}".strip()
        elif op in (":=", "::=", ":::="):
            self.raw[name] = self.expand(value)  # expanded once, where it is assigned
        else:
            self.raw[name] = value

    def expand(self, text: str, depth: int = 0) -> str | None:
        """``text`` with its references expanded as make would; None when any piece is not known."""
        if depth > _MAX_DEPTH:
            return None
        out = []
        i = 0
        while i < len(text):
            char = text[i]
            if char != "$":
                out.append(char)
                i += 1
                continue
            reference = _reference(text, i)
            if reference is None:
                return None
            name, end = reference
            if name == "$":
                out.append("$")
            else:
                value = self.raw.get(name) if name is not None else None
                if value is None:
                    return None
                expanded = self.expand(value, depth + 1)
                if expanded is None:
                    return None
                out.append(expanded)
            i = end
        return "".join(out)


def _without_comment(value: str) -> str:
    hash_at = value.find("#")
    while hash_at > 0 and value[hash_at - 1] == "\\":
        hash_at = value.find("#", hash_at + 1)
    return (value[:hash_at] if hash_at != -1 else value).rstrip()


def _reference(text: str, i: int) -> tuple[str | None, int] | None:
    """The variable that ``text[i] == "$"`` refers to and where the reference ends: ("$", end) for ``$$``,
    (None, end) for an automatic variable or a function call, None at an unclosed reference."""
    if i + 1 >= len(text):
        return None
    char = text[i + 1]
    if char == "$":
        return "$", i + 2
    if char in "({":
        close = ")" if char == "(" else "}"
        depth, j = 0, i + 1
        while j < len(text):
            if text[j] == char:
                depth += 1
            elif text[j] == close:
                depth -= 1
                if depth == 0:
                    inner = text[i + 2 : j]
                    return (inner if _NAME.fullmatch(inner) else None), j + 1
            j += 1
        return None
    return (char if _NAME.fullmatch(char) else None), i + 2


def makefile_view(text: str):
    from vllm_lint.cmdline.shell import Environment
    from vllm_lint.surfaces.embedded import View
    from vllm_lint.values import Value

    lines = text.split("\n")
    variables = _Variables()
    view = View.empty(text)
    recipes: list[tuple[int, bool]] = []  # (line, continues a recipe line)
    in_rule = False
    conditional = 0
    index = 0
    while index < len(lines):
        line = lines[index].rstrip("\r")
        if line.startswith("\t") and in_rule:
            recipes.append((index, False))
            while lines[index].rstrip("\r").endswith("\\") and index + 1 < len(lines):
                index += 1
                recipes.append((index, True))
            index += 1
            continue
        logical = line
        while logical.endswith("\\") and index + 1 < len(lines):
            index += 1
            logical = logical[:-1] + " " + lines[index].rstrip("\r").lstrip()
        stripped = logical.strip()
        index += 1
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("define "):
            name = stripped.split()[1] if len(stripped.split()) > 1 else ""
            variables.raw[name] = None
            while index < len(lines) and lines[index].strip() != "endef":
                index += 1
            index += 1
            in_rule = False
            continue
        if _CONDITIONAL.match(logical):
            conditional += 1
            continue
        if stripped == "endif":
            conditional = max(conditional - 1, 0)
            continue
        if stripped.startswith("else"):
            continue
        assignment = _ASSIGNMENT.match(stripped)
        if assignment is not None:
            variables.assign(
                assignment.group("name"),
                assignment.group("op"),
                assignment.group("value"),
                conditional > 0,
                "export" in assignment.group("words"),
            )
            in_rule = False
            continue
        if stripped.startswith("export "):
            variables.exported.update(stripped.split()[1:])
            continue
        in_rule = bool(_RULE.match(logical))
    env = Environment()
    for name in variables.exported:
        known = variables.expand(f"$({name})") if name in variables.raw else None
        env.vars[name] = Value(known, "the Makefile") if known is not None else None
    for number, continued in recipes:
        view.put(number, _recipe_line(lines[number], continued, variables, env))
    return view, env


def _recipe_line(line: str, continued: bool, variables: _Variables, env) -> LineView:
    """A recipe line as the shell reads it: make's prefixes blank, its references rewritten."""
    from vllm_lint.values import Value

    out = LineView(line)
    body = line.rstrip("\r")
    i = 1 if body.startswith("\t") else 0
    if not continued:
        while i < len(body) and body[i] in "@-+ \t":
            i += 1
    out.blank(0, i)
    while i < len(body):
        if body[i] != "$":
            out.copy(i, i + 1)
            i += 1
            continue
        reference = _reference(body, i)
        if reference is None:
            out.copy(i, len(body))
            break
        name, end = reference
        if name == "$":
            out.write("$", i, i + 2)
        elif name is None:
            out.write("${_}", i, end)  # an automatic variable or a function call: not known
        else:
            known = variables.expand(f"$({name})") if name in variables.raw else None
            if known is not None:
                env.vars[name] = Value(known, "the Makefile")
            out.write("${" + name + "}", i, end)
        i = end
    return out
