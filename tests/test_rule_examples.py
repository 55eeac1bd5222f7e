"""Tests generated from rules/*.yaml: the YAML examples are the test cases.

Every bad example reports its rule's code exactly at the lines marked
``# expect: CODE`` (other codes marked there too); every good example reports
nothing of the rule's code; ``fixed`` examples are what ``--fix --unsafe-fixes``
with that rule selected makes of the bad one. An example's ``files`` are other
modules of its project, written beside it (only the example itself is linted).
"""

from __future__ import annotations

import pytest

from vllm_lint.rulebook import load_rules
from vllm_lint.surfaces import all_surfaces

from lintutil import example_line, example_text, lint_example, write_example

RULES = load_rules()


def _supported(lang: str) -> bool:
    from vllm_lint.rulebook import LANG_SUFFIX

    name = LANG_SUFFIX.get(lang, "").rsplit("/", 1)[-1]
    probe = name if not name.startswith(".") else f"example{name}"
    return any(surface.claims(probe, b"") for surface in all_surfaces())


CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{example.kind}-{index}" + (f"-{example.shape}" if example.shape else ""))
    for rule in RULES.values()
    for index, example in enumerate(rule.examples)
]


def test_every_rule_has_docs_and_examples():
    for rule in RULES.values():
        assert rule.summary and rule.why and rule.directive, rule.code
        if rule.code == "VLL000":
            continue
        if "python" in rule.surfaces and rule.code not in ("VLL401", "VLL402"):
            assert rule.bad_examples and rule.good_examples, f"{rule.code} needs bad and good examples"
        for example in rule.examples:
            # `vllm-lint rule` and the agent files show a version example by its note
            assert example.note or not example.target, f"{rule.code}: an example with a target needs a note"


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_example(tmp_path, rule, example):
    if not _supported(example.lang):
        pytest.fail(f"{rule.code}: no surface lints {example.lang!r} examples")
    diagnostics = lint_example(tmp_path, example)
    if example.kind == "good":
        found = [d for d in diagnostics if d.code == rule.code]
        assert not found, f"{rule.code} fired on a good example: {found}"
        return
    expected = example.expected_lines(rule.code)
    assert expected, f"{rule.code}: bad example without an `# expect: {rule.code}` marker"
    lines = sorted(example_line(example, d) for d in diagnostics if d.code == rule.code)
    assert lines == expected, f"{rule.code} reported at {lines}, expected {expected}: {diagnostics}"
    # Other codes marked on the example hold too.
    for code in {c for c in RULES if c != rule.code}:
        marked = example.expected_lines(code)
        if marked:
            assert sorted(example_line(example, d) for d in diagnostics if d.code == code) == marked, code


FIX_CASES = [c for c in CASES if c.values[1].kind == "bad" and c.values[1].fixed is not None]


@pytest.mark.parametrize(("rule", "example"), FIX_CASES)
def test_fix(tmp_path, rule, example):
    from vllm_lint.rulebook import EXPECT_RE

    from vllm_lint.registry import noqa_rule_codes

    from lintutil import run_cli_in_process

    path = write_example(tmp_path, example)
    target = ("--target-vllm-version", example.target) if example.target else ()
    # An example with other files is a project: linted from its folder, as the project's root.
    cwd = tmp_path if example.files else None
    # A noqa rule judges the codes of the rules that ran: it is fixed beside the default rules (its examples are clean for them).
    select = () if rule.code in noqa_rule_codes() else ("--select", rule.code)
    result = run_cli_in_process("check", "--fix", "--unsafe-fixes", "--exit-zero", "--isolated", *target, *select, str(path), cwd=cwd)
    assert result.returncode == 0, result.stderr
    fixed = example_text(example, path)
    expected = "\n".join(EXPECT_RE.sub("", line) for line in example.fixed.splitlines()) + "\n"
    got = "\n".join(EXPECT_RE.sub("", line) for line in fixed.splitlines()) + "\n"
    assert got == expected
