"""The Python surface: which files it takes and how one is linted."""

from __future__ import annotations

import os
from dataclasses import replace

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.surfaces.file_names import suffix_of
from vllm_lint.surfaces.job import LintJob, Surface, parse_error, prefilter_disabled
from vllm_lint.source import SourceError, decode_python

# Not typing.TYPE_CHECKING: importing typing costs ~3 ms of every run's start (mypy reads the name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from vllm_lint.python.summary import ModuleSummary
    from vllm_lint.python.focus import Focus


def claims(name: str, head: bytes) -> bool:
    suffix = suffix_of(name)
    if suffix in (".py", ".pyi"):
        return suffix == ".py"
    return head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]


def may_match(job: LintJob) -> bool:
    from vllm_lint.python.prefilter import may_match as bytes_may_match

    if prefilter_disabled():
        return True  # a Markdown file's Python blocks and a notebook's cells ask here too
    if not _decodes_cleanly(job.data):
        return True  # let the full path report the NUL byte or the undecodable text (VLL000)

    if bytes_may_match(job.data, job.path, job.enabled, job.api):
        return True
    return _may_call_into_project(job)


# What a request handler or start-up hook can do in another module of the project (python/project.py).
# (VLL105 needs a multi-worker server start, which the byte pre-filter lets through on its own.)
_CROSS_MODULE_CODES = frozenset({"VLL101", "VLL102", "VLL103", "VLL104", "VLL503"})


_REAL_FOLDERS: dict[str, str] = {}


def _in_project(job: LintJob) -> bool:
    """Whether the file lies in the project root (its other modules are looked for there only)."""
    if job.project_root is None:
        return True
    folder = os.path.dirname(job.path)
    if not os.path.isabs(folder):
        folder = os.path.join(os.getcwd(), folder)  # realpath normalises it: the files of a folder share its entry
    real = _REAL_FOLDERS.get(folder)
    if real is None:
        real = _REAL_FOLDERS[folder] = os.path.realpath(folder)
    root = _REAL_FOLDERS.get(str(job.project_root))
    if root is None:
        root = _REAL_FOLDERS[str(job.project_root)] = os.path.realpath(job.project_root)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _may_call_into_project(job: LintJob) -> bool:
    """A module with a handler (or a start-up hook) that imports a project module whose summary can hold
    something: the rules may then report what the handler reaches there. Every file read is a dependency."""
    from vllm_lint.python.prefilter import handlers_in_tree, may_have_handlers

    if not job.enabled & _CROSS_MODULE_CODES or not _in_project(job) or not may_have_handlers(job.data, job.path):
        return False
    from vllm_lint.python.project import Project, process_store

    store = process_store(job.known_summaries, _summarize)
    store.begin_file()
    project = Project(job.path, job.project_root, store)
    try:
        if not any(store.matters(target, project) for target in project.imported_files(project.importer, job.data)):
            return False
    finally:
        job.dependencies = {path: stamp for path, stamp in store.used.items() if path != str(project.importer)}
    return handlers_in_tree(job.data, job.path, job.api)


def _summarize(path: Path, data: bytes) -> ModuleSummary:
    from vllm_lint.python.summarizer import summarize_source  # LibCST: only once a summary is computed

    return summarize_source(path, data)


def _decodes_cleanly(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    if data.isascii():
        return True  # most source is ASCII: no need to build the decoded text to know it decodes
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False  # perhaps a coding cookie explains it; decode_python decides
    return True


def lint(job: LintJob) -> list[Diagnostic]:
    try:
        source = decode_python(job.data)
    except SourceError as exc:
        return [parse_error(job.display, exc.message, exc.line, exc.column)]
    from vllm_lint.python.focus import focus

    focused = focus(source.text)
    if focused is not None:
        diagnostics = _lint_text(job, focused.text, whole=False)
        if diagnostics is not None:
            return [_within_kept_lines(d, focused) for d in diagnostics]
    diagnostics = _lint_text(job, source.text)
    assert diagnostics is not None  # a whole module's syntax error is a finding
    return diagnostics


def _lint_text(job: LintJob, text: str, whole: bool = True) -> list[Diagnostic] | None:
    """The findings of the module ``text``; None when it is a big module's focused text (python/focus.py) that
    does not parse (the cut misread its layout): the whole module is parsed then."""
    from vllm_lint.python.complexity import too_complex

    refused = too_complex(text)
    if refused is not None:
        return [parse_error(job.display, refused.message, refused.line)]
    PYTHON.warm_up()
    from vllm_lint.python.checker import PythonOptions, SyntaxProblem, lint_python, parse

    try:
        module = parse(text)
    except SyntaxProblem as exc:
        return [parse_error(job.display, exc.message, exc.line, exc.column)] if whole else None
    from vllm_lint.python.project import Project, process_store

    store = process_store(job.known_summaries, _summarize)
    store.begin_file()
    project = Project(job.path, job.project_root, store)
    options = PythonOptions(job.enabled, job.launch_settings, job.api_version, project, job.fix_edits)
    from vllm_lint.registry import project_codes

    if job.enabled & project_codes():
        from vllm_lint.project.facts import FileFacts

        job.facts = FileFacts()
    try:
        return lint_python(job.display, text, module, options, job.facts)
    finally:
        job.dependencies = {path: stamp for path, stamp in store.used.items() if path != str(project.importer)}
        job.summaries = store.take_computed()


def _within_kept_lines(diagnostic: Diagnostic, focused: Focus) -> Diagnostic:
    """The finding of a focused module as is, but for a fix that would edit a blanked line: that fix is dropped
    (its edits were made against blank lines, not the code the file holds there)."""
    fix = diagnostic.fix
    if fix is None or not any(focused.touches_dropped(edit.start.line, edit.end.line) for edit in fix.edits):
        return diagnostic
    return replace(diagnostic, fix=None)


PYTHON = Surface(name="python", claims=claims, may_match=may_match, lint=lint, heavy_modules=("vllm_lint.python.checker",))
