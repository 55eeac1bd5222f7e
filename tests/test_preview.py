"""Rules in preview (``preview: true`` in their YAML) run only with preview on, however they are selected, as
in ruff; the agent rule files teach them only then. (tests/test_new_rule.py runs a real preview rule end to end.)"""

from __future__ import annotations

import dataclasses


import pytest

from vllm_lint import rulebook
from vllm_lint.agent_rules.render import rule_views
from vllm_lint.config import ConfigError, Settings, enabled_codes, load_settings
from vllm_lint.rulebook import RuleFileError, all_codes, load_rules

CODES = all_codes()


@pytest.fixture
def vll203_in_preview(monkeypatch):
    monkeypatch.setattr(rulebook, "preview_codes", lambda: frozenset({"VLL203"}))


@pytest.mark.parametrize("select", [("ALL",), ("VLL",), ("VLL2",), ("VLL203",)])
def test_a_preview_rule_needs_preview_however_selected(vll203_in_preview, select):
    off, on = Settings(), Settings(preview=True)
    assert enabled_codes(off, CODES, select) == enabled_codes(on, CODES, select) - {"VLL203"}
    assert "VLL203" in enabled_codes(on, CODES, select)


def test_preview_in_the_configuration(tmp_path):
    config = tmp_path / "vllm-lint.toml"
    config.write_text("preview = true\n", encoding="utf-8")
    assert load_settings(config, CODES).preview is True
    config.write_text('preview = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="`preview` must be true or false"):
        load_settings(config, CODES)


def test_no_shipped_rule_is_in_preview_by_accident():
    # What the fast path reads off the files' text is what the YAML says.
    assert rulebook.preview_codes() == {code for code, rule in load_rules().items() if rule.preview}
    assert all(rule.since for rule in load_rules().values())


def test_the_preview_line_must_be_one_the_fast_path_reads(tmp_path):
    path = tmp_path / "VLL999.yaml"
    text = 'code: VLL999\nname: x\nsince: "0.2.0"\nseverity: info\nsummary: s\nwhy: w\ndirective: d\n'
    path.write_text(text + "preview:   true   # until 0.3\n", encoding="utf-8")
    assert rulebook.parse_rule(rulebook._read_yaml(path), path).preview is True
    path.write_text(text + "preview: 1\n", encoding="utf-8")
    with pytest.raises(RuleFileError, match="`preview` must be true or false"):
        rulebook.parse_rule(rulebook._read_yaml(path), path)
    path.write_text(text + "preview: yes\n", encoding="utf-8")  # true to YAML, not to preview_codes()
    with pytest.raises(RuleFileError, match="write `preview: true` on a line of its own"):
        rulebook.parse_rule(rulebook._read_yaml(path), path)
    path.write_text(text.replace("since", "sinse"), encoding="utf-8")
    with pytest.raises(RuleFileError, match="missing key 'since'"):
        rulebook.parse_rule(rulebook._read_yaml(path), path)


def test_agent_files_teach_a_preview_rule_only_with_preview(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from vllm_lint.cli.main import cli

    rules = dict(load_rules())
    rules["VLL203"] = dataclasses.replace(rules["VLL203"], preview=True)
    monkeypatch.setattr(rulebook, "load_rules", lambda: rules)
    assert "VLL203" not in [view.code for view in rule_views()]
    assert "VLL203" in [view.code for view in rule_views(preview=True)]
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(tmp_path), "-t", "agents"], catch_exceptions=False).exit_code == 0
    assert "**VLL203**" not in (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert runner.invoke(cli, ["init", str(tmp_path), "-t", "agents", "--check"]).exit_code == 0
    assert runner.invoke(cli, ["init", str(tmp_path), "-t", "agents", "--preview"], catch_exceptions=False).exit_code == 0
    assert "**VLL203**" in (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    (tmp_path / "vllm-lint.toml").write_text("preview = true\n", encoding="utf-8")
    assert runner.invoke(cli, ["init", str(tmp_path), "-t", "agents", "--check"]).exit_code == 0
