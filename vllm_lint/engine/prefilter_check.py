"""Whether the pre-filter hides a finding: each file linted as vllm-lint does (pre-filter first) and with the
pre-filter off (``VLLM_LINT_NO_PREFILTER``: every surface parses every file it claims, Python blocks in
Markdown and notebook cells too). A finding, or a fact for the project rules (a vLLM server a file starts, a
request its client sends), that only the second run reports is hidden. Each file with findings is then
linted with each of its findings' rules alone enabled (``--select CODE``), where only that rule's own
conditions let the file through.

Used by tests/test_prefilter_recall.py (rule examples, seeds), benchmarks/prefilter_recall.py and the
real-corpus runner (benchmarks/realworld/run.py): ``compare(paths)``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from vllm_lint.config import Settings, enabled_codes, pin_search_tops
from vllm_lint.engine.runner import FileResult, RunOptions, lint_file
from vllm_lint.registry import noqa_rule_codes
from vllm_lint.rulebook import PARSE_ERROR_CODE, all_codes
from vllm_lint.surfaces import NO_PREFILTER_VARIABLE, Surface

# (code, line, column); code "fact" for a fact of the project rules
Finding = tuple[str, int, int]


@dataclass
class Comparison:
    files: int = 0
    parsed_filtered: int = 0
    parsed_forced: int = 0
    seconds_filtered: float = 0.0
    seconds_forced: float = 0.0
    findings: int = 0  # with the pre-filter off, facts not counted
    # (path, finding, "all rules" or "<code> alone"): what only the run without the pre-filter reported
    hidden: list[tuple[str, Finding, str]] = field(default_factory=list)


@contextmanager
def prefilter_off() -> Iterator[None]:
    """Within the block, every file is parsed (the switch the CLI reads, ``VLLM_LINT_NO_PREFILTER=1``)."""
    before = os.environ.get(NO_PREFILTER_VARIABLE)
    os.environ[NO_PREFILTER_VARIABLE] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[NO_PREFILTER_VARIABLE]
        else:
            os.environ[NO_PREFILTER_VARIABLE] = before


def findings_of(result: FileResult) -> set[Finding]:
    # a syntax error in a file no rule could match is not reported, by design
    found = {(d.code, d.start.line, d.start.column) for d in result.diagnostics if d.code != PARSE_ERROR_CODE}
    if result.facts:
        found |= {("fact", server.line, 0) for server in result.facts.servers}
        found |= {("fact", request.start.line, request.start.column) for request in result.facts.requests}
    return found


def compare_files(
    files: list[tuple[Path, Surface | None]], settings: Settings, per_code: bool = True, target: str | None = None
) -> Comparison:
    """Lint ``files`` (as discovery gives them) with and without the pre-filter; ``target``: the vLLM
    releases to judge against (else each file's pin)."""
    codes = all_codes()
    if target is not None:
        settings = dataclasses.replace(settings, target_vllm_version=target)

    def run(paths: list[tuple[Path, Surface | None]], select: tuple[str, ...], forced: bool) -> tuple[dict[str, set[Finding]], int, float]:
        options = RunOptions(settings, enabled_codes(settings, codes, select), codes)
        found: dict[str, set[Finding]] = {}
        parsed, start = 0, time.perf_counter()
        with prefilter_off() if forced else _unchanged():
            for path, surface in paths:
                result = lint_file(path, surface, options)
                parsed += result.parsed
                found[str(path)] = findings_of(result)
        return found, parsed, time.perf_counter() - start

    comparison = Comparison(files=len(files))
    filtered, comparison.parsed_filtered, comparison.seconds_filtered = run(files, (), forced=False)
    everything, comparison.parsed_forced, comparison.seconds_forced = run(files, (), forced=True)
    comparison.findings = sum(1 for found in everything.values() for finding in found if finding[0] != "fact")
    comparison.hidden = [
        (path, finding, "all rules") for path, found in everything.items() for finding in sorted(found - filtered.get(path, set()))
    ]
    if per_code:
        for code in sorted({finding[0] for found in everything.values() for finding in found} - {"fact"}):
            having = [(path, surface) for path, surface in files if any(f[0] == code for f in everything[str(path)])]
            alone, _, _ = run(having, (code,), forced=False)
            # A noqa rule judges only the codes whose rules ran: alone, it is held to its own run without the pre-filter.
            reference = run(having, (code,), forced=True)[0] if code in noqa_rule_codes() else everything
            for path, _ in having:
                wanted = {f for f in reference[str(path)] if f[0] == code}
                comparison.hidden += [(str(path), finding, f"{code} alone") for finding in sorted(wanted - alone[str(path)])]
    return comparison


def compare(paths: list[Path], per_code: bool = True) -> Comparison:
    """``compare_files`` over what ``vllm-lint check --isolated --no-respect-gitignore PATHS`` would lint."""
    from vllm_lint.engine.discovery import discover
    from vllm_lint.surfaces import all_surfaces

    settings = Settings(respect_gitignore=False, pin_search_tops=pin_search_tops(paths, None))
    return compare_files(list(discover(paths, settings, all_surfaces())), settings, per_code)


@contextmanager
def _unchanged() -> Iterator[None]:
    yield
