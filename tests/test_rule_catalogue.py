"""docs/rules.md holds the rule catalogue as a table generated from rules/*.yaml; this test keeps the two
the same. After changing a rule's YAML, rewrite the table with

    VLLM_LINT_UPDATE_DOCS=1 python -m pytest tests/test_rule_catalogue.py
"""

from __future__ import annotations

import os
import re

from vllm_lint.rule_docs import catalogue_table

from lintutil import REPO

DOC = REPO / "docs" / "rules.md"
BLOCK = re.compile(r"(<!-- catalogue:begin -->\n)(.*?)(<!-- catalogue:end -->)", re.DOTALL)


def test_the_docs_table_is_the_yaml_catalogue():
    text = DOC.read_text(encoding="utf-8")
    match = BLOCK.search(text)
    assert match, f"{DOC} lacks its <!-- catalogue:begin --> ... <!-- catalogue:end --> block"
    expected = catalogue_table()
    if os.environ.get("VLLM_LINT_UPDATE_DOCS") == "1" and match.group(2) != expected:
        DOC.write_text(text[: match.start(2)] + expected + text[match.end(2) :], encoding="utf-8")
        return
    assert match.group(2) == expected, "docs/rules.md is out of date: run with VLLM_LINT_UPDATE_DOCS=1 (see this file's docstring)"


def test_every_rule_is_in_the_table_once():
    from vllm_lint.rulebook import all_codes

    rows = re.findall(r"^\| (VLL\d{3}) \|", BLOCK.search(DOC.read_text(encoding="utf-8")).group(2), re.MULTILINE)
    assert rows == all_codes()
