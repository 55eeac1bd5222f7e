"""What each assistant sends a post-edit hook, and how it wants the answer.

Each protocol reads the JSON payload the assistant writes on the hook's stdin into the edited
files and the project root, and turns vllm-lint's report (or None: nothing to say) into an exit
code and the text of stdout and stderr. The payload shapes come from the assistants' documentation,
cited on each class and in the test fixtures (``tests/agent_hooks/payloads/``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class PayloadError(ValueError):
    """The payload is not what the assistant documents; the hook says so on stderr and exits 0."""


@dataclass(frozen=True)
class Edited:
    root: Path  # the project: files outside it are not vllm-lint's business
    paths: tuple[Path, ...]  # absolute


@dataclass(frozen=True)
class Answer:
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""


SILENT = Answer()


def _object(value: object, what: str) -> dict:
    if not isinstance(value, dict):
        raise PayloadError(f"{what} is not a JSON object")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise PayloadError(f"{what} is missing or not a string")
    return value


def _absolute(path: str, base: Path) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else base / candidate


class Protocol:
    name = ""

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        raise NotImplementedError

    def answer(self, report: str | None) -> Answer:
        raise NotImplementedError


class _ExitTwo(Protocol):
    """Findings as exit 2 with the text on stderr: the assistant shows stderr to the model."""

    def answer(self, report: str | None) -> Answer:
        return SILENT if report is None else Answer(2, "", report)


class ClaudeCode(_ExitTwo):
    """PostToolUse on Edit|Write|MultiEdit: ``tool_input.file_path``; exit 2 feeds stderr to Claude
    (https://code.claude.com/docs/en/hooks, "PostToolUse input" and "Exit code 2 behavior")."""

    name = "claude"

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        tool_input = _object(payload.get("tool_input"), "tool_input")
        base = Path(env.get("CLAUDE_PROJECT_DIR") or payload.get("cwd") or cwd)
        path = _text(tool_input.get("file_path"), "tool_input.file_path")
        return Edited(base, (_absolute(path, Path(payload.get("cwd") or base)),))


# The file headers of Codex's patch format: "*** Add File: PATH", "*** Update File: PATH", and
# "*** Move to: PATH" for a rename (its new name is what holds the text).
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Move to): (?P<path>.+?)\s*$", re.MULTILINE)


class Codex(_ExitTwo):
    """PostToolUse for ``apply_patch``: the patch is ``tool_input.command``; exit 2 with stderr is fed
    back to the model (https://developers.openai.com/codex/hooks; codex-rs/hooks post_tool_use.rs)."""

    name = "codex"

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        base = Path(_text(payload.get("cwd"), "cwd"))
        tool_input = _object(payload.get("tool_input"), "tool_input")
        if isinstance(tool_input.get("file_path"), str):  # an Edit/Write-shaped tool
            return Edited(base, (_absolute(tool_input["file_path"], base),))
        patch = tool_input.get("command", tool_input.get("patch"))
        patch = _text(patch, "tool_input.command (the patch)")
        paths = tuple(dict.fromkeys(_absolute(m.group("path"), base) for m in _PATCH_FILE.finditer(patch)))
        return Edited(base, paths)


class GeminiCLI(Protocol):
    """AfterTool on write_file|replace: ``tool_input.file_path``. Findings go in
    ``hookSpecificOutput.additionalContext``, which Gemini CLI appends to the tool result; exit 2
    would replace the result ("file written") with our text instead
    (https://github.com/google-gemini/gemini-cli/blob/main/docs/hooks/reference.md, "AfterTool")."""

    name = "gemini"

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        tool_input = _object(payload.get("tool_input"), "tool_input")
        base = Path(env.get("GEMINI_PROJECT_DIR") or payload.get("cwd") or cwd)
        path = _text(tool_input.get("file_path", tool_input.get("absolute_path")), "tool_input.file_path")
        return Edited(base, (_absolute(path, base),))

    def answer(self, report: str | None) -> Answer:
        if report is None:
            return SILENT
        output = {"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": report}}
        return Answer(0, json.dumps(output, ensure_ascii=False) + "\n", "")


class Cursor(Protocol):
    """afterFileEdit: ``file_path`` (absolute) and ``workspace_roots``; the answer is JSON with
    ``additional_context`` on stdout (https://cursor.com/docs/agent/hooks, "afterFileEdit")."""

    name = "cursor"

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        path = _absolute(_text(payload.get("file_path"), "file_path"), cwd)
        roots = [Path(root) for root in payload.get("workspace_roots") or () if isinstance(root, str) and root]
        root = next((r for r in roots if path.is_relative_to(r)), roots[0] if roots else cwd)
        return Edited(root, (path,))

    def answer(self, report: str | None) -> Answer:
        if report is None:
            return SILENT
        return Answer(0, json.dumps({"additional_context": report}, ensure_ascii=False) + "\n", "")


class Windsurf(_ExitTwo):
    """post_write_code: ``tool_info.file_path``. A post-hook cannot block, but on exit 2 Cascade shows
    stderr to the agent (https://docs.windsurf.com/windsurf/cascade/hooks, "Exit Codes"). The hook
    runs in the workspace root unless its entry says otherwise."""

    name = "windsurf"

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        tool_info = _object(payload.get("tool_info"), "tool_info")
        return Edited(cwd, (_absolute(_text(tool_info.get("file_path"), "tool_info.file_path"), cwd),))


# Cline's file-writing tools, whose ``path`` parameter names the file written.
_CLINE_WRITES = frozenset({"write_to_file", "replace_in_file", "new_file", "apply_patch", "edit_file"})


class Cline(Protocol):
    """PostToolUse: ``postToolUse.toolName`` and ``.parameters.path`` (relative to the first of
    ``workspaceRoots``). The answer is JSON on stdout with ``contextModification``; Cline blocks
    the task on any non-zero exit, so the hook always exits 0
    (https://docs.cline.bot/features/hooks/hook-reference)."""

    name = "cline"

    def edited(self, payload: dict, env: Mapping[str, str], cwd: Path) -> Edited:
        post = _object(payload.get("postToolUse"), "postToolUse")
        roots = [Path(r) for r in payload.get("workspaceRoots") or () if isinstance(r, str) and r]
        root = roots[0] if roots else cwd
        if post.get("toolName") not in _CLINE_WRITES:
            return Edited(root, ())
        parameters = _object(post.get("parameters"), "postToolUse.parameters")
        return Edited(root, (_absolute(_text(parameters.get("path"), "postToolUse.parameters.path"), root),))

    def answer(self, report: str | None) -> Answer:
        if report is None:
            return SILENT
        return Answer(0, json.dumps({"cancel": False, "contextModification": report}, ensure_ascii=False) + "\n", "")


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (ClaudeCode(), Codex(), GeminiCLI(), Cursor(), Windsurf(), Cline())}
