"""The managed block, the hash, and the size budget, without the CLI."""

from __future__ import annotations

import pytest

from vllm_lint.agent_rules.blocks import (
    BlockError,
    current_block,
    is_intact,
    merge,
    stamp,
)
from vllm_lint.agent_rules.render import SizeLimitError, render_output, rule_views
from vllm_lint.agent_rules.targets import (
    DEFAULT_GLOBS,
    TARGETS,
    Output,
    TargetError,
    resolve_targets,
)

BLOCK = stamp("<!-- vllm-lint:begin hash=000000000000 -->\nrules\n<!-- vllm-lint:end -->")


def test_stamp_and_intact():
    assert "hash=000000000000" not in BLOCK
    assert is_intact(BLOCK)
    assert not is_intact(BLOCK.replace("rules", "rule"))
    assert is_intact(BLOCK.replace("\n", "\r\n"))  # line endings do not count as an edit


def test_merge_appends_replaces_and_keeps_the_rest():
    assert merge(None, BLOCK) == BLOCK + "\n"
    assert merge("mine", BLOCK) == "mine\n\n" + BLOCK + "\n"
    once = merge("top\n", BLOCK)
    newer = stamp("<!-- vllm-lint:begin hash=000000000000 -->\nnew rules\n<!-- vllm-lint:end -->")
    assert merge(once + "tail\n", newer) == "top\n\n" + newer + "\ntail\n"
    crlf = merge("a\r\nb\r\n", BLOCK)
    assert crlf == "a\r\nb\r\n\r\n" + BLOCK.replace("\n", "\r\n") + "\r\n"
    assert current_block(crlf) == BLOCK.replace("\n", "\r\n")


def test_two_blocks_are_an_error():
    with pytest.raises(BlockError):
        merge(BLOCK + "\n" + BLOCK, BLOCK)


def test_size_limit_error_names_the_limit():
    tiny = Output("tiny.md", "windsurf.md.j2", "whole", max_chars=500, fit_chars=500)
    with pytest.raises(SizeLimitError, match="at most 500 characters"):
        render_output(tiny, rule_views(), DEFAULT_GLOBS)


def test_budget_drops_examples_before_failing():
    windsurf = TARGETS["windsurf"].outputs[0]
    rendered = render_output(windsurf, rule_views(), DEFAULT_GLOBS)
    assert len(rendered.text) <= 12_000
    claude = render_output(TARGETS["claude"].outputs[0], rule_views(), DEFAULT_GLOBS)
    assert claude.text.count("\n") < 200 and claude.without_examples


def test_targets(tmp_path):
    assert [t.name for t in resolve_targets(["all"], tmp_path)] == [n for n, t in TARGETS.items() if not t.opt_in]
    assert [t.name for t in resolve_targets(["claude,agents", "claude"], tmp_path)] == ["claude", "agents"]
    with pytest.raises(TargetError, match="known targets"):
        resolve_targets(["emacs"], tmp_path)
