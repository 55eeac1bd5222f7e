"""Entries written into assistants' settings files keep every other byte: key order, indentation, comments, CRLF."""

from __future__ import annotations

import json

import pytest

from vllm_lint.agent_rules.targets import TARGETS
from vllm_lint.agent_settings import jsonc
from vllm_lint.agent_settings.entries import EntryError, apply, current

CLAUDE_HOOK = TARGETS["claude"].hook
CLAUDE_MCP = TARGETS["claude"].mcp
VSCODE_MCP = TARGETS["copilot"].mcp
CODEX_MCP = TARGETS["codex"].mcp
AIDER_READ = TARGETS["aider"].settings[0]

# A project's .claude/settings.json as people write them: permissions, env, a formatter hook, 4 spaces.
CLAUDE_SETTINGS = """{
    "permissions": {
        "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
        "deny": ["Read(./.env)"]
    },
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "npx prettier --write \\"$CLAUDE_FILE\\""}]
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
    }
}
"""

CLAUDE_SETTINGS_AFTER = """{
    "permissions": {
        "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
        "deny": ["Read(./.env)"]
    },
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "npx prettier --write \\"$CLAUDE_FILE\\""}]
            },
            {
                "matcher": "Edit|Write|MultiEdit",
                "hooks": [
                    {
                        "type": "command",
                        "command": "vllm-lint hook claude",
                        "timeout": 30
                    }
                ]
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
    }
}
"""


def test_claude_hook_is_appended_after_the_users_hooks():
    assert apply(CLAUDE_SETTINGS, CLAUDE_HOOK) == CLAUDE_SETTINGS_AFTER
    assert apply(CLAUDE_SETTINGS_AFTER, CLAUDE_HOOK) == CLAUDE_SETTINGS_AFTER  # a second run changes nothing


def test_only_the_entry_is_new():
    after = apply(CLAUDE_SETTINGS, CLAUDE_HOOK)
    expected = json.loads(CLAUDE_SETTINGS)
    expected["hooks"]["PostToolUse"].append(CLAUDE_HOOK.value)
    assert json.loads(after) == expected
    assert list(json.loads(after)) == list(json.loads(CLAUDE_SETTINGS))  # key order


def test_a_hand_edit_inside_the_entry_is_put_back_and_nothing_else_moves():
    edited = CLAUDE_SETTINGS_AFTER.replace('"timeout": 30', '"timeout": 99')
    assert current(edited, CLAUDE_HOOK) != CLAUDE_HOOK.value
    assert apply(edited, CLAUDE_HOOK) == CLAUDE_SETTINGS_AFTER


def test_crlf_and_tabs_are_kept():
    text = '{\r\n\t"model": "opus",\r\n\t"hooks": {}\r\n}\r\n'
    after = apply(text, CLAUDE_HOOK)
    assert after.startswith('{\r\n\t"model": "opus",\r\n\t"hooks": {\r\n\t\t"PostToolUse": [\r\n\t\t\t{\r\n')
    assert "\n" not in after.replace("\r\n", "")
    assert json.loads(after)["hooks"]["PostToolUse"] == [CLAUDE_HOOK.value]


def test_new_and_empty_files_get_the_entry_alone():
    assert json.loads(apply(None, CLAUDE_MCP)) == {"mcpServers": {"vllm-lint": {"command": "vllm-lint", "args": ["mcp"]}}}
    assert apply("", CLAUDE_MCP) == apply(None, CLAUDE_MCP)
    cursor = json.loads(apply(None, TARGETS["cursor"].hook))
    assert cursor == {"version": 1, "hooks": {"afterFileEdit": [{"command": "vllm-lint hook cursor"}]}}


def test_an_mcp_server_is_added_beside_the_others():
    text = '{\n  "mcpServers": {\n    "github": {"command": "gh-mcp"}\n  }\n}\n'
    assert apply(text, CLAUDE_MCP) == (
        '{\n  "mcpServers": {\n    "github": {"command": "gh-mcp"},\n    "vllm-lint": {\n'
        '      "command": "vllm-lint",\n      "args": [\n        "mcp"\n      ]\n    }\n  }\n}\n'
    )


def test_jsonc_comments_and_trailing_commas_stay():
    text = '// Workspace MCP servers\n{\n  "servers": {\n    "fs": {"type": "stdio", "command": "fs-mcp"}, // files\n  },\n  /* inputs */ "inputs": [],\n}\n'
    after = apply(text, VSCODE_MCP)
    assert after.startswith('// Workspace MCP servers\n{\n  "servers": {\n    "fs": {"type": "stdio", "command": "fs-mcp"}, // files\n    "vllm-lint": {')
    assert after.endswith('    }\n  },\n  /* inputs */ "inputs": [],\n}\n')
    assert jsonc.parse(after).root.value["servers"]["vllm-lint"] == VSCODE_MCP.value
    assert apply(after, VSCODE_MCP) == after


@pytest.mark.parametrize("text, message", [
    ('{"hooks": []}', "`hooks` is not an object"),
    ('{"hooks": {"PostToolUse": {}}}', "`hooks.PostToolUse` is not a list"),
    ("[1]", "the file's top level is not a JSON object"),
    ('{"a": 1,,}', "not valid JSON (line 1, column 9: expected a key in double quotes)"),
])
def test_a_file_that_cannot_take_the_entry_is_an_error(text, message):
    with pytest.raises(EntryError) as caught:
        apply(text, CLAUDE_HOOK)
    assert str(caught.value) == message


CODEX_CONFIG = """model = "gpt-5-codex"  # the default
approval_policy = "on-request"

[mcp_servers.github]
command = "github-mcp"
args = ["stdio"]

[profiles.fast]
model = "o4-mini"
"""


def test_codex_config_toml_gets_one_table_and_keeps_the_rest():
    after = apply(CODEX_CONFIG, CODEX_MCP)
    assert after == CODEX_CONFIG + '\n[mcp_servers.vllm-lint]\ncommand = "vllm-lint"\nargs = ["mcp"]\n'
    assert apply(after, CODEX_MCP) == after
    edited = after.replace('args = ["mcp"]', 'args = ["mcp", "--x"]')
    assert apply(edited, CODEX_MCP) == after


def test_codex_table_written_another_way_is_left_to_the_user():
    with pytest.raises(EntryError, match="defined in a form vllm-lint does not edit"):
        apply('mcp_servers.vllm-lint.command = "other"\n', CODEX_MCP)


@pytest.mark.parametrize("text, after", [
    ("", "read:\n  - CONVENTIONS.md\n"),
    ("model: sonnet\n", "model: sonnet\nread:\n  - CONVENTIONS.md\n"),
    ("read: NOTES.md  # ours\n", "read: [NOTES.md, CONVENTIONS.md]  # ours\n"),
    ("read: [a.md]\nlint: true\n", "read: [a.md, CONVENTIONS.md]\nlint: true\n"),
    ("read:\n  - a.md\n\nlint: true\n", "read:\n  - a.md\n  - CONVENTIONS.md\n\nlint: true\n"),
    ("read:\n  - CONVENTIONS.md\n", "read:\n  - CONVENTIONS.md\n"),
])
def test_aider_read_list(text, after):
    assert apply(text, AIDER_READ) == after
