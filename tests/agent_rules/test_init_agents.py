"""``vllm-lint init --hooks --mcp``: one entry in each assistant's own settings file, the rest kept byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vllm_lint.agent_hooks.protocols import PROTOCOLS
from vllm_lint.agent_rules.targets import TABLE, TARGETS, TableError, load_table
from vllm_lint.agent_settings.entries import apply
from vllm_lint.resources import templates_dir

SETTINGS = """{
    "permissions": {"allow": ["Bash(pytest -q)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write", "hooks": [{"type": "command", "command": "ruff format \\"$FILE\\""}]}
        ]
    },
    "model": "opus"
}
"""
MCP = '{\n  "mcpServers": {\n    "github": {"command": "github-mcp-server", "args": ["stdio"]}\n  }\n}\n'


@pytest.fixture
def claude_repo(repo: Path) -> Path:
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").write_text(SETTINGS)
    (repo / ".mcp.json").write_text(MCP)
    return repo


def test_hooks_and_mcp_merge_into_existing_settings(claude_repo, run_init, snapshots):
    result = run_init(claude_repo, "-t", "claude", "--hooks", "--mcp")
    assert result.exit_code == 0, result.output
    assert result.output.endswith("updated .claude/settings.json\nupdated .mcp.json\n")
    snapshots.assert_match("init/claude with hooks and mcp into existing settings", result.output)
    settings = (claude_repo / ".claude/settings.json").read_text()
    assert settings == apply(SETTINGS, TARGETS["claude"].hook)
    # Everything but the new list item is the user's text, byte for byte.
    start = settings.index("},\n            {\n                \"matcher\": \"Edit|Write|MultiEdit\"")
    end = settings.index("\n        ]\n    },\n    \"model\"")
    assert settings[: start + 1] + settings[end:] == SETTINGS
    mcp = (claude_repo / ".mcp.json").read_text()
    assert json.loads(mcp)["mcpServers"] == {"github": {"command": "github-mcp-server", "args": ["stdio"]}, "vllm-lint": {"command": "vllm-lint", "args": ["mcp"]}}
    assert mcp.startswith('{\n  "mcpServers": {\n    "github": {"command": "github-mcp-server", "args": ["stdio"]},\n')


def test_second_init_changes_nothing_and_check_passes(claude_repo, run_init, tree_files):
    assert run_init(claude_repo, "-t", "claude", "--hooks", "--mcp").exit_code == 0
    before = tree_files(claude_repo)
    result = run_init(claude_repo, "-t", "claude", "--hooks", "--mcp")
    assert result.exit_code == 0 and result.output == "3 file(s) already up to date\n"
    assert tree_files(claude_repo) == before
    # Installed parts stay current without the flags, and --check checks them.
    assert run_init(claude_repo, "-t", "claude").exit_code == 0
    assert tree_files(claude_repo) == before
    result = run_init(claude_repo, "-t", "claude", "--check")
    assert result.exit_code == 0 and result.output == "3 agent rule file(s) up to date\n"


def test_check_fails_after_a_hand_edit_inside_the_managed_entry(claude_repo, run_init, tree_files):
    assert run_init(claude_repo, "-t", "claude", "--hooks").exit_code == 0
    path = claude_repo / ".claude/settings.json"
    path.write_text(path.read_text().replace('"vllm-lint hook claude",\n                        "timeout": 30', '"vllm-lint hook claude",\n                        "timeout": 5'))
    result = run_init(claude_repo, "-t", "claude", "--check")
    assert result.exit_code == 1
    assert result.output == (
        ".claude/settings.json: stale (run `vllm-lint init`)\n"
        "  .claude/settings.json (hooks.PostToolUse): the vllm-lint entry differs from what vllm-lint writes (edited by"
        " hand, or by another version)\n"
        "1 agent rule file(s) out of date\n"
    )
    edited = tree_files(claude_repo)
    dry = run_init(claude_repo, "-t", "claude", "--dry-run")
    assert dry.exit_code == 0 and '-                        "timeout": 5\n+                        "timeout": 30\n' in dry.output
    assert tree_files(claude_repo) == edited
    assert run_init(claude_repo, "-t", "claude").exit_code == 0
    assert path.read_text() == apply(SETTINGS, TARGETS["claude"].hook)


def test_a_hand_edit_outside_the_entry_is_not_ours_to_judge(claude_repo, run_init):
    assert run_init(claude_repo, "-t", "claude", "--hooks").exit_code == 0
    path = claude_repo / ".claude/settings.json"
    path.write_text(path.read_text().replace('"model": "opus"', '"model": "sonnet"'))
    assert run_init(claude_repo, "-t", "claude", "--check").exit_code == 0


def test_removing_the_entry_turns_the_hook_off(claude_repo, run_init):
    assert run_init(claude_repo, "-t", "claude", "--hooks").exit_code == 0
    (claude_repo / ".claude/settings.json").write_text(SETTINGS)
    assert run_init(claude_repo, "-t", "claude").exit_code == 0
    assert (claude_repo / ".claude/settings.json").read_text() == SETTINGS
    assert run_init(claude_repo, "-t", "claude", "--check").exit_code == 0


def test_a_settings_file_that_cannot_take_the_entry_is_left_alone(claude_repo, run_init, snapshots):
    (claude_repo / ".claude/settings.json").write_text('{"hooks": ["not", "an", "object"]}\n')
    result = run_init(claude_repo, "-t", "claude", "--hooks")
    assert result.exit_code == 1
    assert "vllm-lint: error: .claude/settings.json: `hooks` is not an object; add the vllm-lint entry by hand\n" in result.output
    snapshots.assert_match("init/claude settings whose hooks are not an object", result.output)
    assert (claude_repo / ".claude/settings.json").read_text() == '{"hooks": ["not", "an", "object"]}\n'


EVERY_ENTRY_FILE = {
    ".claude/settings.json", ".mcp.json", ".codex/hooks.json", ".codex/config.toml", ".cursor/hooks.json",
    ".cursor/mcp.json", ".vscode/mcp.json", ".windsurf/hooks.json", ".clinerules/hooks/PostToolUse", ".gemini/settings.json",
}


def test_all_targets_with_hooks_and_mcp(repo, run_init, tree_files, snapshots):
    result = run_init(repo, "-t", "all", "--hooks", "--mcp")
    assert result.exit_code == 0, result.output
    for name in EVERY_ENTRY_FILE:
        assert (repo / name).is_file(), name
    assert os.access(repo / ".clinerules/hooks/PostToolUse", os.X_OK)
    assert "note: Codex runs a new or changed hook only once you trust it (`/hooks` in Codex).\n" in result.output
    snapshots.assert_match("init/all targets with hooks and mcp", result.output)
    gemini = json.loads((repo / ".gemini/settings.json").read_text())
    assert set(gemini) == {"hooks", "mcpServers"}  # the hook and the MCP entry share the file
    before = tree_files(repo)
    assert run_init(repo, "-t", "all", "--hooks", "--mcp").exit_code == 0
    assert tree_files(repo) == before
    assert run_init(repo, "-t", "all", "--check").exit_code == 0


def test_a_hook_script_made_not_executable_is_stale(repo, run_init):
    assert run_init(repo, "-t", "cline", "--hooks").exit_code == 0
    script = repo / ".clinerules/hooks/PostToolUse"
    script.chmod(0o644)
    assert run_init(repo, "-t", "cline", "--check").exit_code == 1
    assert run_init(repo, "-t", "cline").exit_code == 0
    assert os.access(script, os.X_OK)


def test_list_targets_shows_hooks_and_mcp(repo, run_init):
    listing = run_init(repo, "--list-targets").output
    assert "claude         CLAUDE.md; --hooks: .claude/settings.json; --mcp: .mcp.json  (Claude Code)  [default]\n" in listing
    assert "zed            .rules  (Zed)  [opt-in, not in `all`]\n" in listing


# -- the table ---------------------------------------------------------------------------------


def test_every_output_has_its_template_and_every_hook_a_protocol():
    templates = templates_dir()
    for target in TARGETS.values():
        for output in target.outputs:
            assert (Path(templates) / output.template).is_file(), (target.name, output.template)
        if target.hook is not None:
            assert target.hook_protocol in PROTOCOLS, target.name
            if target.hook.format == "json":
                assert target.hook.marker == f"vllm-lint hook {target.hook_protocol}"
                assert json.dumps(target.hook.value).count(target.hook.marker) == 1


def test_every_format_cites_its_source():
    """Each target, hook and MCP entry in targets.yaml has a comment with an https:// source above or in it."""
    lines = TABLE.read_text().splitlines()
    for index, line in enumerate(lines):
        if line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":") and not line.lstrip().startswith("#"):
            block = []
            for following in lines[index + 1 :]:
                if following.startswith("  ") and not following.startswith("   ") and following.rstrip().endswith(":"):
                    break
                if following and not following.startswith(" "):
                    break
                block.append(following)
            assert any("https://" in part for part in block), f"targets.yaml: {line.strip()} has no source"


