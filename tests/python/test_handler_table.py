"""The handler table is the docs' table, and every framework in it has a bad example in the rule files."""

from __future__ import annotations

import re

import pytest

from vllm_lint.python.handler_table import DOCS_PATH, FRAMEWORKS, render_docs
from vllm_lint.rulebook import load_rules

from lintutil import REPO


def test_the_docs_page_is_generated_from_the_table():
    page = (REPO / DOCS_PATH).read_text(encoding="utf-8")
    assert page == render_docs(), f"{DOCS_PATH} is stale: run `python -m vllm_lint.python.handler_table`"


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.name)
def test_every_framework_has_a_bad_example(framework):
    imports = re.compile(r"^\s*(?:from|import)\s+(" + "|".join(re.escape(m) for m in framework.modules) + r")\b", re.MULTILINE)
    examples = [
        f"{rule.code} example {index}"
        for rule in load_rules().values()
        for index, example in enumerate(rule.examples, start=1)
        if example.kind == "bad" and example.lang == "python" and imports.search(example.code)
    ]
    assert examples, f"no bad example in rules/*.yaml serves with {framework.title}"
