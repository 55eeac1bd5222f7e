from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

HAND_WRITTEN = "# Project notes\n\nUse uv for installs.\nNever push to main.\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh git repository with a hand-written CLAUDE.md."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "CLAUDE.md").write_bytes(HAND_WRITTEN.encode())
    return tmp_path


@pytest.fixture
def run_init():
    from vllm_lint.cli.main import cli

    runner = CliRunner()

    def run(directory: Path, *args: str):
        return runner.invoke(cli, ["init", str(directory), *args], catch_exceptions=False)

    return run


def _tree_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` outside .git, with its bytes."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts[:1]
    }


@pytest.fixture
def tree_files():
    return _tree_files


@pytest.fixture
def hand_written() -> str:
    return HAND_WRITTEN
