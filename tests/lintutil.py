"""Test helpers: lint text as a file through the real engine, run the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from vllm_lint.cli.check import lint_paths
from vllm_lint.config import Settings, enabled_codes
from vllm_lint.diagnostics import Diagnostic
from vllm_lint.rulebook import all_codes
from vllm_lint.engine.runner import RunOptions

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SEEDS = SHARED / "seeds" / "code"


def lint_text(directory: Path, filename: str, text: str, select: tuple[str, ...] = (), **settings) -> list[Diagnostic]:
    path = directory / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return lint_file_paths([path], select, **settings)


def lint_file_paths(paths: list[Path], select: tuple[str, ...] = (), **settings) -> list[Diagnostic]:
    codes = all_codes()
    config = Settings(root=paths[0].parent.resolve(), **settings)
    options = RunOptions(config, enabled_codes(config, codes, select), codes)
    return [d for result in lint_paths(paths, options) for d in result.diagnostics]


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vllm_lint", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
