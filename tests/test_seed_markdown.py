"""The seed documents, linted as Markdown, report what their extracted code files report.

``tests/fixtures/seeds/markdown/`` holds the three seed documents as Markdown (001 verbatim; 000 with the line
breaks it lost restored; 004 with its code fenced). Each code file of ``tests/fixtures/seeds/code/`` sits in one
fenced block there. Linting the document must give, block by block, the same findings (code, line, column
and message) as linting the code file, with lines moved to where the block sits, and nothing elsewhere.
"""

from __future__ import annotations

import pytest

from fixture_files import SEED_MARKDOWN, SEEDS, lint_seed
from lintutil import lint_file_paths
from seed_table import TABLE

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
def test_document_reports_what_its_code_files_report(document_name: str) -> None:
    document_path = SEED_MARKDOWN / document_name
    document = document_path.read_text(encoding="utf-8").splitlines()
    expected: set[tuple[str, int, int, str]] = set()
    blocks: list[tuple[int, int]] = []
    for name in sorted(n for n, home in HOME.items() if home == document_name):
        code = (SEEDS / name).read_text(encoding="utf-8").splitlines()
        header, first, last = _placement(document, code)
        blocks.append((first, last))
        for code_name, line, column, message in _findings(lint_seed(name)):
            expected.add((code_name, line - header - 1 + first, column, message))
    got = _findings(lint_file_paths([document_path]))
    missing, extra = sorted(expected - got), sorted(got - expected)
    assert not missing and not extra, f"in the code files only: {missing}\nin the document only: {extra}"
    assert all(any(first <= line <= last for first, last in blocks) for _, line, _, _ in got)


def test_the_seed_table_holds_in_the_documents() -> None:
    """RULES.md's acceptance table (seed_table.py), read off the Markdown documents instead of the code files:
    every finding the table lists, at its line in the document, and no other."""
    for document_name in sorted(set(HOME.values())):
        document = (SEED_MARKDOWN / document_name).read_text(encoding="utf-8").splitlines()
        expected = []
        for name in sorted(n for n, home in HOME.items() if home == document_name):
            header, first, _ = _placement(document, (SEEDS / name).read_text(encoding="utf-8").splitlines())
            expected += [(code, line - header - 1 + first) for code, line, _, _ in TABLE[name]]
        got = [(d.code, d.start.line) for d in lint_file_paths([SEED_MARKDOWN / document_name])]
        assert sorted(got) == sorted(expected), document_name