def test_a_mistake_in_the_table_names_the_target_and_key(tmp_path):
    bad = tmp_path / "targets.yaml"
    bad.write_text("targets:\n  x:\n    tool: X\n    outputs: [{path: X.md, template: x.j2, mode: block, colour: red}]\n")
    with pytest.raises(TableError, match=r"targets.x.outputs: unknown key\(s\) colour"):
        load_table(bad)
    bad.write_text("targets:\n  x:\n    tool: X\n    hooks: nope\n")
    with pytest.raises(TableError, match="targets.x.hooks: no entry 'nope' under `hooks:`"):
        load_table(bad)


def test_a_users_own_cline_hook_is_never_replaced_without_force(repo, run_init):
    hook = repo / ".clinerules/hooks/PostToolUse"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\necho '{\"cancel\": false}'\n")
    result = run_init(repo, "-t", "cline", "--hooks")
    assert result.exit_code == 1
    assert "vllm-lint: refusing: .clinerules/hooks/PostToolUse: exists and was not written by vllm-lint; rerun with --force to overwrite it" in result.output
    assert hook.read_text() == "#!/bin/sh\necho '{\"cancel\": false}'\n"


def test_no_stale_init_snapshots(snapshots):
    snapshots.assert_only("init", ["claude with hooks and mcp into existing settings",
                                   "claude settings whose hooks are not an object", "all targets with hooks and mcp"])
