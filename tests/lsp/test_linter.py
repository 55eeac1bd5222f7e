"""The language server lints a change for its findings, and computes a fix's edits when a code action asks."""

from __future__ import annotations

from pathlib import Path

from vllm_lint.diagnostics import Applicability
from vllm_lint.lsp.linter import Linter
from vllm_lint.rulebook import load_rules


def test_a_change_is_linted_without_the_rewrite_s_edits_and_a_code_action_gets_them(tmp_path: Path):
    text = load_rules()["VLL101"].bad_examples[0].clean_code
    linter = Linter()
    linted = linter.lint(tmp_path / "server.py", text)
    [finding] = linted.own
    assert finding.code == "VLL101" and finding.fix is not None
    assert finding.fix.applicability is Applicability.UNSAFE and finding.fix.edits == ()

    edited = linter.with_edits(linted)
    [with_edits] = edited.own
    assert (with_edits.code, with_edits.start, with_edits.end, with_edits.message) == (
        finding.code, finding.start, finding.end, finding.message)
    assert with_edits.fix is not None and with_edits.fix.message == finding.fix.message and with_edits.fix.edits
    assert linter.with_edits(linted) is edited  # once per text
    assert linter.with_edits(edited) is edited
