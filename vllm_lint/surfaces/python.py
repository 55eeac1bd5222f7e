"""The Python surface: which files it takes and how one is linted."""

from __future__ import annotations

from vllm_lint.diagnostics import Diagnostic
from vllm_lint.surfaces import LintJob, Surface, parse_error, suffix_of
from vllm_lint.source import SourceError, decode_python


def claims(name: str, head: bytes) -> bool:
    suffix = suffix_of(name)
    if suffix in (".py", ".pyi"):
        return suffix == ".py"
    return head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]


def may_match(job: LintJob) -> bool:
    from vllm_lint.python.prefilter import may_match as bytes_may_match

    if not _decodes_cleanly(job.data):
        return True  # let the full path report the NUL byte or the undecodable text (VLL000)

    return bytes_may_match(job.data, job.path, job.enabled, job.api)


def _decodes_cleanly(data: bytes) -> bool:
    if b"\x00" in data:
        return False
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
    PYTHON.warm_up()
    from vllm_lint.python.checker import PythonOptions, SyntaxProblem, lint_python, parse

    try:
        module = parse(source.text)
    except SyntaxProblem as exc:
        return [parse_error(job.display, exc.message, exc.line, exc.column)]
    options = PythonOptions(job.enabled, job.launch_settings, job.api_version)
    from vllm_lint.project.rules import wants_facts

    if wants_facts(job.enabled):
        from vllm_lint.project.facts import FileFacts

        job.facts = FileFacts()
    return lint_python(job.display, source.text, module, options, job.facts)


PYTHON = Surface(name="python", claims=claims, may_match=may_match, lint=lint, heavy_modules=("vllm_lint.python.checker",))
