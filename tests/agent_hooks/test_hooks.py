"""`vllm-lint hook AGENT` fed the payloads each assistant documents (payloads/, each citing its source).

Each runs as the assistant runs it: a subprocess with the payload on stdin, in the project.
"""

from __future__ import annotations

import json
import sys

import pytest

from hookutil import PAYLOADS, payload_text, run_hook

FIXTURES = sorted(p.stem for p in PAYLOADS.glob("*.json"))


def _agent(fixture: str) -> str:
    return fixture.split("-", 1)[0]


def _model_text(agent: str, ran) -> str:
    """What the assistant hands its model, read back from the answer in its own protocol."""
    if agent in ("claude", "codex", "windsurf"):
        assert ran.exit_code == 2 and ran.stdout == ""
        return ran.stderr
    assert ran.exit_code == 0 and ran.stderr == ""
    answer = json.loads(ran.stdout)
    if agent == "gemini":
        assert answer["hookSpecificOutput"]["hookEventName"] == "AfterTool"
        return answer["hookSpecificOutput"]["additionalContext"]
    if agent == "cursor":
        return answer["additional_context"]
    assert agent == "cline" and answer["cancel"] is False
    return answer["contextModification"]


def test_every_fixture_cites_its_source():
    assert FIXTURES
    for name in FIXTURES:
        data = json.loads((PAYLOADS / f"{name}.json").read_text())
        assert data["source"].startswith("https://"), name


@pytest.mark.parametrize("fixture", FIXTURES)
def test_findings_reach_the_model(fixture, project, snapshots):
    """Every assistant's model reads the same report (one snapshot for all of them)."""
    ran = run_hook(_agent(fixture), payload_text(fixture, project), project)
    snapshots.assert_match("agent-hooks/server report", _model_text(_agent(fixture), ran))


def test_the_report_names_code_line_directive_and_fix_commands(project):
    text = _model_text("claude", run_hook("claude", payload_text("claude-write", project), project))
    assert "server.py:7: VLL301" in text and "server.py:12: VLL101" in text
    assert "Do: Never call a HuggingFace `pipeline()`" in text
    assert "`vllm-lint check --fix server.py`" in text
    assert "`vllm-lint check --fix --unsafe-fixes server.py`" in text


@pytest.mark.parametrize("fixture", ["claude-write", "codex-apply-patch", "gemini-write-file", "cursor-after-file-edit", "windsurf-post-write-code", "cline-write-to-file"])
@pytest.mark.parametrize("edited", ["clean.py", "notes.txt", "ignored/server.py", "OUTSIDE"])
def test_nothing_to_say_is_exit_0_and_silence(fixture, edited, project):
    name = str(project.parent / "elsewhere" / "server.py") if edited == "OUTSIDE" else edited
    ran = run_hook(_agent(fixture), payload_text(fixture, project, name), project)
    assert (ran.exit_code, ran.stdout, ran.stderr) == (0, "", "")


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "cursor", "windsurf", "cline"])
@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"tool_input": 3}'])
def test_a_bad_payload_never_blocks_the_agent(agent, stdin, project):
    ran = run_hook(agent, stdin, project)
    assert ran.exit_code == 0 and ran.stdout == ""
    assert ran.stderr.startswith(f"vllm-lint hook {agent}: note: cannot read the hook payload (") and ran.stderr.endswith("; nothing checked\n")


def test_cline_tools_that_write_nothing_are_ignored(project):
    payload = json.loads(payload_text("cline-write-to-file", project))
    payload["postToolUse"]["toolName"] = "read_file"
    assert run_hook("cline", json.dumps(payload), project).__dict__ == {"exit_code": 0, "stdout": "", "stderr": ""}


def test_codex_patch_touching_two_files_lints_both(project):
    (project / "app.py").write_text((project / "server.py").read_text())
    payload = json.loads(payload_text("codex-apply-patch", project))
    payload["tool_input"]["command"] = "*** Begin Patch\n*** Add File: app.py\n+x\n*** Update File: clean.py\n*** Move to: server.py\n@@\n*** Delete File: gone.py\n*** End Patch\n"
    ran = run_hook("codex", json.dumps(payload), project)
    assert ran.exit_code == 2
    assert ran.stderr.startswith("vllm-lint found 4 vLLM serving problems in app.py, server.py (files you just edited). Fix them before you go on:\n")


def test_claude_project_dir_bounds_the_project(project):
    """Claude Code sets CLAUDE_PROJECT_DIR; a file outside it is not the project's."""
    sub = project / "sub"
    sub.mkdir()
    ran = run_hook("claude", payload_text("claude-write", project), project, env={"CLAUDE_PROJECT_DIR": str(sub)})
    assert (ran.exit_code, ran.stderr) == (0, "")


def test_unknown_agent_and_usage(project):
    ran = run_hook("vim", "{}", project)
    assert ran.exit_code == 2 and ran.stderr.startswith("vllm-lint: error: unknown agent 'vim'; known: claude, codex, gemini, cursor, windsurf, cline")


def test_the_hook_does_not_import_click(project):
    import subprocess

    code = (
        "import sys, io; sys.stdin = io.TextIOWrapper(io.BytesIO(open(sys.argv[1], 'rb').read()));"
        "from vllm_lint.cli.entry import main\n"
        "try:\n    main(['hook', 'claude'])\nexcept SystemExit as e:\n    print(e.code, 'click' in sys.modules, file=sys.stderr)"
    )
    payload = project / "payload.json"
    payload.write_text(payload_text("claude-write", project))
    done = subprocess.run([sys.executable, "-c", code, str(payload)], capture_output=True, text=True, cwd=project, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "2 False"


def test_the_fix_lines_follow_the_configuration(project):
    (project / "pyproject.toml").write_text('[tool.vllm-lint]\nunfixable = ["VLL301"]\nignore = ["VLL101"]\n')
    ran = run_hook("claude", payload_text("claude-write", project), project)
    assert ran.exit_code == 2
    assert "VLL101" not in ran.stderr and "server.py:7: VLL301" in ran.stderr
    assert "--fix" not in ran.stderr  # the only fix left is one the configuration does not allow


def test_a_long_report_is_cut_per_file():
    from vllm_lint.agent_hooks.report import SHOWN_PER_FILE, EditedFile, phrase
    from vllm_lint.diagnostics import Diagnostic, Position, Severity

    many = [Diagnostic("VLL301", f"finding {n}", "a.py", Position(n, 1), Position(n, 2), Severity.ERROR) for n in range(1, 12)]
    text = phrase([EditedFile("a.py", many, False, False)])
    assert text.count("\n- a.py:") == SHOWN_PER_FILE
    assert f"- ... and {11 - SHOWN_PER_FILE} more: run `vllm-lint check a.py`\n" in text


def test_no_stale_hook_snapshots(snapshots):
    snapshots.assert_only("agent-hooks", ["server report"])
