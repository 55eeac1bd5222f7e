"""The seed documents, linted as Markdown, report what their extracted code files report.

``tests/fixtures/seeds_markdown/`` holds the three seed documents as Markdown (001 verbatim; 000 with the line
breaks it lost restored; 004 with its code fenced). Each code file of ``shared/seeds/code/`` sits in one
fenced block there. Linting the document must give, block by block, the same findings (code, line, column
and message) as linting the code file, with lines moved to where the block sits, and nothing elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lintutil import REPO, lint_file_paths

DOCS = REPO / "tests" / "fixtures" / "seeds_markdown"
HOME = {
    "000_bad_pipeline_server.py": "000_vllm_production_serving.md",
    "000_good_async_engine_server.py": "000_vllm_production_serving.md",
    "000_bad_entrypoint.sh": "000_vllm_production_serving.md",
    "000_good_entrypoint.sh": "000_vllm_production_serving.md",
    "001_start_vllm.sh": "001_vllm_skill.md",
    "001_vllm_client.py": "001_vllm_skill.md",
    "001_recipes.sh": "001_vllm_skill.md",
    "004_server.py": "004_vllm_fastapi_guide.md",
    "004_client.py": "004_vllm_fastapi_guide.md",
}
_RECONSTRUCTED = "# Reconstructed from seed"  # a note the extracted file adds on top; not in the document


def _placement(document: list[str], code: list[str]) -> tuple[int, int, int]:
    """(header lines dropped, first document line of the rest, its last line), 1-based."""
    header = 0
    while header < len(code) and code[header].startswith(_RECONSTRUCTED):
        header += 1
    body = code[header:]
    while body and not body[-1].strip():
        body.pop()
    starts = [i for i in range(len(document) - len(body) + 1) if document[i : i + len(body)] == body]
    assert len(starts) == 1, f"the code is not exactly once in the document ({len(starts)} times)"
    return header, starts[0] + 1, starts[0] + len(body)


def _findings(diagnostics) -> set[tuple[str, int, int, str]]:
    return {(d.code, d.start.line, d.start.column, d.message) for d in diagnostics}


@pytest.mark.parametrize("document_name", sorted(set(HOME.values())))
def test_document_reports_what_its_code_files_report(seeds: Path, document_name: str) -> None:
    document_path = DOCS / document_name
    document = document_path.read_text(encoding="utf-8").splitlines()
    expected: set[tuple[str, int, int, str]] = set()
    blocks: list[tuple[int, int]] = []
    for name in sorted(n for n, home in HOME.items() if home == document_name):
        code = (seeds / name).read_text(encoding="utf-8").splitlines()
        header, first, last = _placement(document, code)
        blocks.append((first, last))
        for code_name, line, column, message in _findings(lint_file_paths([seeds / name])):
            expected.add((code_name, line - header - 1 + first, column, message))
    got = _findings(lint_file_paths([document_path]))
    missing, extra = sorted(expected - got), sorted(got - expected)
    assert not missing and not extra, f"in the code files only: {missing}\nin the document only: {extra}"
    assert all(any(first <= line <= last for first, last in blocks) for _, line, _, _ in got)


def test_the_seed_table_holds_in_the_documents() -> None:
    """RULES.md's acceptance table, read off the Markdown documents instead of the code files."""
    found = {}
    for name in sorted(set(HOME.values())):
        for d in lint_file_paths([DOCS / name]):
            found.setdefault(name, set()).add((d.code, d.start.line))
    skill = found["001_vllm_skill.md"]
    # start_vllm.sh (lines 61-89): VLL401, VLL402, VLL403; VLL201/VLL203 come through ${VAR:-default}
    assert {"VLL401", "VLL402", "VLL403"} <= {c for c, line in skill if 61 <= line <= 89}
    assert not {c for c, line in skill if 61 <= line <= 89} & {"VLL201", "VLL203"}
    # the recipes (lines 141-156)
    assert {("VLL203", 142), ("VLL201", 145), ("VLL403", 142), ("VLL403", 145), ("VLL303", 151)} <= skill
    # the client (lines 95-122) reports nothing
    assert not [line for _, line in skill if 95 <= line <= 122]
    production = found["000_vllm_production_serving.md"]
    entrypoint = {c for c, line in production if 92 <= line <= 98}
    assert {"VLL401", "VLL203", "VLL403"} <= entrypoint and not entrypoint & {"VLL206", "VLL202"}
    assert ("VLL101", 44) in production  # `pipe(prompt, ...)` in the bad server
    good_server = {c for c, line in production if 53 <= line <= 73}
    assert {"VLL203", "VLL302", "VLL501"} <= good_server and not good_server & {"VLL101", "VLL103", "VLL201"}
    guide = {c for c, line in found["004_vllm_fastapi_guide.md"] if 46 <= line <= 146}
    assert {"VLL103", "VLL301", "VLL303", "VLL502", "VLL503"} <= guide and "VLL202" not in guide
    assert not [line for _, line in found["004_vllm_fastapi_guide.md"] if line >= 152]  # the client
