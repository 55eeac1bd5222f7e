"""Suppressions on their own: ``# noqa`` (and Markdown's ``<!-- noqa -->``), skip-file and per-file-ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_lint.config import Settings
from vllm_lint.diagnostics import Diagnostic, Position, Severity
from vllm_lint.engine.suppressions import noqa_codes, skips_file, unsuppressed
from vllm_lint.surfaces import parse_error

CODES = ["VLL101", "VLL202", "VLL203", "VLL301"]


def _finding(code: str, line: int, noqa_lines: tuple[int, ...] = ()) -> Diagnostic:
    return Diagnostic(code, "message", "f.py", Position(line, 1), Position(line, 2), Severity.WARNING,
                      noqa_lines=noqa_lines)


@pytest.mark.parametrize(("line", "codes"), [
    ("x = 1", None),
    ("x = 1  # noqa", set()),
    ("x = 1  #noqa", set()),
    ("x = 1  # NOQA: vll202", {"VLL202"}),
    ("x = 1  # noqa: VLL202, VLL203", {"VLL202", "VLL203"}),
    ("x = 1  # noqa:VLL202 VLL203", {"VLL202", "VLL203"}),
    ("x = 1  # noqa: E501 - a reason after the codes", {"E501"}),
    ("<!-- noqa -->", set()),
    ("<!-- noqa: VLL301 -->", {"VLL301"}),
    ("x = 1  # no qa", None),
])
def test_noqa_codes(line, codes):
    assert noqa_codes(line) == codes


def test_skip_file_anywhere_in_the_file():
    assert skips_file(b"import os\n# vllm-lint: skip-file\n")
    assert skips_file(b"#vllm-lint:skip-file")
    assert not skips_file(b"# vllm-lint: skip-files\n")
    assert not skips_file(b"# vllm-lint skip-file\n")


def test_noqa_on_the_line_or_the_statement_start():
    data = b"llm = LLM(  # noqa: VLL202\n    gpu_memory_utilization=0.99,\n)\nx = 1  # noqa\ny = 2\n"
    findings = [
        _finding("VLL202", 2, noqa_lines=(1,)),  # suppressed on its statement's first line
        _finding("VLL203", 2, noqa_lines=(1,)),  # another code: kept
        _finding("VLL301", 4),  # bare noqa: suppressed
        _finding("VLL101", 5),  # no noqa: kept
        _finding("VLL101", 99),  # past the end (a finding at a synthetic line): kept
    ]
    kept, suppressed = unsuppressed(findings, data, Path("f.py"), Settings(), CODES)
    assert kept == [findings[1], findings[3], findings[4]]
    assert suppressed == 2


def test_per_file_ignores_match_the_path_from_the_root(tmp_path):
    settings = Settings(root=tmp_path, per_file_ignores=(("tests/**", ("VLL2",)), ("*.md", ("VLL301",))))
    findings = [_finding("VLL202", 1), _finding("VLL203", 1), _finding("VLL301", 1), _finding("VLL101", 1)]
    kept, suppressed = unsuppressed(findings, b"x\n", tmp_path / "tests" / "t.py", settings, CODES)
    assert kept == [findings[2], findings[3]]
    assert suppressed == 2
    kept, suppressed = unsuppressed(findings, b"x\n", tmp_path / "src" / "t.py", settings, CODES)
    assert kept == findings
    assert suppressed == 0


def test_vll000_is_never_suppressed(tmp_path):
    error = parse_error("f.py", "cannot parse")
    settings = Settings(root=tmp_path, per_file_ignores=(("*.py", ("ALL",)),))
    kept, suppressed = unsuppressed([error], b"x = (  # noqa\n", tmp_path / "f.py", settings, CODES)
    assert kept == [error]
    assert suppressed == 0
