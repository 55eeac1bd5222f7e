"""The hook `vllm-lint init --hooks` installs, run the way each assistant runs it: its command through a shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from hookutil import payload_text

from vllm_lint.agent_rules.targets import TARGETS

# target -> the payload fixture its assistant sends, and the stream the findings must come back on.
CASES = {
    "claude": ("claude-write", "stderr"),
    "codex": ("codex-apply-patch", "stderr"),
    "gemini": ("gemini-write-file", "stdout"),
    "cursor": ("cursor-after-file-edit", "stdout"),
    "devin": ("windsurf-post-write-code", "stderr"),
    "cline": ("cline-write-to-file", "stdout"),
}


def _installed_command(project, target: str) -> str:
    entry = TARGETS[target].hook
    if entry.format == "script":
        return str(project / entry.file)
    node = json.loads((project / entry.file).read_text())
    for key in entry.path:
        node = node[key]
    [ours] = [item for item in node if entry.marker in json.dumps(item)]
    return ours["command"] if "command" in ours else ours["hooks"][0]["command"]


@pytest.mark.parametrize("target", sorted(CASES))
def test_the_installed_hook_reports_the_bad_server(target, project):
    from vllm_lint.cli.main import cli

    result = CliRunner().invoke(cli, ["init", str(project), "-t", target, "--hooks"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    fixture, stream = CASES[target]
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["sh", "-c", _installed_command(project, target)],
        input=payload_text(fixture, project), capture_output=True, text=True, cwd=project, env=env, timeout=60,
    )
    assert done.returncode == (2 if stream == "stderr" else 0)
    assert "server.py:12: VLL101" in (done.stderr if stream == "stderr" else done.stdout)
