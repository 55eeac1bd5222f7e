"""The concise format's messages fit 120 characters, on every finding of every rule example (the full format
and JSON keep the whole message)."""

from __future__ import annotations

import pytest

from lintutil import example_in_process
from vllm_lint.engine.runner import lint_bytes
from vllm_lint.output.text import CONCISE_LIMIT, headline
from vllm_lint.rulebook import load_rules

CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{index}")
    for rule in load_rules().values()
    for index, example in enumerate(rule.examples)
    if example.kind == "bad"
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_every_concise_message_of_the_rule_examples_fits(tmp_path, rule, example):
    path, surface, options = example_in_process(tmp_path, example)
    for diagnostic in lint_bytes(path, str(path), path.read_bytes(), surface, options).diagnostics:
        shown = headline(diagnostic.message)
        assert len(shown) <= CONCISE_LIMIT, shown
        assert diagnostic.message.startswith(shown.removesuffix("\u2026"))


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("short: kept whole", "short: kept whole"),
        ("a" * 50 + " (x: y) " + "b" * 40 + ": " + "c" * 100, "a" * 50 + " (x: y) " + "b" * 40),
        ("word " * 40, ("word " * 24).rstrip() + "\u2026"),
        ("what is wrong: why; " + "more " * 30, "what is wrong: why"),
    ],
)
def test_headline(message, shown):
    assert headline(message) == shown
