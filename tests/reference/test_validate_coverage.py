"""The rule example servers checked without a server (fast): each fixed one keeps the kind of server its bad one
is, and each kind of server among them is validated live by some test (live_cases.py).

What else the fast suite checks of each fixed example (it compiles, re-lints without VLL1xx, a second fix
changes nothing) is in tests/test_server_rewrite.py; benchmarks/validate_examples.py validates every one live.
"""

from __future__ import annotations

import pytest

from vllm_lint.reference.server_kinds import kind_of
from vllm_lint.reference.validate.cases import rule_cases
from vllm_lint.rulebook import load_rules

from .live_cases import LIVE_EXAMPLES, kinds_validated_live

CASES = rule_cases()


def _fixed_source(case_name: str) -> str:
    code, _, number = case_name.split()
    example = load_rules()[code].examples[int(number) - 1]
    assert example.fixed is not None, case_name
    return example.fixed


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_fixed_server_is_served_as_the_bad_one_is(case):
    assert kind_of(_fixed_source(case.name)) is kind_of(case.source)


def test_every_kind_of_rule_example_server_is_validated_live():
    kinds = {kind_of(case.source).name for case in CASES}
    assert kinds <= kinds_validated_live(), f"no live test validates a {sorted(kinds - kinds_validated_live())} server"


def test_the_live_examples_are_rule_example_servers():
    names = {case.name for case in CASES}
    assert [e.case for e in LIVE_EXAMPLES if e.case not in names] == []
