"""The agent rule files ``vllm-lint init`` can write, one target per tool."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# How an output file is owned:
#   "block": a file people also write; we own only the marked block inside it.
#   "whole": a file that is entirely ours; it carries a generated-by header.
BLOCK, WHOLE = "block", "whole"


@dataclass(frozen=True)
class Output:
    path: str  # relative to the target directory, POSIX separators
    template: str  # file name under templates/
    mode: str  # BLOCK or WHOLE
    max_chars: int | None = None  # hard per-file limit of the tool that reads it
    max_block_lines: int | None = None  # hard limit on the lines of our block
    fit_lines: int | None = None  # budget the renderer fits our content into
    fit_chars: int | None = None


@dataclass(frozen=True)
class Target:
    name: str
    tool: str
    outputs: tuple[Output, ...]
    opt_in: bool = False  # not part of --target all


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "claude",
            "Claude Code",
            # Claude Code reads the whole CLAUDE.md on every request; keep it short.
            (Output("CLAUDE.md", "claude.md.j2", BLOCK, max_block_lines=200, fit_lines=150),),
        ),
        Target("agents", "Codex, Jules, Aider, Zed and other AGENTS.md readers", (Output("AGENTS.md", "agents.md.j2", BLOCK),)),
        Target("cursor", "Cursor (project rules)", (Output(".cursor/rules/vllm-serving.mdc", "cursor.mdc.j2", WHOLE),)),
        Target("cursor-legacy", "Cursor (legacy .cursorrules)", (Output(".cursorrules", "cursorrules.j2", BLOCK),), opt_in=True),
        Target(
            "copilot",
            "GitHub Copilot",
            (
                Output(".github/copilot-instructions.md", "copilot-instructions.md.j2", BLOCK, fit_lines=60),
                Output(".github/instructions/vllm-serving.instructions.md", "copilot-path.instructions.md.j2", WHOLE),
            ),
        ),
        Target(
            "windsurf",
            "Windsurf",
            (Output(".windsurf/rules/vllm-serving.md", "windsurf.md.j2", WHOLE, max_chars=12_000, fit_chars=11_500),),
        ),
        Target("cline", "Cline", (Output(".clinerules/vllm-serving.md", "cline.md.j2", WHOLE),)),
        Target("gemini", "Gemini CLI", (Output("GEMINI.md", "gemini.md.j2", BLOCK),)),
    )
}

DEFAULT_GLOBS: tuple[str, ...] = (
    "**/*vllm*.py",
    "**/*model_server*.py",
    "Dockerfile*vllm*",
    "**/server*.py",
    "**/app*.py",
    "**/serve*.py",
    "**/docker-compose*.y*ml",
    "**/compose*.y*ml",
    "**/k8s/**/*.y*ml",
    "**/deploy/**/*.y*ml",
)


class TargetError(ValueError):
    """An unknown target name; the message lists the known ones."""


def default_targets(root: Path) -> list[str]:
    """CLAUDE.md, AGENTS.md and Cursor's rules in the form the repository already uses.

    A repository with ``.cursor/rules/`` gets the ``.mdc`` file; otherwise ``.cursorrules``,
    so Cursor never reads the same rules twice.
    """
    cursor = "cursor" if (root / ".cursor" / "rules").is_dir() else "cursor-legacy"
    return ["claude", "agents", cursor]


def resolve_targets(names: tuple[str, ...] | list[str], root: Path) -> list[Target]:
    """Target names (``all`` included) -> targets, in table order, without duplicates."""
    chosen: set[str] = set()
    for raw in names:
        for name in (part.strip().lower() for part in raw.split(",")):
            if not name:
                continue
            if name == "all":
                chosen.update(n for n, t in TARGETS.items() if not t.opt_in)
            elif name == "default":
                chosen.update(default_targets(root))
            elif name in TARGETS:
                chosen.add(name)
            else:
                known = ", ".join([*TARGETS, "all"])
                raise TargetError(f"unknown target {raw.strip()!r}; known targets: {known}")
    return [target for name, target in TARGETS.items() if name in chosen]
