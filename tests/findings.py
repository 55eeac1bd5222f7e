"""Findings as the tests compare them: a diagnostic as (code, line), a JSON report's item as (file, code, row). Whole lists, in the order vllm-lint reports them, so that a finding too many fails as one too few does."""

from __future__ import annotations

import json
from collections.abc import Iterable

from vllm_lint.diagnostics import Diagnostic


def code_lines(diagnostics: Iterable[Diagnostic]) -> list[tuple[str, int]]:
    return [(d.code, d.start.line) for d in diagnostics]


def codes(diagnostics: Iterable[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


def json_rows(report: str) -> list[tuple[str, str, int]]:
    """(file as reported, code, row) of each finding in a ``--output-format json`` report."""
    return [(item["filename"], item["code"], item["location"]["row"]) for item in json.loads(report)]
