"""Jupyter notebooks: the code cells as one Python module, ``!`` lines and ``%%bash`` cells as shell.

A notebook runs its code cells in order in one interpreter, so they are linted as one module (an import in
cell 1 resolves a call in cell 3), the way ruff reads notebooks. IPython's own syntax is not Python: a line
magic (``%pip``), a shell escape (``!cmd``, ``x = !cmd``) or help (``obj?``) becomes ``pass`` or a blank
line of the module, so no other line moves; a shell escape is also linted as a shell command, each on its
own (every ``!`` runs in a new shell), with the variables ``%env`` set. A cell magic decides its whole
cell: ``%%bash``/``%%sh``/``%%script bash`` is a shell script, ``%%writefile NAME`` is linted as the file
NAME would be, ``%%time``/``%%capture`` leave Python, any other (``%%html``, ``%%javascript``) is skipped.

Findings are located by cell, as ruff does (``nb.ipynb:cell 3:2:5``: cell 3 counting every cell, line 2 of
that cell); their ``start``/``end`` are where that line sits in the file's JSON, which is what suppression
comments and code scanning read. A fix rewrites only the ``source`` of the cell it fixes
(``notebook_json``). A notebook that is not valid JSON or not nbformat 4 is VLL000.

The surface itself (``notebook.py``) imports this module when a run meets a notebook.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from vllm_lint.diagnostics import CellLocation, Diagnostic, Edit, Fix, Position
from vllm_lint.surfaces.job import LintJob, Surface, parse_error, prefilter_disabled
from vllm_lint.text import TextIndex

_SHELL_MAGICS = frozenset({"bash", "sh", "shell", "system"})
_SHELL_NAMES = frozenset({"bash", "sh", "zsh", "dash"})
_PYTHON_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_ASSIGNED_ESCAPE = re.compile(r"^\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*(?=[!%])")
_HELP = re.compile(r"^\s*(?:\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
_PYTHON_EXPRESSION = re.compile(r"(?<!\$)\{[^{}\n]*\}")
_ENV_MAGIC = re.compile(r"^\s*%env\s+([A-Za-z_]\w*)(?:\s*=\s*|\s+)(\S.*?)?\s*$")
_ENVIRON_SET = re.compile(r"""os\.environ\[\s*["']([A-Za-z_]\w*)["']\s*\]\s*=|os\.environ\.setdefault\(\s*["']([A-Za-z_]\w*)["']""")
_ENVIRON_UPDATE = re.compile(r"os\.environ\.update\(|os\.putenv\(|load_dotenv\(")


class NotebookError(Exception):
    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


@dataclass
class CodeCell:
    number: int  # 1-based, counting every cell of the notebook
    text: str
    python: str  # the cell as lines of the module: IPython syntax made blank or ``pass``
    shell: list[tuple[int, str, tuple[tuple[int, int], ...]]] = field(default_factory=list)  # (line, text, opaque spans)
    other: tuple[str, str] | None = None  # ("shell", text) for a %%bash cell; ("file", name) for %%writefile
    body: str = ""  # the cell with its magic line blanked, for ``other``
    # IPython removes the first code line's indentation from every line that starts with it (``leading_indent``
    # in IPython/core/inputtransformer2.py): how much, and from which lines of ``python`` (1-based)
    dedent: int = 0
    dedented: frozenset[int] = frozenset()


@dataclass
class Notebook:
    text: str  # the file's JSON
    cells: list[CodeCell]
    spans: list  # notebook_json.SourceSpan | None, per cell of the notebook
    language: str  # "python", "bash" (a bash kernel's code cells are scripts) or another kernel's
    env_names: set[str] = field(default_factory=set)  # set by %env or os.environ in some cell
    env_values: dict[str, str] = field(default_factory=dict)  # %env NAME=value


def read_notebook(text: str) -> Notebook:
    """The notebook's code cells; NotebookError says what makes ``text`` no notebook."""
    from vllm_lint.surfaces.notebook_json import source_spans

    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook: not valid JSON ({exc.msg})", exc.lineno, exc.colno) from None
    except RecursionError:
        raise NotebookError("invalid notebook: nested too deeply to read") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        if isinstance(document, dict) and "worksheets" in document:
            raise NotebookError("notebook in nbformat 3 (it has \"worksheets\"), which is not read: convert it with "
                                "`jupyter nbconvert --to notebook --inplace`")
        raise NotebookError("invalid notebook: the JSON has no \"cells\" list (is it a Jupyter notebook?)")
    language = _kernel_language(document.get("metadata"))
    spans = source_spans(text)
    notebook = Notebook(text, [], spans, language)
    for number, cell in enumerate(document["cells"], 1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise NotebookError(f"invalid notebook: cell {number} has no cell_type")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(piece, str) for piece in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"invalid notebook: the source of cell {number} is not text")
        if cell["cell_type"] != "code" or spans[number - 1] is None:
            continue
        notebook.cells.append(_code_cell(number, source, notebook))
    return notebook


def _kernel_language(metadata) -> str:
    if not isinstance(metadata, dict):
        return "python"
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        entry = metadata.get(key)
        if isinstance(entry, dict) and isinstance(entry.get(field_name), str):
            return entry[field_name].lower()
    return "python"


def _code_cell(number: int, text: str, notebook: Notebook) -> CodeCell:
    lines = text.split("\n")
    cell = CodeCell(number, text, "")
    if notebook.language != "python":
        cell.python = "\n".join("" for _ in lines)
        if notebook.language in _SHELL_NAMES:
            cell.other, cell.body = ("shell", "shell"), text
        return cell
    first = lines[0].strip()
    if first.startswith("%%"):
        words = first[2:].split()
        magic = words[0] if words else ""
        body = "\n".join(["", *lines[1:]])
        if magic in _PYTHON_MAGICS:
            lines = ["", *lines[1:]]
        else:
            cell.python = "\n".join("" for _ in lines)
            cell.body = body
            if magic in _SHELL_MAGICS or (magic == "script" and len(words) > 1 and words[1].rsplit("/", 1)[-1] in _SHELL_NAMES):
                cell.other = ("shell", "shell")
            elif magic in ("writefile", "file") and len(words) > 1 and words[-1] != "-a":
                cell.other = ("file", PurePosixPath(words[-1]).name)
            return cell
    source_lines = lines
    lines = _leading_indent_removed(cell, lines)
    out: list[str] = []
    triple: str | None = None
    continuing = False
    for number_in_cell, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if continuing:
            out.append("")
            continuing = line.endswith("\\")
            continue
        if triple is None and (stripped.startswith(("!", "%")) or _ASSIGNED_ESCAPE.match(line) or _HELP.match(line)):
            indent = line[: len(line) - len(stripped)]
            out.append(indent + "pass" if indent else "")
            _magic_line(cell, notebook, source_lines, number_in_cell)
            continuing = line.endswith("\\")
            continue
        out.append(line)
        triple = _triple_quote_state(line, triple)
        for match in _ENVIRON_SET.finditer(line):
            notebook.env_names.add(match.group(1) or match.group(2))
        if _ENVIRON_UPDATE.search(line):
            notebook.env_names.add("*")
    cell.python = "\n".join(out)
    return cell


def _leading_indent_removed(cell: CodeCell, lines: list[str]) -> list[str]:
    """``lines`` as IPython runs them: the first non-blank line's leading blanks removed from each line that
    starts with them (the lines it removes them from recorded on ``cell``, for the columns of findings)."""
    first = next((line for line in lines if line.strip()), "")
    space = first[: len(first) - len(first.lstrip(" \t"))]
    if not space:
        return lines
    cell.dedent = len(space)
    cell.dedented = frozenset(number for number, line in enumerate(lines, 1) if line.startswith(space))
    return [line[len(space) :] if line.startswith(space) else line for line in lines]


def _triple_quote_state(line: str, triple: str | None) -> str | None:
    """Whether a triple-quoted string is still open after ``line`` (a ``!`` inside one is text, not a magic)."""
    i = 0
    while i < len(line):
        if triple is None:
            if line.startswith('"""', i) or line.startswith("'''", i):
                triple = line[i : i + 3]
                i += 3
                continue
            if line[i] == "#":
                return None
        elif line.startswith(triple, i):
            triple = None
            i += 3
            continue
        i += 1
    return triple


def _magic_line(cell: CodeCell, notebook: Notebook, lines: list[str], number: int) -> None:
    line = lines[number - 1]
    env = _ENV_MAGIC.match(line)
    if env is not None:
        notebook.env_names.add(env.group(1))
        if env.group(2) is not None:
            notebook.env_values[env.group(1)] = env.group(2).strip("\"'")
        return
    assigned = _ASSIGNED_ESCAPE.match(line)
    start = assigned.end() if assigned else len(line) - len(line.lstrip())
    rest = line[start:]
    if rest.startswith("!"):
        skip = 2 if rest.startswith("!!") else 1
    else:
        magic = re.match(r"%(sx|system)\b", rest)
        if magic is None:
            return
        skip = magic.end()
    last = number
    while lines[last - 1].endswith("\\") and last < len(lines):
        last += 1
    shown = [""] * len(lines)
    shown[number - 1] = " " * (start + skip) + line[start + skip :]
    for index in range(number, last):
        shown[index] = lines[index]
    script = "\n".join(shown)
    if "vllm" not in script.lower():
        return
    cell.shell.append((number, script, _expression_spans(script)))


def _expression_spans(script: str) -> tuple[tuple[int, int], ...]:
    """``{expression}`` in a shell escape: IPython fills in the Python value before the shell runs."""
    return tuple((m.start(), m.end()) for m in _PYTHON_EXPRESSION.finditer(script))


# -- the module and its findings --------------------------------------------------------------


@dataclass
class _Module:
    text: str
    cell_of_line: list[tuple[CodeCell, int]]  # per line of the module (0-based): the cell and the line in it


def _module(cells: list[CodeCell]) -> _Module:
    pieces: list[str] = []
    where: list[tuple[CodeCell, int]] = []
    for cell in cells:
        cell_lines = cell.python.split("\n")
        pieces.extend(cell_lines)
        where.extend((cell, n) for n in range(1, len(cell_lines) + 1))
    return _Module("\n".join(pieces) + "\n", where)


def _decode(job: LintJob) -> str | Diagnostic:
    """The notebook's text, or the error that says why it cannot be read."""
    from vllm_lint.source import SourceError, decode_text

    try:
        return decode_text(job.data).text
    except SourceError as exc:
        return parse_error(job.display, exc.message, exc.line, exc.column)


def may_match(job: LintJob) -> bool:
    text = _decode(job)
    if isinstance(text, Diagnostic):
        return True
    try:
        notebook = read_notebook(text)
    except NotebookError:
        return True  # reported by lint
    if any(cell.shell for cell in notebook.cells):
        return True  # only shell escapes that mention vLLM are kept
    for cell in notebook.cells:
        other = _other_surface(cell, job)
        if other is not None and other[0].may_match(other[1]):
            return True
    from vllm_lint.surfaces.python import may_match as python_may_match

    return python_may_match(replace(job, data=_module(notebook.cells).text.encode("utf-8")))


def lint(job: LintJob) -> list[Diagnostic]:
    text = _decode(job)
    if isinstance(text, Diagnostic):
        return [text]
    try:
        notebook = read_notebook(text)
    except NotebookError as exc:
        return [parse_error(job.display, exc.message, exc.line, exc.column)]
    located = _Locator(notebook, job.display)
    found: list[Diagnostic] = []
    found += _lint_python(notebook, job, located)
    for cell in notebook.cells:
        for _, script, opaque in cell.shell:
            found += located.all(cell, _lint_shell(script, job, notebook, opaque))
        if cell.other is not None:
            found += located.all(cell, _lint_other(cell, job, notebook))
    return found


def _sub_job(job: LintJob, text: str, name: str | None = None) -> LintJob:
    path = job.path.with_name(name) if name else job.path
    # Fixes' edits always made: a fix is offered only when its edits stay within one cell (_Locator.from_module).
    return replace(job, data=text.encode("utf-8"), path=path, standalone=False, fix_edits=True)


def _lint_python(notebook: Notebook, job: LintJob, located: _Locator) -> list[Diagnostic]:
    from vllm_lint.surfaces.python import lint as lint_python
    from vllm_lint.surfaces.python import may_match as python_may_match

    module = _module(notebook.cells)
    sub = _sub_job(job, module.text)
    if not python_may_match(sub):
        return []
    found = lint_python(sub)
    if not any(d.code == "VLL000" for d in found):
        return [d for d in (located.from_module(module, d) for d in found) if d is not None]
    # A cell that does not parse stops only itself: the others are linted one by one (without the
    # names earlier cells define, so with less to go on, never more).
    result = []
    for cell in notebook.cells:
        single = _module([cell])
        cell_job = _sub_job(job, single.text)
        if python_may_match(cell_job) or not _parses(single.text):
            result += [d for d in (located.from_module(single, d) for d in lint_python(cell_job)) if d is not None]
    return result


def _parses(text: str) -> bool:
    try:
        compile(text, "<cell>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except (SyntaxError, ValueError):
        return False
    return True


def _lint_shell(script: str, job: LintJob, notebook: Notebook, opaque) -> list[Diagnostic]:
    from vllm_lint.cmdline.shell import Environment
    from vllm_lint.surfaces.command_lint import lint_text
    from vllm_lint.values import Value

    env = Environment({name: None for name in notebook.env_names if name != "*"})
    for name, value in notebook.env_values.items():
        env.vars[name] = Value(value, f"%env {name}")
    if "*" in notebook.env_names:
        env.vars.setdefault("VLLM_API_KEY", None)  # os.environ.update(...) may set it
    return lint_text("shell", job.display, script, _sub_job(job, script), env, opaque)


def _other_surface(cell: CodeCell, job: LintJob) -> tuple[Surface, LintJob] | None:
    """The surface a ``%%bash`` or ``%%writefile NAME`` cell is read with, and the job for its body."""
    if cell.other is None:
        return None
    kind, name = cell.other
    from vllm_lint.surfaces.command_files import COMMAND_SURFACES
    from vllm_lint.surfaces.python import PYTHON

    surfaces = [*COMMAND_SURFACES, PYTHON]  # every surface but the notebook's own
    if kind == "shell":
        surface = next(s for s in surfaces if s.name == "shell")
        return surface, _sub_job(job, cell.body)
    head = cell.body.lstrip("\n").encode("utf-8")[:256]
    claimed = next((s for s in surfaces if s.claims(name, head)), None)
    return (claimed, _sub_job(job, cell.body, name)) if claimed is not None else None


def _lint_other(cell: CodeCell, job: LintJob, notebook: Notebook) -> list[Diagnostic]:
    other = _other_surface(cell, job)
    if other is None:
        return []
    surface, sub = other
    if surface.name == "shell":
        return _lint_shell(cell.body, job, notebook, ()) if "vllm" in cell.body.lower() else []
    return surface.lint(sub) if prefilter_disabled() or surface.may_match(sub) else []


class _Locator:
    """Findings in a cell's coordinates turned into the notebook's: the file's JSON and the cell."""

    def __init__(self, notebook: Notebook, display: str) -> None:
        from vllm_lint.text import TextIndex

        self.notebook = notebook
        self.display = display
        self.file = TextIndex(notebook.text)
        self._offsets: dict[int, tuple[list[int], TextIndex]] = {}

    def all(self, cell: CodeCell, found: list[Diagnostic]) -> list[Diagnostic]:
        return [self.in_cell(cell, d) for d in found]

    def from_module(self, module: _Module, diagnostic: Diagnostic) -> Diagnostic | None:
        """A finding of the module of cells, in its cell; a fix that spans two cells is left out."""
        lines = module.cell_of_line

        def where(position: Position) -> tuple[CodeCell, Position]:
            index = min(max(position.line, 1), len(lines)) - 1
            cell, line = lines[index]
            return cell, Position(line, position.column + (cell.dedent if line in cell.dedented else 0))

        cell, start = where(diagnostic.start)
        end_cell, end = where(diagnostic.end)
        if end_cell is not cell:
            end = start
        fix = diagnostic.fix
        if fix is not None:
            edits = []
            for edit in fix.edits:
                (a_cell, a), (b_cell, b) = where(edit.start), where(edit.end)
                if a_cell is not cell or b_cell is not cell:
                    fix = None
                    break
                edits.append(Edit(a, b, edit.content))
            else:
                fix = Fix(fix.applicability, fix.message, tuple(edits))
        noqa = tuple(at.line for cell_at, at in (where(Position(n, 1)) for n in diagnostic.noqa_lines) if cell_at is cell)
        return self.in_cell(cell, replace(diagnostic, start=start, end=end, fix=fix, noqa_lines=noqa))

    def in_cell(self, cell: CodeCell, diagnostic: Diagnostic) -> Diagnostic:
        location = CellLocation(cell.number, diagnostic.start, diagnostic.end)
        fix = diagnostic.fix
        if fix is not None:
            fix = self._fix(cell, fix)
        noqa = tuple(sorted({self.physical(cell, Position(n, 1)).line for n in diagnostic.noqa_lines}))
        return replace(
            diagnostic,
            path=self.display,
            start=self.physical(cell, diagnostic.start),
            end=self.physical(cell, diagnostic.end),
            fix=fix,
            noqa_lines=noqa,
            cell=location,
        )

    def _cell_offsets(self, cell: CodeCell) -> tuple[list[int], TextIndex]:
        """The file offset of each character of the cell's source and of its end; the cell's line index."""
        from vllm_lint.surfaces.notebook_json import char_offsets
        from vllm_lint.text import TextIndex

        cached = self._offsets.get(cell.number)
        if cached is None:
            span = self.notebook.spans[cell.number - 1]
            offsets = [o for start, end in span.strings for o in char_offsets(self.notebook.text, start, end)]
            offsets.append(span.strings[-1][1] - 1 if span.strings else span.start)
            cached = self._offsets[cell.number] = (offsets, TextIndex(cell.text))
        return cached

    def physical(self, cell: CodeCell, position: Position) -> Position:
        offsets, index = self._cell_offsets(cell)
        return self.file.position(offsets[min(max(index.offset(position), 0), len(offsets) - 1)])

    def _fix(self, cell: CodeCell, fix: Fix) -> Fix:
        from vllm_lint.surfaces.notebook_json import render_source

        _, index = self._cell_offsets(cell)
        text = cell.text
        for start, end, content in sorted(((index.offset(e.start), index.offset(e.end), e.content) for e in fix.edits), reverse=True):
            text = text[:start] + content + text[end:]
        span = self.notebook.spans[cell.number - 1]
        edit = Edit(self.file.position(span.start), self.file.position(span.end), render_source(self.notebook.text, span, text))
        return Fix(fix.applicability, fix.message, (edit,))
