"""The project rules' step of a run: once every file has a result (linted now or from the cache), join the
facts the files reported and add the findings to the files they are in."""

from __future__ import annotations

from vllm_lint.diagnostics import Diagnostic, Severity
from vllm_lint.engine.runner import FileResult, RunOptions


def add_project_findings(results: list[FileResult], options: RunOptions) -> None:
    facts = {result.path: result.facts for result in results if result.facts}
    if not facts:
        return  # the usual run: no surface reported facts (only an enabled project rule makes them)
    from vllm_lint.registry import checkers
    from vllm_lint.rulebook import severity_of

    by_path = {result.path: result for result in results}
    for checker in checkers("project"):
        code = checker.code
        if code not in options.enabled:
            continue
        for finding in checker.function(facts):
            request = finding.request
            result = by_path[finding.path]
            diagnostic = Diagnostic(code, finding.message, finding.path, request.start, request.end,
                                    severity_of(code, Severity.ERROR), None, request.noqa_lines)
            result.diagnostics = sorted([*result.diagnostics, diagnostic], key=Diagnostic.sort_key)


def project_findings(result: FileResult) -> list[Diagnostic]:
    """The findings the project rules added to a result (a fix of the file's own findings keeps them)."""
    if not result.facts:
        return []
    from vllm_lint.registry import project_codes

    return [d for d in result.diagnostics if d.code in project_codes()]
